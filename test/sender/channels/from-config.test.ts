import t from 'tap';
import { ConfigError, loadConfig } from '../../../shared/config.js';
import { channelOptionsFromConfig } from '../../../sender/channels/from-config.js';

t.test('channel options come from the environment, within the spec ceilings', async (t) => {
  const defaults = channelOptionsFromConfig(loadConfig({}));
  t.same(defaults.coalescence, { generalSeconds: 300, latencySensitiveSeconds: 0 });
  t.equal(defaults.reportingClock?.tickIntervalMs, 1000);
  t.equal(defaults.aggregateReports, false, 'aggregated reports are opt-in');
  t.equal(
    channelOptionsFromConfig(loadConfig({ SVC_REPORT_AGGREGATION: '1' })).aggregateReports,
    true,
  );
  const set = channelOptionsFromConfig(
    loadConfig({
      SVC_IMPAIRMENT_WINDOW_SECONDS: '60',
      SVC_IMPAIRMENT_FAST_WINDOW_SECONDS: '10',
      SVC_CHANNEL_TICK_MS: '250',
      SVC_SENDER_ALLOW_HOSTS: '127.0.0.1,localhost',
    }),
  );
  t.same(set.coalescence, { generalSeconds: 60, latencySensitiveSeconds: 10 });
  t.equal(set.reportingClock?.tickIntervalMs, 250);
  t.same(set.allowHosts, ['127.0.0.1', 'localhost']);
  for (const [name, value] of [
    ['SVC_IMPAIRMENT_WINDOW_SECONDS', '301'],
    ['SVC_IMPAIRMENT_FAST_WINDOW_SECONDS', '60'],
    ['SVC_IMPAIRMENT_WINDOW_SECONDS', '-1'],
    ['SVC_CHANNEL_TICK_MS', 'often'],
    ['SVC_REPORT_AGGREGATION', 'yes'],
  ] as const) {
    const err = t.throws(() => loadConfig({ [name]: value })) as unknown;
    t.type(err, ConfigError, `${name}=${value}`);
    t.equal((err as ConfigError).variable, name);
  }
});
