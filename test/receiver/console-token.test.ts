/**
 * The sidecar console token off the command line (issue 21 item 7, sidecar part): from
 * SVC_RECEIVER_CONSOLE_TOKEN or a token file only its owner may read. The token never has to
 * sit in /proc/<pid>/cmdline; a missing, empty, loose or ambiguous source stops the start
 * with a message naming the option and never the token.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { UsageError } from '../../receiver/sidecar/command.js';
import { resolveConsoleToken } from '../../receiver/sidecar/console-token.js';
import { DATABASE_URL, testDatabase } from '../helpers/db.js';

const { schema } = testDatabase(t, 'rctok');
const dir = mkdtempSync(join(tmpdir(), 'rctok-'));
const TOKEN = 'console-token-0123456789-abcdef';

function file(name: string, content: string, mode = 0o600): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  chmodSync(path, mode);
  return path;
}

const opt = (path: string) => ({ path, option: '--console-token-file' });

t.test('the sources and their malformed forms', async (t) => {
  t.equal(await resolveConsoleToken({}), null, 'none: credentials.json');
  t.same(await resolveConsoleToken({ file: opt(file('ok', `${TOKEN}\n`)) }), {
    token: TOKEN,
    source: 'file',
  });
  t.same(await resolveConsoleToken({ file: opt(file('ro', TOKEN, 0o400)) }), {
    token: TOKEN,
    source: 'file',
  });
  t.same(await resolveConsoleToken({ variable: TOKEN }), { token: TOKEN, source: 'variable' });
  t.same(await resolveConsoleToken({ flag: TOKEN }), { token: TOKEN, source: 'flag' });

  const refused: Array<[Parameters<typeof resolveConsoleToken>[0], RegExp]> = [
    [
      { file: opt(join(dir, 'missing')) },
      /^--console-token-file: .*missing cannot be read \(ENOENT\)$/,
    ],
    [{ file: opt(file('empty', '')) }, /^--console-token-file: .*empty is empty$/],
    [{ file: opt(file('newline', '\n')) }, /is empty$/],
    [{ file: opt(file('short', 'abc\n')) }, /at least 16 characters/],
    [{ file: opt(file('two-lines', `${TOKEN}\n${TOKEN}\n`)) }, /one word/],
    [
      { file: opt(file('world', TOKEN, 0o644)) },
      /open to group or others \(mode 0644\).*chmod 600/,
    ],
    [{ file: opt(file('group', TOKEN, 0o640)) }, /\(mode 0640\)/],
    [{ file: opt(file('group-write', TOKEN, 0o620)) }, /\(mode 0620\)/],
    [{ file: opt(file('big', 'x'.repeat(5000))) }, /larger than 4096 bytes/],
    [{ variable: 'short' }, /^SVC_RECEIVER_CONSOLE_TOKEN: the token must have at least 16/],
    [{ variable: `${TOKEN} x` }, /^SVC_RECEIVER_CONSOLE_TOKEN: .*one word/],
    [{ flag: 'short' }, /^--console-token: /],
    [
      { flag: TOKEN, variable: TOKEN },
      /given 2 ways \(--console-token, SVC_RECEIVER_CONSOLE_TOKEN\)/,
    ],
    [{ variable: TOKEN, file: opt(file('both', TOKEN)) }, /given 2 ways/],
  ];
  const sub = join(dir, 'a-directory');
  mkdirSync(sub, { mode: 0o700 });
  refused.push([{ file: opt(sub) }, /is not a regular file/]);
  for (const [sources, message] of refused) {
    const err = await resolveConsoleToken(sources).then(
      () => null,
      (e: Error) => e,
    );
    t.type(err, UsageError, message.source);
    t.match(err?.message, message, message.source);
    t.notMatch(err?.message ?? '', /console-token-0123456789/, 'never echoes the token');
  }
});

function run(args: string[], env: Record<string, string> = {}) {
  const child = spawn(
    process.execPath,
    ['bin/svc.js', 'receiver', '--listen', '127.0.0.1:0', '--queue', 'q', ...args],
    {
      env: {
        ...process.env,
        DATABASE_URL,
        SVC_RECEIVER_SCHEMA: schema,
        SVC_DATA_DIR: join(dir, 'data'),
        LOG_LEVEL: 'silent',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  return { child, exited, out: () => out, err: () => err };
}

async function consoleUrl(p: ReturnType<typeof run>): Promise<string | undefined> {
  const url = () => /receiver console on (\S+)/.exec(p.out())?.[1];
  for (let i = 0; i < 600 && !url() && p.child.exitCode === null; i++) {
    await new Promise((r) => setTimeout(r, 50));
  }
  return url();
}

t.test('svc receiver: the console takes the token from a file or the variable', async (t) => {
  const trust = file('trust.json', JSON.stringify({ senders: [] }));
  for (const [how, args, env] of [
    ['file', ['--console-token-file', file('token', `${TOKEN}\n`)], {}],
    ['variable', [], { SVC_RECEIVER_CONSOLE_TOKEN: TOKEN }],
  ] as const) {
    const p = run(['--trust', trust, '--console-listen', '127.0.0.1:0', ...args], env);
    t.teardown(() => void p.child.kill('SIGKILL'));
    const url = await consoleUrl(p);
    t.ok(url, `${how}: console started (${p.err().slice(0, 300)})`);
    if (!url) continue;
    const cmdline = readFileSync(`/proc/${p.child.pid}/cmdline`, 'utf8');
    t.notMatch(cmdline, TOKEN, `${how}: not in /proc/<pid>/cmdline`);
    const ok = await fetch(`${url}/api/rejections`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    t.equal(ok.status, 200, `${how}: the token opens the console`);
    const wrong = await fetch(`${url}/api/rejections`, {
      headers: { authorization: 'Bearer console-token-wrong-000000000' },
    });
    t.equal(wrong.status, 401, `${how}: another does not`);
    p.child.kill('SIGTERM');
    t.equal(await p.exited, 0);
  }
  const loose = run([
    '--trust',
    trust,
    '--console-listen',
    '127.0.0.1:0',
    '--console-token-file',
    file('loose', TOKEN, 0o644),
  ]);
  t.equal(await loose.exited, 2, 'a loose token file stops the start');
  t.match(loose.err(), /svc receiver: --console-token-file: .*loose is open to group or others/);
  t.notMatch(loose.err(), TOKEN);
  const fromEnv = run(['--trust', trust], {
    SVC_RECEIVER_CONSOLE_TOKEN_FILE: join(dir, 'nothing-here'),
  });
  t.equal(await fromEnv.exited, 2);
  t.match(fromEnv.err(), /SVC_RECEIVER_CONSOLE_TOKEN_FILE: .*nothing-here cannot be read/);
});
