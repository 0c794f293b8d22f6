import t from 'tap';
import { ConfigError, loadConfig } from '../../shared/config.js';
import { brandProfile, isBrand } from '../../shared/brand.js';

t.test('defaults apply when the environment is empty', async (t) => {
  const c = loadConfig({});
  t.equal(c.SVC_BRAND, 'svc');
  t.equal(c.SVC_PROTOCOL_VERSION, '3.2');
  t.equal(c.REDIS_URL, undefined, "unset: the running svc start's, else the local default");
  t.equal(c.SVC_SERVICE_WAIT_SECONDS, 60);
  t.equal(c.SVC_QUEUE_PREFIX, undefined);
  t.equal(c.SVC_RECEIVER_ALLOW_HTTP_LOOPBACK, '0');
  t.equal(c.DATABASE_URL, undefined);
  t.equal(c.SVC_SALES_PORT, 3001);
  t.equal(c.SVC_RECEIVER_MAX_CONNECTIONS, 1024);
  t.equal(c.SVC_RECEIVER_BODY_BUDGET_MIB, 64);
  t.equal(c.SVC_RECEIVER_HEADERS_TIMEOUT_MS, 10_000);
  t.equal(c.SVC_RECEIVER_BODY_TIMEOUT_MS, 20_000);
  t.equal(c.SVC_RECEIVER_BODY_IDLE_TIMEOUT_MS, 10_000);
  t.equal(c.SVC_RECEIVER_SYNCHRONOUS_COMMIT, '0');
  t.equal(c.SVC_WORKER_DURABLE_CLAIMS, '1', 'claims wait for the WAL flush unless told not to');
});

t.test('a bad value names the variable and what it accepts', async (t) => {
  for (const [name, value, accepts] of [
    ['SVC_BRAND', 'acme', 'svc or adcp'],
    ['SVC_PROTOCOL_VERSION', '4.0', '3.1 or 3.2'],
    ['DATABASE_URL', 'mysql://x', 'postgres://'],
    ['REDIS_URL', 'not a url', 'redis://'],
    ['SVC_SALES_PORT', '70000', 'port number'],
    ['LOG_LEVEL', 'loud', 'info'],
    ['SVC_RECEIVER_MAX_CONNECTIONS', '0', 'open connections'],
    ['SVC_RECEIVER_BODY_BUDGET_MIB', '0.5', 'MiB'],
    ['SVC_RECEIVER_HEADERS_TIMEOUT_MS', '50', '100-600000'],
    ['SVC_RECEIVER_BODY_TIMEOUT_MS', 'soon', '100-600000'],
    ['SVC_RECEIVER_BODY_IDLE_TIMEOUT_MS', '0', '100-600000'],
    ['SVC_RECEIVER_SYNCHRONOUS_COMMIT', 'yes', 'WAL flush'],
    ['SVC_WORKER_DURABLE_CLAIMS', 'off', 'WAL flush'],
  ] as const) {
    const err = t.throws(() => loadConfig({ [name]: value })) as unknown;
    t.type(err, ConfigError);
    t.equal((err as ConfigError).variable, name);
    t.match((err as ConfigError).message, name);
    t.match((err as ConfigError).message, accepts);
  }
});

t.test('brand profiles derive every branded identifier', async (t) => {
  const svc = brandProfile('svc');
  t.equal(svc.webhookTag, 'svc/webhook-signing/v1');
  t.equal(svc.useMember, 'svc_use');
  t.equal(svc.hmacSignatureHeader, 'X-SVC-Signature');
  t.equal(svc.callAgentTool, 'call_svc_agent');
  t.equal(svc.capabilitiesTask, 'get_svc_capabilities');
  const adcp = brandProfile('adcp');
  t.equal(adcp.webhookTag, 'adcp/webhook-signing/v1');
  t.equal(adcp.hmacTimestampHeader, 'X-ADCP-Timestamp');
  t.equal(brandProfile(), svc, 'default brand is svc and profiles are cached');
  t.ok(isBrand('adcp'));
  t.notOk(isBrand('ADCP'));
});
