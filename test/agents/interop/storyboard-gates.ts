/**
 * The applicability gates the 3.1.19 / 3.2.0-beta.5 storyboard documents declare and the
 * registry's `@adcp/sdk` 6.11.0 runner cannot interpret (storyboard-schema.yaml of either
 * release: `requires_capability` with its `contains` / `not_contains` / `present` matchers
 * and its phase-level form, `requires_all_capabilities`, `required_any_of_tools`, and the
 * storyboard-level `requires` gate). 6.11.0 knows only a storyboard-level
 * `{path, equals}` and runs the storyboard when the path is absent, so the harness grades
 * these gates itself from the document, before handing the storyboard to the runner: a
 * storyboard whose gate is unmet is not applicable, and a phase whose gate is unmet is left
 * out (the schema: "phase-level gates skip only that phase"). This grades applicability
 * only; every step that runs is the runner's.
 */

export interface CapabilityPredicate {
  path: string;
  equals?: unknown;
  contains?: unknown;
  not_contains?: unknown;
  present?: boolean;
}

interface GatedPhase {
  requires_capability?: CapabilityPredicate;
  [k: string]: unknown;
}

export interface GatedStoryboard {
  id: string;
  requires?: string[];
  requires_capability?: CapabilityPredicate;
  requires_all_capabilities?: CapabilityPredicate[];
  required_any_of_tools?: Array<{ tools: string[]; rationale?: string }>;
  phases: GatedPhase[];
}

/** What the harness knows of the run: the agent's capabilities and tools. */
export interface GateContext {
  caps: Record<string, unknown>;
  tools: string[];
}

function at(raw: unknown, path: string): unknown {
  let cur = raw;
  for (const key of path.split('.')) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[key];
  }
  return cur;
}

function deepEqual(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** The schema's matcher rules: exactly one of equals, contains, not_contains, present. */
export function predicateHolds(caps: Record<string, unknown>, p: CapabilityPredicate): boolean {
  const v = at(caps, p.path);
  if (p.present !== undefined) return (v !== undefined) === p.present;
  if ('contains' in p) return Array.isArray(v) && v.some((x) => deepEqual(x, p.contains));
  if ('not_contains' in p) return Array.isArray(v) && !v.some((x) => deepEqual(x, p.not_contains));
  if ('equals' in p) return deepEqual(v, p.equals);
  return true;
}

function describe(p: CapabilityPredicate): string {
  const m = (['equals', 'contains', 'not_contains', 'present'] as const).find((k) => k in p);
  return `${p.path} ${m ?? 'present'} ${JSON.stringify(m ? p[m] : true)}`;
}

/**
 * `requires` values a single-agent run with a loopback webhook receiver meets: `controller`
 * when the agent advertises comply_test_controller, `webhook_receiver` and `real_wire`
 * always; `multi_agent`, `seeded_state` and the runner-owned Trusted Match credentials
 * never (the schema: an unrecognised gate is not applicable, not a failure).
 */
function requirementMet(req: string, ctx: GateContext): boolean {
  if (req === 'controller') return ctx.tools.includes('comply_test_controller');
  return req === 'webhook_receiver' || req === 'real_wire';
}

/** Why the storyboard is not applicable to this agent, or null when it is. */
export function storyboardGate(sb: GatedStoryboard, ctx: GateContext): string | null {
  for (const req of sb.requires ?? []) {
    if (!requirementMet(req, ctx)) return `requirement_unmet: requires ${req}`;
  }
  const predicates = [
    ...(sb.requires_capability ? [sb.requires_capability] : []),
    ...(sb.requires_all_capabilities ?? []),
  ];
  for (const p of predicates) {
    if (!predicateHolds(ctx.caps, p)) return `capability predicate unmet: ${describe(p)}`;
  }
  for (const family of sb.required_any_of_tools ?? []) {
    if (!family.tools.some((t) => ctx.tools.includes(t))) {
      return `missing_required_tool_family: needs ${family.tools.join(' or ')}`;
    }
  }
  return null;
}

/**
 * The storyboard without the phases whose own `requires_capability` the agent does not
 * meet, and without its storyboard-level gates (graded above): the 6.11.0 runner would
 * otherwise run an absent-path `equals` gate it cannot read as unmet.
 */
export function withoutGatedPhases<S extends GatedStoryboard>(sb: S, ctx: GateContext): S {
  const phases = sb.phases.filter(
    (p) => !p.requires_capability || predicateHolds(ctx.caps, p.requires_capability),
  );
  const copy = { ...sb, phases };
  delete copy.requires_capability;
  delete copy.requires_all_capabilities;
  delete copy.required_any_of_tools;
  return copy;
}
