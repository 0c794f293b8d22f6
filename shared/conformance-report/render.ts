/**
 * The three faces of a conformance report: a table for people, JSON for machines and
 * JUnit XML for CI (passed = testcase, failed = <failure>, not applicable = <skipped>).
 */
import type { CheckResult, ConformanceReport, Exchange } from './report.js';

const MARK: Record<CheckResult['status'], string> = {
  passed: 'PASS',
  failed: 'FAIL',
  not_applicable: 'N/A ',
};

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}

function describeExchange(x: Exchange): string[] {
  const lines: string[] = [];
  const label = x.label ? `${x.label}: ` : '';
  if (x.sent) {
    const size = x.sent.bodyBytes !== undefined ? ` (${x.sent.bodyBytes} bytes)` : '';
    lines.push(`${label}sent ${x.sent.method ?? ''} ${x.sent.url ?? ''}${size}`.trim());
  }
  if (x.received) {
    const www = x.received.headers?.['www-authenticate'];
    const body = x.received.body ? ` ${oneLine(x.received.body, 120)}` : '';
    lines.push(
      `${label}got ${x.received.status ?? ''}${www ? ` [WWW-Authenticate: ${www}]` : ''}${body}`,
    );
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
    `${'STAT'}  ${'CHECK'.padEnd(idWidth)}  DETAIL`,
  ];
  for (const c of report.checks) {
    const detail = oneLine(c.detail ?? c.title, 110);
    out.push(`${MARK[c.status]}  ${c.id.padEnd(idWidth)}  ${detail}`);
    if (c.status === 'failed') {
      out.push(`      expected: ${oneLine(c.expected, 140)}`);
      for (const x of c.exchanges) for (const l of describeExchange(x)) out.push(`      ${l}`);
    }
  }
  const s = report.summary;
  out.push(
    '',
    `${s.passed} passed, ${s.failed} failed, ${s.notApplicable} not applicable (${s.total} checks)`,
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
  const lines = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="${xml(name)}" tests="${s.total}" failures="${s.failed}" skipped="${s.notApplicable}">`,
    `  <testsuite name="${xml(name)}" tests="${s.total}" failures="${s.failed}" skipped="${s.notApplicable}" timestamp="${xml(report.startedAt)}">`,
  ];
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
