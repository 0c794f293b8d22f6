/**
 * `@adcp/sdk` 6.11.0 requires `@a2a-js/sdk/client` with the 0.3 API; this project runs
 * `@a2a-js/sdk` 1.x. The 0.3 client is installed as the alias package `a2a-sdk-v03`
 * (test-only). Import this module BEFORE `@adcp/sdk`: it redirects `@a2a-js/sdk*`
 * requires made from inside `@adcp/sdk` (and only those) to the alias, so our own code
 * keeps resolving 1.x.
 */
import Module, { createRequire } from 'node:module';
import { sep } from 'node:path';
import type * as SdkTesting from '@adcp/sdk/testing';
import type * as Sdk from '@adcp/sdk';

const require = createRequire(import.meta.url);
const SDK_DIR = `${sep}node_modules${sep}@adcp${sep}sdk${sep}`;
const FROM = '@a2a-js/sdk';
const TO = 'a2a-sdk-v03';

type Resolve = (
  request: string,
  parent: { filename?: string } | null,
  ...rest: unknown[]
) => string;
const mod = Module as unknown as { _resolveFilename: Resolve };
const original = mod._resolveFilename;
const marker = Symbol.for('svc.a2a-v03-alias');
const g = globalThis as Record<symbol, unknown>;

if (!g[marker]) {
  g[marker] = true;
  mod._resolveFilename = function (this: unknown, request, parent, ...rest) {
    if (
      (request === FROM || request.startsWith(`${FROM}/`)) &&
      parent?.filename?.includes(SDK_DIR)
    ) {
      return original.call(this, TO + request.slice(FROM.length), parent, ...rest);
    }
    return original.call(this, request, parent, ...rest);
  };
}

/** The SDK's `testing` entry, loaded with the alias in place. */
export function loadSdkTesting(): typeof SdkTesting {
  return require('@adcp/sdk/testing') as typeof SdkTesting;
}

/** The SDK's main entry (typed client), loaded with the alias in place. */
export function loadSdk(): typeof Sdk {
  return require('@adcp/sdk') as typeof Sdk;
}
