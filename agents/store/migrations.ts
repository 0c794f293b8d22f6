/**
 * The agents' schema (default `agents`): principals and credentials, accounts, the
 * catalog (products, formats, signals), media buys with packages, creatives and their
 * assignments, simulated delivery, durable tasks and request idempotency records.
 */
import { migrate, type Migration, type Pool } from '../../shared/infra/pg.js';

export const DEFAULT_AGENTS_SCHEMA = 'agents';

export const AGENT_MIGRATIONS: Migration[] = [
  {
    id: '001_agents',
    sql: (s) => `
      CREATE TABLE ${s}.agent_secrets (
        agent text PRIMARY KEY,
        jwt_secret text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now());

      CREATE TABLE ${s}.principals (
        agent text NOT NULL,
        principal_id text NOT NULL,
        name text NOT NULL,
        permissions jsonb NOT NULL,
        signals_access boolean NOT NULL DEFAULT true,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (agent, principal_id));

      CREATE TABLE ${s}.api_keys (
        key_hash text PRIMARY KEY,
        agent text NOT NULL,
        principal_id text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        FOREIGN KEY (agent, principal_id) REFERENCES ${s}.principals ON DELETE CASCADE);

      CREATE TABLE ${s}.accounts (
        agent text NOT NULL,
        account_id text NOT NULL,
        principal_id text NOT NULL,
        name text NOT NULL,
        brand jsonb,
        status text NOT NULL DEFAULT 'active',
        notification_configs jsonb NOT NULL DEFAULT '[]',
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (agent, account_id));

      CREATE TABLE ${s}.agent_notification_configs (
        agent text NOT NULL,
        principal_id text NOT NULL,
        configs jsonb NOT NULL DEFAULT '[]',
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (agent, principal_id));

      CREATE TABLE ${s}.capabilities_versions (
        agent text PRIMARY KEY,
        version integer NOT NULL,
        changed_at timestamptz NOT NULL DEFAULT now());

      CREATE TABLE ${s}.formats (
        format_id text PRIMARY KEY,
        name text NOT NULL,
        type text NOT NULL,
        width integer,
        height integer,
        duration_ms integer,
        is_responsive boolean NOT NULL DEFAULT false,
        assets_required jsonb NOT NULL,
        renders jsonb NOT NULL,
        requirements jsonb NOT NULL DEFAULT '{}');

      CREATE TABLE ${s}.products (
        product_id text PRIMARY KEY,
        name text NOT NULL,
        description text NOT NULL,
        channel text NOT NULL,
        delivery_type text NOT NULL,
        is_standard boolean NOT NULL DEFAULT true,
        custom_principal text,
        format_ids jsonb NOT NULL,
        pricing_options jsonb NOT NULL,
        targeting jsonb NOT NULL,
        keywords text[] NOT NULL DEFAULT '{}',
        expected_delay_minutes integer NOT NULL DEFAULT 0,
        reporting_frequencies text[] NOT NULL DEFAULT '{hourly,daily,monthly}',
        ctr numeric NOT NULL DEFAULT 0.001,
        sort_order integer NOT NULL DEFAULT 0);

      CREATE TABLE ${s}.media_buys (
        media_buy_id text PRIMARY KEY,
        principal_id text NOT NULL,
        buyer_ref text NOT NULL,
        status text NOT NULL,
        brand_manifest jsonb NOT NULL,
        start_time jsonb NOT NULL,
        start_at timestamptz NOT NULL,
        end_at timestamptz NOT NULL,
        currency text NOT NULL DEFAULT 'USD',
        push_notification_config jsonb,
        reporting_webhook jsonb,
        context jsonb,
        task_id text,
        accrued_until timestamptz,
        approved_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (principal_id, buyer_ref));
      CREATE INDEX ON ${s}.media_buys (status);

      CREATE TABLE ${s}.packages (
        package_id text PRIMARY KEY,
        media_buy_id text NOT NULL REFERENCES ${s}.media_buys ON DELETE CASCADE,
        buyer_ref text NOT NULL,
        product_id text NOT NULL,
        pricing_option_id text NOT NULL,
        pricing_model text NOT NULL,
        rate numeric NOT NULL,
        budget numeric NOT NULL,
        bid_price numeric,
        targeting_overlay jsonb,
        paused boolean NOT NULL DEFAULT false,
        position integer NOT NULL);
      CREATE INDEX ON ${s}.packages (media_buy_id);

      CREATE TABLE ${s}.creatives (
        principal_id text NOT NULL,
        creative_id text NOT NULL,
        name text NOT NULL,
        format_id jsonb NOT NULL,
        format_type text NOT NULL,
        assets jsonb NOT NULL,
        status text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (principal_id, creative_id));

      CREATE TABLE ${s}.creative_assignments (
        principal_id text NOT NULL,
        creative_id text NOT NULL,
        package_id text NOT NULL REFERENCES ${s}.packages ON DELETE CASCADE,
        PRIMARY KEY (principal_id, creative_id, package_id));

      CREATE TABLE ${s}.delivery (
        package_id text NOT NULL REFERENCES ${s}.packages ON DELETE CASCADE,
        media_buy_id text NOT NULL,
        hour timestamptz NOT NULL,
        impressions double precision NOT NULL DEFAULT 0,
        clicks double precision NOT NULL DEFAULT 0,
        spend double precision NOT NULL DEFAULT 0,
        PRIMARY KEY (package_id, hour));
      CREATE INDEX ON ${s}.delivery (media_buy_id, hour);

      CREATE TABLE ${s}.impairments (
        impairment_id text PRIMARY KEY,
        media_buy_id text NOT NULL REFERENCES ${s}.media_buys ON DELETE CASCADE,
        body jsonb NOT NULL,
        observed_at timestamptz NOT NULL,
        resolved_at timestamptz);

      CREATE TABLE ${s}.performance_feedback (
        feedback_id text PRIMARY KEY,
        media_buy_id text NOT NULL REFERENCES ${s}.media_buys ON DELETE CASCADE,
        principal_id text NOT NULL,
        body jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now());

      CREATE TABLE ${s}.signals (
        signal_agent_segment_id text PRIMARY KEY,
        name text NOT NULL,
        description text NOT NULL,
        data_provider text NOT NULL,
        signal_type text NOT NULL,
        coverage_percentage double precision NOT NULL,
        cpm double precision,
        currency text NOT NULL DEFAULT 'USD',
        countries text[] NOT NULL,
        owner_principal text,
        keywords text[] NOT NULL DEFAULT '{}',
        activation_minutes integer NOT NULL DEFAULT 30,
        activatable boolean NOT NULL DEFAULT true);

      CREATE TABLE ${s}.signal_deployments (
        signal_agent_segment_id text NOT NULL REFERENCES ${s}.signals ON DELETE CASCADE,
        destination text NOT NULL,
        target jsonb NOT NULL,
        is_live boolean NOT NULL,
        activation_key jsonb,
        deployed_at timestamptz,
        ready_at timestamptz,
        task_id text,
        PRIMARY KEY (signal_agent_segment_id, destination));

      CREATE TABLE ${s}.previews (
        preview_id text PRIMARY KEY,
        html text NOT NULL,
        expires_at timestamptz NOT NULL);

      CREATE TABLE ${s}.tasks (
        task_id text PRIMARY KEY,
        agent text NOT NULL,
        task_type text NOT NULL,
        principal_id text,
        status text NOT NULL,
        initial_status text NOT NULL,
        step integer NOT NULL DEFAULT 0,
        params jsonb NOT NULL,
        state jsonb NOT NULL DEFAULT '{}',
        result jsonb,
        message text,
        push_notification_config jsonb,
        a2a_push jsonb,
        context jsonb,
        resource_id text,
        next_run_at timestamptz,
        attempts integer NOT NULL DEFAULT 0,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now());
      CREATE INDEX ON ${s}.tasks (next_run_at) WHERE next_run_at IS NOT NULL;
      CREATE INDEX ON ${s}.tasks (resource_id);

      CREATE TABLE ${s}.idempotency (
        agent text NOT NULL,
        principal_id text NOT NULL,
        idempotency_key text NOT NULL,
        task text NOT NULL,
        fingerprint text NOT NULL,
        response jsonb,
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL,
        PRIMARY KEY (agent, principal_id, idempotency_key));

      CREATE TABLE ${s}.clock (
        id integer PRIMARY KEY CHECK (id = 1),
        anchor_real timestamptz NOT NULL,
        anchor_virtual timestamptz NOT NULL,
        speed double precision NOT NULL);
    `,
  },
  {
    id: '002_reporting_delay',
    sql: (s) => `ALTER TABLE ${s}.media_buys ADD COLUMN reporting_expected_at timestamptz;`,
  },
  {
    // The published protocol has no buyer_ref (the spec's older form still sends one),
    // every buy carries a revision for optimistic concurrency, and `held` is a buy created
    // with `paused: true` (it goes paused, not active, when approved).
    id: '003_published_media_buys',
    sql: (s) => `
      ALTER TABLE ${s}.media_buys ALTER COLUMN buyer_ref DROP NOT NULL;
      ALTER TABLE ${s}.media_buys ADD COLUMN revision integer NOT NULL DEFAULT 1;
      ALTER TABLE ${s}.media_buys ADD COLUMN held boolean NOT NULL DEFAULT false;
      ALTER TABLE ${s}.packages ALTER COLUMN buyer_ref DROP NOT NULL;`,
  },
];

