/**
 * Every JavaScript or TypeScript block in our READMEs is one of examples/ verbatim, and every
 * example is shown somewhere: the package test (install.test.ts) compiles and runs those
 * files from the installed tarball, so what a reader copies is what was tested.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { REPO } from './scratch-app.js';

const READMES = ['README.md', 'receiver/README.md', 'sender/README.md'];
const BLOCK = /^```(js|mjs|javascript|ts|typescript)\n([\s\S]*?)^```$/gm;

const examples = new Map(
  readdirSync(join(REPO, 'examples')).map((f) => [
    f,
    readFileSync(join(REPO, 'examples', f), 'utf8').trimEnd(),
  ]),
);

const shown = new Set<string>();
for (const readme of READMES) {
  t.test(readme, async (t) => {
    const text = readFileSync(join(REPO, readme), 'utf8');
    const blocks = [...text.matchAll(BLOCK)].map((m) => m[2]!.trimEnd());
    for (const [i, block] of blocks.entries()) {
      const file = [...examples].find(([, content]) => content === block)?.[0];
      t.ok(file, `block ${i + 1} is an examples/ file: ${block.split('\n')[0]}`);
      if (file) {
        shown.add(file);
        t.match(text, `examples/${file}`, `${readme} links examples/${file}`);
      }
    }
  });
}

t.test('every example is shown in a README', async (t) => {
  t.same(
    [...examples.keys()].filter((f) => !shown.has(f)),
    [],
  );
});

t.test("the README's import table lists every name its examples import", async (t) => {
  const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
  const rows = new Map(
    [...readme.matchAll(/^\| `svc-webhooks\/(\w+)` \| (.*) \|$/gm)].map((m) => [m[1]!, m[2]!]),
  );
  t.same([...rows.keys()].sort(), ['conformance', 'receiver', 'sender', 'signing']);
  for (const [file, content] of examples) {
    for (const m of content.matchAll(/import \{([^}]*)\} from 'svc-webhooks\/(\w+)'/g)) {
      const names = m[1]!
        .split(',')
        .map((n) => n.trim().replace(/^type\s+/, ''))
        .filter(Boolean);
      for (const name of names) {
        t.match(rows.get(m[2]!) ?? '', `\`${name}\``, `${file}: ${name} of svc-webhooks/${m[2]}`);
      }
    }
  }
});
