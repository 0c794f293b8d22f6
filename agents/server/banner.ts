/**
 * What `svc start` prints once ready: where each agent answers, which backing services it
 * uses and why, one `svc call` per agent that works as pasted, a `create_media_buy` whose
 * webhooks go to a local receiver (with the `--allow-hosts` setting it needs), the approval
 * mode and how to change it, where the demo credentials are (a file, never the terminal),
 * and what to read next.
 */
import type { AgentKind } from '../auth/principal.js';
import { AGENT_KINDS } from '../auth/principal.js';
import type { ApprovalPolicy } from '../runtime/settings.js';
import type { DemoCredential } from '../seed.js';
import type { AgentsService } from './seller-process.js';

/** The `agents` section of the credentials file (README "Demo credentials"). */
export function agentsCredentialsSection(
  urls: Record<AgentKind, string>,
  credentials: DemoCredential[],
): Record<string, unknown> {
  return {
    written_at: new Date().toISOString(),
    urls,
    principals: credentials.map((c) => ({
      agent: c.agent,
      principal_id: c.principal_id,
      name: c.name,
      api_key: c.api_key,
      bearer_token: c.bearer_token,
    })),
  };
}

/**
 * One command per agent that runs as pasted from the repository root (`--as` reads the
 * credentials file, so a data directory other than the default is named in the command).
 */
export function exampleCalls(
  urls: Record<AgentKind, string>,
  dataDir = DEFAULT_DATA_DIR,
): Record<AgentKind, string> {
  const env = dataDir === DEFAULT_DATA_DIR ? '' : `SVC_DATA_DIR=${shellQuote(dataDir)} `;
  return {
    sales: `${env}npx svc call ${urls.sales} get_products '{"brief":"video for sports fans"}' --as demo-buyer`,
    creative: `npx svc call ${urls.creative} list_creative_formats '{"type":"video"}'`,
    signals: `npx svc call ${urls.signals} get_agent_capabilities`,
  };
}

const DEFAULT_DATA_DIR = '.data';

/** Where `svc receiver` listens by default, and the path the README sends webhooks to. */
export const LOCAL_RECEIVER_WEBHOOK_URL = 'http://127.0.0.1:8787/webhooks';

/**
 * A `create_media_buy` the seeded catalog accepts, in the published form (every member the
 * validator requires), its task webhooks to `webhookUrl`. The key is fresh per start: a
 * second paste answers the same task (idempotent replay), never a second buy.
 */
export function exampleBuy(webhookUrl: string, now = new Date()): Record<string, unknown> {
  return {
    idempotency_key: `first-buy-${now.getTime().toString(36)}`,
    brand: { domain: 'acme.example' },
    packages: [{ product_id: 'video_olv_news', pricing_option_id: 'olv_news_cpm', budget: 5000 }],
    start_time: 'asap',
    end_time: new Date(now.getTime() + 30 * 86_400_000).toISOString().replace(/\.\d{3}Z$/, 'Z'),
    push_notification_config: { url: webhookUrl },
  };
}

/** What the sender may reach and how buys are approved: the demo's two settings. */
export interface WebhookDemo {
  approval: ApprovalPolicy;
  /** SVC_SENDER_ALLOW_HOSTS as this process runs with it. */
  allowHosts: string[];
  now?: Date;
}

function approvalLine(approval: ApprovalPolicy): string {
  const how = '(--approval or SVC_AGENTS_APPROVAL: manual, never or seconds; restart to change)';
  if (approval === 'manual') {
    return `approval manual: pending buys wait for \`npx svc approve <task_id>\` ${how}`;
  }
  if (approval === 'never') return `approval never: pending buys are never approved ${how}`;
  return `approval automatic after ${approval.autoAfterSeconds} s: a later \`svc approve\` finds the buy approved (INVALID_STATE); for manual approval restart with --approval manual ${how}`;
}

