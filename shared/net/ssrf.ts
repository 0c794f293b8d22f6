/**
 * Reserved address classification for every counterparty fetch (supplement §4.5): webhook
 * targets, JWKS, brand.json, revocation lists, adagents.json.
 *
 * The supplement's list, plus a few ranges that are never a legitimate public endpoint either
 * (marked "extra" below): the unspecified address, 240/4, IETF protocol assignments,
 * benchmarking and documentation ranges, and IPv6 prefixes that embed an IPv4 address
 * (IPv4-compatible, NAT64, 6to4), which are judged by the embedded address so that
 * `64:ff9b::7f00:1` cannot reach 127.0.0.1 through a NAT64 gateway.
 */
import { BlockList, isIP } from 'node:net';

export type AddressClass =
  | 'public'
  | 'loopback'
  | 'unspecified'
  | 'private'
  | 'shared'
  | 'link_local'
  | 'metadata'
  | 'multicast'
  | 'broadcast'
  | 'reserved'
  | 'invalid';

type Rule = [cidr: string, cls: Exclude<AddressClass, 'public' | 'invalid'>];

// First match wins, so the narrow metadata entries come before their enclosing ranges.
const RULES: Rule[] = [
  ['169.254.169.254/32', 'metadata'],
  ['fd00:ec2::254/128', 'metadata'],
  ['127.0.0.0/8', 'loopback'],
  ['::1/128', 'loopback'],
  ['0.0.0.0/8', 'unspecified'],
  ['::/128', 'unspecified'], // extra
  ['10.0.0.0/8', 'private'],
  ['172.16.0.0/12', 'private'],
  ['192.168.0.0/16', 'private'],
  ['fc00::/7', 'private'],
  ['100.64.0.0/10', 'shared'],
  ['169.254.0.0/16', 'link_local'],
  ['fe80::/10', 'link_local'],
  ['224.0.0.0/4', 'multicast'],
  ['ff00::/8', 'multicast'],
  ['255.255.255.255/32', 'broadcast'],
  ['240.0.0.0/4', 'reserved'], // extra: "future use", never routed
  ['192.0.0.0/24', 'reserved'], // extra: IETF protocol assignments
  ['192.0.2.0/24', 'reserved'], // extra: TEST-NET-1
  ['198.18.0.0/15', 'reserved'], // extra: benchmarking
  ['198.51.100.0/24', 'reserved'], // extra: TEST-NET-2
  ['203.0.113.0/24', 'reserved'], // extra: TEST-NET-3
  ['100::/64', 'reserved'], // extra: discard-only
  ['2001:db8::/32', 'reserved'], // extra: documentation
];

const LISTS: [BlockList, Rule[1]][] = RULES.map(([cidr, cls]) => {
  const [net, bits] = cidr.split('/') as [string, string];
  const list = new BlockList();
  list.addSubnet(net, Number(bits), isIP(net) === 6 ? 'ipv6' : 'ipv4');
  return [list, cls];
});

// IPv6 prefixes that carry an IPv4 address: [prefix bytes, where the IPv4 sits, whether the
// prefix itself is reserved whatever the IPv4 is].
const EMBEDDING: [prefix: number[], v4Offset: number, reservedItself: boolean][] = [
  [[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff], 12, true], // ::ffff:0:0/96, IPv4-mapped
  [[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], 12, true], // ::/96, IPv4-compatible (deprecated)
  [[0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0], 12, false], // 64:ff9b::/96, NAT64
  [[0x20, 0x02], 2, false], // 2002::/16, 6to4
];

/** What kind of address `ip` is; `invalid` for anything that is not an IP literal. */
export function classifyAddress(ip: string): AddressClass {
  if (typeof ip !== 'string') return 'invalid';
  const addr = stripZone(ip);
  const family = isIP(addr);
  if (family === 0) return 'invalid';
  const type = family === 6 ? 'ipv6' : 'ipv4';
  if (family === 6) {
    const embedded = classifyEmbeddedIpv4(addr);
    if (embedded !== null) return embedded;
  }
  for (const [list, cls] of LISTS) if (list.check(addr, type)) return cls;
  return 'public';
}

/** True for every address a counterparty URL must not reach; fails closed on non-IPs. */
export function isReservedAddress(ip: string): boolean {
  return classifyAddress(ip) !== 'public';
}

/** 127/8, ::1 and 127/8 seen through an IPv6 embedding (e.g. `::ffff:127.0.0.1`). */
export function isLoopbackAddress(ip: string): boolean {
  return classifyAddress(ip) === 'loopback';
}

function stripZone(ip: string): string {
  const pct = ip.indexOf('%');
  return pct < 0 ? ip : ip.slice(0, pct);
}

function classifyEmbeddedIpv4(addr: string): AddressClass | null {
  const bytes = ipv6Bytes(addr);
  if (bytes === null) return 'invalid';
  for (const [prefix, offset, reservedItself] of EMBEDDING) {
    if (!prefix.every((b, i) => bytes[i] === b)) continue;
    // ::/96 also holds :: and ::1, which the rules name themselves.
    const compat = prefix.every((b) => b === 0);
    if (compat && bytes.slice(12, 15).every((b) => b === 0) && bytes[15]! <= 1) {
      return null;
    }
    const v4 = bytes.slice(offset, offset + 4).join('.');
    const cls = classifyAddress(v4);
    if (cls !== 'public') return cls;
    return reservedItself ? 'reserved' : 'public';
  }
  return null;
}

/** The 16 bytes of an IPv6 literal (isIP already accepted it), or null. */
function ipv6Bytes(addr: string): number[] | null {
  let text = addr.toLowerCase();
  let tail: number[] = [];
  const lastColon = text.lastIndexOf(':');
  const last = text.slice(lastColon + 1);
  if (last.includes('.')) {
    // A trailing dotted quad is two groups; drop it and the colon that separates it.
    const q = last.split('.').map(Number) as [number, number, number, number];
    tail = [q[0] * 256 + q[1], q[2] * 256 + q[3]];
    text = text.slice(0, lastColon + 1);
    if (!text.endsWith('::')) text = text.slice(0, -1);
  }
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const parse = (s: string) => (s === '' ? [] : s.split(':').map((h) => parseInt(h, 16)));
  const left = parse(halves[0]!);
  const right = halves.length === 2 ? parse(halves[1]!) : [];
  const explicit = left.length + right.length + tail.length;
  if (halves.length === 2 ? explicit > 7 : explicit !== 8) return null;
  const zeros = new Array<number>(8 - explicit).fill(0);
  const groups = [...left, ...zeros, ...right, ...tail];
  if (groups.some((g) => !Number.isInteger(g) || g < 0 || g > 0xffff)) return null;
  return groups.flatMap((g) => [g >> 8, g & 0xff]);
}
