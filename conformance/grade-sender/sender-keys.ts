/**
 * The sender's published keys, as the grading receiver finds them: a JWKS file, a JWKS
 * URL, or discovery from brand.json (the operator's, or the seller agent's origin) to the
 * agent's `jwks_uri`. Gives the verifier its key resolver and grades the publication
 * itself (supplement §5.6 phase 7, `signing_keys_published`).
 */
import { readFile } from 'node:fs/promises';
import type { BrandProfile } from '../../shared/brand.js';
import { CheckRecorder, type CheckResult } from '../report/report.js';
import { KeySetError, keyPurposeProblem, type JWK } from '../../shared/signing/keys.js';
import type { SignatureAlg } from '../../shared/signing/algorithms.js';
import type { KeyResolver } from '../../shared/signing/verify.js';
import {
  BrandDiscoveryError,
  discoverJwksUri,
  DocumentFetchError,
  FETCH_BUDGETS,
  fetchJson,
  parseKeySet,
  type KeySet,
} from '../../receiver/index.js';
import { SvcError } from '../../shared/errors/base.js';

export interface SenderKeyOptions {
  /** A JWKS document on disk. */
  jwksFile?: string;
  jwksUrl?: string;
  /** The seller agent's URL: brand.json at its origin, then its `agents[]` entry. */
  agentUrl?: string;
  /** The operator's brand.json, when not at the agent URL's origin. */
  brandJsonUrl?: string;
  /** Plain http to loopback hosts (local runs and tests). */
  allowLoopback?: boolean;
}

export class SenderKeyError extends SvcError {
  static override readonly code = 'ERR_SENDER_KEY';

  constructor(message: string) {
    super(message);
    this.name = 'SenderKeyError';
  }
}

