/**
 * The three faces of a conformance report: a table for people, JSON for machines and
 * JUnit XML for CI (passed = testcase, failed = <failure>, not applicable = <skipped>).
 */
import type { CheckResult, ConformanceReport, Exchange, MessageRecord } from './report.js';

const MARK: Record<CheckResult['status'], string> = {
  passed: 'PASS',
  failed: 'FAIL',
  not_applicable: 'N/A ',
};

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}

/**
 * The whole text in lines of at most `width` characters (broken at spaces where it can),
 * the first as is, the rest behind `indent`: details and errors are wrapped, never cut.
 */
export function wrapped(text: string, width: number, indent: string): string {
  const words = text.replace(/\s+/g, ' ').trim().split(' ');
  const lines: string[] = [];
  let line = '';
  for (let word of words) {
    while (word.length > width) {
      if (line) lines.push(line);
      lines.push(word.slice(0, width));
      word = word.slice(width);
      line = '';
    }
    if (!line) line = word;
    else if (line.length + 1 + word.length <= width) line += ` ${word}`;
    else {
      lines.push(line);
      line = word;
    }
  }
  if (line || lines.length === 0) lines.push(line);
  return lines.join(`\n${indent}`);
}

function describeMessage(prefix: string, m: MessageRecord): string {
  const size = m.bodyBytes !== undefined ? ` (${m.bodyBytes} bytes)` : '';
  if (m.method !== undefined) {
    const body = m.body && m.status === undefined ? ` ${oneLine(m.body, 120)}` : '';
    return `${prefix} ${m.method} ${m.url ?? ''}${size}${body}`;
  }
  const www = m.headers?.['www-authenticate'];
  const body = m.body ? ` ${oneLine(m.body, 120)}` : '';
  return `${prefix} ${m.status ?? ''}${www ? ` [WWW-Authenticate: ${www}]` : ''}${body}`;
}

/**
 * One line per message. Grading a receiver, the kit sent a request and got a status;
 * grading a sender, it got a request and answered a status: either reads in order.
 */
function describeExchange(x: Exchange): string[] {
  const label = x.label ? `${x.label}: ` : '';
  const lines: string[] = [];
  const inbound = x.received?.method !== undefined;
  if (inbound) {
    lines.push(describeMessage(`${label}got`, x.received!));
    if (x.sent) lines.push(describeMessage(`${label}answered`, x.sent));
  } else {
    if (x.sent) lines.push(describeMessage(`${label}sent`, x.sent));
    if (x.received) lines.push(describeMessage(`${label}got`, x.received));
  }
  if (x.error) lines.push(`${label}error: ${x.error}`);
  return lines;
}

/** A fixed-width table; failures are followed by what was sent and what came back. */
export function renderTable(report: ConformanceReport): string {
  const idWidth = Math.min(60, Math.max(5, ...report.checks.map((c) => c.id.length)));
  const out: string[] = [
    `Conformance: grading a ${report.graded} at ${report.target}`,
    `brand ${report.brand}, protocol ${report.protocolVersion}`,
    '',
  ];
  if (report.undriven) {
    out.push(`COULD NOT GRADE: ${wrapped(report.undriven, 100, '                 ')}`, '');
  }
  out.push(`${'STAT'}  ${'CHECK'.padEnd(idWidth)}  DETAIL`);
  const detailIndent = ' '.repeat(idWidth + 6);
  // Lines of at most 120 characters, whatever the width of the check names.
  const detailWidth = Math.max(40, 120 - detailIndent.length);
  for (const c of report.checks) {
    const detail = wrapped(c.detail ?? c.title, detailWidth, detailIndent);
    out.push(`${MARK[c.status]}  ${c.id.padEnd(idWidth)}  ${detail}`);
    if (c.status === 'failed') {
      out.push(`      expected: ${wrapped(c.expected, 120, '                ')}`);
      for (const x of c.exchanges) for (const l of describeExchange(x)) out.push(`      ${l}`);
    }
  }
  const s = report.summary;
  out.push(
    '',
    `${s.passed} passed, ${s.failed} failed, ${s.notApplicable} not applicable (${s.total} checks)` +
      (report.undriven ? ': not graded, the kit could not drive it (see above)' : ''),
  );
  return `${out.join('\n')}\n`;
}

export function renderJson(report: ConformanceReport): string {
  return `${JSON.stringify(report, null, 2)}\n`;
}

function xml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .split('')
    .filter((ch) => {
      // XML 1.0 has no place for C0 controls other than tab, LF and CR.
      const c = ch.charCodeAt(0);
      return c >= 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
    })
    .join('');
}

export function renderJunit(report: ConformanceReport): string {
  const s = report.summary;
  const name = `conformance.${report.graded}`;
  // The run that could not drive its target is one more failed test case.
  const extra = report.undriven ? 1 : 0;
  const lines = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="${xml(name)}" tests="${s.total + extra}" failures="${s.failed + extra}" skipped="${s.notApplicable}">`,
    `  <testsuite name="${xml(name)}" tests="${s.total + extra}" failures="${s.failed + extra}" skipped="${s.notApplicable}" timestamp="${xml(report.startedAt)}">`,
  ];
  if (report.undriven) {
    lines.push(
      `    <testcase classname="${xml(name)}" name="driven">`,
      `      <failure message="${xml(report.undriven)}" type="undriven"/>`,
      '    </testcase>',
    );
  }
  for (const c of report.checks) {
    const head = `    <testcase classname="${xml(`${name}.${c.group}`)}" name="${xml(c.id)}"`;
    if (c.status === 'passed') {
      lines.push(`${head}/>`);
    } else if (c.status === 'not_applicable') {
      lines.push(
        `${head}>`,
        `      <skipped message="${xml(c.detail ?? '')}"/>`,
        '    </testcase>',
      );
    } else {
      const story = [`expected: ${c.expected}`, ...c.exchanges.flatMap(describeExchange)].join(
        '\n',
      );
      lines.push(
        `${head}>`,
        `      <failure message="${xml(c.detail ?? 'failed')}" type="${xml(c.code ?? 'failed')}">${xml(story)}</failure>`,
        '    </testcase>',
      );
    }
  }
  lines.push('  </testsuite>', '</testsuites>');
  return `${lines.join('\n')}\n`;
}
