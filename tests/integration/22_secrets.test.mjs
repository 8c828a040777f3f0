// The operator's upstream credential never leaves the gateway (issue 13,
// finding 6). The canary is the stack's real upstream credential
// (SB_EMU_UPSTREAM_KEY, 48 random hex characters the emulator requires): an
// upstream that quotes it in an error ([[emu:leak_key]], plain and in the
// middle of a stream) and an upstream that refuses it ([[emu:bad_key]],
// [[emu:key_forbidden]]) are driven through all four inbound styles against
// all four upstream kinds, streamed and not. The canary must appear in no
// reply body or header, no process log under $SB_VAR/log, no row of any
// table (every table information_schema lists, so a new one is covered) and
// not in the metrics output where there is one. A refused credential is the
// operator's problem: each style answers 502 "upstream authentication failed"
// in its own error body, the upstream is asked once (no retry), and the
// worker's log has the real cause.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { cfg, http, psql, sbctl, unique, sse, styleHeaders, waitFor } from './harness.mjs';

const CANARY = process.env.SB_EMU_UPSTREAM_KEY || readFileSync(join(cfg.varDir, 'emu-upstream-key'), 'utf8').trim();
const PROVIDERS = { 'openai-chat': '/v1', 'openai-responses': '/v1', anthropic: '', gemini: '/v1beta' };
const STYLES = ['chat', 'responses', 'messages', 'gemini'];
const AUTH_FAULTS = ['bad_key', 'key_forbidden'];
const GENERIC = 'upstream authentication failed';

// A model on a route of its own (its own upstream model name, so its faults
// and the emulator's counters concern one case only).
function routeModel(provider) {
  const id = unique('sec');
  const upstream = `up-${id}`;
  sbctl('model', 'add', id, '--provider', provider, '--base-url', `${cfg.emu}${PROVIDERS[provider]}`,
    '--upstream-model', upstream, '--credential-ref', 'SB_EMU_UPSTREAM_KEY', '--timeout-ms', '5000');
  return { id, upstream };
}

async function setFault(upstream, directives) {
  const res = await fetch(`${cfg.emu}/_emu/faults/${encodeURIComponent(upstream)}`, {
    method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ directives, count: 0 }),
  });
  assert.equal(res.status, 200, await res.text());
}

async function clearFault(upstream) {
  await fetch(`${cfg.emu}/_emu/faults/${encodeURIComponent(upstream)}`, { method: 'DELETE' });
}

async function upstreamCounts(upstream) {
  const s = await (await fetch(`${cfg.emu}/_emu/stats`)).json();
  return s.by_model?.[upstream] ?? { requests: 0, faults: 0 };
}

// One request in a style: {status, headers, text, json, events} (events: the
// SSE events of a stream that started; text: the whole body).
async function send(style, model, stream) {
  const headers = styleHeaders(style);
  let path;
  let body;
  if (style === 'chat') {
    path = '/v1/chat/completions';
    body = { model, stream, messages: [{ role: 'user', content: 'hello' }] };
  } else if (style === 'responses') {
    path = '/v1/responses';
    body = { model, stream, store: false, input: 'hello' };
  } else if (style === 'messages') {
    path = '/v1/messages';
    body = { model, stream, max_tokens: 32, messages: [{ role: 'user', content: 'hello' }] };
  } else {
    path = `/v1beta/models/${model}:${stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`;
    body = { contents: [{ role: 'user', parts: [{ text: 'hello' }] }] };
  }
  if (!stream) {
    const r = await http('POST', path, { key: null, headers, body });
    return { status: r.status, headers: r.headers, text: r.text, json: r.json, events: [] };
  }
  const r = await sse(path, { key: null, headers, body, timeout: 20000 });
  return { status: r.status, headers: r.headers, text: r.raw, json: r.json, events: r.events };
}

function headerText(headers) {
  const out = [];
  headers.forEach((v, k) => out.push(`${k}: ${v}`));
  return out.join('\n');
}

function assertNoCanary(r, what) {
  assert.ok(!r.text.includes(CANARY), `${what}: the credential is in the reply body: ${r.text.slice(0, 600)}`);
  assert.ok(!headerText(r.headers).includes(CANARY), `${what}: the credential is in a reply header`);
}