/** The banner lines of the local-webhook example (README "The first hour"). */
export function webhookExample(
  salesUrl: string,
  demo: WebhookDemo,
  dataDir = DEFAULT_DATA_DIR,
): string[] {
  const host = new URL(LOCAL_RECEIVER_WEBHOOK_URL).hostname;
  const env = dataDir === DEFAULT_DATA_DIR ? '' : `SVC_DATA_DIR=${shellQuote(dataDir)} `;
  const body = shellQuote(JSON.stringify(exampleBuy(LOCAL_RECEIVER_WEBHOOK_URL, demo.now)));
  const allowed = demo.allowHosts.includes(host);
  return [
    `a media buy whose task webhooks go to a local receiver (\`svc receiver\`, README "The first hour"):`,
    `  ${env}npx svc call ${salesUrl} create_media_buy ${body} --as demo-buyer`,
    allowed
      ? `  webhooks to ${host}: allowed (--allow-hosts ${demo.allowHosts.join(',')})`
      : `  webhooks to ${host} need it allowed: restart with \`npx svc start --allow-hosts ${host}\` (or SVC_SENDER_ALLOW_HOSTS=${host}; \`npm start -- --allow-hosts ${host}\`)`,
    approvalLine(demo.approval),
  ];
}

function shellQuote(s: string): string {
  return /^[A-Za-z0-9_./:-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

export function startBanner(
  service: Pick<
    AgentsService,
    | 'profile'
    | 'urls'
    | 'oauth'
    | 'databaseUrl'
    | 'embeddedPostgres'
    | 'redisUrl'
    | 'privateRedisReason'
    | 'queuePrefix'
  > & { console?: AgentsService['console'] },
  credentialsFile: string,
  production: boolean,
  dataDir = DEFAULT_DATA_DIR,
  testController = false,
  demo?: WebhookDemo,
): string {
  const u = service.urls;
  const out: string[] = [`${service.profile.brand} agents are up`, ''];
  for (const agent of AGENT_KINDS) {
    out.push(
      `${agent.padEnd(9)}${u[agent]}  (MCP ${u[agent]}/mcp, A2A ${u[agent]}/a2a, card ${u[agent]}/.well-known/agent-card.json)`,
    );
  }
  out.push(`keys     ${u.sales}/.well-known/jwks.json, ${u.sales}/.well-known/brand.json`);
  if (service.oauth) {
    out.push(
      `oauth    ${service.oauth.issuer('sales')}/register (and on every agent origin): ` +
        (service.oauth.initialAccessToken
          ? `needs the initial access token (section "oauth" of ${credentialsFile}; SVC_OAUTH_OPEN_REGISTRATION=1 opens it)`
          : 'open to anyone (SVC_OAUTH_OPEN_REGISTRATION=1)'),
      '         a registered client acts as nobody until bound: svc oauth clients list|bind|unbind',
      service.oauth.devLogin
        ? "sign-in  development page ON (SVC_OAUTH_DEV_LOGIN=1), loopback only: a principal's API key or the one-time code printed on this terminal"
        : 'sign-in  off: authorization_code needs SVC_OAUTH_DEV_LOGIN=1 (development page, loopback only)',
    );
  }
  if (service.console) {
    out.push(
      service.console.oidcIssuer
        ? `console  ${service.console.url}  (operators sign in through ${service.console.oidcIssuer}; API token: section "console" of ${service.console.credentialsFile})`
        : `console  ${service.console.url}  (operator token: section "console" of ${service.console.credentialsFile})`,
    );
  }
  const db = new URL(service.databaseUrl);
  out.push(
    '',
    service.embeddedPostgres
      ? `postgres embedded, ${service.embeddedPostgres} on 127.0.0.1:${db.port} (DATABASE_URL unset; stopped with this process)`
      : `postgres ${db.hostname}:${db.port || 5432}/${db.pathname.slice(1)} (DATABASE_URL)`,
    service.privateRedisReason
      ? `redis    private redis-server at ${service.redisUrl} (${service.privateRedisReason})`
      : `redis    ${service.redisUrl}`,
    `queue    BullMQ prefix ${service.queuePrefix} (SVC_QUEUE_PREFIX)`,
    '',
    `credentials  demo API keys and 30-day bearer tokens: ${credentialsFile} (owner-only, section "agents")`,
  );
  if (testController) {
    out.push(
      'test controller: comply_test_controller is on for the demo principals (sandbox accounts;',
      'it never answers a production principal)',
    );
  }
  if (!production) {
    const calls = exampleCalls(u, dataDir);
    out.push('', 'try:');
    for (const agent of AGENT_KINDS) out.push(`  ${calls[agent]}`);
    out.push(
      `  npx svc call ${u.sales} --list        (every task and its required fields)`,
      '',
      ...(demo ? [...webhookExample(u.sales, demo, dataDir), ''] : []),
      'next: README.md "The first hour" (a webhook to a local receiver, the sidecar, the conformance kit)',
    );
  }
  return out.join('\n');
}
