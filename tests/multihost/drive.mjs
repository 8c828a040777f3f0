// tests/multihost/drive.mjs: the load generator and load balancer of the
// multi-host test (issue 20), run by tests/multihost/run inside the `client`
// namespace: node drive.mjs CONFIG.json. Node built-ins only.
//
// It drives a bounded mixed load at both frontends as a load balancer would
// (a connection error, a stream cut off, or a 503 with Retry-After on one
// frontend is retried on the other, at most 3 attempts; a frontend that
// refused a connection is left out for 2 s), across Responses (Bearer),
// Messages (x-api-key + anthropic-version) and Chat Completions, streamed and
// not, over two model groups (mh-chat on w-a1/w-a2, mh-claude on
// w-b1/w-b2), with Responses chains that store on one frontend and continue
// with previous_response_id on the other. Through that traffic it kills:
//   S1  broker1 (SIGKILL) with requests in flight, then restarts it;
//   S2  broker2 (broker1 in the single-broker form) with streams in flight;
//   S3  worker w-a1 (SIGKILL); w-a2 on h3 serves its model;
//   S4  frontend fe1 (SIGKILL); the client retries on fe2; fe1 restarted;
//   S5  PostgreSQL (pg_ctl stop -m fast), then started again.
// and, when the build supports dns://, checks that fe3 and w-dns, given
// dns://brokers.sbmh (h3's /etc/hosts names both brokers), use both brokers,
// that fe3 goes on through broker2 while broker1 is down, and, at the end,
// that dropping broker2 from the name is noticed by the re-resolution.
// Figures: requests sent, answered by status and stream outcome, hung
// requests (must be 0), times to recover, request_log rows vs answers.
// Prints TAP lines numbered from config.tap_start; writes
// "pass fail last_number" to TMP/driver.result.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { readFileSync, writeFileSync } from 'node:fs';
import { alive, pidIn } from '../lib/proc.mjs';
import { readSSE } from '../lib/sse.mjs';
import { styleError, textOf } from '../lib/styles.mjs';

const cfg = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const TMP = cfg.tmp;
const KEY = readFileSync(cfg.key_file, 'utf8').trim();
const DSN = readFileSync(cfg.dsn_file, 'utf8').trim();
const FES = cfg.frontends;
const MULTI = cfg.brokers >= 2;
const DNS = cfg.dns === 1;
const BROKERS = MULTI ? ['broker1', 'broker2'] : ['broker1'];
const WORKERS = ['w-a1', 'w-b1', 'w-a2', 'w-b2'].concat(DNS ? ['w-dns'] : []);

const ATTEMPT_TIMEOUT_MS = 25000; // gateway deadline: model timeout 15 s + 2 s; past 25 s a request hung
const MAX_ATTEMPTS = 3;
const EJECT_MS = 2000;
const CONCURRENCY = 8;
const RUN_BUDGET_MS = 230000; // the whole driver; tests/multihost/run kills it at 280 s

const T_START = Date.now();
const execFileP = promisify(execFile);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const now = () => Date.now();

// ---- TAP --------------------------------------------------------------------

let tapN = cfg.tap_start - 1;
let pass = 0;
let fail = 0;
const failed = [];
function tap(ok, desc, ...detail) {
  tapN++;
  if (ok) pass++;
  else { fail++; failed.push(`not ok ${tapN} - ${desc}`); }
  console.log(`${ok ? 'ok' : 'not ok'} ${tapN} - ${desc}`);
  if (!ok) for (const d of detail.flat()) if (d !== undefined && d !== '') console.log(`#   ${String(d).slice(0, 600)}`);
  return ok;
}
const note = (s) => console.log(`# ${s}`);
function writeResult() {
  writeFileSync(`${TMP}/driver.failed`, failed.map((l) => `${l}\n`).join(''));
  writeFileSync(`${TMP}/driver.result`, `${pass} ${fail} ${tapN}\n`);
}

// ---- processes ----------------------------------------------------------------

const pidOf = (name) => pidIn(`${TMP}/run`, name);
const restarted = new Set();
const kills = []; // {name, t}
async function kill(name, sig = 'SIGKILL') {
  const pid = pidOf(name);
  if (!alive(pid)) throw new Error(`${name} is not running`);
  process.kill(pid, sig);
  const t = now();
  kills.push({ name, t });
  note(`${sig} ${name} (pid ${pid}) at +${t - T_START} ms`);
  for (let i = 0; i < 500 && alive(pid); i++) await sleep(10);
  if (alive(pid)) throw new Error(`${name} (pid ${pid}) did not die`);
  restarted.add(name);
  return t;
}
// Child processes run asynchronously: the load's timings must not stall.
async function start(name) {
  await execFileP('bash', [`${TMP}/start/${name}.sh`], { timeout: 20000 });
  if (!alive(pidOf(name))) throw new Error(`${name} did not start`);
  return now();
}
async function pg(action) {
  await execFileP('bash', [`${TMP}/start/pg-${action}.sh`], { timeout: 70000 });
}
async function psql(sql) {
  const { stdout } = await execFileP('psql', [DSN, '-X', '-At', '-F', '\t', '-v', 'ON_ERROR_STOP=1', '-c', sql],
    { encoding: 'utf8', timeout: 20000, maxBuffer: 64 << 20 });
  return stdout.split('\n').filter((l) => l.length > 0);
}
async function pgAccepting() {
  try { await psql('SELECT 1'); return true; } catch { return false; }
}

// ---- HTTP helpers ----------------------------------------------------------------

async function get(url, { headers = {}, timeout = 2000 } = {}) {
  const ac = new AbortController();
  const t = setTimeout(() => ac.abort(), timeout);
  try {
    const r = await fetch(url, { headers, signal: ac.signal });
    const text = await r.text();
    let json = null;
    try { json = JSON.parse(text); } catch { /* not JSON */ }
    return { status: r.status, text, json, headers: r.headers };
  } catch (e) {
    return { status: 0, text: String(e.cause?.code || e.message), json: null };
  } finally { clearTimeout(t); }
}

// Prometheus text: the sum of NAME's samples whose labels include FILTER.
async function metric(adminUrl, name, filter = {}) {
  const r = await get(`${adminUrl}/metrics`);
  if (r.status !== 200) { metric.lastError = `${r.status} ${r.text.slice(0, 60)}`; return null; }
  let sum = 0;
  let seen = false;
  for (const line of r.text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})?\s+(\S+)/.exec(line);
    if (!m || m[1] !== name) continue;
    const labels = {};
    for (const lm of (m[3] || '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[lm[1]] = lm[2];
    if (Object.entries(filter).every(([k, v]) => labels[k] === v)) {
      sum += Number(m[4]);
      seen = true;
    }
  }
  return seen ? sum : 0;
}
async function waitFor(fn, ms, every = 100) {
  const end = now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (now() > end) return null;
    await sleep(every);
  }
}

// ---- requests ------------------------------------------------------------------------

