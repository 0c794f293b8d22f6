import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import {
  credentialsFilePath,
  readCredentials,
  writeCredentialsSection,
} from '../../shared/infra/credentials-file.js';

t.test('sections merge, the file stays owner-only', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'creds-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  t.same(await readCredentials(dir), {}, 'no file yet: no sections');
  const file = await writeCredentialsSection(dir, 'agents', { principals: [{ api_key: 'k1' }] });
  t.equal(file, credentialsFilePath(dir));
  await writeCredentialsSection(dir, 'console', { password: 'p' });
  await writeCredentialsSection(dir, 'agents', { principals: [{ api_key: 'k2' }] });
  t.same(JSON.parse(await readFile(file, 'utf8')), {
    agents: { principals: [{ api_key: 'k2' }] },
    console: { password: 'p' },
  });
  t.equal((await stat(file)).mode & 0o777, 0o600);
});

t.test('a bad section name or a file that is not an object is refused', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'creds-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await t.rejects(writeCredentialsSection(dir, 'Bad Name', {}), /lower-case/);
  await writeFile(credentialsFilePath(dir), '[1]');
  await t.rejects(readCredentials(dir), /not a JSON object/);
  await writeFile(credentialsFilePath(dir), '{nope');
  await t.rejects(readCredentials(dir), SyntaxError);
});
