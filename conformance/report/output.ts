/** Writes a report the way the tester asked: table or JSON on stdout, JUnit to a file. */
import { writeFile } from 'node:fs/promises';
import { renderJson, renderJunit, renderTable } from './render.js';
import { exitCodeOf, type ConformanceReport } from './report.js';

export interface OutputOptions {
  json?: boolean;
  junit?: string;
  write?: (text: string) => void;
}

export async function emitReport(report: ConformanceReport, o: OutputOptions): Promise<0 | 1> {
  const write = o.write ?? ((s: string) => process.stdout.write(s));
  write(o.json ? renderJson(report) : renderTable(report));
  if (o.junit) await writeFile(o.junit, renderJunit(report));
  return exitCodeOf(report);
}