const STYLE_PATH = { responses: '/v1/responses', chat: '/v1/chat/completions', messages: '/v1/messages' };
function requestOf(kind, text, extra = {}) {
  const { style, model, stream, store } = kind;
  const auth = { authorization: `Bearer ${KEY}` };
  if (style === 'responses') {
    const body = { model, input: text, stream: !!stream, ...extra };
    if (store !== undefined) body.store = store;
    return { headers: auth, body };
  }
  if (style === 'chat') {
    const body = { model, stream: !!stream, messages: [{ role: 'user', content: text }] };
    if (store !== undefined) body.store = store;
    return { headers: auth, body };
  }
  return { headers: { 'x-api-key': KEY, 'anthropic-version': '2023-06-01' },
    body: { model, max_tokens: 1024, stream: !!stream, messages: [{ role: 'user', content: text }] } };
}
// {end: 'ok'|'error'|'cut', text, err}: 'error' only for the style's own error event
// (Responses: error + response.failed; Chat: a data {"error"} chunk, no [DONE]; Messages: event: error).
function streamOutcome(style, events) {
  let text = '';
  let err = null;
  let end = 'cut';
  let failed = false;
  for (const { event, data } of events) {
    if (style === 'responses') {
      if (event === 'response.output_text.delta') text += data.delta;
      if (event === 'response.completed' || event === 'response.incomplete') end = 'ok';
      if (event === 'error') err = styleError('chat', data) ?? { code: data?.code ?? data?.error?.code, message: data?.message ?? data?.error?.message };
      if (event === 'response.failed') failed = true;
    } else if (style === 'chat') {
      if (data === '[DONE]') { if (end !== 'error') end = 'ok'; continue; }
      if (data?.error) { err = styleError('chat', data) ?? data.error; end = 'error'; continue; }
      for (const ch of data?.choices ?? []) text += ch.delta?.content ?? '';
    } else {
      if (event === 'content_block_delta') text += data.delta?.text ?? '';
      if (event === 'message_stop') end = 'ok';
      if (event === 'error') { err = styleError('messages', data) ?? data?.error; end = 'error'; }
    }
  }
  if (style === 'responses' && err && failed) end = 'error';
  return { end, text, err };
}
function connCause(e) {
  let c = e;
  for (let i = 0; i < 5 && c; i++) {
    if (c.code) return c.code;
    c = c.cause;
  }
  return e?.name || 'error';
}

// One HTTP attempt on one frontend; never throws. onHead(attempt) runs when the
// reply's head is in (for streams: the stream has started).
async function attempt(fe, method, path, req, { want = null, onHead = null, stream = false, style = 'responses' } = {}) {
  const a = { fe: fe.name, path, method, t0: now(), tHead: null, tEnd: null, status: null, reqId: null, retryAfter: null,
    outcome: null, code: null, json: null, problems: [], stream };
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), ATTEMPT_TIMEOUT_MS);
  try {
    const res = await fetch(fe.url + path, {
      method, signal: ac.signal,
      headers: { ...(req.body ? { 'content-type': 'application/json' } : {}), ...req.headers, ...(stream ? { accept: 'text/event-stream' } : {}) },
      body: req.body ? JSON.stringify(req.body) : undefined,
    });
    a.tHead = now();
    a.status = res.status;
    a.reqId = res.headers.get('x-request-id');
    a.retryAfter = res.headers.get('retry-after');
    if (!a.reqId) a.problems.push('no x-request-id');
    if (onHead) onHead(a);
    if (res.status === 200 && stream && (res.headers.get('content-type') || '').startsWith('text/event-stream')) {
      let so;
      try {
        so = streamOutcome(style, await readSSE(res));
      } catch (e) {
        if (ac.signal.aborted) throw e;
        so = { end: 'cut', err: { code: connCause(e) } };
      }
      a.outcome = so.end === 'ok' ? 'ok' : so.end === 'error' ? 'stream_error' : 'cut';
      a.code = so.err?.code ?? null;
      if (so.end === 'ok' && want !== null && so.text !== want) a.problems.push(`streamed text ${JSON.stringify(so.text.slice(0, 80))} != ${JSON.stringify(want)}`);
      if (so.end === 'error' && !so.err?.message) a.problems.push(`stream error event without the style's body: ${JSON.stringify(so.err)}`);
    } else {
      const t = await res.text();
      try { a.json = JSON.parse(t); } catch { /* checked below */ }
      if (res.status === 200) {
        a.outcome = 'ok';
        if (want !== null) {
          const got = textOf(style, a.json);
          if (got !== want) a.problems.push(`text ${JSON.stringify(String(got).slice(0, 80))} != ${JSON.stringify(want)}`);
        }
      } else {
        a.outcome = 'http_error';
        const err = styleError(style, a.json);
        if (!err) a.problems.push(`${res.status} without the ${style} error body: ${t.slice(0, 200)}`);
        else { a.code = err.code; a.message = err.message; }
      }
    }
  } catch (e) {
    if (ac.signal.aborted) a.outcome = 'hung';
    else if (a.status !== null) { a.outcome = 'cut'; a.code = connCause(e); }
    else { a.outcome = 'conn_error'; a.code = connCause(e); }
  } finally {
    clearTimeout(timer);
  }
  a.tEnd = now();
  return a;
}

// ---- the load balancer -------------------------------------------------------------------

const ejected = {};
let rr = 0;
function pickFe(prefer, not) {
  const order = [];
  const startAt = prefer !== undefined ? FES.findIndex((f) => f.name === prefer) : (rr++ % FES.length);
  for (let i = 0; i < FES.length; i++) order.push(FES[(startAt + i) % FES.length]);
  const usable = order.filter((f) => (ejected[f.name] || 0) <= now());
  const pool = usable.length ? usable : order;
  return pool.find((f) => f.name !== not) || pool[0];
}
const retryable = (a) => a.outcome === 'conn_error' || a.outcome === 'cut' || (a.status === 503 && a.retryAfter !== null);

// A client request through the load balancer: up to MAX_ATTEMPTS attempts.
async function lb(method, path, req, opts = {}) {
  const r = { attempts: [], t0: now(), kind: opts.kind, tag: opts.tag };
  let fe = pickFe(opts.prefer);
  for (let i = 0; i < MAX_ATTEMPTS; i++) {
    const a = await attempt(fe, method, path, req, opts);
    r.attempts.push(a);
    if (!retryable(a) || i === MAX_ATTEMPTS - 1) break;
    if (a.outcome === 'conn_error' || a.outcome === 'cut') ejected[fe.name] = now() + EJECT_MS;
    if (i >= 1 && a.retryAfter !== null) await sleep(Math.min(1000, Number(a.retryAfter) * 1000 || 0));
    else await sleep(20);
    fe = pickFe(undefined, fe.name);
  }
  r.final = r.attempts[r.attempts.length - 1];
  r.tEnd = now();
  return r;
}

// ---- the request mix -----------------------------------------------------------------------

const KINDS = [
  { style: 'responses', model: 'mh-chat', stream: false, store: false },
  { style: 'chat', model: 'mh-claude', stream: true },
  { style: 'messages', model: 'mh-chat', stream: false },
  { style: 'responses', model: 'mh-claude', stream: true, store: true },
  { style: 'chain', model: 'mh-chat' },
  { style: 'chat', model: 'mh-chat', stream: false, store: false },
  { style: 'messages', model: 'mh-claude', stream: true },
  { style: 'responses', model: 'mh-claude', stream: false, store: true },
  { style: 'chat', model: 'mh-chat', stream: true, store: true },
  { style: 'messages', model: 'mh-chat', stream: true },
  { style: 'chain', model: 'mh-claude' },
  { style: 'chat', model: 'mh-claude', stream: false },
  { style: 'responses', model: 'mh-chat', stream: true, store: false },
  { style: 'messages', model: 'mh-claude', stream: false },
];

