/**
 * Redis connections, single node or Redis Cluster (service-spec: the dispatch transport;
 * issue #19 item 2). A deployment names its Redis as one string: a `redis://` URL, or
 * `redis-cluster://host:port,host:port` (what REDIS_CLUSTER_NODES becomes), so every part
 * that carries "the Redis" (deployment file, command services, `svc send`) carries clusters
 * too. BullMQ needs `maxRetriesPerRequest: null` on the connections its workers block on;
 * the same settings suit every other use here.
 *
 * A single-node client that meets a cluster (`MOVED`, `ASK`, `CROSSSLOT`, `CLUSTERDOWN`)
 * stops at that first answer: one `ClusterAnswerError` naming REDIS_CLUSTER_NODES, the
 * connection closed and not reopened, so a misconfigured worker cannot loop on redirects.
 */
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import { SvcError } from '../errors/base.js';

export { Cluster, Redis };

/** What the parts of the service connect with: one node or a cluster. */
export type RedisClient = Redis | Cluster;

export const CLUSTER_SCHEME = 'redis-cluster:';

export interface ClusterNode {
  host: string;
  port: number;
}

/** Why a list of cluster seed nodes (REDIS_CLUSTER_NODES) is refused; null when valid. */
export function clusterNodesProblem(value: string): string | null {
  const entries = value.split(',').map((e) => e.trim());
  if (entries.length === 0 || entries.every((e) => e === '')) return 'the list is empty';
  for (const e of entries) {
    if (parseNode(e) === null) return `"${e}" is not host:port`;
  }
  return null;
}

function parseNode(entry: string): ClusterNode | null {
  const m = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):(\d{1,5})$/.exec(entry);
  if (!m) return null;
  const port = Number(m[2]);
  if (port < 1 || port > 65535) return null;
  return { host: m[1]!.replace(/^\[|\]$/g, ''), port };
}

/** Seed nodes of a `host:port,...` list (validated by `clusterNodesProblem` first). */
export function parseClusterNodes(value: string): ClusterNode[] {
  const problem = clusterNodesProblem(value);
  if (problem !== null) throw new Error(`REDIS_CLUSTER_NODES: ${problem}`);
  return value
    .split(',')
    .map((e) => parseNode(e.trim()))
    .filter((n): n is ClusterNode => n !== null);
}

/** The one-string form of a cluster: `redis-cluster://h1:p1,h2:p2`. */
export function clusterUrl(nodes: string): string {
  return `redis-cluster://${nodes
    .split(',')
    .map((e) => e.trim())
    .join(',')}`;
}

export function isClusterUrl(url: string): boolean {
  return url.startsWith(`${CLUSTER_SCHEME}//`);
}

/** The seed nodes of a `redis-cluster://` URL. */
export function clusterNodesOf(url: string): ClusterNode[] {
  return parseClusterNodes(url.slice(`${CLUSTER_SCHEME}//`.length));
}

/** The answers only a cluster node gives: a single-node client has met a cluster. */
export function isClusterAnswer(err: unknown): boolean {
  const m = (err as { message?: unknown } | null)?.message;
  return typeof m === 'string' && /^(MOVED|ASK|CROSSSLOT|CLUSTERDOWN) /.test(m);
}

export class ClusterAnswerError extends SvcError {
  static override readonly code = 'ERR_REDIS_CLUSTER_ANSWER';

  constructor(answer: string) {
    super(
      `Redis answered "${answer}": it is a Redis Cluster node. Set REDIS_CLUSTER_NODES=host:port,... ` +
        '(the cluster seed nodes) instead of REDIS_URL.',
    );
    this.name = 'ClusterAnswerError';
  }
}

/**
 * A single-node client that stops at the first cluster answer: it emits one
 * `ClusterAnswerError` (`error` event) and disconnects for good. Its duplicates (BullMQ's
 * blocking connections) behave the same.
 */
class SingleNodeRedis extends Redis {
  private stoppedByCluster = false;

  override duplicate(override?: Partial<RedisOptions>): Redis {
    return new SingleNodeRedis({ ...this.options, ...override });
  }

  override sendCommand(
    ...args: Parameters<Redis['sendCommand']>
  ): ReturnType<Redis['sendCommand']> {
    const p = super.sendCommand(...args);
    (p as Promise<unknown> | undefined)?.catch?.((err: unknown) => {
      if (!isClusterAnswer(err) || this.stoppedByCluster) return;
      this.stoppedByCluster = true;
      const answer = String((err as Error).message).split('\n')[0]!;
      this.emit('error', new ClusterAnswerError(answer));
      this.disconnect(false);
    });
    return p;
  }
}

export interface CreateRedisOptions extends RedisOptions {
  /** Cluster-wide settings (only for a cluster). */
  cluster?: Omit<ClusterOptions, 'redisOptions'>;
}

/**
 * A client for `url`: a `redis://` URL gives a single-node client, a `redis-cluster://`
 * URL (or `{ cluster: [...] }`) an ioredis Cluster over those seed nodes.
 */
export function createRedis(
  target: string | { cluster: Array<string | ClusterNode> },
  options: CreateRedisOptions = {},
): RedisClient {
  const { cluster: clusterOptions, ...redisOptions } = options;
  const base: RedisOptions = {
    maxRetriesPerRequest: null,
    enableReadyCheck: true,
    ...redisOptions,
  };
  if (typeof target === 'string' && !isClusterUrl(target)) {
    return new SingleNodeRedis(target, base);
  }
  const nodes =
    typeof target === 'string'
      ? clusterNodesOf(target)
      : target.cluster.map((n) => (typeof n === 'string' ? parseClusterNodes(n)[0]! : n));
  return new Cluster(nodes, {
    // Redirections and a failover's short CLUSTERDOWN are retried, not surfaced.
    retryDelayOnFailover: 200,
    retryDelayOnClusterDown: 300,
    retryDelayOnTryAgain: 200,
    slotsRefreshTimeout: 2000,
    ...clusterOptions,
    redisOptions: base,
  });
}

/** A key prefix with a hash tag, so every key of one deployment lands in one Cluster slot. */
export function hashTaggedPrefix(name: string): string {
  return `{${name}}`;
}
