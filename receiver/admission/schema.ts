/**
 * Durable state of new-keyid admission tracking (supplement §2.9): every (sender, keyid)
 * ever admitted with the time it was first seen (and, to the day, last seen), and the randomised starting thresholds
 * chosen once per deployment (so every instance and every restart uses the same ones).
 * Rows are few (one per key a trusted sender ever published) and never purged: a key seen
 * again after any length of time is not "new".
 */
import type { Migration } from '../../shared/infra/pg.js';

export const ADMISSION_MIGRATIONS: Migration[] = [
  {
    id: 'admission_001_keyids',
    sql: (s) => `
      CREATE TABLE ${s}.keyid_admissions (
        sender text NOT NULL,
        keyid text NOT NULL,
        first_seen timestamptz NOT NULL,
        -- Touched at most once a day per instance: "unique keyids of the last 30 days".
        last_seen timestamptz NOT NULL,
        PRIMARY KEY (sender, keyid)
      );
      CREATE INDEX keyid_admissions_first_seen ON ${s}.keyid_admissions (first_seen);
      CREATE TABLE ${s}.admission_defaults (
        name text PRIMARY KEY,
        value double precision NOT NULL,
        chosen_at timestamptz NOT NULL DEFAULT now()
      );`,
  },
];
