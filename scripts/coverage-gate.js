#!/usr/bin/env node
// The coverage floor. tap's own check is all-or-nothing; this one is a number we chose:
// lines and statements of the code under test must stay at or above FLOOR percent.
import { readFileSync } from 'node:fs';

const FLOOR = Number(process.env.SVC_COVERAGE_FLOOR ?? 80);
let summary;
try {
  summary = JSON.parse(readFileSync('.tap/report/coverage-summary.json', 'utf8'));
} catch {
  console.error('coverage-gate: no .tap/report/coverage-summary.json (did the tests run?)');
  process.exit(1);
}
const { lines, statements, functions } = summary.total;
console.log(
  `coverage: lines ${lines.pct}%, statements ${statements.pct}%, functions ${functions.pct}% (floor ${FLOOR}% on lines and statements)`,
);
if (lines.pct < FLOOR || statements.pct < FLOOR) {
  console.error(`coverage-gate: below the ${FLOOR}% floor`);
  process.exit(1);
}