// The style's own error body for a 502, with the generic message.
function assertStyleError(style, r, what) {
  assert.equal(r.status, 502, `${what}: status ${r.status}: ${r.text.slice(0, 400)}`);
  const j = r.json;
  assert.ok(j, `${what}: a JSON error body, got ${r.text.slice(0, 400)}`);
  if (style === 'chat' || style === 'responses') {
    assert.ok(j.error && typeof j.error === 'object', `${what}: OpenAI error body`);
    assert.ok('type' in j.error && 'param' in j.error && 'code' in j.error, `${what}: message, type, param, code`);
    assert.equal(j.error.message, GENERIC, what);
    assert.notEqual(j.error.code, 'invalid_api_key', what);
  } else if (style === 'messages') {
    assert.equal(j.type, 'error', what);
    assert.equal(j.error.message, GENERIC, what);
    assert.ok(!['authentication_error', 'permission_error'].includes(j.error.type), `${what}: type ${j.error.type}`);
  } else {
    assert.equal(j.error.code, 502, what);
    assert.equal(j.error.message, GENERIC, what);
    assert.ok(!['UNAUTHENTICATED', 'PERMISSION_DENIED'].includes(j.error.status), `${what}: status ${j.error.status}`);
  }
  // Nothing that would make an SDK blame the client's own key.
  for (const s of ['Incorrect API key', 'authentication_error', 'invalid_api_key', 'API key not valid']) {
    assert.ok(!r.text.includes(s), `${what}: "${s}" in ${r.text.slice(0, 400)}`);
  }
}

// The reply is an error: an HTTP error, or a stream that carries one.
function isError(r) {
  if (r.status >= 400) return true;
  return r.events.some((e) => e.event === 'error' || e.event === 'response.failed' ||
    (e.data && typeof e.data === 'object' && (e.data.error || e.data.type === 'error' || e.data.type === 'response.failed')));
}

function logFiles(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const st = statSync(p);
    if (st.isDirectory()) out.push(...logFiles(p));
    else if (st.isFile()) out.push(p);
  }
  return out;
}

function workerLogs() {
  return logFiles(join(cfg.varDir, 'log')).filter((p) => /worker/.test(p)).map((p) => readFileSync(p, 'utf8')).join('\n');
}

test('the canary is a real secret of this stack', () => {
  assert.ok(CANARY.length >= 32, 'SB_EMU_UPSTREAM_KEY (or $SB_VAR/emu-upstream-key) holds the upstream credential');
});

test('an upstream quoting the credential: scrubbed in every style and upstream kind, streamed or not', async () => {
  let redacted = 0;
  for (const provider of Object.keys(PROVIDERS)) {
    for (const style of STYLES) {
      const m = routeModel(provider);
      await setFault(m.upstream, 'leak_key');
      try {
        for (const stream of [false, true]) {
          const what = `${style} -> ${provider}${stream ? ' (stream)' : ''}`;
          const r = await send(style, m.id, stream);
          assertNoCanary(r, what);
          assert.ok(isError(r), `${what}: an error reply, got ${r.status} ${r.text.slice(0, 400)}`);
          if (r.text.includes('[redacted]')) redacted++;
        }
        const c = await upstreamCounts(m.upstream);
        assert.equal(c.faults, 2, `${style} -> ${provider}: the emulator quoted the credential twice`);
      } finally {
        await clearFault(m.upstream);
      }
    }
  }
  // The quote reached the clients, with the credential cut out of it.
  assert.ok(redacted >= 16, `"[redacted]" in ${redacted} of 32 replies`);
});