let seq = 0;
// One client request of KIND (a chain is three: store on one frontend, continue
// on the other, read the result back on the first). Returns the list of lb records.
async function one(scn, kind, { latency = 120, chunkDelay = 30, words = 4, onHead = null, prefer } = {}) {
  const n = ++seq;
  const words_ = Array.from({ length: words }, (_, i) => `w${i}`).join(' ');
  const marker = `mh ${scn.name} ${n} ${words_}`;
  const dir = kind.stream ? `[[emu:chunk_delay=${chunkDelay}]]` : `[[emu:latency=${latency}]]`;
  const text = `${dir} ${marker}`;
  const want = `You said: ${marker}`;
  if (kind.style !== 'chain') {
    const req = requestOf(kind, text);
    const r = await lb('POST', STYLE_PATH[kind.style], req, { want, stream: kind.stream, style: kind.style, kind, onHead, prefer });
    return [r];
  }
  // The chain: turn 1 stored, turn 2 on the other frontend, GET on the first.
  const k1 = { style: 'responses', model: kind.model, stream: false, store: true };
  const r1 = await lb('POST', '/v1/responses', requestOf(k1, text), { want, style: 'responses', kind: { ...k1, chain: 1 }, prefer });
  const out = [r1];
  if (r1.final.outcome !== 'ok') return out;
  const fe1 = r1.final.fe;
  const other = FES.find((f) => f.name !== fe1).name;
  const marker2 = `mh ${scn.name} ${n} turn two`;
  const r2 = await lb('POST', '/v1/responses', requestOf({ ...k1 }, `[[emu:latency=${latency}]] ${marker2}`,
    { previous_response_id: r1.final.json?.id }), { want: `You said: ${marker2}`, style: 'responses', kind: { ...k1, chain: 2 }, prefer: other });
  out.push(r2);
  if (r2.final.outcome !== 'ok') return out;
  const u1 = r1.final.json?.usage || {};
  const u2 = r2.final.json?.usage || {};
  // The emulator counts 4 + words per message it is sent: turn 2 saw turn 1 when
  // its input holds more than turn 1's input and answer together.
  if (!(u2.input_tokens > (u1.input_tokens || 0) + (u1.output_tokens || 0))) {
    r2.final.problems.push(`chain: turn 2 did not see turn 1 (input tokens ${u2.input_tokens} vs turn 1 ${u1.input_tokens}+${u1.output_tokens})`);
  }
  const id2 = r2.final.json?.id;
  const r3 = await lb('GET', `/v1/responses/${id2}`, { headers: { authorization: `Bearer ${KEY}` } },
    { style: 'responses', kind: { style: 'get' }, prefer: r2.final.fe === fe1 ? other : fe1 });
  if (r3.final.outcome === 'ok' && r3.final.json?.id !== id2) r3.final.problems.push(`GET returned ${r3.final.json?.id}, not ${id2}`);
  out.push(r3);
  r2.chainFes = [fe1, r2.final.fe, r3.final.fe];
  return out;
}

// CONCURRENCY loops walking KINDS until stop() (or maxRequests, or maxMs).
function startLoad(scn, { maxMs = 20000, maxRequests = 600, pauseMs = 60, kinds = KINDS, latency } = {}) {
  let stopping = false;
  const t0 = now();
  let count = 0;
  const loops = Array.from({ length: CONCURRENCY }, async (_, c) => {
    for (let i = c * 3; !stopping && now() - t0 < maxMs && count < maxRequests; i++) {
      count++;
      scn.recs.push(...await one(scn, kinds[i % kinds.length], { latency }));
      await sleep(pauseMs);
    }
  });
  return { stop: async () => { stopping = true; await Promise.all(loops); } };
}

// Requests held in flight: non-streamed ones the upstream answers after
// LATENCY ms, streams of WORDS words, CHUNK ms apart. Resolves once every
// stream's head is in (they have started) or after 5 s; .done waits for the ends.
async function hold(scn, { plain = [], streams = [], latency = 3000, chunk = 300, words = 14, prefer } = {}) {
  const heads = [];
  const all = [];
  for (const kind of plain) all.push(one(scn, kind, { latency, prefer }).then((rs) => { for (const r of rs) r.held = 'plain'; scn.recs.push(...rs); return rs; }));
  for (const kind of streams) {
    let h;
    heads.push(new Promise((res) => { h = res; }));
    all.push(one(scn, kind, { chunkDelay: chunk, words, onHead: h, prefer }).then((rs) => { h(); for (const r of rs) r.held = 'stream'; scn.recs.push(...rs); return rs; }));
  }
  await Promise.race([Promise.all(heads), sleep(5000)]);
  await sleep(300); // past the first events: the streams have shown output
  return { done: () => Promise.all(all) };
}

// ---- scenarios: records and figures ----------------------------------------------------------

const scenarios = [];
function scenario(name, title) {
  const s = { name, title, recs: [], figures: {}, downs: [] };
  scenarios.push(s);
  note(`--- ${name}: ${title}`);
  return s;
}
const attemptsOf = (s) => s.recs.flatMap((r) => r.attempts);
function countBy(list, f) {
  const m = {};
  for (const x of list) { const k = f(x); m[k] = (m[k] || 0) + 1; }
  return Object.entries(m).sort().map(([k, v]) => `${k}:${v}`).join(' ');
}
const label = (a) => (a.outcome === 'ok' ? (a.stream ? 'stream_ok' : String(a.status))
  : a.outcome === 'http_error' ? `${a.status}${a.code ? `(${a.code})` : ''}`
    : a.outcome === 'stream_error' ? `stream_error(${a.code})` : a.outcome);
// An attempt cut or refused by a frontend that was down then (killed in this scenario).
function excused(s, a) {
  return (a.outcome === 'conn_error' || a.outcome === 'cut')
    && s.downs.some((d) => d.fe === a.fe && a.tEnd >= d.from - 20 && a.t0 <= d.to);
}
function summarize(s) {
  const atts = attemptsOf(s);
  const f = s.figures;
  f.requests = s.recs.length;
  f.attempts = atts.length;
  f.retried = s.recs.filter((r) => r.attempts.length > 1).length;
  f.final = countBy(s.recs, (r) => label(r.final));
  f.byAttempt = countBy(atts, label);
  f.hung = atts.filter((a) => a.outcome === 'hung').length;
  f.streams = countBy(s.recs.filter((r) => r.final.stream), (r) => r.final.outcome);
  note(`${s.name}: requests ${f.requests} (attempts ${f.attempts}, retried ${f.retried}); final: ${f.final}`);
  note(`${s.name}: every attempt: ${f.byAttempt}; hung ${f.hung}${s.extra ? `; ${s.extra}` : ''}`);
  return f;
}
// Common checks for a scenario: nothing hung; every answer carried a request id
// and the right text or the style's error body; every cut/refused attempt
// was on a frontend that was down.
function checkCommon(s) {
  const atts = attemptsOf(s);
  const hung = atts.filter((a) => a.outcome === 'hung');
  tap(hung.length === 0, `${s.name}: no request hung past its deadline (${atts.length} attempts)`,
    hung.slice(0, 5).map((a) => `${a.fe} ${a.path} after ${a.tEnd - a.t0} ms`));
  const probs = atts.filter((a) => a.problems.length);
  tap(probs.length === 0, `${s.name}: every answer has its request id and the right text, or the style's error body`,
    probs.slice(0, 5).map((a) => `${a.fe} ${a.path} ${a.status}: ${a.problems.join('; ')}`));
  const bad = atts.filter((a) => (a.outcome === 'conn_error' || a.outcome === 'cut') && !excused(s, a));
  tap(bad.length === 0, `${s.name}: no connection refused or stream cut off except by a killed frontend`,
    bad.slice(0, 5).map((a) => `${a.fe} ${a.path} ${a.outcome} ${a.code} at +${a.tEnd - T_START} ms (status ${a.status})`));
}
const isStream = (r) => r.final.stream;
// Final outcome after the load balancer's retries: a 200, or for a stream
// that had started, the style's error event.
function finalOk(r, allowStreamError = true) {
  return r.final.outcome === 'ok' || (allowStreamError && r.final.outcome === 'stream_error');
}
// Recovery: from T (the kill) to the first success of a request started after
// it (on PRED's path), and the end of the last failed attempt started after T - 5 s.
function recovery(s, T, pred = () => true, startedAfter = true) {
  const after = s.recs.filter((r) => (!startedAfter || r.t0 >= T) && pred(r) && r.final.outcome === 'ok' && r.tEnd >= T);
  const firstOk = after.length ? Math.min(...after.map((r) => r.tEnd)) - T : null;
  const failed = attemptsOf(s).filter((a) => a.t0 >= T - 5000 && a.tEnd >= T && a.outcome !== 'ok');
  const lastFail = failed.length ? Math.max(...failed.map((a) => a.tEnd)) - T : 0;
  return { firstOk, lastFail, failedAttempts: failed.length };
}

