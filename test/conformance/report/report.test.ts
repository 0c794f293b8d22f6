import t from 'tap';
import {
  buildReport,
  CheckRecorder,
  excerpt,
  exitCodeOf,
  type CheckResult,
} from '../../../conformance/report/report.js';
import { renderJson, renderJunit, renderTable } from '../../../conformance/report/render.js';

function report(checks: CheckResult[]) {
  return buildReport({
    graded: 'receiver',
    target: 'http://127.0.0.1:1/x',
    brand: 'svc',
    protocolVersion: '3.2',
    startedAt: '2026-05-26T10:00:00.000Z',
    checks,
  });
}

const pass = new CheckRecorder('a.pass', 'g', 'passes', '2xx').pass('got 200');
const na = new CheckRecorder('a.na', 'g', 'cannot run', '2xx').notApplicable('no hook <here>');
const fail = new CheckRecorder('a.fail', 'g', 'fails', '401 & "exact"')
  .add({
    sent: { method: 'POST', url: 'http://x/y', headers: {}, body: '{}', bodyBytes: 2 },
    received: { status: 200, headers: { 'www-authenticate': 'Signature error="x"' }, body: 'ok' },
  })
  .add({ label: 'second', error: 'ECONNRESET' })
  .fail('got 200 <b>&\u0001', 'code_x');

t.test('exit code: 0 only when something passed and nothing failed', async (t) => {
  t.equal(exitCodeOf(report([pass, na])), 0);
  t.equal(exitCodeOf(report([pass, fail])), 1);
  t.equal(exitCodeOf(report([na])), 1, 'nothing graded is not a pass');
  t.equal(exitCodeOf(report([])), 1);
  t.same(report([pass, na, fail]).summary, { total: 3, passed: 1, failed: 1, notApplicable: 1 });
});

t.test('JUnit: failures, skips, escaped text, no control characters', async (t) => {
  const xml = renderJunit(report([pass, na, fail]));
  t.match(xml, /tests="3" failures="1" skipped="1"/);
  t.match(xml, /<testcase classname="conformance.receiver.g" name="a.pass"\/>/);
  t.match(xml, /<skipped message="no hook &lt;here&gt;"\/>/);
  t.match(
    xml,
    /<failure message="got 200 &lt;b&gt;&amp;" type="code_x">expected: 401 &amp; &quot;exact&quot;/,
  );
  t.notOk(xml.includes('\u0001'), 'control characters dropped');
  t.match(xml, /second: error: ECONNRESET/);
});

t.test('table and JSON', async (t) => {
  const r = report([pass, na, fail]);
  const table = renderTable(r);
  t.match(table, /^PASS {2}a\.pass/m);
  t.match(table, /^N\/A {3}a\.na/m);
  t.match(table, /^FAIL {2}a\.fail/m);
  t.match(table, /sent POST http:\/\/x\/y \(2 bytes\) \{\}/);
  t.match(table, /got 200 \[WWW-Authenticate: Signature error="x"\] ok/);
  t.match(table, /1 passed, 1 failed, 1 not applicable \(3 checks\)/);
  t.same(JSON.parse(renderJson(r)), JSON.parse(JSON.stringify(r)));
});

t.test('excerpts are cut and say how long the body was', async (t) => {
  t.equal(excerpt('short'), 'short');
  t.equal(excerpt(undefined), undefined);
  t.match(excerpt('x'.repeat(2000)), /… \(2000 bytes\)$/);
});
