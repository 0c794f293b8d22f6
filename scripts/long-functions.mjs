#!/usr/bin/env node
// `node scripts/long-functions.mjs [min]`: the functions of the source folders longer than
// `min` lines (default 100; issue 24's limit), longest first, as lines, file:line and name.
// A development check: it walks the TypeScript syntax tree (typescript's parser), so nested
// functions are counted on their own and inside their parent.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SOURCE_DIRS = ['agents', 'sender', 'receiver', 'shared', 'conformance', 'cli'];
const min = Number(process.argv[2] ?? 100);
const found = [];

function nameOf(node) {
  if (node.name) return node.name.getText();
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) {
    return parent.name.getText();
  }
  return '<anonymous>';
}

function scanFile(file) {
  const text = fs.readFileSync(file, 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const visit = (node) => {
    if (ts.isFunctionLike(node) && node.body) {
      const first = source.getLineAndCharacterOfPosition(node.getStart()).line;
      const last = source.getLineAndCharacterOfPosition(node.end).line;
      const lines = last - first + 1;
      if (lines > min)
        found.push([lines, `${path.relative(root, file)}:${first + 1}`, nameOf(node)]);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
}

function walk(dir) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) walk(full);
    else if (full.endsWith('.ts') && !full.endsWith('.d.ts')) scanFile(full);
  }
}

for (const dir of SOURCE_DIRS) {
  if (fs.existsSync(path.join(root, dir))) walk(path.join(root, dir));
}
found.sort((a, b) => b[0] - a[0]);
for (const row of found) console.log(row.join('\t'));
