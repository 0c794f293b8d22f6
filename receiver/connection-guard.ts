/**
 * Connection fairness for a receiver's node:http server (issue 21 item 9): one client
 * address must not take the whole connection cap from the others. Node alone closes every
 * new connection once `maxConnections` are open, so 2,000 idle sockets from one address
 * shut out every sender, health check and metrics scrape until the head timeout frees them.
 *
 * Two rules, applied as each connection arrives:
 *  - per address (an IPv6 client by its /64, which one host usually holds whole): at most
 *    `maxPerAddress` open. At the cap, that address's oldest idle connection is closed to
 *    make room (its own health probe or new delivery still gets in); when every one of them
 *    has a request under way, the new connection is closed instead;
 *  - near the process cap (within `reserve` of it): the oldest idle connection of the address
 *    holding the most is closed, so room stays for others before Node's hard cap is reached.
 * "Idle" is a connection with no complete request head being answered: one still sending its
 * head (slow or silent) or a keep-alive connection between requests. A request under way is
 * never cut; its own bounds (head, body and request timeouts) end it.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

export type ShedReason = 'per_address' | 'near_capacity';

export interface ConnectionGuardOptions {
  /** The process cap (Node's own `server.maxConnections`). */
  maxConnections: number;
  /** Open connections per client address. */
  maxPerAddress: number;
  /** Told of every connection closed by a rule (a metric, a log). */
  onShed?: (reason: ShedReason) => void;
}

interface Entry {
  address: string;
  /** Requests whose head arrived and whose answer is not finished. */
  busy: number;
}

/** The key a client is counted by: IPv4 as is, IPv6 by its /64. */
export function addressKey(remote: string | undefined): string {
  if (!remote) return '?';
  const v4 = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(remote);
  if (v4) return v4[1] as string;
  if (!remote.includes(':')) return remote;
  // Expand "::" just enough to take the first four groups.
  const [head = '', tail] = remote.toLowerCase().split('%', 1)[0]!.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = [
    ...left,
    ...Array(Math.max(0, 8 - left.length - right.length)).fill('0'),
    ...right,
  ];
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}

/** Room kept below the process cap for other clients: 1/16 of it, 1 to 64. */
export function reserveFor(maxConnections: number): number {
  return Math.max(1, Math.min(64, Math.floor(maxConnections / 16)));
}

export class ConnectionGuard {
  /** Every open connection, oldest first (a Map keeps insertion order). */
  private readonly open = new Map<Socket, Entry>();
  private readonly byAddress = new Map<string, Set<Socket>>();
  private readonly soft: number;

  constructor(
    server: Server,
    private readonly o: ConnectionGuardOptions,
  ) {
    this.soft = Math.max(1, o.maxConnections - reserveFor(o.maxConnections));
    server.on('connection', (socket: Socket) => this.arrive(socket));
    server.on('request', (req: IncomingMessage, res: ServerResponse) => this.request(req, res));
  }

  /** Open connections now, and of one address key. */
  get size(): number {
    return this.open.size;
  }

  countOf(address: string): number {
    return this.byAddress.get(address)?.size ?? 0;
  }

  private arrive(socket: Socket): void {
    const address = addressKey(socket.remoteAddress);
    const mine = this.byAddress.get(address);
    if (mine && mine.size >= this.o.maxPerAddress) {
      const idle = this.oldestIdle(mine);
      this.shed(idle ?? socket, 'per_address');
      if (!idle) return;
    }
    if (this.open.size >= this.soft) {
      const victim = this.oldestIdle(this.largestGroup()) ?? this.oldestIdle(this.open.keys());
      if (victim) this.shed(victim, 'near_capacity');
    }
    this.track(socket, address);
  }

  private track(socket: Socket, address: string): void {
    const entry: Entry = { address, busy: 0 };
    this.open.set(socket, entry);
    let group = this.byAddress.get(address);
    if (!group) this.byAddress.set(address, (group = new Set()));
    group.add(socket);
    socket.once('close', () => this.forget(socket, entry));
  }

  private forget(socket: Socket, entry: Entry): void {
    if (this.open.get(socket) !== entry) return;
    this.open.delete(socket);
    const group = this.byAddress.get(entry.address);
    group?.delete(socket);
    if (group?.size === 0) this.byAddress.delete(entry.address);
  }

  private request(req: IncomingMessage, res: ServerResponse): void {
    // Over TLS the request's socket wraps the TCP socket 'connection' gave (Node's `_parent`).
    const entry =
      this.open.get(req.socket) ??
      this.open.get((req.socket as Socket & { _parent?: Socket })._parent!);
    if (!entry) return;
    entry.busy++;
    res.once('close', () => {
      entry.busy--;
    });
  }

  private largestGroup(): Set<Socket> | undefined {
    let best: Set<Socket> | undefined;
    for (const group of this.byAddress.values()) {
      if (!best || group.size > best.size) best = group;
    }
    return best;
  }

  private oldestIdle(group: Iterable<Socket> | undefined): Socket | undefined {
    if (!group) return undefined;
    for (const s of group) if ((this.open.get(s)?.busy ?? 0) === 0) return s;
    return undefined;
  }

  /** Closes a connection now; an untracked one (the arriving socket) needs no bookkeeping. */
  private shed(socket: Socket, reason: ShedReason): void {
    const entry = this.open.get(socket);
    if (entry) this.forget(socket, entry);
    socket.destroy();
    this.o.onShed?.(reason);
  }
}
