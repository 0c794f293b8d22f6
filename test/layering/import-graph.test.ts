/**
 * The layering of the source folders (issue 24), read from the import statements with the
 * TypeScript compiler's own pre-processor: `shared/` is below everyone; the parts (sender,
 * receiver, agents, conformance) import each other only through a public entry point
 * (`<part>/index.ts`; the agents use the sender through `sender/index.ts`); no part imports
 * the command table (`cli/`), which sits on top; and no module imports itself round a cycle.
 * Type-only imports count too: they are what a reader follows.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import t from 'tap';
import ts from 'typescript';

const root = join(import.meta.dirname, '../..');
const FOLDERS = ['shared', 'sender', 'receiver', 'agents', 'conformance', 'cli'];
const PARTS = new Set(['sender', 'receiver', 'agents', 'conformance']);

/**
 * Imports of another part's internals that remain. The list can only shrink: an entry that
 * no longer occurs fails the test, so whoever removes the import removes the line too.
 * Format: `importer -> imported`, paths from the repository root.
 */
const ALLOWED: readonly string[] = [];

/**
 * Cycles that remain, each a sorted list of its files. Each closes through a type-only
 * import (a row type declared next to the code that reads it), harmless at run time, in files
 * other branches are editing; move the type to its own module and remove the line.
 */
const ALLOWED_CYCLES: readonly string[] = [];

function sourceFiles(): string[] {
  const out: string[] = [];
  for (const folder of FOLDERS) {
    for (const e of readdirSync(join(root, folder), { recursive: true, withFileTypes: true })) {
      if (e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) {
        out.push(relative(root, join(e.parentPath, e.name)).split(sep).join('/'));
      }
    }
  }
  return out.sort();
}

/** file -> the source files it imports (relative specifiers only; packages are not ours). */
function importGraph(files: string[]): Map<string, string[]> {
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const info = ts.preProcessFile(readFileSync(join(root, file), 'utf8'), true, true);
    const targets: string[] = [];
    for (const { fileName } of info.importedFiles) {
      if (!fileName.startsWith('.')) continue;
      const resolved = join(dirname(file), fileName).split(sep).join('/').replace(/\.js$/, '.ts');
      if (known.has(resolved)) targets.push(resolved);
      else if (known.has(`${resolved}/index.ts`)) targets.push(`${resolved}/index.ts`);
    }
    graph.set(file, [...new Set(targets)]);
  }
  return graph;
}

const top = (file: string) => file.split('/')[0] as string;

/** Why `from` may not import `to`, or null when the layering allows it. */
function violation(from: string, to: string): string | null {
  const a = top(from);
  const b = top(to);
  if (a === b || a === 'cli') return null;
  if (b === 'cli') return 'imports the command table';
  if (a === 'shared') return 'shared imports a part above it';
  if (b === 'shared') return null;
  if (PARTS.has(b) && to !== `${b}/index.ts`) return `imports ${b}'s internals`;
  return null;
}

const files = sourceFiles();
const graph = importGraph(files);

t.test('no part imports the command table or another part’s internals', async (t) => {
  t.ok(files.length > 200, `read the source folders (${files.length} files)`);
  const found: string[] = [];
  const why = new Map<string, string>();
  for (const [from, targets] of graph) {
    for (const to of targets) {
      const v = violation(from, to);
      if (!v) continue;
      found.push(`${from} -> ${to}`);
      why.set(`${from} -> ${to}`, v);
    }
  }
  const unexpected = found.filter((f) => !ALLOWED.includes(f));
  t.same(
    unexpected.map((f) => `${f} (${why.get(f)})`),
    [],
    'no import runs upward or into another part',
  );
  const gone = ALLOWED.filter((f) => !found.includes(f));
  t.same(gone, [], 'every allow-list entry still occurs (remove the fixed ones)');
});

t.test('no import cycle', async (t) => {
  // Tarjan's strongly connected components: every component of more than one file, or a
  // file importing itself, is a cycle.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  let next = 0;
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || (graph.get(v) ?? []).includes(v)) cycles.push(scc.sort());
    }
  };
  for (const f of files) if (!index.has(f)) visit(f);
  const found = cycles.map((c) => c.join(' '));
  t.same(
    found.filter((c) => !ALLOWED_CYCLES.includes(c)),
    [],
    'no module is reachable from itself',
  );
  t.same(
    ALLOWED_CYCLES.filter((c) => !found.includes(c)),
    [],
    'every allowed cycle still occurs (remove the fixed ones)',
  );
});

t.test(
  'production code reads sandbox state from agents/sandbox/, not agents/testing/',
  async (t) => {
    // agents/testing/ is the comply_test_controller; the composition root registers it.
    const importers = [...graph]
      .filter(([from]) => !from.startsWith('agents/testing/'))
      .flatMap(([from, targets]) =>
        targets.filter((to) => to.startsWith('agents/testing/')).map((to) => `${from} -> ${to}`),
      );
    t.same(importers, ['agents/service.ts -> agents/testing/controller.ts']);
  },
);
