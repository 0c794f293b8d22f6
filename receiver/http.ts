/**
 * The node:http adapter: turns an IncomingMessage into the pipeline's request (raw stream,
 * repeated headers kept apart, the URL as the sender addressed it) and writes the answer.
 */
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { ReceiverRequest, ReceiverResponse, WebhookReceiver } from './pipeline/receiver.js';

export interface AdapterOptions {
  /**
   * Scheme of the URL the sender signed. Behind a TLS-terminating proxy the receiver sees
   * plain http while the sender signed https: set it here (never read from a request header).
   */
  scheme?: 'http' | 'https';
}

/** Lower-case headers; a header sent more than once stays an array (so it can be refused). */
export function incomingHeaders(req: IncomingMessage): Record<string, string | string[]> {
  // No prototype: a request's header named `__proto__` (twice, so an array) would otherwise
  // set the object's prototype instead of being one more header.
  const out = Object.create(null) as Record<string, string | string[]>;
  for (const [name, values] of Object.entries(req.headersDistinct)) {
    if (!values) continue;
    out[name] = values.length === 1 ? (values[0] as string) : values;
  }
  return out;
}

export function receiverRequest(
  req: IncomingMessage,
  options: AdapterOptions = {},
): ReceiverRequest {
  const headers = incomingHeaders(req);
  return {
    method: req.method ?? 'GET',
    url: targetUri(req, headers, options),
    headers,
    body: req,
  };
}

const ABSOLUTE_FORM = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;

/**
 * The target URI as RFC 9112 §3.3 reconstructs it. Absolute-form (`POST http://host/p`,
 * §3.2.2, which a server must accept) is the target URI itself; the verifier's step 10
 * then still demands that a Host sent with it names the same authority (supplement §1), so
 * the two cannot disagree. Origin-form: the scheme (the option, else the connection's) and
 * the authority as received.
 */
function targetUri(
  req: IncomingMessage,
  headers: Record<string, string | string[]>,
  options: AdapterOptions,
): string {
  const target = req.url ?? '/';
  if (ABSOLUTE_FORM.test(target)) return target;
  const scheme = options.scheme ?? ((req.socket as TLSSocket).encrypted ? 'https' : 'http');
  const authority = headers[':authority'] ?? headers.host;
  const host = typeof authority === 'string' ? authority : '';
  return `${scheme}://${host}${target}`;
}

/** The path of a request target, origin-form or absolute-form, without its query. */
export function requestPath(target: string | undefined): string {
  const t = target ?? '/';
  if (!ABSOLUTE_FORM.test(t)) return t.split('?', 1)[0] as string;
  const m = /^[^:]+:\/\/[^/?#]*([^?#]*)/.exec(t);
  return m?.[1] || '/';
}

export function writeReceiverResponse(res: ServerResponse, r: ReceiverResponse): void {
  res.statusCode = r.status;
  for (const [k, v] of Object.entries(r.headers)) res.setHeader(k, v);
  // Refused before its body was read (405, 415, 413): close rather than drain the rest.
  if (res.req && !res.req.complete) res.setHeader('connection', 'close');
  res.setHeader('content-length', Buffer.byteLength(r.body));
  res.end(r.body);
}

/** A request listener running every request through the receiver. */
export function nodeListener(
  receiver: WebhookReceiver,
  options: AdapterOptions = {},
): RequestListener {
  return (req, res) => {
    receiver.handle(receiverRequest(req, options)).then(
      (r) => writeReceiverResponse(res, r),
      () => {
        // handle() never rejects; this is a last guard so a bug cannot leave a socket open.
        res.statusCode = 503;
        res.setHeader('retry-after', '5');
        res.end();
      },
    );
  };
}
