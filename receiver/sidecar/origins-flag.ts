/**
 * `--public-origins` / `SVC_RECEIVER_PUBLIC_ORIGINS` of `svc receiver` (issue 21 item 5): the
 * list checked once at start, each refusal naming the option it came from, and each origin's
 * scheme checked against the scheme the sidecar verifies (`--scheme`, plain http without
 * it): an https origin on a plain-http sidecar would refuse every delivery.
 */
import type { Config } from '../../shared/config.js';
import {
  parsePublicOrigins,
  PublicOriginError,
  splitOriginList,
} from '../pipeline/public-origins.js';
import { UsageError } from './flags.js';

export function sidecarOrigins(
  flag: string | undefined,
  config: Partial<Pick<Config, 'SVC_RECEIVER_PUBLIC_ORIGINS'>>,
  scheme: string | undefined,
): string[] | null {
  const value = flag ?? config.SVC_RECEIVER_PUBLIC_ORIGINS;
  if (value === undefined) return null;
  const option = flag !== undefined ? '--public-origins' : 'SVC_RECEIVER_PUBLIC_ORIGINS';
  let origins: Set<string>;
  try {
    origins = parsePublicOrigins(splitOriginList(value), option);
  } catch (err) {
    if (err instanceof PublicOriginError) throw new UsageError(err.message);
    throw err;
  }
  const verified = scheme ?? 'http';
  for (const origin of origins) {
    if (!origin.startsWith(`${verified}://`)) {
      throw new UsageError(
        `${option}: ${origin} is not ${verified}, the scheme this sidecar verifies` +
          (verified === 'http' ? ' (behind a TLS proxy, set --scheme https)' : ''),
      );
    }
  }
  return [...origins];
}
