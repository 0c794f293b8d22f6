/** A receiver behind node:http on 127.0.0.1:0, and a POST helper over undici. */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { nodeListener } from '../../../receiver/http.js';
import type { WebhookReceiver } from '../../../receiver/pipeline/receiver.js';

export async function listen(receiver: WebhookReceiver): Promise<{ url: string; server: Server }> {
  const server = createServer(nodeListener(receiver));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, server };
}

export async function post(
  url: string,
  body: string | Buffer,
  headers: Record<string, string | string[]>,
  method = 'POST',
): Promise<{
  status: number;
  headers: Record<string, string | string[] | undefined>; // eslint-disable-next-line @typescript-eslint/no-explicit-any -- test responses are read loosely
  json: any;
}> {
  const res = await request(url, { method: method as 'POST', headers, body });
  const text = await res.body.text();
  let json: unknown = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = text;
  }
  return { status: res.statusCode, headers: res.headers, json };
}