// Appended by the test controller (agents/testing/): which principals are test buyers, and
// what the controller seeded for them.
AGENT_MIGRATIONS.push({
  id: '004_sandbox',
  sql: (s) => `
    ALTER TABLE ${s}.principals ADD COLUMN sandbox boolean NOT NULL DEFAULT false;
    CREATE TABLE ${s}.sandbox_fixtures (
      agent text NOT NULL,
      principal_id text NOT NULL,
      account_key text NOT NULL,
      kind text NOT NULL,
      fixture_id text NOT NULL,
      data jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (agent, principal_id, account_key, kind, fixture_id));`,
});

// The published lifecycle's pending states (sales media buys): `went_live` marks a buy that
// has been active or paused on the wire (a pause, a resume, a forced status), after which
// it never reads as pending_creatives/pending_start again (no such edge in the graph); a
// package keeps the measurement_terms the seller accepted.
AGENT_MIGRATIONS.push({
  id: '005_media_buy_lifecycle',
  sql: (s) => `
    ALTER TABLE ${s}.media_buys ADD COLUMN went_live boolean NOT NULL DEFAULT false;
    ALTER TABLE ${s}.packages ADD COLUMN measurement_terms jsonb;`,
});

// The sales agent's proposals (get_products brief -> refine -> finalize) and the creative
// agent's own creative library (sync_creatives / list_creatives at the creative agent).
AGENT_MIGRATIONS.push({
  id: '006_proposals_library',
  sql: (s) => `
    CREATE TABLE ${s}.proposals (
      principal_id text NOT NULL,
      proposal_id text NOT NULL,
      batch_id text NOT NULL,
      ord integer NOT NULL,
      status text NOT NULL,
      data jsonb NOT NULL,
      expires_at timestamptz NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (principal_id, proposal_id));
    CREATE INDEX proposals_batch ON ${s}.proposals (principal_id, created_at DESC);
    CREATE TABLE ${s}.creative_library (
      principal_id text NOT NULL,
      creative_id text NOT NULL,
      name text NOT NULL,
      format_id jsonb NOT NULL,
      format_type text NOT NULL,
      assets jsonb NOT NULL,
      status text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (principal_id, creative_id));`,
});

