/**
 * The RFC 9421 §2.5 signature base as the webhook profile pins it: one line per covered
 * component in Signature-Input order, `"<name>": <value>`, then the `@signature-params`
 * line; lines joined by LF, no trailing newline.
 */
import { serializeString } from 'structured-headers';

/** The fixed covered set of the webhook profile, in the order signers emit it. */
export const WEBHOOK_COMPONENTS = [
  '@method',
  '@target-uri',
  '@authority',
  'content-type',
  'content-digest',
] as const;

export interface SignatureParams {
  created: number;
  expires: number;
  nonce: string;
  keyid: string;
  alg: string;
  tag: string;
}

/** Serialises the inner list and parameters in the order every example uses. */
export function serializeSignatureParams(
  components: readonly string[],
  p: SignatureParams,
): string {
  const list = components.map((c) => serializeString(c)).join(' ');
  return (
    `(${list});created=${p.created};expires=${p.expires};nonce=${serializeString(p.nonce)}` +
    `;keyid=${serializeString(p.keyid)};alg=${serializeString(p.alg)};tag=${serializeString(p.tag)}`
  );
}

export function buildSignatureBase(
  lines: ReadonlyArray<readonly [name: string, value: string]>,
  signatureParams: string,
): string {
  let base = '';
  for (const [name, value] of lines) base += `"${name}": ${value}\n`;
  return `${base}"@signature-params": ${signatureParams}`;
}
