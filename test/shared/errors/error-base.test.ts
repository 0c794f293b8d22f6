/**
 * The one error base (shared/errors/base.ts): every error class the source folders declare
 * extends `SvcError`, is declared once, has its own static code listed in
 * shared/errors/codes.ts and documented in the README, and the public entry points export
 * the base and the list.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import t from 'tap';
import { SvcError } from '../../../shared/errors/base.js';
import { SVC_ERROR_CODES } from '../../../shared/errors/codes.js';
import { TaskError } from '../../../shared/errors/task-errors.js';
import { SafeFetchError } from '../../../shared/net/safe-fetch.js';

const root = join(import.meta.dirname, '../../..');
const SOURCE_FOLDERS = ['agents', 'sender', 'receiver', 'shared', 'cli', 'conformance'];

/** Every `class X extends Y` in the source folders: file and names. */
function declaredClasses(): { file: string; name: string }[] {
  const out: { file: string; name: string }[] = [];
  for (const folder of SOURCE_FOLDERS) {
    for (const e of readdirSync(join(root, folder), { recursive: true, withFileTypes: true })) {
      if (!e.isFile() || !e.name.endsWith('.ts') || e.name.endsWith('.d.ts')) continue;
      const file = join(e.parentPath, e.name);
      for (const m of readFileSync(file, 'utf8').matchAll(/^export class (\w+) extends \w+/gm)) {
        out.push({ file, name: m[1] as string });
      }
    }
  }
  return out;
}

const readme = readFileSync(join(root, 'README.md'), 'utf8');

t.test('every error class extends SvcError with its own documented code', async (t) => {
  const seen = new Map<string, string>();
  const codes = new Map<string, string>();
  let errors = 0;
  for (const { file, name } of declaredClasses()) {
    const mod = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
    const cls = mod[name] as (abstract new (...a: never[]) => unknown) & { code?: unknown };
    if (typeof cls !== 'function' || !(cls.prototype instanceof Error)) continue;
    errors++;
    const where = relative(root, file);
    t.ok(
      cls === SvcError || cls.prototype instanceof SvcError,
      `${name} (${where}) extends SvcError`,
    );
    t.notOk(seen.has(name), `${name} declared once (${where}, ${seen.get(name) ?? ''})`);
    seen.set(name, where);
    t.ok(Object.hasOwn(cls, 'code'), `${name} declares its own static code`);
    const code = String(cls.code);
    t.ok(Object.hasOwn(SVC_ERROR_CODES, code), `${name}.code ${code} is listed in codes.ts`);
    t.notOk(codes.has(code), `${name}.code ${code} is distinct (${codes.get(code) ?? ''})`);
    codes.set(code, name);
    t.match(
      (SVC_ERROR_CODES as Record<string, string>)[code],
      new RegExp(`^${name}: `),
      `codes.ts describes ${code} as ${name}'s`,
    );
    t.ok(readme.includes(`| \`${code}\` | \`${name}\` |`), `README documents ${code} (${name})`);
  }
  t.ok(errors >= 45, `found the error classes (${errors})`);
  const unused = Object.keys(SVC_ERROR_CODES).filter((c) => !codes.has(c));
  t.same(unused, [], 'every listed code belongs to a class');
});

t.test('no source file declares an error on bare Error', async (t) => {
  for (const folder of SOURCE_FOLDERS) {
    for (const e of readdirSync(join(root, folder), { recursive: true, withFileTypes: true })) {
      if (!e.isFile() || !e.name.endsWith('.ts')) continue;
      if (e.parentPath.endsWith('errors') && e.name === 'base.ts') continue; // SvcError itself
      const text = readFileSync(join(e.parentPath, e.name), 'utf8');
      t.notMatch(text, /class \w+ extends (Error|TypeError|RangeError)\b/, e.name);
    }
  }
});

t.test('the base: name, code, cause', async (t) => {
  const cause = new Error('under');
  const e = new SafeFetchError('address_not_allowed', { cause });
  t.ok(e instanceof SvcError && e instanceof Error);
  t.equal(e.name, 'SafeFetchError');
  t.equal(e.code, 'address_not_allowed', 'the finer code');
  t.equal(SafeFetchError.code, 'ERR_SAFE_FETCH', 'the class code');
  t.equal(e.cause, cause);
  const plain = new SvcError('x');
  t.equal(plain.code, 'ERR_SVC');
  t.equal(plain.name, 'SvcError');
  t.notOk('cause' in plain, 'no cause unless given');
  const task = new TaskError('INVALID_REQUEST', 'bad');
  t.equal(task.code, 'INVALID_REQUEST', 'the protocol code stays the instance code');
  t.equal(task.status, 400);
});

t.test('every public entry point exports the base and the list', async (t) => {
  for (const entry of [
    'receiver/index.ts',
    'sender/index.ts',
    'shared/signing/index.ts',
    'conformance/index.ts',
  ]) {
    const mod = (await import(pathToFileURL(join(root, entry)).href)) as Record<string, unknown>;
    t.equal(mod.SvcError, SvcError, `${entry} exports SvcError`);
    t.equal(mod.SVC_ERROR_CODES, SVC_ERROR_CODES, `${entry} exports SVC_ERROR_CODES`);
    for (const [name, value] of Object.entries(mod)) {
      if (typeof value === 'function' && value !== SvcError && value.prototype instanceof Error) {
        t.ok(value.prototype instanceof SvcError, `${entry}: ${name} extends SvcError`);
      }
    }
  }
});