// A package's creative reference the buyer's library does not hold yet (create_media_buy /
// update_media_buy may name a creative before sync_creatives brings it): kept apart from
// creative_assignments, which hold only creatives that exist, until a sync of that
// creative by the same principal turns it into an assignment.
AGENT_MIGRATIONS.push({
  id: '007_pending_creative_assignments',
  sql: (s) => `
    CREATE TABLE ${s}.pending_creative_assignments (
      principal_id text NOT NULL,
      creative_id text NOT NULL,
      package_id text NOT NULL REFERENCES ${s}.packages ON DELETE CASCADE,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (principal_id, creative_id, package_id));
    CREATE INDEX pending_creative_assignments_package
      ON ${s}.pending_creative_assignments (package_id);`,
});

// create_media_buy by proposal_id: a committed proposal executes once.
AGENT_MIGRATIONS.push({
  id: '008_proposal_execution',
  sql: (s) => `ALTER TABLE ${s}.proposals ADD COLUMN executed_at timestamptz;`,
});

// Seeded (sandbox) products keep the fixture's published members our columns do not model
// (format_options, creative_policy, ...): the product is answered with them.
AGENT_MIGRATIONS.push({
  id: '009_product_fixture',
  sql: (s) => `ALTER TABLE ${s}.products ADD COLUMN fixture jsonb NOT NULL DEFAULT '{}';`,
});