// Watches a restarted broker from the moment it is started, while the load
// goes on: when it has every worker registered again, and when it first
// dispatches a job (its counter starts from 0 in the new process).
function watchRejoin(name, tRestart) {
  const admin = cfg.broker_admins[name];
  const st = { name, tRestart, tw: null, td: null, workers: null, dispatched: null };
  st.done = (async () => {
    const end = now() + 15000;
    while (now() < end && (st.tw === null || st.td === null)) {
      st.workers = await metric(admin, 'sb_broker_workers');
      if (st.tw === null && st.workers >= WORKERS.length) st.tw = now();
      st.dispatched = await metric(admin, 'sb_broker_jobs_dispatched_total');
      if (st.td === null && st.dispatched > 0) st.td = now();
      await sleep(50);
    }
  })();
  return st;
}
async function checkRejoin(s, st) {
  if (st.td === null) { // the scenario's load ended first: some more
    const load = startLoad(s, { maxMs: 8000, maxRequests: 300 });
    await waitFor(() => st.td !== null || now() > st.tRestart + 15000, 9000);
    await load.stop();
  }
  await st.done;
  tap(st.tw !== null, `${s.name}: restarted ${st.name} has every worker registered again (${WORKERS.length}) without restarting them`,
    `sb_broker_workers = ${st.workers}`);
  tap(st.td !== null, `${s.name}: jobs are dispatched through the restarted ${st.name} again (sb_broker_jobs_dispatched_total ${st.dispatched})`);
  s.figures.rejoinWorkersMs = st.tw !== null ? st.tw - st.tRestart : null;
  s.figures.rejoinDispatchMs = st.td !== null ? st.td - st.tRestart : null;
}

// ---- S0: baseline and chains ----------------------------------------------------------------------

async function baseline() {
  const s = scenario('S0-baseline', 'every kind of request on both frontends, chains across them');
  const load = startLoad(s, { maxMs: 4000, maxRequests: 120 });
  await load.stop();
  // One chain checked in the emulator's journal too: turn 2's upstream body holds turn 1.
  const rs = await one(s, { style: 'chain', model: 'mh-chat' }, { prefer: 'fe1' });
  s.recs.push(...rs);
  const j = await get(`${cfg.emu}/_emu/requests?limit=400`, { timeout: 5000 });
  let journalOk = false;
  let why = 'chain did not complete';
  if (rs.length === 3 && rs[1].final.outcome === 'ok') {
    const n = rs[0].final.json.output.filter((o) => o.type === 'message').flatMap((o) => o.content).map((c) => c.text).join('');
    const turn2 = textOf('responses', rs[1].final.json).replace(/^You said: /, '');
    const entry = (j.json?.requests || []).reverse().find((e) => JSON.stringify(e.body || '').includes(turn2));
    why = entry ? `upstream body: ${JSON.stringify(entry.body).slice(0, 300)}` : `no journal entry with ${turn2}`;
    journalOk = !!entry && JSON.stringify(entry.body).includes(n) && JSON.stringify(entry.body).includes(n.replace(/^You said: /, ''));
  }
  tap(journalOk && rs.every((r) => r.final.outcome === 'ok' && r.final.problems.length === 0),
    'S0: chain: stored on fe1, continued with previous_response_id on fe2 (upstream saw turn 1), read back on fe1', why);
  summarize(s);
  checkCommon(s);
  const notOk = s.recs.filter((r) => r.final.outcome !== 'ok');
  tap(notOk.length === 0, `S0: all ${s.recs.length} requests answered 200 (streams whole) before any fault`,
    notOk.slice(0, 5).map((r) => `${r.final.fe} ${r.final.path} ${label(r.final)} ${r.final.message || ''}`));
  const chains = s.recs.filter((r) => r.chainFes);
  tap(chains.length > 0 && chains.every((r) => r.chainFes[0] !== r.chainFes[1]),
    `S0: ${chains.length} chains each crossed frontends (store on one, previous_response_id on the other)`);
}

// ---- dns:// -----------------------------------------------------------------------------------------

async function dnsCheck() {
  const s = scenario('S-dns', 'dns://brokers.sbmh (h3\'s /etc/hosts: both brokers) for fe3 and w-dns on h3');
  const both = await waitFor(async () => (await dnsRegistered('broker1')) && (await dnsRegistered('broker2')), 10000);
  tap(!!both, 'dns: w-dns (--broker dns://brokers.sbmh:5556) registered at both brokers the name resolves to');
  const as = await viaFe3(s, 'start');
  tap(as.every((a) => a.outcome === 'ok' && !a.problems.length), 'dns: fe3 (--broker dns://brokers.sbmh:5555) answers mh-dns requests 200',
    as.map((a) => `${label(a)} ${a.message || ''} ${a.problems.join(';')}`));
  summarize(s);
}
const dnsRegistered = async (b) => ((await metric(cfg.broker_admins[b], 'sb_broker_worker_credits', { model: 'mh-dns', state: 'free' })) || 0) > 0;
// Four mh-dns requests through fe3 (dns://), recorded in scenario S.
async function viaFe3(s, tag) {
  const out = [];
  for (let i = 0; i < 4; i++) {
    const text = `mh dns ${tag} ${++seq}`;
    const a = await attempt(cfg.fe3, 'POST', '/v1/responses', requestOf({ style: 'responses', model: 'mh-dns', store: false }, text),
      { want: `You said: ${text}`, style: 'responses' });
    s.recs.push({ attempts: [a], final: a, t0: a.t0, tEnd: a.tEnd, kind: { style: 'responses', model: 'mh-dns' } });
    out.push(a);
  }
  return out;
}
// Re-resolution: brokers.sbmh stops naming broker2; w-dns must leave it
// (docs/protocol.md: names are re-resolved every 5 s, and a broker no longer
// listed is dropped as if it had died).
async function dnsReresolve() {
  const s = scenario('S-dns-change', 'h3\'s /etc/hosts changed: brokers.sbmh names broker1 only');
  const hostsFile = readFileSync(`${TMP}/dns-hosts-file`, 'utf8').trim();
  writeFileSync(hostsFile, `127.0.0.1 localhost\n${cfg.broker_addrs.broker1} brokers.sbmh\n`);
  const t = now();
  const gone = await waitFor(async () => !(await dnsRegistered('broker2')), 15000, 200);
  s.figures.reresolveMs = gone ? now() - t : null;
  tap(!!gone, `dns: after brokers.sbmh stops naming broker2 in /etc/hosts, w-dns leaves broker2 (${gone ? `${now() - t} ms` : 'still registered after 15 s'})`,
    gone ? '' : `w-dns still registered at broker2 15 s after ${hostsFile} changed: the re-resolution every 5 s does not see /etc/hosts changes`);
  const as = await viaFe3(s, 'after');
  tap(as.every((a) => a.outcome === 'ok'), 'dns: fe3 still answers 200', as.map((a) => `${label(a)} ${a.message || ''}`));
  summarize(s);
}

