// Switchboard console: a client of the admin API (/admin/v1) on the same
// admin listener. The admin key lives in this tab's sessionStorage only and
// goes in the Authorization header; nothing from the server is ever put in
// the page as HTML (textContent only), and a created key's secret is shown
// once, then forgotten.
'use strict';

const KEY = 'sbAdminKey';
const COLORS = ['#2457c5', '#c2410c', '#15803d', '#7c3aed', '#b91c1c', '#0e7490', '#a16207', '#be185d'];
const $ = (sel) => document.querySelector(sel);

async function api(method, path, body) {
  const res = await fetch(`/admin/v1/${path}`, {
    method,
    headers: { authorization: `Bearer ${sessionStorage.getItem(KEY) ?? ''}`,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  const json = await res.json().catch(() => null);
  if (!res.ok) throw new Error(json?.error?.message ?? `HTTP ${res.status}`);
  return json;
}

function say(msg) { $('#status').textContent = msg ?? ''; }

function el(tag, text, attrs = {}) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  return e;
}

function button(text, fn, attrs = {}) {
  const b = el('button', text, { type: 'button', ...attrs });
  b.addEventListener('click', () => fn().catch((e) => say(e.message)));
  return b;
}

function fillTable(sel, rows, cells) {
  const tbody = $(`${sel} tbody`);
  tbody.replaceChildren();
  for (const r of rows) {
    const tr = el('tr');
    for (const c of cells(r)) tr.append(c instanceof Node ? wrapTd(c) : el('td', c));
    tbody.append(tr);
  }
}

function wrapTd(node) { const td = el('td'); td.append(node); return td; }

function formData(form) {
  const out = {};
  for (const [k, v] of new FormData(form).entries()) if (v !== '') out[k] = v;
  return out;
}

function localToIso(v) { return v ? new Date(v).toISOString() : undefined; }

// ---- charts (inline SVG, one line per model) ----

function lineChart(container, series, buckets) {
  container.replaceChildren();
  const names = Object.keys(series);
  if (names.length === 0 || buckets.length === 0) { container.append(el('div', 'no data yet', { class: 'empty' })); return; }
  const W = 600, H = 180, L = 40, B = 20, T = 8, R = 8;
  const max = Math.max(1, ...names.flatMap((n) => buckets.map((b) => series[n][b] ?? 0)));
  const x = (i) => L + (buckets.length === 1 ? (W - L - R) / 2 : (i * (W - L - R)) / (buckets.length - 1));
  const y = (v) => T + (H - T - B) * (1 - v / max);
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
  const line = (x1, y1, x2, y2) => { const l = document.createElementNS(ns, 'line'); Object.entries({ x1, y1, x2, y2, class: 'axis' }).forEach(([k, v]) => l.setAttribute(k, v)); svg.append(l); };
  line(L, H - B, W - R, H - B); line(L, T, L, H - B);
  const label = (tx, ty, text, anchor = 'end') => { const t = document.createElementNS(ns, 'text'); t.setAttribute('x', tx); t.setAttribute('y', ty); t.setAttribute('text-anchor', anchor); t.textContent = text; svg.append(t); };
  label(L - 4, T + 8, String(Math.round(max * 10) / 10)); label(L - 4, H - B, '0');
  const hhmm = (b) => new Date(b).toLocaleString([], { weekday: 'short', hour: '2-digit', minute: '2-digit' });
  label(x(0), H - 4, hhmm(buckets[0]), 'start');
  if (buckets.length > 1) label(x(buckets.length - 1), H - 4, hhmm(buckets[buckets.length - 1]));
  names.forEach((n, k) => {
    const pts = buckets.map((b, i) => `${x(i).toFixed(1)},${y(series[n][b] ?? 0).toFixed(1)}`).join(' ');
    const pl = document.createElementNS(ns, 'polyline');
    pl.setAttribute('points', pts); pl.setAttribute('fill', 'none'); pl.setAttribute('stroke', COLORS[k % COLORS.length]);
    pl.setAttribute('stroke-width', '2'); pl.setAttribute('data-model', n);
    svg.append(pl);
    for (const [i, b] of buckets.entries()) {
      if (series[n][b] === undefined) continue;
      const c = document.createElementNS(ns, 'circle');
      c.setAttribute('cx', x(i)); c.setAttribute('cy', y(series[n][b])); c.setAttribute('r', '3');
      c.setAttribute('fill', COLORS[k % COLORS.length]); c.setAttribute('data-model', n); c.setAttribute('data-value', series[n][b]);
      svg.append(c);
    }
  });
  container.append(svg);
  const legend = el('div', null, { class: 'legend' });
  names.forEach((n, k) => {
    const s = el('span', n);
    s.style.setProperty('--c', COLORS[k % COLORS.length]); // CSSOM: allowed by the page's CSP, unlike a style attribute
    legend.append(s);
  });
  container.append(legend);
}

async function showLive() {
  try {
    const { broker } = await api('GET', 'live');
    $('#live-note').textContent = `${broker.workers} worker(s), ${broker.jobs_in_flight} job(s) running`;
    fillTable('#live-table', broker.models, (m) => [m.model, m.queued, m.credits_used, m.credits_free, m.workers, m.circuit]);
  } catch (e) {
    $('#live-note').textContent = e.message;
  }
}

async function showOverview() {
  await showLive();
  const since = new Date(Date.now() - 24 * 3600 * 1000).toISOString();
  const { model } = formData($('#overview-filter'));
  const q = new URLSearchParams({ bucket: 'hour', since, ...(model ? { model } : {}) });
  const { data: rows } = await api('GET', `usage?${q}`);
  // Every hour of the window is a point (an hour with no request reads 0).
  const hour = 3600 * 1000;
  const first = Math.floor((Date.now() - 24 * hour) / hour) * hour;
  const buckets = Array.from({ length: 25 }, (_, i) => first + i * hour);
  const data = rows.map((r) => ({ ...r, bucket: new Date(r.bucket).getTime() }));
  // The busiest models by requests keep a line each; the rest share one.
  const totals = {};
  for (const r of data) totals[r.model ?? '(none)'] = (totals[r.model ?? '(none)'] ?? 0) + Number(r.requests);
  const top = new Set(Object.entries(totals).sort((a, b) => b[1] - a[1]).slice(0, 8).map(([m]) => m));
  const per = (f) => {
    const s = {};
    for (const r of data) {
      const m = top.has(r.model ?? '(none)') ? (r.model ?? '(none)') : 'other';
      s[m] ??= {};
      const v = f(r);
      if (v !== null && v !== undefined) s[m][r.bucket] = (s[m][r.bucket] ?? 0) + Number(v);
    }
    return s;
  };
  lineChart($('#chart-requests'), per((r) => r.requests), buckets);
  lineChart($('#chart-tokens'), per((r) => Number(r.tokens_in) + Number(r.tokens_out)), buckets);
  lineChart($('#chart-errors'), per((r) => r.errors), buckets);
  // A mean per line: weighted by requests where models share the "other" line.
  const w = per((r) => (r.added_latency_ms === null ? null : Number(r.requests)));
  const sum = per((r) => (r.added_latency_ms === null ? null : Number(r.added_latency_ms) * Number(r.requests)));
  for (const m of Object.keys(sum)) for (const b of Object.keys(sum[m])) sum[m][b] = Math.round((sum[m][b] / w[m][b]) * 10) / 10;
  lineChart($('#chart-added'), sum, buckets);
}

async function showLog() {
  const f = formData($('#log-filter'));
  for (const t of ['since', 'until']) if (f[t]) f[t] = localToIso(f[t]);
  const q = new URLSearchParams({ limit: '200', ...f });
  const { data } = await api('GET', `request_log?${q}`);
  fillTable('#log-table', data, (r) => [new Date(r.ts).toLocaleString(), r.request_id, r.key_id, r.model, r.path,
    r.status, r.latency_ms, r.upstream_latency_ms, `${r.tokens_in}/${r.tokens_out}`, r.error, r.trace_id]);
}

async function fillSelect(sel, items, label) {
  const s = $(sel);
  const keep = s.value;
  s.replaceChildren(...items.map((i) => el('option', label(i), { value: label(i) })));
  if (keep) s.value = keep;
}

async function showKeys() {
  const [{ data: keys }, { data: accounts }, { data: groups }] = await Promise.all([
    api('GET', 'keys'), api('GET', 'accounts'), api('GET', 'groups')]);
  await fillSelect('#key-create [name=account]', accounts, (a) => a.name);
  await fillSelect('#key-create [name=group]', groups, (g) => g.name);
  fillTable('#keys-table', keys, (k) => {
    const move = el('select');
    move.append(...groups.map((g) => el('option', g.name, { value: g.name })));
    move.value = k.group;
    move.addEventListener('change', () => api('POST', `keys/${k.id}/group`, { group: move.value }).then(showKeys, (e) => say(e.message)));
    return [k.id, k.display_prefix, k.name, k.account, move, k.enabled ? 'yes' : 'no',
      button(k.enabled ? 'Disable' : 'Enable', async () => { await api('POST', `keys/${k.id}/${k.enabled ? 'disable' : 'enable'}`); await showKeys(); })];
  });
}

async function showGroups() {
  const { data } = await api('GET', 'groups');
  await fillSelect('#group-allow [name=group]', data, (g) => g.name);
  fillTable('#groups-table', data, (g) => {
    const models = el('span');
    for (const m of g.models) {
      models.append(el('span', `${m} `));
      models.append(button('×', async () => { await api('DELETE', `groups/${encodeURIComponent(g.name)}/models/${encodeURIComponent(m)}`); await showGroups(); }, { title: `deny ${m}` }));
      models.append(' ');
    }
    const l = g.limits;
    return [g.name, models, g.keys, `rpm ${l.rpm ?? '-'}, tpm ${l.tpm ?? '-'}, conc ${l.concurrency ?? '-'}`];
  });
}

async function showModels() {
  const { data } = await api('GET', 'models');
  fillTable('#models-table', data, (m) => [m.id, m.provider, m.upstream_model, m.base_url, m.timeout_ms,
    (m.fallbacks ?? []).join(', '), m.enabled ? 'yes' : 'no',
    button(m.enabled ? 'Disable' : 'Enable', async () => { await api('POST', `models/${encodeURIComponent(m.id)}/${m.enabled ? 'disable' : 'enable'}`); await showModels(); })]);
}

async function showAccounts() {
  const { data } = await api('GET', 'accounts');
  fillTable('#accounts-table', data, (a) => [a.name, a.keys, a.quota_tokens ?? '-', a.zero_data_retention ? 'yes' : 'no',
    a.enabled ? 'yes' : 'no',
    button(a.enabled ? 'Disable' : 'Enable', async () => { await api('POST', `accounts/${encodeURIComponent(a.name)}/${a.enabled ? 'disable' : 'enable'}`); await showAccounts(); })]);
}

async function showLimits() {
  $('#limits-view').textContent = JSON.stringify(await api('GET', 'limits'), null, 2);
}

async function showTools() {
  const [{ data: backends }, { data: prompts }, { data: accounts }, { data: calls }] = await Promise.all([
    api('GET', 'search_backends'), api('GET', 'prompts'), api('GET', 'accounts'), api('GET', 'tool_calls?limit=100')]);
  fillTable('#toolcalls-table', calls, (c) => [new Date(c.created_at).toLocaleString(), c.request_id, c.model, c.kind,
    c.server, c.name, c.outcome, c.duration_ms, c.error]);
  fillTable('#backends-table', backends, (b) => {
    const actions = el('span');
    if (!b.default) actions.append(button('Make default', async () => { await api('POST', `search_backends/${encodeURIComponent(b.name)}/default`); await showTools(); }));
    actions.append(button(b.enabled ? 'Disable' : 'Enable', async () => { await api('POST', `search_backends/${encodeURIComponent(b.name)}/${b.enabled ? 'disable' : 'enable'}`); await showTools(); }));
    actions.append(button('Remove', async () => { await api('DELETE', `search_backends/${encodeURIComponent(b.name)}`); await showTools(); }));
    return [b.name, b.kind, b.base_url, b.credential_ref ?? '-', b.default ? 'yes' : 'no', b.enabled ? 'yes' : 'no', actions];
  });
  await fillSelect('#prompt-create [name=account]', accounts, (a) => a.name);
  fillTable('#prompts-table', prompts, (p) => [p.id, p.name, p.account, p.current_version, p.versions]);
}

async function showAudit() {
  const { data } = await api('GET', 'audit?limit=200');
  fillTable('#audit-table', data, (a) => {
    const changed = a.before && a.after
      ? Object.keys(a.after).filter((k) => JSON.stringify(a.after[k]) !== JSON.stringify(a.before[k]))
        .map((k) => `${k}: ${JSON.stringify(a.before[k])} → ${JSON.stringify(a.after[k])}`).join('; ')
      : JSON.stringify(a.after ?? a.before);
    return [new Date(a.ts).toLocaleString(), a.actor, a.action, a.resource, a.resource_id, changed];
  });
}

const VIEWS = { overview: showOverview, log: showLog, keys: showKeys, groups: showGroups, models: showModels,
  accounts: showAccounts, limits: showLimits, tools: showTools, audit: showAudit };

async function show(view) {
  say('');
  for (const s of document.querySelectorAll('.view')) s.hidden = s.id !== `view-${view}`;
  for (const b of document.querySelectorAll('nav [data-view]')) b.classList.toggle('active', b.dataset.view === view);
  location.hash = view;
  try { await VIEWS[view](); } catch (e) { say(e.message); }
}

function onSubmit(sel, fn) {
  $(sel).addEventListener('submit', (ev) => {
    ev.preventDefault();
    fn(ev.target).catch((e) => say(e.message));
  });
}

function signedIn(yes) {
  $('#login').hidden = yes;
  $('#nav').hidden = !yes;
  if (!yes) for (const s of document.querySelectorAll('.view')) s.hidden = true;
}

async function start() {
  onSubmit('#login-form', async () => {
    sessionStorage.setItem(KEY, $('#login-key').value.trim());
    $('#login-key').value = '';
    try {
      await api('GET', 'whoami');
    } catch (e) {
      sessionStorage.removeItem(KEY);
      $('#login-error').textContent = e.message;
      return;
    }
    $('#login-error').textContent = '';
    signedIn(true);
    await show('overview');
  });
  $('#logout').addEventListener('click', () => { sessionStorage.removeItem(KEY); signedIn(false); });
  for (const b of document.querySelectorAll('nav [data-view]')) b.addEventListener('click', () => show(b.dataset.view));
  $('#overview-filter').addEventListener('submit', (ev) => { ev.preventDefault(); showOverview().catch((e) => say(e.message)); });
  $('#log-filter').addEventListener('submit', (ev) => { ev.preventDefault(); showLog().catch((e) => say(e.message)); });
  onSubmit('#key-create', async (f) => {
    const k = await api('POST', 'keys', formData(f));
    $('#key-secret-value').textContent = k.key;
    $('#key-secret').hidden = false;
    await showKeys();
  });
  $('#key-secret-done').addEventListener('click', () => { $('#key-secret-value').textContent = ''; $('#key-secret').hidden = true; });
  onSubmit('#group-create', async (f) => { await api('POST', 'groups', formData(f)); f.reset(); await showGroups(); });
  onSubmit('#group-allow', async (f) => {
    const d = formData(f);
    await api('POST', `groups/${encodeURIComponent(d.group)}/models`, { model: d.model });
    f.querySelector('[name=model]').value = '';
    await showGroups();
  });
  onSubmit('#model-put', async (f) => {
    const d = formData(f);
    const body = { provider: d.provider, base_url: d.base_url };
    if (d.upstream_model) body.upstream_model = d.upstream_model;
    if (d.credential_ref) body.credential_ref = d.credential_ref;
    if (d.timeout_ms) body.timeout_ms = Number(d.timeout_ms);
    if (d.fallbacks !== undefined) body.fallbacks = d.fallbacks.split(',').map((s) => s.trim()).filter(Boolean);
    await api('PUT', `models/${encodeURIComponent(d.id)}`, body);
    f.reset();
    await showModels();
  });
  onSubmit('#account-create', async (f) => {
    const d = formData(f);
    await api('POST', 'accounts', { name: d.name, zero_data_retention: d.zero_data_retention === 'on' });
    f.reset();
    await showAccounts();
  });
  onSubmit('#backend-create', async (f) => {
    const d = formData(f);
    await api('POST', 'search_backends', { name: d.name, kind: d.kind, base_url: d.base_url,
      ...(d.credential_ref ? { credential_ref: d.credential_ref } : {}), default: d.default === 'on' });
    f.reset();
    await showTools();
  });
  onSubmit('#prompt-create', async (f) => {
    const d = formData(f);
    await api('POST', 'prompts', { account: d.account, name: d.name, body: { instructions: d.instructions } });
    f.querySelector('[name=name]').value = '';
    f.querySelector('[name=instructions]').value = '';
    await showTools();
  });
  onSubmit('#limits-set', async (f) => {
    const d = formData(f);
    const body = {};
    if (d.scope === 'accounts') body.quota_tokens = d.quota_tokens ? Number(d.quota_tokens) : null;
    else for (const k of ['rpm', 'tpm', 'concurrency']) if (d[k]) body[k] = Number(d[k]);
    await api('PUT', `limits/${d.scope}/${encodeURIComponent(d.target)}`, body);
    await showLimits();
  });
  if (sessionStorage.getItem(KEY)) {
    try {
      await api('GET', 'whoami');
      signedIn(true);
      await show(VIEWS[location.hash.slice(1)] ? location.hash.slice(1) : 'overview');
      return;
    } catch { sessionStorage.removeItem(KEY); }
  }
  signedIn(false);
}

document.addEventListener('DOMContentLoaded', start);
