/**
 * The pages' one rendering rule: a tagged template that escapes every interpolated value
 * unless it is already `Html` (made by this tag). No template engine: the pages are a
 * handful of tables and forms, and an escape-by-default tag has nothing to configure
 * wrongly (no "safe" filters, no auto-escape switch), ships with the package, and is
 * typechecked with the code that feeds it.
 */
export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

const ENTITIES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
  '`': '&#96;',
};

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"'`]/g, (c) => ENTITIES[c]!);
}

export type Renderable = Html | string | number | boolean | null | undefined | Renderable[];

function render(v: Renderable): string {
  if (v === null || v === undefined || v === false) return '';
  if (v instanceof Html) return v.value;
  if (Array.isArray(v)) return v.map(render).join('');
  return escapeHtml(String(v));
}

export function html(strings: TemplateStringsArray, ...values: Renderable[]): Html {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]!) + strings[i + 1]!;
  return new Html(out);
}

/** A query string from parameters (each key and value URL-encoded; escaped when rendered). */
export function query(params: Record<string, string | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') q.set(k, v);
  const s = q.toString();
  return s ? `?${s}` : '';
}
