import t from 'tap';
import fc from 'fast-check';
import { classifyAddress, isLoopbackAddress, isReservedAddress } from '../../../shared/net/ssrf.js';

t.test('supplement §4.5 ranges: first, inside and last addresses are reserved', async (t) => {
  const cases: [string, string][] = [
    ['10.0.0.0', 'private'],
    ['10.255.255.255', 'private'],
    ['172.16.0.0', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.0.0', 'private'],
    ['192.168.255.255', 'private'],
    ['100.64.0.0', 'shared'],
    ['100.127.255.255', 'shared'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['169.254.0.1', 'link_local'],
    ['169.254.169.254', 'metadata'],
    ['255.255.255.255', 'broadcast'],
    ['0.0.0.0', 'unspecified'],
    ['0.255.255.255', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.255', 'multicast'],
    ['::1', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['::', 'unspecified'],
    ['fc00::1', 'private'],
    ['fdff:ffff::1', 'private'],
    ['fe80::1', 'link_local'],
    ['febf:ffff::1', 'link_local'],
    ['FE80::1', 'link_local'],
    ['fe80::1%eth0', 'link_local'],
    ['ff02::1', 'multicast'],
    ['ff00::', 'multicast'],
    ['fd00:ec2::254', 'metadata'],
    ['FD00:EC2:0:0:0:0:0:254', 'metadata'],
    // ::ffff:0:0/96 is reserved outright; the mapped IPv4 decides the finer class.
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:10.1.2.3', 'private'],
    ['::ffff:169.254.169.254', 'metadata'],
    ['::ffff:8.8.8.8', 'reserved'],
  ];
  for (const [ip, cls] of cases) {
    t.equal(classifyAddress(ip), cls, `${ip} is ${cls}`);
    t.ok(isReservedAddress(ip), `${ip} reserved`);
  }
});

t.test('extras: embedded IPv4, future use, documentation', async (t) => {
  const cases: [string, string][] = [
    ['64:ff9b::7f00:1', 'loopback'],
    ['64:ff9b::10.0.0.1', 'private'],
    ['2002:a9fe:a9fe::1', 'metadata'],
    ['2002:c0a8:101::1', 'private'],
    ['::127.0.0.1', 'loopback'],
    ['::8.8.8.8', 'reserved'],
    ['240.0.0.1', 'reserved'],
    ['192.0.2.10', 'reserved'],
    ['198.18.0.1', 'reserved'],
    ['2001:db8::1', 'reserved'],
  ];
  for (const [ip, cls] of cases) t.equal(classifyAddress(ip), cls, `${ip} is ${cls}`);
});

t.test('public addresses pass, including the neighbours of reserved ranges', async (t) => {
  for (const ip of [
    '8.8.8.8',
    '1.1.1.1',
    '9.255.255.255',
    '11.0.0.0',
    '172.15.255.255',
    '172.32.0.0',
    '192.167.255.255',
    '192.169.0.0',
    '100.63.255.255',
    '100.128.0.0',
    '126.255.255.255',
    '128.0.0.0',
    '169.253.255.255',
    '223.255.255.255',
    '2606:4700:4700::1111',
    '2a00:1450:4001::200e',
    'fbff:ffff::1',
    'fec0::1',
    '64:ff9b::8.8.8.8',
    '2002:808:808::1',
  ]) {
    t.equal(classifyAddress(ip), 'public', ip);
    t.notOk(isReservedAddress(ip), ip);
    t.notOk(isLoopbackAddress(ip), ip);
  }
});

t.test('loopback predicate', async (t) => {
  for (const ip of ['127.0.0.1', '127.1.2.3', '::1', '::ffff:127.0.0.1'])
    t.ok(isLoopbackAddress(ip));
  for (const ip of ['10.0.0.1', '::', '0.0.0.0', 'localhost', 'fe80::1']) {
    t.notOk(isLoopbackAddress(ip), ip);
  }
});

t.test('malformed input fails closed', async (t) => {
  for (const ip of [
    '',
    'localhost',
    'example.com',
    '127.1',
    '1.2.3',
    '::g',
    '1.2.3.4.5',
    '[::1]',
  ]) {
    t.equal(classifyAddress(ip), 'invalid', JSON.stringify(ip));
    t.ok(isReservedAddress(ip), JSON.stringify(ip));
  }
  t.equal(classifyAddress(undefined as unknown as string), 'invalid');
});

t.test(
  'property: every 10/8 and fc00::/7 address is reserved; random strings never throw',
  async (t) => {
    fc.assert(
      fc.property(fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255)), ([a, b, c]) =>
        isReservedAddress(`10.${a}.${b}.${c}`),
      ),
    );
    fc.assert(
      fc.property(fc.ipV6(), (ip) => {
        const first = parseInt(expand(ip)[0]!, 16);
        return (first & 0xfe00) !== 0xfc00 || isReservedAddress(ip);
      }),
      { numRuns: 2000 },
    );
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 45 }), (s) => {
        const cls = classifyAddress(s);
        return typeof cls === 'string';
      }),
      { numRuns: 2000 },
    );
    t.pass('properties hold');
  },
);

/** The eight groups of an IPv6 literal (for the property's own oracle). */
function expand(ip: string): string[] {
  const [l, r] = ip.split('::') as [string, string | undefined];
  const left = l === '' ? [] : l.split(':');
  if (r === undefined) return left;
  const right = r === '' ? [] : r.split(':');
  const rightGroups = right.flatMap((g) => (g.includes('.') ? ['0', '0'] : [g]));
  return [
    ...left,
    ...new Array<string>(8 - left.length - rightGroups.length).fill('0'),
    ...rightGroups,
  ];
}
