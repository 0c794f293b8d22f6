import t from 'tap';
import { loadSdkTesting } from '../interop/a2a-v03-alias.js';
import { demoToken, startAdcpService } from '../interop/support.js';

const AGENT = (process.env.DBG_AGENT ?? 'creative') as 'creative' | 'sales';
const IDS = (process.env.DBG_SB ?? 'creative_lifecycle').split(',');
t.test('debug', async (t) => {
  const service = await startAdcpService(t, process.env.DBG_UNSEEDED ? { testController: false } : {});
  const sdk = loadSdkTesting() as any;
  const url = service.urls[AGENT];
  const token = demoToken(service, AGENT);
  for (const id of IDS) {
    const sb = sdk.getComplianceStoryboardById(id);
    const result = await sdk.runStoryboard(`${url}/mcp`, sb, {
      protocol: 'mcp', allow_http: true, auth: { type: 'bearer', token },
      webhook_receiver: { mode: 'loopback_mock', host: '127.0.0.1' },
      test_kit: { auth: { probe_task: 'list_creatives', api_key: token } },
    });
    for (const p of result.phases) for (const s of p.steps) {
      console.log(id, s.step_id, s.task, s.skipped ? `SKIP ${s.skip_reason}` : s.passed ? 'ok' : 'FAIL',
        s.passed || s.skipped ? '' : JSON.stringify(s.validations.filter((v: any) => !v.passed)).slice(0, 800),
        s.passed || s.skipped ? '' : JSON.stringify(s.response ?? s.error ?? '').slice(0, 800));
    }
  }
});