// The finality of a buy's reported delivery (3.1 billing finality): provisional numbers
// (is_final false, their measurement window) until the seller closes them with a time.
// Null until anything is said: rows then carry no finality members, as before.
AGENT_MIGRATIONS.push({
  id: '010_delivery_finality',
  sql: (s) => `ALTER TABLE ${s}.media_buys ADD COLUMN delivery_finality jsonb;`,
});

// Measurement a buy's delivery reports beside its counts (3.1 delivery-metrics): the
// viewability block and vendor_metric_values a measurement vendor attested, on the package
// they were measured on. Null until stated: rows carry neither member, as before.
AGENT_MIGRATIONS.push({
  id: '011_delivery_measurement',
  sql: (s) => `ALTER TABLE ${s}.media_buys ADD COLUMN delivery_measurement jsonb;`,
});

// Seeded (sandbox) buys keep their fixture's packages as given: a legacy package may name
// no product or pricing option (get_media_buys then omits them), and a package carries
// the buyer's context it was created with.
AGENT_MIGRATIONS.push({
  id: '012_seeded_packages',
  sql: (s) => `
    ALTER TABLE ${s}.packages ALTER COLUMN product_id DROP NOT NULL;
    ALTER TABLE ${s}.packages ALTER COLUMN pricing_option_id DROP NOT NULL;
    ALTER TABLE ${s}.packages ADD COLUMN context jsonb;`,
});

// The buyer agent's commercial relationship with this seller, recorded at onboarding (the
// published per-agent billing gate, BILLING_NOT_PERMITTED_FOR_AGENT): `agent_billable` (the
// default: every billing the seller offers) or `passthrough_only` (no payments relationship:
// only the operator can be invoiced).
AGENT_MIGRATIONS.push({
  id: '013_commercial_relationship',
  sql: (s) => `
    ALTER TABLE ${s}.principals ADD COLUMN commercial_relationship text NOT NULL
      DEFAULT 'agent_billable'
      CHECK (commercial_relationship IN ('agent_billable', 'passthrough_only'));`,
});

// Configured products (3.2 targeting-aware discovery): a request-scoped copy of a catalog
// product bound to the targeting a brief stated, for one principal until `expires_at`
// (then create_media_buy answers PRODUCT_EXPIRED). Listed only in the answer that made it.
AGENT_MIGRATIONS.push({
  id: '014_configured_products',
  sql: (s) => `
    ALTER TABLE ${s}.products ADD COLUMN configured_from text;
    ALTER TABLE ${s}.products ADD COLUMN expires_at timestamptz;`,
});

// The targeting a configured product was bound to at discovery (3.2: a brief's hard
// targeting, an exact targeting_overlay), in core/targeting.json form: a package of it that
// restates no overlay books this one ("purchasing that product accepts" the targeting).
AGENT_MIGRATIONS.push({
  id: '015_configured_bound_targeting',
  sql: (s) => `ALTER TABLE ${s}.products ADD COLUMN bound_targeting jsonb;`,
});

// Settlement inputs (3.1+ conversion tracking and billing reconciliation): the event sources
// a buyer registered per account (sync_event_sources; a revenue share names the one whose
// attribution bills), and the usage records report_usage accepted (a revenue share's
// commission, checked against its rate and its package's budget).
AGENT_MIGRATIONS.push({
  id: '016_settlement',
  sql: (s) => `
    CREATE TABLE ${s}.event_sources (
      principal_id text NOT NULL,
      account_id text NOT NULL,
      event_source_id text NOT NULL,
      source jsonb NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (principal_id, account_id, event_source_id));
    CREATE TABLE ${s}.usage_records (
      id bigserial PRIMARY KEY,
      principal_id text NOT NULL,
      account_id text NOT NULL,
      media_buy_id text,
      package_id text,
      pricing_option_id text,
      vendor_cost numeric NOT NULL,
      currency text NOT NULL,
      record jsonb NOT NULL,
      reported_at timestamptz NOT NULL DEFAULT now());
    CREATE INDEX ON ${s}.usage_records (package_id);`,
});

export function migrateAgents(pool: Pool, schema = DEFAULT_AGENTS_SCHEMA): Promise<string[]> {
  return migrate(pool, schema, AGENT_MIGRATIONS);
}
