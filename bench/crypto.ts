/**
 * `npm run bench -- crypto`: sign and verify of a 1 KB webhook through our API against the
 * same operations through bare node:crypto (the floor), Ed25519 and ES256.
 *
 * The ratio is time per operation, ours over bare: 1.11x means our whole path takes 11 % longer
 * than `crypto.verify` alone, i.e. runs at 0.90x its speed. Ours is the full verify path
 * (three headers parsed, target canonicalised, signature base built, key looked up, the body's
 * SHA-256 digest checked, the signature verified); bare is `crypto.verify` over a signature
 * base of the same length with a ready KeyObject.
 * Target (issue 23): 0.9x bare speed or better for both algorithms, i.e. a time ratio of at
 * most 1/0.9 = 1.11x.
 */
import { sign as cryptoSign, verify as cryptoVerify, createPublicKey } from 'node:crypto';
import { brandProfile } from '../shared/brand.js';
import { generateSigningKey, publishedJwk } from '../shared/signing/keys.js';
import { signWebhook } from '../shared/signing/sign.js';
import {
  signatureBaseFor,
  verifyWebhookSignature,
  type IncomingRequest,
} from '../shared/signing/verify.js';
import type { SignatureAlg } from '../shared/signing/algorithms.js';

const profile = brandProfile('svc');
/** Issue 23: at least 0.9x bare speed, so at most 1/0.9 of its time. */
const TARGET_TIME_RATIO = 1 / 0.9;
const URL_ = 'https://buyer.example.com/webhooks/svc/op_123?tenant=a';

function body1k(): Buffer {
  const filler = 'x'.repeat(1024);
  const obj = {
    idempotency_key: 'whk_0123456789abcdef0123',
    task_id: 'task_456',
    operation_id: 'op_123',
    task_type: 'create_media_buy',
    status: 'completed',
    timestamp: '2026-11-22T12:00:00.000Z',
    result: { media_buy_id: 'mb_001', note: '' },
  };
  const base = JSON.stringify(obj);
  obj.result.note = filler.slice(0, 1024 - base.length);
  return Buffer.from(JSON.stringify(obj));
}

/**
 * Runs fn repeatedly for about `ms` milliseconds (bounded by `max` calls); returns operations
 * per CPU second of this process. CPU time, not wall time: on a shared machine a wall-clock
 * round also counts the time other processes held the core, which swung the ratio between
 * 1.04x and 1.85x from one run to the next at a load average of 9-14.
 */
async function rate(
  fn: () => unknown | Promise<unknown>,
  ms = 1500,
  max = 2_000_000,
): Promise<number> {
  for (let i = 0; i < 200; i++) await fn(); // warm-up
  const start = process.hrtime.bigint();
  const cpu0 = process.cpuUsage();
  const deadline = start + BigInt(ms) * 1_000_000n;
  let n = 0;
  while (n < max) {
    for (let i = 0; i < 100; i++) await fn();
    n += 100;
    if (process.hrtime.bigint() >= deadline) break;
  }
  const cpu = process.cpuUsage(cpu0);
  return n / ((cpu.user + cpu.system) / 1e6);
}

/**
 * Measures two operations in alternating short rounds and keeps each one's best round, so
 * load from other processes on the machine skews both sides alike instead of one.
 */
async function paired(a: () => unknown, b: () => unknown, rounds = 7): Promise<[number, number]> {
  let bestA = 0;
  let bestB = 0;
  for (let r = 0; r < rounds; r++) {
    bestA = Math.max(bestA, await rate(a, 250));
    bestB = Math.max(bestB, await rate(b, 250));
  }
  return [bestA, bestB];
}

export async function run(): Promise<void> {
  const body = body1k();
  const rows: Array<[string, number, number]> = [];
  const verifyRatios: Array<[SignatureAlg, number]> = [];
  for (const alg of ['ed25519', 'ecdsa-p256-sha256'] as SignatureAlg[]) {
    const { key } = await generateSigningKey(alg, `bench-${alg}`);
    const jwk = publishedJwk(key, profile);
    const pub = createPublicKey(key.privateKey);
    const now = Math.floor(Date.now() / 1000);
    const headers = signWebhook({ method: 'POST', url: URL_, body }, { key, profile, now });
    const req: IncomingRequest = { method: 'POST', url: URL_, headers, body };
    const keys = { resolve: async () => ({ jwk, senderId: 'bench' }) };
    // Bare signs and verifies a base as long as the one our verifier rebuilds for this request.
    const base = Buffer.from('x'.repeat(signatureBaseFor(req).length));
    const bareSig =
      alg === 'ed25519'
        ? cryptoSign(null, base, key.privateKey)
        : cryptoSign('sha256', base, { key: key.privateKey, dsaEncoding: 'ieee-p1363' });
    const bareSign = () =>
      alg === 'ed25519'
        ? cryptoSign(null, base, key.privateKey)
        : cryptoSign('sha256', base, { key: key.privateKey, dsaEncoding: 'ieee-p1363' });
    const bareVerify = () =>
      alg === 'ed25519'
        ? cryptoVerify(null, base, pub, bareSig)
        : cryptoVerify('sha256', base, { key: pub, dsaEncoding: 'ieee-p1363' }, bareSig);
    const oursSign = () => signWebhook({ method: 'POST', url: URL_, body }, { key, profile, now });
    const oursVerify = () => verifyWebhookSignature(req, { profile, keys, now });
    const [bs, os] = await paired(bareSign, oursSign);
    const [bv, ov] = await paired(bareVerify, oursVerify);
    rows.push([`${alg} sign`, os, bs], [`${alg} verify`, ov, bv]);
    verifyRatios.push([alg, bv / ov]);
  }
  const fmt = (n: number) => Math.round(n).toLocaleString('en-US').padStart(10);
  process.stdout.write(
    '1 KB body, one process, best of 7 alternating rounds, operations per CPU second; ' +
      'ratio = CPU time ours / CPU time bare (1.11x = 0.90x bare speed)\n',
  );
  process.stdout.write(
    `${'operation'.padEnd(28)}${'ours'.padStart(10)}${'bare'.padStart(10)}   ratio  µs ours / bare\n`,
  );
  for (const [name, ours, bare] of rows) {
    process.stdout.write(
      `${name.padEnd(28)}${fmt(ours)}${fmt(bare)}   ${(bare / ours).toFixed(2)}x  ${(1e6 / ours).toFixed(1)} / ${(1e6 / bare).toFixed(1)}\n`,
    );
  }
  for (const [alg, ratio] of verifyRatios) {
    const verdict = ratio <= TARGET_TIME_RATIO ? 'meets' : 'misses';
    process.stdout.write(
      `${alg} verify path: ${ratio.toFixed(2)}x bare time = ${(1 / ratio).toFixed(2)}x bare speed ` +
        `(target ≤ ${TARGET_TIME_RATIO.toFixed(2)}x time, ≥ 0.90x speed: ${verdict})\n`,
    );
  }
}
