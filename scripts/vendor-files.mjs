// The part both vendoring scripts share (vendor-schemas.mjs, vendor-storyboards.mjs): their
// command line (`[--source DIR] [--check]`), and writing a set of files into a vendored
// folder, or with --check comparing it and exiting 1 when it is stale (the CI drift check).
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/** Every file below `dir`, as paths relative to `base`. */
export function listFiles(dir, base = dir, out = []) {
  if (!existsSync(dir)) return out;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) listFiles(p, base, out);
    else out.push(relative(base, p));
  }
  return out;
}

/**
 * Runs a vendoring script: `name` for messages, `usage` its help text, `defaultSource` the
 * folder read without --source, `out` the vendored folder, `root` the repository,
 * `wanted(source)` the vendored path -> text map, `clean()` what to remove before writing,
 * `summary(wanted)` a note after the count.
 */
export function vendorCli({ name, usage, defaultSource, out, root, wanted, clean, summary }) {
  const args = { source: defaultSource, check: false };
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--help' || a === '-h') {
      process.stdout.write(usage);
      process.exit(0);
    } else if (a === '--check') args.check = true;
    else if (a === '--source' && argv[i + 1]) args.source = resolve(argv[++i]);
    else {
      process.stderr.write(`${name}: unknown argument ${a}\n`);
      process.stdout.write(usage);
      process.exit(2);
    }
  }
  const files = wanted(args.source);
  if (args.check) {
    const have = new Set(listFiles(out));
    const stale = [];
    for (const [file, text] of files) {
      const p = join(out, file);
      if (!existsSync(p) || readFileSync(p, 'utf8') !== text) stale.push(file);
      have.delete(file);
    }
    stale.push(...have);
    if (stale.length > 0) {
      process.stderr.write(
        `${name}: ${stale.length} file(s) differ, e.g. ${stale.slice(0, 5).join(', ')}; run node scripts/${name}.mjs\n`,
      );
      process.exit(1);
    }
    process.stdout.write(`${name}: ${files.size} files up to date\n`);
    return;
  }
  clean();
  for (const [file, text] of files) {
    const p = join(out, file);
    mkdirSync(dirname(p), { recursive: true });
    writeFileSync(p, text);
  }
  const note = summary ? ` (${summary(files)})` : '';
  process.stdout.write(`${name}: ${files.size} files into ${relative(root, out)}${note}\n`);
}

export function removeTree(dir) {
  rmSync(dir, { recursive: true, force: true });
}
