/** Product authorization against publisher properties and authorised agents. */
import t from 'tap';
import {
  demoPublishers,
  validateProductAuthorization,
} from '../../agents/registry/product-authorization.js';
import { TaskError } from '../../shared/errors/task-errors.js';

const SALES = 'http://127.0.0.1:3001';
const pubs = demoPublishers(SALES);
const now = new Date('2026-03-02T10:00:00Z');
const check = (body: unknown) => validateProductAuthorization(body, pubs, now);

t.test('authorised and not', async (t) => {
  t.same(
    check({
      agent_url: SALES,
      publisher_properties: [{ publisher_domain: 'sportsnetwork.example' }],
    }),
    {
      agent_url: SALES,
      authorized: true,
      checked_at: '2026-03-02T10:00:00.000Z',
    },
  );
  t.equal(
    check({
      agent_url: `${SALES}/`,
      publisher_properties: [
        { publisher_domain: 'SportsNetwork.example', property_types: ['ctv_app'] },
      ],
    }).authorized,
    true,
    'URL and domain normalised',
  );
  // Tag-scoped grant: news properties only.
  t.equal(
    check({
      agent_url: SALES,
      publisher_properties: [{ publisher_domain: 'dailynews.example', tags: ['news'] }],
    }).authorized,
    true,
  );
  t.equal(
    check({
      agent_url: SALES,
      publisher_properties: [
        { publisher_domain: 'dailynews.example', property_ids: ['dn_podcast'] },
      ],
    }).authorized,
    true,
  );
  // Property-id grant.
  t.equal(
    check({
      agent_url: SALES,
      publisher_properties: [
        { publisher_domain: 'citybillboards.example', property_ids: ['cb_times_square'] },
      ],
    }).authorized,
    true,
  );
  t.equal(
    check({
      agent_url: SALES,
      publisher_properties: [
        { publisher_domain: 'citybillboards.example', property_ids: ['cb_other'] },
      ],
    }).authorized,
    false,
    'unknown property',
  );
  t.equal(
    check({ agent_url: SALES, publisher_properties: [{ publisher_domain: 'othersite.example' }] })
      .authorized,
    false,
    'agent not listed',
  );
  t.equal(
    check({ agent_url: SALES, publisher_properties: [{ publisher_domain: 'unknown.example' }] })
      .authorized,
    false,
  );
  t.equal(
    check({
      agent_url: 'https://another-agent.example',
      publisher_properties: [{ publisher_domain: 'othersite.example' }],
    }).authorized,
    true,
  );
  t.equal(
    check({
      agent_url: SALES,
      publisher_properties: [
        { publisher_domain: 'sportsnetwork.example' },
        { publisher_domain: 'othersite.example' },
      ],
    }).authorized,
    false,
    'every selector must hold',
  );
  t.equal(
    check({
      agent_url: SALES,
      publisher_properties: [
        { publisher_domain: 'sportsnetwork.example', property_types: ['radio'] },
      ],
    }).authorized,
    false,
    'no property selected',
  );
});

t.test('malformed requests are VALIDATION_ERROR', async (t) => {
  for (const [body, field] of [
    [{}, 'agent_url'],
    [{ agent_url: 'not a url', publisher_properties: [{ publisher_domain: 'x' }] }, 'agent_url'],
    [{ agent_url: SALES }, 'publisher_properties'],
    [{ agent_url: SALES, publisher_properties: [] }, 'publisher_properties'],
    [{ agent_url: SALES, publisher_properties: [{}] }, 'publisher_properties[0].publisher_domain'],
    [
      { agent_url: SALES, publisher_properties: [{ publisher_domain: 'x', tags: 'news' }] },
      'publisher_properties[0].tags',
    ],
  ] as const) {
    const e = (() => {
      try {
        check(body);
        return null;
      } catch (err) {
        return err;
      }
    })();
    t.ok(e instanceof TaskError, JSON.stringify(body));
    t.equal((e as TaskError).code, 'VALIDATION_ERROR');
    t.equal((e as TaskError).field, field);
    t.equal((e as TaskError).status, 400);
  }
  t.throws(() => check(null));
  t.throws(() => check('x'));
});
