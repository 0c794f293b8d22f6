/* global document, window */
// Both consoles' chart script (served from the package; the CSP allows no other): each
// [data-chart] element names its JSON (data-src: {points: [{at, ...}]}) and the point
// fields to draw (data-series, comma-separated, with data-labels and data-colors), and
// uPlot draws them. The table beside each chart holds the same figures: without JavaScript
// (or the library) the table is the view.
'use strict';

const PALETTE = ['#27ae60', '#c0392b', '#1f6feb', '#8e44ad', '#e67e22', '#16a085', '#7f8c8d'];

function drawCharts() {
  const boxes = document.querySelectorAll('[data-chart]');
  if (boxes.length === 0 || typeof window.uPlot !== 'function') return;
  const bySrc = new Map();
  for (const box of boxes) {
    const src = box.dataset.src;
    const fields = (box.dataset.series || '').split(',').filter(Boolean);
    const labels = (box.dataset.labels || box.dataset.series || '').split(',');
    if (!src || fields.length === 0) continue;
    if (!bySrc.has(src)) {
      bySrc.set(
        src,
        window
          .fetch(src, { credentials: 'same-origin' })
          .then((r) => (r.ok ? r.json() : Promise.reject(new Error(String(r.status))))),
      );
    }
    bySrc
      .get(src)
      .then((t) => {
        const xs = t.points.map((p) => Date.parse(p.at) / 1000);
        const cols = fields.map((f) => t.points.map((p) => (p[f] === undefined ? 0 : p[f])));
        const data = [xs, ...cols];
        const series = fields.map((f, i) => ({
          label: labels[i] || f,
          stroke: PALETTE[i % PALETTE.length],
        }));
        new window.uPlot(
          {
            width: Math.max(320, Math.min(1100, box.clientWidth || 900)),
            height: 220,
            series: [{}, ...series],
          },
          data,
          box,
        );
        // What was drawn, for the browser tests to hold against the table.
        box.dataset.drawn = JSON.stringify(data);
      })
      .catch(() => box.classList.add('failed'));
  }
}

drawCharts();
