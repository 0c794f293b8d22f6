/**
 * Reserved address ranges a webhook target may not resolve to (supplement §4.5), plus
 * the other special-purpose blocks no public receiver lives in.
 */
import { BlockList, isIP } from 'node:net';

const reserved = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4], // includes 255.255.255.255
] as const) {
  reserved.addSubnet(net, bits, 'ipv4');
}
for (const [net, bits] of [
  ['::', 128],
  ['::1', 128],
  ['::ffff:0:0', 96], // IPv4-mapped: would smuggle any IPv4 past the v4 list
  ['64:ff9b::', 96],
  ['fc00::', 7], // includes fd00:ec2::254
  ['fe80::', 10],
  ['ff00::', 8],
] as const) {
  reserved.addSubnet(net, bits, 'ipv6');
}

export function isReservedAddress(ip: string): boolean {
  const family = isIP(ip);
  if (family === 0) return true;
  return reserved.check(ip, family === 4 ? 'ipv4' : 'ipv6');
}
