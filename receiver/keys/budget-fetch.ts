/**
 * Interim transport for key discovery until `shared/net/safe-fetch.ts` lands: GET with a
 * connect timeout, a total deadline, a byte cap enforced while streaming, no redirects,
 * and a refusal of non-public addresses (loopback only when allowed, for tests).
 * Same contract as `safeFetch`, so swapping it in is a one-line change in fetch-json.ts.
 */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { Agent, request } from 'undici';
import type { RawFetchOptions, RawResponse } from './fetch-json.js';

const agents = new Map<string, Agent>();

function agentFor(connectTimeoutMs: number): Agent {
  const key = String(connectTimeoutMs);
  let agent = agents.get(key);
  if (!agent) {
    agent = new Agent({ connect: { timeout: connectTimeoutMs }, keepAliveTimeout: 10_000 });
    agents.set(key, agent);
  }
  return agent;
}

function isLoopbackIp(ip: string): boolean {
  return ip === '::1' || ip.startsWith('127.') || ip === '::ffff:127.0.0.1';
}

/** Private, loopback, link-local, CGNAT, multicast, unspecified: never fetched. */
function isReserved(ip: string): boolean {
  if (isIP(ip) === 4) {
    const [a, b] = ip.split('.').map(Number) as [number, number];
    return (
      a === 0 ||
      a === 10 ||
      a === 127 ||
      (a === 100 && b >= 64 && b <= 127) ||
      (a === 169 && b === 254) ||
      (a === 172 && b >= 16 && b <= 31) ||
      (a === 192 && b === 168) ||
      a >= 224
    );
  }
  const v = ip.toLowerCase();
  if (v.startsWith('::ffff:')) return isReserved(v.slice(7));
  return (
    v === '::' ||
    v === '::1' ||
    v.startsWith('fc') ||
    v.startsWith('fd') ||
    v.startsWith('fe8') ||
    v.startsWith('fe9') ||
    v.startsWith('fea') ||
    v.startsWith('feb') ||
    v.startsWith('ff')
  );
}

async function checkAddress(hostname: string, allowLoopback: boolean): Promise<void> {
  const host = hostname.replace(/^\[|\]$/g, '');
  const addrs = isIP(host) ? [host] : (await lookup(host, { all: true })).map((a) => a.address);
  for (const ip of addrs) {
    if (allowLoopback && isLoopbackIp(ip)) continue;
    if (isReserved(ip)) throw new Error(`refusing non-public address ${ip}`);
  }
}

export async function budgetFetch(url: string, opts: RawFetchOptions): Promise<RawResponse> {
  const u = new URL(url);
  const deadline = AbortSignal.timeout(opts.totalTimeoutMs ?? 10_000);
  await checkAddress(u.hostname, opts.allowLoopback ?? false);
  const res = await request(u, {
    method: 'GET',
    headers: opts.headers,
    dispatcher: agentFor(opts.connectTimeoutMs ?? 5_000),
    signal: deadline,
  });
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of res.body) {
      size += (chunk as Buffer).length;
      if (size > opts.maxBytes) throw new Error(`body exceeds ${opts.maxBytes} bytes`);
      chunks.push(chunk as Buffer);
    }
  } catch (err) {
    res.body.destroy();
    throw err;
  }
  return { status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) };
}
