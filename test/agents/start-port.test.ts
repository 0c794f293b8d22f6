/** `svc start` with an agent port taken: the message names the setting that moves it. */
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { portInUseMessage } from '../../agents/server/start.js';
import { loadConfig } from '../../shared/config.js';

t.test('a taken agent port names its flag and variable', async (t) => {
  const taken = createServer();
  await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => taken.close(() => r())));
  const port = (taken.address() as AddressInfo).port;
  const config = loadConfig({ ...process.env, SVC_CREATIVE_PORT: String(port) });
  const second = createServer();
  const err = await new Promise<NodeJS.ErrnoException>((resolve) => {
    second.once('error', resolve);
    second.listen(port, '127.0.0.1');
  });
  t.equal(
    portInUseMessage(err, config),
    `127.0.0.1:${port} is already in use (another svc start?): choose another port with --creative-port <port> (SVC_CREATIVE_PORT; 0: any free port)`,
  );
  const other = Object.assign(new Error('boom'), { code: 'EACCES' });
  t.equal(portInUseMessage(other, config), 'boom', 'other errors keep their text');
});