function algOf(jwk: JWK): SignatureAlg | null {
  if (jwk.kty === 'OKP' && jwk.crv === 'Ed25519') return 'ed25519';
  if (jwk.kty === 'EC' && jwk.crv === 'P-256') return 'ecdsa-p256-sha256';
  return null;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Where the keys come from, and the problem (spec error id) found on the way, if any. */
interface Located {
  jwksUris: string[];
  problem?: { code: string; detail: string };
}

export class SenderKeys implements KeyResolver {
  private keys: KeySet = new Map();
  private jwksUris: string[] = [];
  private fetchedAt = 0;
  private located: Located | null = null;
  /** Why no key could be loaded at all, when none could. */
  loadError: string | null = null;

  constructor(
    private readonly o: SenderKeyOptions,
    private readonly profile: BrandProfile,
  ) {
    const sources = [o.jwksFile, o.jwksUrl, o.agentUrl ?? o.brandJsonUrl].filter(Boolean);
    if (sources.length !== 1) {
      throw new SenderKeyError(
        'give exactly one key source: --jwks FILE, --jwks-url, or --agent-url / --brand-json-url',
      );
    }
  }

  get description(): string {
    return (
      this.o.jwksFile ?? this.o.jwksUrl ?? this.o.agentUrl ?? this.o.brandJsonUrl ?? 'no key source'
    );
  }

  private fetchOpts(maxBytes: number) {
    return { maxBytes, allowLoopback: this.o.allowLoopback ?? false };
  }

  private async locate(): Promise<Located> {
    if (this.o.jwksUrl) return { jwksUris: [this.o.jwksUrl] };
    if (this.o.agentUrl && !this.o.brandJsonUrl) {
      try {
        return {
          jwksUris: [
            await discoverJwksUri(this.o.agentUrl, { allowLoopback: this.o.allowLoopback }),
          ],
        };
      } catch (err) {
        const reason = err instanceof BrandDiscoveryError ? err.code : 'brand_json_unreachable';
        return { jwksUris: [], problem: { code: reason, detail: (err as Error).message } };
      }
    }
    const url = this.o.brandJsonUrl!;
    let doc: unknown;
    try {
      const got = await fetchJson(url, this.fetchOpts(FETCH_BUDGETS.brandJsonBytes));
      doc = got.notModified ? null : got.value;
    } catch (err) {
      const malformed = err instanceof DocumentFetchError && err.code === 'malformed';
      return {
        jwksUris: [],
        problem: {
          code: malformed ? 'brand_json_malformed' : 'brand_json_unreachable',
          detail: (err as Error).message,
        },
      };
    }
    if (!isObject(doc) || !Array.isArray(doc.agents)) {
      return { jwksUris: [], problem: { code: 'brand_json_malformed', detail: 'no agents[]' } };
    }
    const agents = doc.agents.filter(isObject);
    const chosen = this.o.agentUrl ? agents.filter((a) => a.url === this.o.agentUrl) : agents;
    if (chosen.length === 0) {
      return {
        jwksUris: [],
        problem: { code: 'agents_jwks_uri_missing', detail: 'no matching agents[] entry' },
      };
    }
    const uris: string[] = [];
    for (const a of chosen) {
      if (typeof a.jwks_uri === 'string') uris.push(a.jwks_uri);
      else if (typeof a.url === 'string')
        uris.push(new URL('/.well-known/jwks.json', a.url).toString());
    }
    if (uris.length === 0) {
      return {
        jwksUris: [],
        problem: {
          code: 'agents_jwks_uri_missing',
          detail: 'agents[] entries have no jwks_uri or url',
        },
      };
    }
    return { jwksUris: [...new Set(uris)] };
  }

  /** (Re)loads every key; keeps the previous set when a reload fails. */
  async load(): Promise<void> {
    this.fetchedAt = Date.now();
    if (this.o.jwksFile) {
      try {
        this.keys = parseKeySet(JSON.parse(await readFile(this.o.jwksFile, 'utf8')));
        this.loadError = null;
      } catch (err) {
        this.loadError = `${this.o.jwksFile}: ${(err as Error).message}`;
      }
      return;
    }
    this.located = await this.locate();
    this.jwksUris = this.located.jwksUris;
    if (this.located.problem) {
      this.loadError = `${this.located.problem.code}: ${this.located.problem.detail}`;
      return;
    }
    const merged = new Map<string, JWK>();
    const errors: string[] = [];
    for (const uri of this.jwksUris) {
      try {
        const got = await fetchJson(uri, this.fetchOpts(FETCH_BUDGETS.jwksBytes));
        if (got.notModified) continue;
        for (const [kid, jwk] of parseKeySet(got.value)) merged.set(kid, jwk);
      } catch (err) {
        errors.push(`${uri}: ${(err as Error).message}`);
      }
    }
    if (merged.size > 0 || errors.length === 0) this.keys = merged;
    this.loadError = errors.length ? errors.join('; ') : null;
  }

  async resolve(keyid: string) {
    let jwk = this.keys.get(keyid);
    // One refetch on a miss, at most once a second (a sender may have rotated mid-run).
    if (!jwk && !this.o.jwksFile && Date.now() - this.fetchedAt > 1000) {
      await this.load();
      jwk = this.keys.get(keyid);
    }
    return jwk ? { jwk, senderId: this.jwksUris[0] ?? this.description } : null;
  }

  /** `signing_keys_published`: brand.json -> agents[] -> jwks_uri -> a key for the purpose. */
  async publishedCheck(): Promise<CheckResult> {
    const rec = new CheckRecorder(
      'keys.published',
      'keys',
      "Signing keys reachable through the seller's brand.json and valid for webhook signing",
      `brand.json agents[] entry -> jwks_uri -> at least one key with use "sig", key_ops "verify" and ${this.profile.useMember} request-signing (or webhook-signing)`,
    );
    if (!this.o.agentUrl && !this.o.brandJsonUrl) {
      return rec.notApplicable(
        'keys were given directly (--jwks / --jwks-url); pass --agent-url or --brand-json-url to grade their publication',
      );
    }
    await this.load();
    const p = this.located?.problem;
    if (p) return rec.fail(p.detail, p.code);
    if (this.keys.size === 0) {
      return rec.fail(
        `no keys at ${this.jwksUris.join(', ')}${this.loadError ? ` (${this.loadError})` : ''}`,
        'webhook_signing_keys_unpublished',
      );
    }
    const valid: string[] = [];
    const wrong: string[] = [];
    for (const [kid, jwk] of this.keys) {
      const alg = algOf(jwk);
      const problem = alg
        ? keyPurposeProblem(jwk, alg, this.profile)
        : 'not an Ed25519 or P-256 key';
      if (problem) wrong.push(`${kid} (${problem})`);
      else valid.push(kid);
    }
    if (valid.length === 0) {
      return rec.fail(
        `no key valid for webhook signing: ${wrong.join('; ')}`,
        'webhook_signing_keys_wrong_purpose',
      );
    }
    const others = wrong.length ? `; other keys: ${wrong.join('; ')}` : '';
    return rec.pass(
      `${valid.length} key(s) valid at ${this.jwksUris.join(', ')}: ${valid.join(', ')}${others}`,
    );
  }
}

export { KeySetError };
