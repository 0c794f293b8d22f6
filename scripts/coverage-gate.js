#!/usr/bin/env node
// The coverage floor. tap's own check is all-or-nothing; these are numbers we chose, a little
// under what the suite measured when they were set (lines 97.5 %, branches 89.4 %), so a
// change that drops tested code fails CI instead of drifting. The floors live in .taprc
// (tap prints its "incomplete coverage" line only under them); the variables override.
import { readFileSync } from 'node:fs';

function taprcFloor(name, fallback) {
  try {
    const m = new RegExp(`^${name}:\\s*(\\d+(?:\\.\\d+)?)\\s*$`, 'm').exec(
      readFileSync('.taprc', 'utf8'),
    );
    return m ? Number(m[1]) : fallback;
  } catch {
    return fallback;
  }
}

const FLOOR = Number(process.env.SVC_COVERAGE_FLOOR ?? taprcFloor('lines', 95));
const BRANCH_FLOOR = Number(process.env.SVC_BRANCH_COVERAGE_FLOOR ?? taprcFloor('branches', 85));
let summary;
try {
  summary = JSON.parse(readFileSync('.tap/report/coverage-summary.json', 'utf8'));
} catch {
  console.error('coverage-gate: no .tap/report/coverage-summary.json (did the tests run?)');
  process.exit(1);
}
const { lines, statements, functions, branches } = summary.total;
console.log(
  `coverage: lines ${lines.pct}%, statements ${statements.pct}%, branches ${branches.pct}%, functions ${functions.pct}% (floors: ${FLOOR}% lines and statements, ${BRANCH_FLOOR}% branches)`,
);
if (lines.pct < FLOOR || statements.pct < FLOOR || branches.pct < BRANCH_FLOOR) {
  console.error('coverage-gate: below the floor');
  process.exit(1);
}
