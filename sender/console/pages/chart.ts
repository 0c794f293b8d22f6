/**
 * A server-rendered SVG bar chart of attempts per hour (successes stacked under failures).
 * Presentation attributes only, no style attribute: the page's CSP forbids inline styles.
 */
import { html, type Html } from '../../../shared/console/html.js';

export function attemptsChart(
  series: Array<{ hour: string; attempts: number; succeeded: number }>,
  now = new Date(),
): Html {
  const hours = 24;
  const w = 240;
  const h = 48;
  const bw = w / hours;
  const start = Math.floor(now.getTime() / 3_600_000) - (hours - 1);
  const buckets = Array.from({ length: hours }, () => ({ n: 0, ok: 0 }));
  for (const s of series) {
    const i = Math.floor(new Date(s.hour).getTime() / 3_600_000) - start;
    if (i >= 0 && i < hours) buckets[i] = { n: s.attempts, ok: s.succeeded };
  }
  const max = Math.max(1, ...buckets.map((b) => b.n));
  const bars = buckets.map((b, i) => {
    const total = (b.n / max) * h;
    const ok = (b.ok / max) * h;
    const x = (i * bw).toFixed(1);
    const bwid = (bw - 1).toFixed(1);
    return html`<rect
        x="${x}"
        y="${(h - total).toFixed(1)}"
        width="${bwid}"
        height="${(total - ok).toFixed(1)}"
        fill="#c0392b"
        ><title>${b.n - b.ok} failed</title></rect
      ><rect
        x="${x}"
        y="${(h - ok).toFixed(1)}"
        width="${bwid}"
        height="${ok.toFixed(1)}"
        fill="#27ae60"
        ><title>${b.ok} of ${b.n} succeeded</title></rect
      >`;
  });
  return html`<svg
    class="chart"
    viewBox="0 0 ${w} ${h}"
    width="${w}"
    height="${h}"
    role="img"
    aria-label="attempts per hour over the last day, successes in green"
  >
    <rect x="0" y="0" width="${w}" height="${h}" fill="#f4f4f4"></rect>
    ${bars}
  </svg>`;
}
