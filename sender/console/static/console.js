/* global document, window, HTMLFormElement, EventSource, CSS */
// The console's only script (served from the package; the CSP allows no other): confirms
// actions, and follows attempts as they land (server-sent events) by reloading the
// server-rendered, escaped fragments of the rows or delivery they concern.
'use strict';

document.addEventListener('submit', (e) => {
  const form = e.target;
  const question = form instanceof HTMLFormElement ? form.dataset.confirm : undefined;
  if (question && !window.confirm(question)) e.preventDefault();
});

function follow() {
  const live = document.body.dataset.live;
  if (!live) return;
  const source = new EventSource('/api/events');
  const pending = new Set();
  let timer = null;
  const refresh = () => {
    timer = null;
    const ids = [...pending];
    pending.clear();
    for (const id of ids) {
      const section = document.querySelector(`#live[data-delivery="${CSS.escape(id)}"]`);
      if (section) {
        // The redelivery whose banner the fragment carries (what became of that attempt).
        const n = section.dataset.redelivered;
        const q = n ? `?redelivered=${encodeURIComponent(n)}` : '';
        fetch(`/deliveries/${encodeURIComponent(id)}/live${q}`, { credentials: 'same-origin' })
          .then((r) => (r.ok ? r.text() : Promise.reject(new Error(String(r.status)))))
          .then((text) => {
            section.innerHTML = text;
            section.dataset.updated = String(Date.now());
          })
          .catch(() => {});
      }
      const row = document.getElementById(`d-${id}`);
      if (row) {
        fetch(`/deliveries/${encodeURIComponent(id)}/row`, { credentials: 'same-origin' })
          .then((r) => (r.ok ? r.text() : Promise.reject(new Error(String(r.status)))))
          .then((text) => {
            const t = document.createElement('tbody');
            t.innerHTML = text;
            if (t.firstElementChild) row.replaceWith(t.firstElementChild);
          })
          .catch(() => {});
      }
    }
  };
  source.addEventListener('attempt', (ev) => {
    let data;
    try {
      data = JSON.parse(ev.data);
    } catch {
      return;
    }
    const status = document.getElementById('live-status');
    if (status)
      status.textContent = `last attempt seen: #${data.deliveryId} ${data.status} at ${data.at}`;
    pending.add(String(data.deliveryId));
    if (!timer) timer = setTimeout(refresh, 150);
  });
  source.addEventListener('open', () => document.body.classList.add('live'));
  source.addEventListener('error', () => document.body.classList.remove('live'));
}

follow();