// ---- S1: broker1 killed under load --------------------------------------------------------------------

async function brokerKill() {
  const s = scenario('S1-broker1', `SIGKILL broker1 under load with requests in flight${MULTI ? '' : ' [SINGLE BROKER: no other broker to take over]'}, then restart it`);
  const load = startLoad(s, { maxMs: 30000, maxRequests: 800 });
  await sleep(2000);
  const h = await hold(s, {
    plain: [{ style: 'responses', model: 'mh-chat', store: false }, { style: 'chat', model: 'mh-claude', store: false },
      { style: 'messages', model: 'mh-chat' }, { style: 'messages', model: 'mh-claude' },
      { style: 'responses', model: 'mh-claude', store: true }, { style: 'chat', model: 'mh-chat', store: false }],
    latency: 2500,
  });
  await sleep(500); // dispatched, waiting on the upstream
  const inflight = await metric(cfg.broker_admins.broker1, 'sb_broker_jobs_in_flight');
  const tKill = await kill('broker1');
  s.extra = `broker1 held ${inflight} jobs when killed`;
  let dnsAfter = null;
  const tDns = now();
  if (DNS && MULTI) { await sleep(300); dnsAfter = await viaFe3(s, 'broker1-down'); }
  await sleep(Math.max(0, tDns + 5000 - now()));
  const tRestart = await start('broker1');
  const rejoin = watchRejoin('broker1', tRestart);
  await sleep(4500);
  await load.stop();
  await h.done();
  s.figures.recovery = recovery(s, tKill);
  s.figures.killAt = tKill;
  await checkRejoin(s, rejoin);
  summarize(s);
  checkCommon(s);
  const held = s.recs.filter((r) => r.held === 'plain');
  const newReqs = s.recs.filter((r) => r.t0 >= tKill + 200 && r.t0 < tRestart && !r.held);
  const rc = s.figures.recovery;
  note(`S1: kill -> first success of a request started after it: ${rc.firstOk} ms; last failed attempt ended +${rc.lastFail} ms (${rc.failedAttempts} failed attempts); rejoin: workers +${s.figures.rejoinWorkersMs} ms, first dispatch +${s.figures.rejoinDispatchMs} ms after restart`);
  if (MULTI) {
    tap(held.length > 0 && held.every((r) => r.final.outcome === 'ok'),
      `S1: all ${held.length} non-streamed requests in flight on the killed broker ended 200 (retried through the other broker)`,
      held.filter((r) => r.final.outcome !== 'ok').map((r) => `${r.final.fe} ${r.final.path} ${label(r.final)} ${r.final.message || ''} after ${r.tEnd - r.t0} ms`));
    const firstBad = newReqs.filter((r) => r.attempts[0].outcome !== 'ok' && !(r.final.stream && r.attempts[0].outcome === 'stream_error'));
    tap(newReqs.length > 0 && firstBad.length === 0,
      `S1: all ${newReqs.length} requests sent while broker1 was down succeeded at the first attempt (new jobs go to broker2 at once)`,
      firstBad.slice(0, 6).map((r) => `${r.attempts[0].fe} ${r.attempts[0].path} ${label(r.attempts[0])} ${r.attempts[0].message || ''} at +${r.t0 - tKill} ms`));
    const slow = newReqs.filter((r) => r.tEnd - r.t0 > 2000 && !r.final.stream);
    tap(slow.length === 0, `S1: none of them waited for the dead broker (each non-streamed one answered within 2 s)`,
      slow.slice(0, 6).map((r) => `${r.final.fe} ${r.final.path} took ${r.tEnd - r.t0} ms (started +${r.t0 - tKill} ms)`));
    const notOk = s.recs.filter((r) => !finalOk(r));
    tap(notOk.length === 0, `S1: every request ended 200, or (a stream already showing output) with the style's error event`,
      notOk.slice(0, 6).map((r) => `${r.final.fe} ${r.final.path} ${label(r.final)} ${r.final.message || ''}`));
    if (dnsAfter) {
      tap(dnsAfter.every((a) => a.outcome === 'ok'), 'S1: fe3 (dns://, both brokers resolved) answers mh-dns 200 while broker1 is down',
        dnsAfter.map((a) => `${label(a)} ${a.message || ''} ${a.tEnd - a.t0} ms`));
    }
  } else {
    // One broker: its death is an outage; requests must fail fast (503 in the
    // style's body), not hang, and come back after the restart.
    const slow503 = attemptsOf(s).filter((a) => a.t0 >= tKill && a.t0 < tRestart && a.outcome !== 'ok' && a.tEnd - a.t0 > 5000);
    tap(slow503.length === 0, `S1 [single broker]: while the only broker was down, failures were answered within 5 s (no waiting for deadlines)`,
      slow503.slice(0, 6).map((a) => `${a.fe} ${a.path} ${label(a)} after ${a.tEnd - a.t0} ms`));
    const odd = s.recs.filter((r) => !finalOk(r) && !(r.final.status === 503 || r.final.status === 502));
    tap(odd.length === 0, `S1 [single broker]: every request ended 200, the style's error event, or a retryable 502/503`,
      odd.slice(0, 6).map((r) => `${r.final.fe} ${r.final.path} ${label(r.final)} ${r.final.message || ''}`));
  }
  const afterRestart = s.recs.filter((r) => r.t0 >= tRestart + 3000);
  const arBad = afterRestart.filter((r) => r.final.outcome !== 'ok');
  tap(afterRestart.length > 0 && arBad.length === 0, `S1: all ${afterRestart.length} requests from 3 s after the restart succeeded`,
    arBad.slice(0, 5).map((r) => `${r.final.fe} ${r.final.path} ${label(r.final)}`));
}

// ---- S2: the other broker killed with streams in flight --------------------------------------------------

