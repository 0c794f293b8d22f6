/**
 * A real Redis Cluster for tests (issue #19): `redis-server --cluster-enabled yes` nodes on
 * free loopback ports in a temp dir, joined by `redis-cli --cluster create`, stopped (and
 * the dir removed) in teardown. Never touches the shared Redis on 6379.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';

interface Teardown {
  teardown(fn: () => unknown): void;
}

export interface ClusterNodeHandle {
  port: number;
  proc: ChildProcess;
}

export interface TestCluster {
  nodes: ClusterNodeHandle[];
  /** `host:port,...` of every node: what REDIS_CLUSTER_NODES takes. */
  seeds: string;
  /** Ports of the current masters (CLUSTER NODES, as a live node sees it). */
  masters(): Promise<number[]>;
  /** SIGKILLs one node. */
  kill(port: number): void;
  /** Runs redis-cli against the cluster; returns its output. */
  cli(args: string[], timeoutMs?: number): string;
  /** The same without blocking the event loop (work goes on meanwhile). */
  cliAsync(args: string[], timeoutMs?: number): Promise<string>;
  /** Resolves when every live node reports cluster_state:ok. */
  waitOk(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/** `count` ports whose cluster bus port (+10000) is free too. */
async function freePorts(count: number): Promise<number[]> {
  const out: number[] = [];
  for (let tries = 0; out.length < count && tries < 500; tries++) {
    const p = 20_000 + Math.floor(Math.random() * 25_000);
    if (out.includes(p) || out.includes(p + 10_000) || out.includes(p - 10_000)) continue;
    if ((await portFree(p)) && (await portFree(p + 10_000))) out.push(p);
  }
  if (out.length < count) throw new Error('no free ports for the test cluster');
  return out;
}

async function ping(port: number): Promise<boolean> {
  const r = new Redis(port, '127.0.0.1', {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  r.on('error', () => {});
  try {
    await r.connect();
    return (await r.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    r.disconnect();
  }
}

async function info(port: number, section: string): Promise<string> {
  const r = new Redis(port, '127.0.0.1', {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  r.on('error', () => {});
  try {
    await r.connect();
    return section === 'nodes' ? String(await r.cluster('NODES')) : await r.cluster('INFO');
  } finally {
    r.disconnect();
  }
}

/** Starts `masters` masters with `replicas` replicas each, joined into one cluster. */
export async function startRedisCluster(
  t: Teardown,
  o: { masters?: number; replicas?: number; nodeTimeoutMs?: number } = {},
): Promise<TestCluster> {
  const masters = o.masters ?? 3;
  const replicas = o.replicas ?? 1;
  const dir = mkdtempSync(join(tmpdir(), 'svc-cluster-'));
  const ports = await freePorts(masters * (1 + replicas));
  const alive = new Set<number>(ports);
  const nodes = ports.map((port) => {
    // prettier-ignore
    const args = [
      '--port', String(port), '--bind', '127.0.0.1', '--cluster-enabled', 'yes',
      '--cluster-config-file', join(dir, `nodes-${port}.conf`),
      '--cluster-node-timeout', String(o.nodeTimeoutMs ?? 1000),
      '--save', '', '--appendonly', 'no', '--dir', dir, '--logfile', join(dir, `${port}.log`),
    ];
    return { port, proc: spawn('redis-server', args, { stdio: 'ignore' }) };
  });
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    for (const n of nodes) n.proc.kill('SIGKILL');
    await sleep(100);
    rmSync(dir, { recursive: true, force: true });
  };
  t.teardown(stop);
  for (const n of nodes) {
    const until = Date.now() + 10_000;
    while (!(await ping(n.port))) {
      if (Date.now() > until) throw new Error(`redis-server on ${n.port} did not start`);
      await sleep(50);
    }
  }
  const cli = (args: string[], timeoutMs = 60_000) => {
    const r = spawnSync('redis-cli', args, { encoding: 'utf8', timeout: timeoutMs });
    if (r.status !== 0) throw new Error(`redis-cli ${args.join(' ')}: ${r.stderr || r.stdout}`);
    return r.stdout;
  };
  cli([
    '--cluster',
    'create',
    ...ports.map((p) => `127.0.0.1:${p}`),
    '--cluster-replicas',
    String(replicas),
    '--cluster-yes',
  ]);
  const cluster: TestCluster = {
    nodes,
    seeds: ports.map((p) => `127.0.0.1:${p}`).join(','),
    async masters() {
      const live = [...alive][0]!;
      return String(await info(live, 'nodes'))
        .split('\n')
        .filter((l) => / master /.test(` ${l.split(' ')[2]?.replace(/,/g, ' ')} `))
        .filter((l) => !/fail/.test(l.split(' ')[2] ?? ''))
        .map((l) => Number(/:(\d+)@/.exec(l)![1]));
    },
    kill(port) {
      alive.delete(port);
      nodes.find((n) => n.port === port)!.proc.kill('SIGKILL');
    },
    cli,
    cliAsync(args, timeoutMs = 90_000) {
      return new Promise((resolve, reject) => {
        const child = spawn('redis-cli', args, { stdio: ['ignore', 'pipe', 'pipe'] });
        let out = '';
        child.stdout.on('data', (c: Buffer) => (out += c.toString()));
        child.stderr.on('data', (c: Buffer) => (out += c.toString()));
        const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
        child.once('exit', (code) => {
          clearTimeout(timer);
          if (code === 0) resolve(out);
          else reject(new Error(`redis-cli ${args.join(' ')} exited ${code}: ${out.slice(-2000)}`));
        });
      });
    },
    async waitOk(timeoutMs = 60_000) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const states = await Promise.all(
          [...alive].map((p) => info(p, 'info').catch(() => 'cluster_state:down')),
        );
        if (states.every((s) => /cluster_state:ok/.test(s))) return;
        if (Date.now() > until) throw new Error('the test cluster did not reach cluster_state:ok');
        await sleep(100);
      }
    },
    stop,
  };
  await cluster.waitOk();
  return cluster;
}
