import t from 'tap';
import { buildProgram, main, unknownCommand } from '../../cli/main.js';
import { describeVariables } from '../../shared/config.js';

t.test('an unknown command names the nearest, at every level', async (t) => {
  const program = buildProgram();
  t.match(
    unknownCommand(program, ['strat']),
    /svc: unknown command "strat"; did you mean "start"\?/,
  );
  t.match(unknownCommand(program, ['nosuch', '--help']), /unknown command "nosuch" \(svc --help/);
  t.match(
    unknownCommand(program, ['keys', 'jwk']),
    /svc keys: unknown command "jwk"; did you mean "jwks"/,
  );
  t.equal(unknownCommand(program, ['start', '--help']), null);
  t.equal(unknownCommand(program, ['call', 'http://x', 'anything']), null, 'arguments of a leaf');
  t.equal(unknownCommand(program, ['help']), null);
  t.equal(unknownCommand(program, ['--version']), null);
});

t.test('main: an unknown command exits 2 with the message on stderr', async (t) => {
  const write = process.stderr.write;
  let err = '';
  process.stderr.write = ((c: string) => {
    err += c;
    return true;
  }) as typeof process.stderr.write;
  try {
    await main(['node', 'svc', 'nosuch', '--help']);
  } finally {
    process.stderr.write = write;
  }
  t.equal(process.exitCode, 2);
  process.exitCode = 0;
  t.match(err, /unknown command "nosuch"/);
});

t.test(
  'help: every option of every command shows its default, and its variable when it has one',
  async (t) => {
    const program = buildProgram();
    const walk = (c: typeof program): Array<typeof program> => [c, ...c.commands.flatMap(walk)];
    for (const cmd of walk(program)) {
      for (const opt of cmd.options) {
        if (opt.long === '--version' || opt.long === '--help') continue;
        const text = cmd.createHelp().optionDescription(opt);
        t.match(
          text,
          /\((env [A-Z_0-9]+, )?default [^)]+\)$/,
          `${cmd.name()} ${opt.long}: ${text}`,
        );
        t.equal(
          text.match(/\((env|default)[ :]/g)?.length,
          1,
          `${cmd.name()} ${opt.long}: one tail only`,
        );
      }
    }
    const start = program.commands.find((c) => c.name() === 'start')!;
    t.ok(start.options.length >= 8, 'svc start lists its options');
    const help = program.helpInformation();
    t.ok(help.length > 0);
    for (const v of describeVariables()) t.ok(v.default.length > 0, v.name);
  },
);