async function brokerStreams() {
  const victim = MULTI ? 'broker2' : 'broker1';
  const s = scenario('S2-streams', `SIGKILL ${victim} while 8 streams show output${MULTI ? '' : ' [SINGLE BROKER]'}; new requests meanwhile; restart it`);
  const streams = [
    { style: 'responses', model: 'mh-chat', stream: true, store: false }, { style: 'chat', model: 'mh-claude', stream: true },
    { style: 'messages', model: 'mh-chat', stream: true }, { style: 'responses', model: 'mh-claude', stream: true, store: true },
    { style: 'chat', model: 'mh-chat', stream: true, store: false }, { style: 'messages', model: 'mh-claude', stream: true },
    { style: 'responses', model: 'mh-claude', stream: true, store: false }, { style: 'messages', model: 'mh-chat', stream: true },
  ];
  const h = await hold(s, { streams, chunk: 350, words: 14 });
  const onVictim = await metric(cfg.broker_admins[victim], 'sb_broker_jobs_in_flight');
  const others = MULTI ? await metric(cfg.broker_admins.broker1, 'sb_broker_jobs_in_flight') : 0;
  const tKill = await kill(victim);
  const load = startLoad(s, { maxMs: 30000, maxRequests: 600 });
  await h.done();
  await sleep(Math.max(0, tKill + 4000 - now()));
  const tRestart = await start(victim);
  const rejoin = watchRejoin(victim, tRestart);
  await sleep(2500);
  await load.stop();
  s.figures.recovery = recovery(s, tKill, (r) => !r.held);
  s.extra = `streams in flight: ${onVictim} on ${victim}${MULTI ? `, ${others} on broker1` : ''}`;
  await checkRejoin(s, rejoin);
  summarize(s);
  checkCommon(s);
  const st = s.recs.filter((r) => r.held === 'stream');
  const started = st.filter((r) => r.attempts[0].status === 200);
  const errs = st.filter((r) => r.final.outcome === 'stream_error');
  const oks = st.filter((r) => r.final.outcome === 'ok');
  const endMs = errs.map((r) => r.final.tEnd - tKill);
  note(`S2: streams: ${oks.length} completed, ${errs.length} ended with the style's error event (${countBy(errs, (r) => `${r.kind.style}:${r.final.code}`)}) at +${endMs.length ? Math.max(...endMs) : 0} ms after the kill at most`);
  tap(started.length === st.length && oks.length + errs.length === st.length,
    `S2: each of the ${st.length} streams ended whole or with its style's error event (Responses error + response.failed, Chat data {error}, Messages event: error)`,
    st.filter((r) => r.final.outcome !== 'ok' && r.final.outcome !== 'stream_error').map((r) => `${r.final.fe} ${r.kind.style} ${label(r.final)}`));
  tap(errs.length === onVictim, `S2: exactly the streams running through ${victim} (${onVictim}) ended with the error event; the rest (${st.length - onVictim}) completed`,
    `error events: ${errs.length}, completed: ${oks.length}`);
  tap(endMs.every((ms) => ms < 6000), `S2: the error events came within 6 s of the kill (not at the deadline)`, `ends: ${endMs.join(' ')}`);
  const newReqs = s.recs.filter((r) => !r.held && r.t0 >= tKill && r.t0 < tRestart);
  const nb = newReqs.filter((r) => (MULTI ? r.attempts[0].outcome !== 'ok' : !finalOk(r) && r.final.status !== 503));
  tap(newReqs.length > 0 && nb.length === 0, MULTI
    ? `S2: all ${newReqs.length} requests sent after the kill succeeded at the first attempt`
    : `S2 [single broker]: the ${newReqs.length} requests sent after the kill ended 200 or a fast 503`,
  nb.slice(0, 6).map((r) => `${r.attempts[0].fe} ${r.attempts[0].path} ${label(r.attempts[0])} ${r.attempts[0].message || ''}`));
}

// ---- S3: a worker killed -------------------------------------------------------------------------------------

async function workerKill() {
  const s = scenario('S3-worker', 'SIGKILL worker w-a1 (mh-chat, h1) under load with jobs in flight; w-a2 on h3 takes over; restart it');
  const load = startLoad(s, { maxMs: 30000, maxRequests: 800 });
  await sleep(1500);
  const h = await hold(s, {
    plain: [{ style: 'responses', model: 'mh-chat', store: false }, { style: 'chat', model: 'mh-chat', store: false },
      { style: 'messages', model: 'mh-chat' }, { style: 'responses', model: 'mh-chat', store: false }],
    streams: [{ style: 'chat', model: 'mh-chat', stream: true, store: false }, { style: 'messages', model: 'mh-chat', stream: true },
      { style: 'responses', model: 'mh-chat', stream: true, store: false }, { style: 'messages', model: 'mh-chat', stream: true }],
    latency: 2500, chunk: 300, words: 12,
  });
  const wInflight = await metric(cfg.worker_admins['w-a1'], 'sb_worker_jobs_in_flight');
  const tKill = await kill('w-a1');
  await sleep(4000);
  const tRestart = await start('w-a1');
  const tw = await waitFor(async () => {
    for (const b of BROKERS) if ((await metric(cfg.broker_admins[b], 'sb_broker_workers')) < WORKERS.length) return null;
    return now();
  }, 15000);
  await sleep(1500);
  await load.stop();
  await h.done();
  s.figures.recovery = recovery(s, tKill, (r) => r.kind?.model === 'mh-chat' && !r.held);
  s.extra = `w-a1 held ${wInflight} jobs when killed; restarted w-a1 registered at ${BROKERS.join(', ')} +${tw ? tw - tRestart : '?'} ms`;
  summarize(s);
  checkCommon(s);
  tap(tw !== null, `S3: restarted w-a1 registered again at ${BROKERS.join(' and ')} (each has all ${WORKERS.length} workers)`);
  const plain = s.recs.filter((r) => r.held === 'plain');
  tap(plain.every((r) => r.final.outcome === 'ok'), `S3: the ${plain.length} non-streamed mh-chat requests in flight ended 200 (resubmitted to w-a2)`,
    plain.filter((r) => r.final.outcome !== 'ok').map((r) => `${r.final.fe} ${r.final.path} ${label(r.final)} ${r.final.message || ''}`));
  const st = s.recs.filter((r) => r.held === 'stream');
  const stErr = st.filter((r) => r.final.outcome === 'stream_error');
  note(`S3: held streams: ${st.length - stErr.length} completed, ${stErr.length} ended with the error event (${countBy(stErr, (r) => `${r.kind.style}:${r.final.code}`)})`);
  const notOk = s.recs.filter((r) => !finalOk(r));
  tap(notOk.length === 0, `S3: every request ended 200, or (a stream on w-a1 already showing output) with the style's error event`,
    notOk.slice(0, 6).map((r) => `${r.final.fe} ${r.final.path} ${label(r.final)} ${r.final.message || ''}`));
  const rc = s.figures.recovery;
  note(`S3: kill -> first mh-chat success started after it: ${rc.firstOk} ms; last failed attempt ended +${rc.lastFail} ms (${rc.failedAttempts} failed attempts)`);
}

// ---- S4: a frontend killed --------------------------------------------------------------------------------------

