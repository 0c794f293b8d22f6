/**
 * Media buys, the sales agent's part of the protocol: the three tasks registered here
 * (create_media_buy, update_media_buy, get_media_buys) and the operator's actions.
 * One idea per file:
 *   media-buy-requests.ts  what the tasks accept (published and older forms, one model)
 *   media-buy-create.ts    create, its async approval steps, task cancel
 *   media-buy-update.ts    update (pause/resume/cancel, budgets, packages, channels)
 *   media-buy-views.ts     the buy on the wire (create/update response, get_media_buys)
 *   media-buy-records.ts   rows, loaders, published status mapping
 *   media-buy-operator.ts  approve, reject, reporting delays, impairments
 */
import type { TaskRegistry } from '../../runtime/registry.js';
import type { TaskStore } from '../../runtime/task-store.js';
import { advanceCreate, cancelCreate, createMediaBuy } from './create.js';
import { CreateMediaBuySchema, GetMediaBuysSchema, UpdateMediaBuySchema } from './requests.js';
import { withProposalPackages } from './proposal.js';
import { updateMediaBuy } from './update.js';
import { getMediaBuys } from './views.js';

export { MediaBuyOperator } from './operator.js';

export function registerMediaBuyTasks(registry: TaskRegistry, tasks: TaskStore): void {
  registry.add({
    name: 'create_media_buy',
    description: 'Create a media buy from packages of products; may need seller approval.',
    agent: 'sales',
    schema: CreateMediaBuySchema,
    auth: { tier: 'authenticated', permission: { resource: 'media_buys', permission: 'write' } },
    expectedDuration: 'minutes to days',
    mode: 'async',
    mutating: true,
    webhookTaskType: 'create_media_buy',
    errorShape: 'single',
    handle: async (params, ctx) => createMediaBuy(await withProposalPackages(params, ctx), ctx),
    advance: advanceCreate,
    cancel: cancelCreate,
  });
  registry.add({
    name: 'update_media_buy',
    description: 'Change budget, end time, status, targeting or webhooks of a media buy.',
    agent: 'sales',
    schema: UpdateMediaBuySchema,
    auth: { tier: 'authenticated', permission: { resource: 'media_buys', permission: 'write' } },
    expectedDuration: 'minutes to days',
    mode: 'sync',
    mutating: true,
    webhookTaskType: 'update_media_buy',
    errorShape: 'single',
    handle: (params, ctx) => updateMediaBuy(params, ctx, tasks),
  });
  registry.add({
    name: 'get_media_buys',
    description: 'Read media buys with status, impairments and webhook activity.',
    agent: 'sales',
    schema: GetMediaBuysSchema,
    auth: { tier: 'authenticated', permission: { resource: 'media_buys', permission: 'read' } },
    expectedDuration: '1s',
    mode: 'sync',
    mutating: false,
    readOnly: true,
    errorShape: 'single',
    handle: async (params, ctx) => ({ status: 'completed', body: await getMediaBuys(params, ctx) }),
  });
}