test('an upstream refusing the credential: 502 "upstream authentication failed" in each style, not retried, cause logged', async () => {
  const cases = [];
  for (const fault of AUTH_FAULTS) {
    for (const provider of Object.keys(PROVIDERS)) {
      for (const style of STYLES) {
        const m = routeModel(provider);
        await setFault(m.upstream, fault);
        try {
          for (const stream of [false, true]) {
            const what = `${fault}: ${style} -> ${provider}${stream ? ' (stream)' : ''}`;
            const r = await send(style, m.id, stream);
            assertNoCanary(r, what);
            if (!stream || r.json) {
              assertStyleError(style, r, what);
            } else {
              // A stream that had started: its error event carries the generic text.
              assert.ok(r.text.includes(GENERIC), `${what}: ${r.text.slice(0, 400)}`);
              assert.ok(!r.text.includes('Incorrect API key') && !r.text.includes('authentication_error'), what);
            }
          }
          // Once per request: a refused credential is not retried on the route.
          const c = await upstreamCounts(m.upstream);
          assert.equal(c.requests, 2, `${fault}: ${style} -> ${provider}: ${c.requests} upstream requests for 2`);
          cases.push({ fault, provider, upstream: m.upstream });
        } finally {
          await clearFault(m.upstream);
        }
      }
    }
  }
  // The operator's log has the upstream's own words for each route, scrubbed.
  await waitFor(() => cases.every((c) => workerLogs().includes(c.upstream)), { timeout: 5000 });
  const logs = workerLogs();
  for (const c of cases) {
    const line = logs.split('\n').find((l) => l.includes(GENERIC) && l.includes(c.upstream));
    assert.ok(line, `no "${GENERIC}" log line for ${c.fault} on ${c.provider} (${c.upstream})`);
    if (c.fault === 'bad_key' && c.provider.startsWith('openai')) assert.match(line, /Incorrect API key provided/);
    if (c.fault === 'bad_key' && c.provider === 'anthropic') assert.match(line, /invalid x-api-key/);
    if (c.fault === 'key_forbidden' && c.provider === 'gemini') assert.match(line, /reported as leaked/);
  }
});

test('the canary is in no process log', async () => {
  const files = logFiles(join(cfg.varDir, 'log'));
  assert.ok(files.some((p) => /worker/.test(p)) && files.some((p) => /frontend/.test(p)), `logs: ${files.join(', ')}`);
  for (const p of files) {
    const text = readFileSync(p, 'utf8');
    assert.ok(!text.includes(CANARY), `the upstream credential is in ${p}`);
  }
});

test('the canary is in no row of any table', () => {
  const tables = psql(`SELECT table_schema || '|' || table_name FROM information_schema.tables
    WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')
    ORDER BY 1`);
  assert.ok(tables.some((t) => t.endsWith('|request_log')), `tables: ${tables.join(', ')}`);
  const q = (s) => `"${s.replaceAll('"', '""')}"`;
  // Each row as text (every column, JSON included), searched in PostgreSQL;
  // also the canary's bytes in hex, for a bytea column.
  const sql = tables.map((t) => {
    const [schema, name] = t.split('|');
    return `SELECT ${`'${t.replaceAll("'", "''")}'`} || ':' || count(*) FROM ${q(schema)}.${q(name)} x
      WHERE strpos(x::text, :'v1') > 0 OR strpos(x::text, encode(convert_to(:'v1', 'UTF8'), 'hex')) > 0`;
  }).join('\nUNION ALL\n');
  const counts = psql(`${sql};`, CANARY);
  assert.equal(counts.length, tables.length);
  const hits = counts.filter((l) => !l.endsWith(':0'));
  assert.deepEqual(hits, [], `rows holding the upstream credential: ${hits.join(', ')}`);
  // The quoting errors did reach request_log, scrubbed.
  const scrubbed = psql(`SELECT count(*) FROM request_log WHERE error LIKE '%[redacted]%'`);
  assert.ok(Number(scrubbed[0]) > 0, 'request_log.error holds the scrubbed upstream messages');
});

test('the canary is in no process\'s metrics or health output, nor is any API key', async () => {
  const urls = [...(process.env.SB_FRONTEND_ADMIN_URLS ?? '').split(' '), process.env.SB_BROKER_ADMIN_URL ?? '',
    ...(process.env.SB_WORKER_ADMIN_URLS ?? '').split(' ')].filter(Boolean);
  assert.equal(urls.length, 5, 'two frontends, the broker and two workers have an admin port');
  for (const url of urls) {
    for (const p of ['/metrics', '/healthz', '/readyz']) {
      const res = await fetch(url + p);
      assert.equal(res.status, 200, url + p);
      const text = await res.text();
      assert.ok(!text.includes(CANARY), `the upstream credential is in ${url}${p}`);
      assert.ok(!text.includes(cfg.key) && !/sk-sb-/.test(text), `an API key is in ${url}${p}`);
    }
  }
});