async function frontendKill() {
  const s = scenario('S4-frontend', 'SIGKILL frontend fe1 under load with requests in flight on it; the client retries on fe2; restart fe1');
  const load = startLoad(s, { maxMs: 30000, maxRequests: 800 });
  await sleep(1500);
  const h = await hold(s, {
    plain: [{ style: 'responses', model: 'mh-chat', store: false }, { style: 'chat', model: 'mh-claude', store: false },
      { style: 'messages', model: 'mh-chat' }, { style: 'messages', model: 'mh-claude' }],
    streams: [{ style: 'chat', model: 'mh-chat', stream: true, store: false }, { style: 'messages', model: 'mh-claude', stream: true },
      { style: 'responses', model: 'mh-claude', stream: true, store: false }],
    latency: 2500, chunk: 300, words: 12, prefer: 'fe1',
  });
  const down = { fe: 'fe1', from: now(), to: Infinity };
  s.downs.push(down);
  // The kill comes the moment fe1 has answered one more request (its reply is
  // with the client): that request's request_log row must survive the kill too.
  const fe1 = FES.find((f) => f.name === 'fe1');
  const lastText = `mh ${s.name} last ${++seq}`;
  const last = await attempt(fe1, 'POST', '/v1/messages', requestOf({ style: 'messages', model: 'mh-chat' }, lastText),
    { want: `You said: ${lastText}`, style: 'messages' });
  last.lastBeforeKill = true;
  s.recs.push({ attempts: [last], final: last, t0: last.t0, tEnd: last.tEnd, kind: { style: 'messages', model: 'mh-chat' } });
  const tKill = await kill('fe1');
  note(`S4: fe1 answered ${last.reqId} (${label(last)}) ${tKill - last.tEnd} ms before it was killed`);
  down.from = tKill;
  await sleep(4000);
  const tRestart = await start('fe1');
  const tReady = await waitFor(async () => ((await get(`${fe1.admin}/readyz`)).status === 200 ? now() : null), 15000);
  // The first 200 through the restarted fe1 itself.
  let tServe = null;
  for (let i = 0; i < 50 && tServe === null; i++) {
    const text = `mh ${s.name} back ${++seq}`;
    const a = await attempt(fe1, 'POST', '/v1/responses', requestOf({ style: 'responses', model: 'mh-chat', store: true }, text),
      { want: `You said: ${text}`, style: 'responses' });
    s.recs.push({ attempts: [a], final: a, t0: a.t0, tEnd: a.tEnd, kind: { style: 'responses', model: 'mh-chat' } });
    if (a.outcome === 'ok') tServe = a.tEnd;
    else await sleep(200);
  }
  down.to = tServe ?? now();
  await sleep(2500); // the balancer sends to fe1 again
  await load.stop();
  await h.done();
  // Recovery: the requests the kill cut off, retried on fe2.
  s.figures.recovery = recovery(s, tKill, (r) => r.attempts.some((a) => excused(s, a)), false);
  s.figures.fe1ServeMs = tServe ? tServe - tRestart : null;
  const cut = attemptsOf(s).filter((a) => excused(s, a));
  s.extra = `attempts cut or refused by the dead fe1: ${cut.length}; fe1 ready +${tReady ? tReady - tRestart : '?'} ms, first 200 +${s.figures.fe1ServeMs} ms after restart`;
  summarize(s);
  checkCommon(s);
  const held = s.recs.filter((r) => r.held);
  tap(held.length > 0 && held.every((r) => r.final.outcome === 'ok' && r.attempts[0].fe === 'fe1'),
    `S4: the ${held.length} requests in flight on fe1 when it died were retried on fe2 and succeeded`,
    held.filter((r) => r.final.outcome !== 'ok').map((r) => `${r.final.fe} ${r.final.path} ${label(r.final)}`));
  const notOk = s.recs.filter((r) => r.final.outcome !== 'ok');
  tap(notOk.length === 0, `S4: every request of the load ended 200 (streams whole) after the balancer's retries`,
    notOk.slice(0, 6).map((r) => `${r.final.fe} ${r.final.path} ${label(r.final)} ${r.final.message || ''}`));
  tap(tServe !== null, `S4: restarted fe1 serves again (200 ${s.figures.fe1ServeMs} ms after its start) with nothing else restarted`);
  const laterFe1 = s.recs.filter((r) => r.t0 > (tServe ?? Infinity) + 2100 && r.attempts[0].fe === 'fe1');
  tap(laterFe1.length > 0 && laterFe1.every((r) => r.final.outcome === 'ok'), `S4: the balancer sends to fe1 again (${laterFe1.length} requests, all 200)`);
  const rc = s.figures.recovery;
  note(`S4: kill -> first success of a request cut off by it (retried on fe2): ${rc.firstOk} ms; last failed attempt ended +${rc.lastFail} ms (${rc.failedAttempts} failed attempts)`);
}

// ---- S5: PostgreSQL stopped and started -----------------------------------------------------------------------

async function postgresOutage() {
  const s = scenario('S5-postgres', 'PostgreSQL stopped (pg_ctl -m fast) under load for 5 s, then started');
  const load = startLoad(s, { maxMs: 40000, maxRequests: 1000 });
  await sleep(2000);
  const tStop = now();
  await pg('stop');
  const tDown = now();
  await sleep(5000);
  const tStart = now();
  await pg('start');
  const tAccept = await waitFor(async () => ((await pgAccepting()) ? now() : null), 10000, 50);
  // Full service: a stored Responses request answered 200 by each frontend.
  const tServe = {};
  for (const fe of FES) {
    for (let i = 0; i < 100; i++) {
      const text = `mh ${s.name} back ${++seq}`;
      const a = await attempt(fe, 'POST', '/v1/responses', requestOf({ style: 'responses', model: 'mh-chat', store: true }, text),
        { want: `You said: ${text}`, style: 'responses' });
      s.recs.push({ attempts: [a], final: a, t0: a.t0, tEnd: a.tEnd, kind: { style: 'responses', model: 'mh-chat' }, probe: true });
      if (a.outcome === 'ok') { tServe[fe.name] = a.tEnd; break; }
      await sleep(100);
    }
  }
  await sleep(3000);
  await load.stop();
  const during = attemptsOf(s).filter((a) => a.t0 >= tDown && a.t0 < tStart);
  const slow = during.filter((a) => (a.tHead ?? a.tEnd) - a.t0 > 2000);
  const serveMs = FES.map((f) => (tServe[f.name] && tAccept ? tServe[f.name] - tAccept : null));
  s.figures.recovery = { pgStopMs: tDown - tStop, acceptAfterStartMs: tAccept ? tAccept - tStart : null, serveMs };
  s.extra = `stop took ${tDown - tStop} ms; while down: ${countBy(during, label)}; accepting ${tAccept ? tAccept - tStart : '?'} ms after start; stored 200 on ${FES.map((f, i) => `${f.name} +${serveMs[i]} ms`).join(', ')} after that`;
  summarize(s);
  checkCommon(s);
  tap(during.length > 0 && slow.length === 0, `S5: while PostgreSQL was down, all ${during.length} attempts were answered within 2 s`,
    slow.slice(0, 6).map((a) => `${a.fe} ${a.path} ${label(a)} after ${(a.tHead ?? a.tEnd) - a.t0} ms`));
  const bad = during.filter((a) => !(a.outcome === 'ok' || (a.status === 503 && a.retryAfter !== null)
    || (a.status === 500 && /store/.test(`${a.code} ${a.message}`)) || (a.outcome === 'stream_error' && /store/.test(`${a.code}`))));
  tap(bad.length === 0, `S5: answers while down were 200 (no database needed) or 503 with Retry-After (500 store_failed, or that error event, for one generated just as it went)`,
    bad.slice(0, 6).map((a) => `${a.fe} ${a.path} ${label(a)} ${a.message || ''} retry-after=${a.retryAfter}`));
  const n503 = during.filter((a) => a.status === 503).length;
  tap(n503 > 0, `S5: requests that need the database got fast 503s (${n503})`);
  tap(serveMs.every((ms) => ms !== null && ms <= 5000),
    `S5: full service within 5 s of PostgreSQL accepting connections (a stored Responses request 200 on ${FES.map((f, i) => `${f.name} after ${serveMs[i]} ms`).join(', ')})`);
  const after = s.recs.filter((r) => r.t0 >= Math.max(...Object.values(tServe), tAccept ?? 0) && !r.probe);
  const afterBad = after.filter((r) => r.final.outcome !== 'ok');
  tap(after.length > 0 && afterBad.length === 0, `S5: all ${after.length} requests after that succeeded`,
    afterBad.slice(0, 5).map((r) => `${r.final.fe} ${r.final.path} ${label(r.final)} ${r.final.message || ''}`));
}

// ---- request_log: one row per answered request ---------------------------------------------------------------

