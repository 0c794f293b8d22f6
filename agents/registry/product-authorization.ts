/**
 * `POST /api/registry/validate/product-authorization` as a function (the HTTP route is
 * mounted by the transport): is `agent_url` authorised to sell the selected publisher
 * properties, according to the configured publishers' adagents.json data? Every
 * selector must be covered; an unknown publisher or property means not authorised.
 */
import { z } from 'zod';
import { sameAgentUrl } from '../creative/formats.js';
import type { Publisher } from '../runtime/settings.js';
import { parseParams } from '../runtime/validation.js';

export const ProductAuthorizationRequestSchema = z.looseObject({
  agent_url: z.url({ protocol: /^https?$/, error: 'agent_url must be an http(s) URL' }),
  publisher_properties: z
    .array(
      z.looseObject({
        publisher_domain: z.string().min(1).max(253),
        property_types: z.array(z.string().min(1)).optional(),
        property_ids: z.array(z.string().min(1)).optional(),
        tags: z.array(z.string().min(1)).optional(),
      }),
    )
    .min(1, 'at least one publisher property selector is required')
    .max(100),
});

export interface ProductAuthorizationResult {
  agent_url: string;
  authorized: boolean;
  checked_at: string;
}

/** Throws TaskError VALIDATION_ERROR (400) for a malformed request. */
export function validateProductAuthorization(
  body: unknown,
  publishers: Publisher[],
  now: Date = new Date(),
): ProductAuthorizationResult {
  const req = parseParams(ProductAuthorizationRequestSchema, body);
  const authorized = req.publisher_properties.every((sel) => {
    const pub = publishers.find(
      (p) => p.domain.toLowerCase() === sel.publisher_domain.toLowerCase(),
    );
    if (!pub) return false;
    const grants = pub.authorized_agents.filter((a) => sameAgentUrl(a.url, req.agent_url));
    if (grants.length === 0) return false;
    // The properties the selector names (all of the publisher's when it names none).
    const selected = pub.properties.filter(
      (p) =>
        (!sel.property_types || sel.property_types.includes(p.property_type)) &&
        (!sel.property_ids || sel.property_ids.includes(p.property_id)) &&
        (!sel.tags || sel.tags.some((t) => p.tags.includes(t))),
    );
    if (sel.property_ids && selected.length < new Set(sel.property_ids).size) return false;
    if (selected.length === 0) return false;
    return selected.every((p) =>
      grants.some(
        (g) =>
          (!g.property_ids?.length && !g.tags?.length) ||
          (g.property_ids ?? []).includes(p.property_id) ||
          (g.tags ?? []).some((t) => p.tags.includes(t)),
      ),
    );
  });
  return { agent_url: req.agent_url, authorized, checked_at: now.toISOString() };
}

/** Demo publishers: the sales agent sells their properties (adagents.json data). */
export function demoPublishers(salesUrl: string): Publisher[] {
  return [
    {
      domain: 'sportsnetwork.example',
      properties: [
        {
          property_id: 'sn_ctv_app',
          property_type: 'ctv_app',
          name: 'Sports Network CTV',
          tags: ['sports', 'ctv'],
        },
        {
          property_id: 'sn_web',
          property_type: 'website',
          name: 'sportsnetwork.example',
          tags: ['sports'],
        },
      ],
      authorized_agents: [{ url: salesUrl }],
    },
    {
      domain: 'dailynews.example',
      properties: [
        { property_id: 'dn_web', property_type: 'website', name: 'Daily News', tags: ['news'] },
        {
          property_id: 'dn_podcast',
          property_type: 'podcast',
          name: 'Daily News Podcast',
          tags: ['news', 'audio'],
        },
      ],
      authorized_agents: [{ url: salesUrl, tags: ['news'] }],
    },
    {
      domain: 'citybillboards.example',
      properties: [
        {
          property_id: 'cb_times_square',
          property_type: 'dooh',
          name: 'Times Square',
          tags: ['dooh'],
        },
      ],
      authorized_agents: [{ url: salesUrl, property_ids: ['cb_times_square'] }],
    },
    {
      domain: 'othersite.example',
      properties: [
        { property_id: 'os_web', property_type: 'website', name: 'Other Site', tags: [] },
      ],
      authorized_agents: [{ url: 'https://another-agent.example' }],
    },
  ];
}
