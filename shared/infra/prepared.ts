/**
 * Named prepared statements for hot queries. node-postgres sends an unnamed statement by
 * default, which PostgreSQL parses, analyses and plans on every execution; for the large
 * batched statements of the delivery path that was most of the database's CPU. A named
 * statement is parsed once per connection and, after a few executions, runs on a generic plan.
 *
 * The name is derived from the text, so two different texts never share a name on one
 * connection (node-postgres refuses that) and a schema-qualified text gets its own name per
 * schema.
 */
import { createHash } from 'node:crypto';

export interface PreparedQuery {
  readonly name: string;
  readonly text: string;
}

export function prepared(label: string, text: string): PreparedQuery {
  const digest = createHash('sha256').update(text).digest('base64url').slice(0, 16);
  return { name: `${label}_${digest}`, text };
}

/** The query config node-postgres takes for a prepared statement with these values. */
export function withValues(
  q: PreparedQuery,
  values: unknown[],
): {
  name: string;
  text: string;
  values: unknown[];
} {
  return { name: q.name, text: q.text, values };
}