async function requestLog() {
  note('--- request_log');
  const atts = scenarios.flatMap((s) => attemptsOf(s).map((a) => ({ a, s })));
  const answered = new Map(); // reqId -> attempt
  const unanswered = []; // attempts without a complete answer: refused/cut by a dead frontend
  let dupIds = 0;
  for (const { a, s } of atts) {
    if (!a.reqId) { if (a.outcome !== 'conn_error') unanswered.push(a); continue; }
    if (excused(s, a)) { unanswered.push(a); continue; }
    if (answered.has(a.reqId)) dupIds++;
    answered.set(a.reqId, a);
  }
  const connRefused = atts.filter(({ a }) => a.outcome === 'conn_error').length;
  let rows = [];
  let missing = [];
  const t0 = now();
  for (;;) {
    try {
      rows = (await psql('SELECT request_id, count(*), min(frontend), min(status) FROM request_log GROUP BY request_id')).map((l) => l.split('\t'));
      const have = new Set(rows.map((r) => r[0]));
      missing = [...answered.keys()].filter((id) => !have.has(id));
    } catch (e) { missing = [...answered.keys()]; note(`psql: ${String(e.message).split('\n')[0]}`); }
    if (missing.length === 0 || now() - t0 > 20000) break;
    await sleep(500);
  }
  const waited = now() - t0;
  const dupRows = rows.filter((r) => Number(r[1]) > 1);
  const rowIds = new Set(rows.map((r) => r[0]));
  const orphans = rows.filter((r) => !answered.has(r[0]));
  const unansweredIds = new Set(unanswered.map((a) => a.reqId).filter(Boolean));
  const orphansExplained = orphans.filter((r) => unansweredIds.has(r[0]));
  const orphansOther = orphans.filter((r) => !unansweredIds.has(r[0]));
  const total = rows.reduce((n, r) => n + Number(r[1]), 0);
  note(`request_log: ${answered.size} answered requests (HTTP answers with an x-request-id), ${total} rows (${rowIds.size} ids) after waiting ${waited} ms`);
  note(`request_log: missing ${missing.length}, duplicated ${dupRows.length}; rows of requests cut by the killed fe1: ${orphansExplained.length} of ${unanswered.length} such attempts (${unanswered.filter((a) => !a.reqId).length} had no head); connections refused: ${connRefused}; rows with no answer: ${orphansOther.length}`);
  const missingInfo = missing.slice(0, 8).map((id) => {
    const a = answered.get(id);
    const k = kills.filter((x) => x.name === a.fe && x.t >= a.tEnd).sort((x, y) => x.t - y.t)[0];
    return `${id} ${a.fe} ${a.method} ${a.path} ${label(a)} answered at +${a.tEnd - T_START} ms${k ? `, ${k.t - a.tEnd} ms before ${a.fe} was killed` : ''}`;
  });
  tap(missing.length === 0, `request_log: every one of the ${answered.size} answered requests has its row`, missingInfo);
  const lastOnes = [...answered.values()].filter((a) => a.lastBeforeKill);
  const lastLost = lastOnes.filter((a) => missing.includes(a.reqId));
  tap(lastOnes.length > 0 && lastLost.length === 0, `request_log: the request a frontend answered just before it was SIGKILLed has its row`,
    lastLost.map((a) => `${a.reqId}: answered 200 by ${a.fe}, no row (the frontend keeps rows in memory up to 100 ms before writing them)`));
  tap(dupRows.length === 0 && dupIds === 0, 'request_log: no request id has two rows, and no two answers share an id',
    dupRows.slice(0, 5).map((r) => r.join(' ')), dupIds ? `${dupIds} answers with a repeated x-request-id` : '');
  tap(orphansOther.length === 0, `request_log: no row without an answer (${total} rows; besides the answered requests' only rows of requests the killed frontend was serving: ${orphansExplained.length})`,
    orphansOther.slice(0, 8).map((r) => `row ${r.join(' ')} has no answer`));
  return { answered: answered.size, rows: total, missing: missing.length, dup: dupRows.length, cutByFe: unanswered.length, cutRows: orphansExplained.length, orphans: orphansOther.length };
}

// ---- main ----------------------------------------------------------------------------------------------------------

const initialPids = {};
async function main() {
  const names = ['emulator', ...BROKERS, 'fe1', 'fe2', ...WORKERS, ...(DNS ? ['fe3'] : [])];
  for (const n of names) initialPids[n] = pidOf(n);
  note(`driver: ${FES.map((f) => `${f.name} ${f.url}`).join(', ')}; ${MULTI ? 'two brokers' : 'ONE broker (this build takes a single --broker endpoint)'}; dns:// ${DNS ? 'on' : 'off'}`);
  const guard = setTimeout(() => {
    tap(false, `the driver finished within ${RUN_BUDGET_MS / 1000} s`);
    writeResult();
    process.exit(1);
  }, RUN_BUDGET_MS);
  await baseline();
  if (DNS) await dnsCheck();
  else note('--- S-dns: skipped (this build has no dns:// broker entries)');
  await brokerKill();
  await brokerStreams();
  await workerKill();
  await frontendKill();
  await postgresOutage();
  if (DNS) await dnsReresolve();
  const rl = await requestLog();

  // Nothing else was restarted: every process we did not kill kept its pid, and all run.
  const moved = names.filter((n) => !restarted.has(n) && pidOf(n) !== initialPids[n]);
  const dead = names.filter((n) => !alive(pidOf(n)));
  tap(moved.length === 0 && dead.length === 0, `processes: all ${names.length} alive; only the killed ones (${[...restarted].join(', ')}) were restarted`,
    moved.length ? `pid changed: ${moved.join(' ')}` : '', dead.length ? `not running: ${dead.join(' ')}` : '');

  // The figures.
  console.log('# figures: scenario | requests | attempts | retried | hung | final outcome (after the balancer\'s retries)');
  let totReq = 0;
  let totAtt = 0;
  let totHung = 0;
  for (const s of scenarios) {
    const f = s.figures;
    totReq += f.requests; totAtt += f.attempts; totHung += f.hung;
    console.log(`# ${s.name.padEnd(13)} | ${String(f.requests).padStart(8)} | ${String(f.attempts).padStart(8)} | ${String(f.retried).padStart(7)} | ${String(f.hung).padStart(4)} | ${f.final}`);
  }
  console.log(`# ${'total'.padEnd(13)} | ${String(totReq).padStart(8)} | ${String(totAtt).padStart(8)} |         | ${String(totHung).padStart(4)} |`);
  console.log('# recovery');
  for (const s of scenarios) {
    const r = s.figures.recovery;
    if (!r) continue;
    if (s.name.startsWith('S5')) {
      console.log(`# ${s.name}: stop ${r.pgStopMs} ms; accepting ${r.acceptAfterStartMs} ms after start; full service (stored 200) ${FES.map((f, i) => `${f.name} +${r.serveMs[i]} ms`).join(', ')} after accepting`);
    } else {
      console.log(`# ${s.name}: first success after the kill +${r.firstOk} ms; errors back to 0 at +${r.lastFail} ms (${r.failedAttempts} failed attempts)${s.figures.rejoinWorkersMs != null ? `; restarted broker: workers back +${s.figures.rejoinWorkersMs} ms, dispatching +${s.figures.rejoinDispatchMs} ms` : ''}${s.figures.fe1ServeMs != null ? `; restarted fe1 serving +${s.figures.fe1ServeMs} ms` : ''}`);
    }
  }
  console.log(`# request_log: ${rl.rows} rows for ${rl.answered} answered requests; missing ${rl.missing}, duplicated ${rl.dup}; attempts cut by the killed frontend ${rl.cutByFe} (rows for ${rl.cutRows}); unexplained rows ${rl.orphans}`);
  clearTimeout(guard);
}

main().then(() => { writeResult(); process.exit(fail ? 1 : 0); })
  .catch((e) => { tap(false, `driver error: ${e.stack || e}`); writeResult(); process.exit(1); });
