// tests/fault/run.mjs: the fault suite (issue 13, "Tests"). Against a running
// stack (deploy/local: PostgreSQL, broker, 2 workers, 2 frontends, emulator),
// one scenario after another, each under mixed load from a few concurrent
// clients — Responses, Chat Completions, Messages and Generate Content,
// streamed and not, store true and false:
//   worker   a worker SIGKILLed every 2 s (w1, w2 in turn), restarted at once
//            with its own arguments, as deploy/local starts it;
//   postgres PostgreSQL stopped (pg_ctl -m fast) for 20 s, then started;
//   broker   the broker SIGKILLed and restarted at once, then SIGKILLed and
//            restarted 5 s later;
//   frontend fe1 sent SIGTERM (it drains), then restarted.
// Each scenario uses its own account and key. For each it reports requests
// sent; answers by status (connection errors and timeouts apart); streams that
// ended without their terminal event; request_log rows found for the
// answered requests (by the x-request-id each answer carries, waiting —
// bounded — for the spool replay after the outage); stored objects (every 200
// with store true is fetched back, and a sample is chained from with
// previous_response_id); and the lost count: a 200 whose stored object is
// missing, an answered request without its row, a row whose answer never
// reached its client, a request past its deadline, a stream cut without its
// terminal or error event, or a process that crashed (died unasked, or a
// sanitizer report in its log). It also asserts that every answer that is not
// a 200 is retryable (502/503, or 500 store_failed during the outage) in the
// style's own error body, with Retry-After where docs/ say so, and that a 200
// answers the request it was sent for. Prints a markdown table; exits 1 if
// anything is lost or wrong. Run it through tests/fault/run (sources the
// stack's $SB_VAR/env); tests/run runs it once, in the plain pass.
//   node run.mjs [--only worker,postgres,broker,frontend] [--clients N] [--seconds S]
import { execFileSync } from 'node:child_process';
import { readFileSync, statSync, openSync, readSync, closeSync, existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { alive, pidIn } from '../lib/proc.mjs';
import { readSSE } from '../lib/sse.mjs';
import { styleError, textOf } from '../lib/styles.mjs';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const LIB = `${REPO}/deploy/local/lib.sh`;

function need(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run through tests/fault/run (it sources $SB_VAR/env)`);
  return v;
}
const cfg = {
  urls: need('SB_FRONTEND_URLS').split(/\s+/).filter(Boolean),
  varDir: need('SB_VAR'),
  dsn: need('SB_PG_DSN'),
  sbctl: process.env.SBCTL || `${need('SB_BUILD_DIR')}/bin/sbctl`,
  emu: need('SB_EMU_URL'),
};

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : dflt;
};
const ONLY = opt('only', 'worker,postgres,broker,frontend').split(',');
const CLIENTS = Number(opt('clients', 6));
const LOAD_S = Number(opt('seconds', 20)); // load time of the worker scenario
const REQ_TIMEOUT_MS = 30000; // a request still open then has hung: the gateway's own deadline is 62 s
const ROW_WAIT_MS = 30000;    // rows of answered requests must be in request_log by then
const CHAIN_SAMPLE = 8;       // stored responses per scenario chained from

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const now = () => Date.now();

// ---- the stack's processes --------------------------------------------------

function bash(script, ...a) {
  return execFileSync('bash', ['-c', script, LIB, ...a], {
    env: process.env, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8',
  });
}
const pidOf = (name) => pidIn(`${cfg.varDir}/run`, name);
function argvOf(name) {
  const pid = pidOf(name);
  if (!alive(pid)) throw new Error(`${name} is not running`);
  return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter((s) => s.length > 0);
}
function procNames() {
  return bash('source "$0" && sb_proc_names').split('\n').filter(Boolean);
}
async function kill(name, sig) {
  const pid = pidOf(name);
  process.kill(pid, sig);
  const end = now() + 15000;
  while (alive(pid) && now() < end) await sleep(20);
  if (alive(pid)) throw new Error(`${name} (pid ${pid}) did not exit after ${sig}`);
}
// Starts NAME again with the arguments it ran with, as deploy/local does
// (sb_spawn: its pid file, its log appended to).
function respawn(name, argv) {
  bash('source "$0" && sb_spawn "$@"', name, ...argv);
}
function pgCtl(action) {
  bash(`source "$0" && bin="$(sb_pg_bindir)" && sb_as_pg "$bin/pg_ctl" ${action} -D "$SB_VAR/pg/data" `
    + `-l "$SB_VAR/log/postgres.log" -w -t 60 ${action === 'stop' ? '-m fast' : ''} >/dev/null`);
}
function psql(sql, ...params) {
  const a = [cfg.dsn, '-X', '-At', '-v', 'ON_ERROR_STOP=1'];
  params.forEach((p, i) => a.push('-v', `v${i + 1}=${p}`));
  return execFileSync('psql', a, { input: sql, encoding: 'utf8' }).split('\n').filter((l) => l.length > 0);
}
function sbctl(...a) {
  return execFileSync(cfg.sbctl, a, { encoding: 'utf8', env: process.env, stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

// Log sizes now, to read what a scenario added.
function logMarks() {
  const m = {};
  for (const n of procNames()) {
    const f = `${cfg.varDir}/log/${n}.log`;
    m[n] = existsSync(f) ? statSync(f).size : 0;
  }
  return m;
}
function logSince(name, offset) {
  const f = `${cfg.varDir}/log/${name}.log`;
  if (!existsSync(f)) return '';
  const size = statSync(f).size;
  if (size <= offset) return '';
  const fd = openSync(f, 'r');
  const buf = Buffer.alloc(size - offset);
  readSync(fd, buf, 0, buf.length, offset);
  closeSync(fd);
  return buf.toString('utf8');
}
const CRASH_RE = /ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|Assertion .* failed|Segmentation fault|core dumped|stack smashing/;

// ---- requests ---------------------------------------------------------------

// The rotation of request kinds every client walks through.
const KINDS = [];
for (const style of ['responses', 'chat', 'messages', 'gemini']) {
  for (const stream of [false, true]) {
    for (const store of (style === 'responses' || style === 'chat') ? [true, false] : [null]) {
      KINDS.push({ style, stream, store });
    }
  }
}

function requestOf(kind, key, text) {
  const { style, stream, store } = kind;
  const auth = { authorization: `Bearer ${key}` };
  if (style === 'responses') {
    return { path: '/v1/responses', headers: auth, body: { model: 'emu-chat', input: text, store, stream } };
  }
  if (style === 'chat') {
    return { path: '/v1/chat/completions', headers: auth,
      body: { model: 'emu-chat', store, stream, messages: [{ role: 'user', content: text }] } };
  }
  if (style === 'messages') {
    return { path: '/v1/messages', headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01' },
      body: { model: 'emu-chat', max_tokens: 64, stream, messages: [{ role: 'user', content: text }] } };
  }
  return { path: `/v1beta/models/emu-chat:${stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`,
    headers: { 'x-goog-api-key': key }, body: { contents: [{ role: 'user', parts: [{ text }] }] } };
}

// Where docs/ promise Retry-After (protocol.md: broker_restarted; limits.md:
// store_unavailable, server_busy, too_many_connections), by code or, for the
// styles whose bodies carry no such code, by message.
function retryAfterPromised(err) {
  return /^(store_unavailable|broker_restarted|server_busy|too_many_connections)$/.test(err.code)
    || /job broker restarted|Stored responses are temporarily unavailable/.test(err.message);
}

// The error events a stream that had started may end with under these faults
// (docs/protocol.md: the worker or broker lost once output was shown) — a
// server-side, retryable kind in each style's vocabulary.
const RETRYABLE_EVENT = {
  responses: /^(worker_lost|broker_unavailable|broker_restarted|no_workers|shutting_down|server_error)$/,
  chat: /^(worker_lost|broker_unavailable|broker_restarted|no_workers|shutting_down|server_error)$/,
  messages: /^(api_error|overloaded_error)$/,
  gemini: /^(UNAVAILABLE|INTERNAL)$/,
};

// What a stream's events say: {end: 'ok'|'error'|'cut', text, id, err}.
function streamOutcome(style, events) {
  let text = '';
  let id = null;
  let err = null;
  let end = 'cut';
  for (const { event, data } of events) {
    if (style === 'responses') {
      if (event === 'response.created') id = data.response?.id ?? null;
      if (event === 'response.output_text.delta') text += data.delta;
      if (event === 'response.completed' || event === 'response.incomplete') end = 'ok';
      if (event === 'error') {
        const e = data?.error ?? data ?? {};
        err = { code: e.code ?? e.type, message: e.message };
        end = 'error';
      }
      if (event === 'response.failed' && end !== 'error') end = 'error';
    } else if (style === 'chat') {
      if (data === '[DONE]') { if (end !== 'error') end = 'ok'; continue; }
      if (data?.error) { err = styleError('chat', data) ?? data.error; end = 'error'; continue; }
      id = id ?? data?.id ?? null;
      for (const ch of data?.choices ?? []) text += ch.delta?.content ?? '';
    } else if (style === 'messages') {
      if (event === 'content_block_delta') text += data.delta?.text ?? '';
      if (event === 'message_stop') end = 'ok';
      if (event === 'error') { err = styleError('messages', data) ?? data.error; end = 'error'; }
    } else {
      if (data?.error) { err = styleError('gemini', data) ?? data.error; end = 'error'; continue; }
      const cand = data?.candidates?.[0];
      for (const p of cand?.content?.parts ?? []) text += p.text ?? '';
      if (cand?.finishReason) end = 'ok';
    }
  }
  // Anything after a terminal event (other than Chat's [DONE]) would be a defect too.
  return { end, text, id, err };
}

function connCause(e) {
  let c = e;
  for (let i = 0; i < 4 && c; i++) {
    if (c.code) return c.code;
    c = c.cause;
  }
  return e.name || 'error';
}

// One request; returns its record (never throws).
async function send(scn, kind, base, key, n, latencyMs = 150) {
  const marker = `${scn.name}-${scn.tag}-${n}`;
  const text = `${kind.stream ? '[[emu:chunk_delay=40]] ' : ''}[[emu:latency=${latencyMs}]] fault ${marker}`;
  const want = `You said: fault ${marker}`;
  const { path, headers, body } = requestOf(kind, key, text);
  const rec = { ...kind, base, marker, status: null, outcome: null, problems: [] };
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), REQ_TIMEOUT_MS);
  const t0 = now();
  try {
    const res = await fetch(base + path, {
      method: 'POST', signal: ac.signal,
      headers: { 'content-type': 'application/json', ...headers, ...(kind.stream ? { accept: 'text/event-stream' } : {}) },
      body: JSON.stringify(body),
    });
    rec.status = res.status;
    rec.reqId = res.headers.get('x-request-id');
    rec.retryAfter = res.headers.get('retry-after');
    if (!rec.reqId) rec.problems.push('no x-request-id');
    const sse = res.status === 200 && kind.stream;
    if (sse) {
      const so = streamOutcome(kind.style, await readSSE(res));
      rec.outcome = so.end === 'ok' ? 'ok' : so.end === 'error' ? 'stream_error' : 'cut';
      if (so.end === 'ok' && so.text !== want) rec.problems.push(`streamed text ${JSON.stringify(so.text.slice(0, 80))} != ${JSON.stringify(want)}`);
      if (so.end === 'error') {
        rec.code = so.err?.code ?? '?';
        if (!so.err?.message) rec.problems.push(`stream error event not in the style's body: ${JSON.stringify(so.err)}`);
        else if (!RETRYABLE_EVENT[kind.style].test(rec.code)) rec.problems.push(`stream error event not retryable: ${JSON.stringify(so.err)}`);
      }
      if (so.end === 'ok' && kind.store) rec.storedId = so.id;
    } else {
      const t = await res.text();
      let j = null;
      try { j = JSON.parse(t); } catch { /* checked below */ }
      if (res.status === 200) {
        rec.outcome = 'ok';
        const got = textOf(kind.style, j);
        if (got !== want) rec.problems.push(`text ${JSON.stringify(String(got).slice(0, 80))} != ${JSON.stringify(want)}`);
        if (kind.store) rec.storedId = j?.id;
      } else {
        rec.outcome = 'http_error';
        const err = styleError(kind.style, j);
        if (!err) {
          rec.problems.push(`${res.status} without the ${kind.style} error body: ${t.slice(0, 160)}`);
        } else {
          rec.code = err.code;
          const retryable = res.status === 502 || res.status === 503
            || (res.status === 500 && scn.allow500 && /store_failed|could not be stored|store/i.test(`${err.code} ${err.message}`));
          if (!retryable) rec.problems.push(`not retryable: ${res.status} ${t.slice(0, 160)}`);
          if (retryAfterPromised(err) && rec.retryAfter == null) rec.problems.push(`${res.status} ${err.code}: no Retry-After`);
        }
      }
    }
  } catch (e) {
    if (ac.signal.aborted) {
      rec.outcome = 'timeout';
    } else if (rec.status === 200 && kind.stream) {
      rec.outcome = 'cut'; // the connection broke mid-stream, no terminal event
      rec.code = connCause(e);
    } else {
      rec.outcome = 'conn_error';
      rec.code = connCause(e);
    }
  } finally {
    clearTimeout(timer);
  }
  rec.ms = now() - t0;
  return rec;
}

// CLIENTS loops, each walking the kinds from its own offset, alternating the
// frontends, with a short pause between requests; until stop() is called.
function startLoad(scn, key) {
  let stopping = false;
  let n = 0;
  const recs = [];
  const loops = Array.from({ length: CLIENTS }, async (_, c) => {
    for (let i = c; !stopping; i++) {
      const kind = KINDS[i % KINDS.length];
      const base = cfg.urls[(i + c) % cfg.urls.length];
      recs.push(await send(scn, kind, base, key, n++));
      await sleep(60);
    }
  });
  // Requests besides the loops' (slow ones a fault must find in flight).
  const extra = (kind, base, latencyMs) => {
    loops.push(send(scn, kind, base, key, n++, latencyMs).then((r) => { recs.push(r); }));
  };
  return { recs, extra, stop: async () => { stopping = true; await Promise.all(loops); return recs; } };
}

// ---- checks after a scenario ---------------------------------------------------

// Until every frontend answers a request of this key with 200. Its requests'
// ids go to `extra` (their rows are not orphans).
async function waitServing(key, extra, ms = 20000) {
  const end = now() + ms;
  for (const base of cfg.urls) {
    for (;;) {
      try {
        const r = await fetch(`${base}/v1/chat/completions`, {
          method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'emu-chat', store: false, messages: [{ role: 'user', content: 'ready?' }] }),
        });
        await r.text();
        if (r.headers.get('x-request-id')) extra.add(r.headers.get('x-request-id'));
        if (r.status === 200) break;
      } catch { /* not yet */ }
      if (now() > end) throw new Error(`${base} not serving after ${ms} ms`);
      await sleep(200);
    }
  }
}

async function httpJSON(method, base, path, key, body) {
  const r = await fetch(base + path, {
    method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const t = await r.text();
  let j = null;
  try { j = JSON.parse(t); } catch { /* not JSON */ }
  return { status: r.status, json: j, text: t };
}

async function checkStored(scn, recs, key, res) {
  const stored = recs.filter((r) => r.outcome === 'ok' && r.store);
  res.storedExpected = stored.length;
  res.storedFound = 0;
  let i = 0;
  for (const r of stored) {
    const base = cfg.urls[i++ % cfg.urls.length]; // read back on either frontend
    if (!r.storedId) { res.lost.push(`${r.marker}: 200 with store true but no id`); continue; }
    const path = r.style === 'responses' ? `/v1/responses/${r.storedId}` : `/v1/chat/completions/${r.storedId}`;
    const g = await httpJSON('GET', base, path, key);
    if (g.status !== 200) { res.lost.push(`${r.marker}: stored ${r.storedId} -> GET ${g.status} ${g.text.slice(0, 120)}`); continue; }
    const got = r.style === 'responses' ? textOf('responses', g.json) : g.json?.choices?.[0]?.message?.content;
    if (got !== `You said: fault ${r.marker}`) { res.bad.push(`${r.marker}: stored object holds ${JSON.stringify(got)}`); continue; }
    res.storedFound++;
  }
  // Chaining from a sample of the stored responses, checked in what the upstream received.
  const sample = stored.filter((r) => r.style === 'responses' && r.storedId);
  const step = Math.max(1, Math.floor(sample.length / CHAIN_SAMPLE));
  const chains = [];
  for (let k = 0; k < sample.length && chains.length < CHAIN_SAMPLE; k += step) {
    const r = sample[k];
    const m = `chain-${r.marker}`;
    const c = await httpJSON('POST', cfg.urls[(k + 1) % cfg.urls.length], '/v1/responses', key,
      { model: 'emu-chat', input: m, store: false, previous_response_id: r.storedId });
    if (c.status !== 200 || c.json?.previous_response_id !== r.storedId || textOf('responses', c.json) !== `You said: ${m}`) {
      res.lost.push(`${r.marker}: chaining from ${r.storedId} -> ${c.status} ${c.text.slice(0, 120)}`);
      continue;
    }
    chains.push({ r, m });
  }
  const journal = (await (await fetch(`${cfg.emu}/_emu/requests?limit=1000`)).json()).requests;
  for (const { r, m } of chains) {
    const up = journal.filter((q) => JSON.stringify(q.body ?? null).includes(m)).pop();
    if (!up || !JSON.stringify(up.body).includes(`fault ${r.marker}`)) {
      res.lost.push(`${r.marker}: the chained request's upstream call lacks the earlier turn`);
    }
  }
  res.chained = chains.length;
}

async function checkRows(scn, recs, res) {
  const answered = recs.filter((r) => r.reqId);
  const ids = answered.map((r) => r.reqId);
  const byId = new Map(answered.map((r) => [r.reqId, r]));
  let rows = [];
  const end = now() + ROW_WAIT_MS;
  for (;;) {
    try {
      rows = psql("SELECT request_id || ' ' || count(*) || ' ' || min(status) FROM request_log "
        + "WHERE request_id = ANY(string_to_array(:'v1', ',')) GROUP BY request_id", ids.join(','));
    } catch { rows = []; }
    if (rows.length === ids.length || now() > end) break;
    await sleep(500);
  }
  res.rows = rows.length;
  const seen = new Set();
  for (const line of rows) {
    const [id, n, status] = line.split(' ');
    seen.add(id);
    const r = byId.get(id);
    if (n !== '1') res.bad.push(`${id}: ${n} request_log rows`);
    const want = r.outcome === 'stream_error' ? null : r.status;
    if (want !== null && Number(status) !== want) res.bad.push(`${id} (${r.marker}): row status ${status}, client saw ${want}`);
  }
  for (const r of answered) if (!seen.has(r.reqId)) res.lost.push(`${r.reqId} (${r.marker}, ${r.status}): no request_log row after ${ROW_WAIT_MS / 1000} s`);
  // Rows whose answer no client received: of this scenario's account, or
  // without one since it began (refused before the key was read, as a
  // draining frontend's 503 is; nothing else sends keyless requests here).
  const orphans = psql("SELECT request_id || ' ' || status FROM request_log WHERE (account_id = "
    + "(SELECT id FROM accounts WHERE name = :'v1') OR (account_id IS NULL AND ts >= to_timestamp(:'v3'::double precision))) "
    + "AND NOT (request_id = ANY(string_to_array(:'v2', ',')))",
  scn.account, ids.join(','), scn.t0 / 1000).filter((l) => !scn.extra.has(l.split(' ')[0]));
  res.orphanRows = orphans.length;
  res.orphanList = orphans;
}

// ---- scenarios --------------------------------------------------------------------

function newScenario(name, what) {
  const tag = `${process.pid.toString(36)}${now().toString(36)}`;
  const account = `fault-${name}-${tag}`;
  const group = `fault-${name}-${tag}`;
  sbctl('account', 'create', account);
  sbctl('group', 'create', group);
  sbctl('group', 'allow', group, '*');
  const key = sbctl('key', 'create', '--account', account, '--group', group, '--name', `fault-${name}`);
  return { name, what, tag, account, key, faults: [], extra: new Set(), t0: now() };
}

// Runs one scenario: load, the fault (fn), load stopped, checks.
async function scenario(scn, fn, { allowConnErrorsOn = null } = {}) {
  const expected = new Set(procNames());
  const marks = logMarks();
  await waitServing(scn.key, scn.extra); // also puts the new key in both frontends' caches
  const t0 = now();
  const load = startLoad(scn, scn.key);
  let faultError = null;
  try {
    await fn(scn, load);
  } catch (e) {
    faultError = e;
  }
  const recs = await load.stop();
  const res = { name: scn.name, what: scn.what, seconds: ((now() - t0) / 1000).toFixed(1), lost: [], bad: [] };
  if (faultError) res.bad.push(`fault injection failed: ${faultError.message}`);
  try { await waitServing(scn.key, scn.extra); } catch (e) { res.bad.push(`after the fault: ${e.message}`); }

  res.sent = recs.length;
  res.byStatus = {};
  for (const r of recs) {
    const k = r.outcome === 'conn_error' ? `conn:${r.code}` : r.outcome === 'timeout' ? 'timeout'
      : r.outcome === 'stream_error' ? `200 then error event ${r.code}`
        : `${r.status}${r.code ? ` ${r.code}` : ''}${r.status !== 200 && r.retryAfter != null ? ` (Retry-After ${r.retryAfter})` : ''}`;
    res.byStatus[k] = (res.byStatus[k] || 0) + 1;
    for (const p of r.problems) res.bad.push(`${r.marker} (${r.style}${r.stream ? ' stream' : ''}): ${p}`);
    if (r.outcome === 'timeout') res.lost.push(`${r.marker} (${r.style}${r.stream ? ' stream' : ''} on ${r.base}): no answer within ${REQ_TIMEOUT_MS / 1000} s`);
    if (r.outcome === 'cut') res.lost.push(`${r.reqId} (${r.marker}, ${r.style} stream): ended without its terminal or error event${r.code ? ` (${r.code})` : ''}`);
    if (r.outcome === 'conn_error' && r.base !== allowConnErrorsOn) res.bad.push(`${r.marker} on ${r.base}: connection error ${r.code}`);
  }
  res.cut = recs.filter((r) => r.outcome === 'cut').length;
  res.streamErrors = recs.filter((r) => r.outcome === 'stream_error').length;
  res.connErrors = recs.filter((r) => r.outcome === 'conn_error').length;
  res.timeouts = recs.filter((r) => r.outcome === 'timeout').length;
  res.ok = recs.filter((r) => r.outcome === 'ok').length;
  res.maxMs = Math.max(0, ...recs.map((r) => r.ms));

  await checkRows(scn, recs, res);
  if (res.orphanRows > 0) {
    for (const o of res.orphanList) res.lost.push(`request_log row ${o} whose answer reached no client`);
  }
  await checkStored(scn, recs, scn.key, res);

  // Crashes: a process that should be running and is not, or a sanitizer report.
  for (const n of expected) {
    if (!alive(pidOf(n))) res.lost.push(`${n} is not running after the scenario`);
    const added = logSince(n, marks[n] ?? 0);
    const m = CRASH_RE.exec(added);
    if (m) res.lost.push(`${n}.log: ${added.slice(Math.max(0, m.index - 100), m.index + 300).replace(/\n/g, ' | ')}`);
    res.errorLines = (res.errorLines || 0) + (added.match(/ ERROR |"level":"error"/g) || []).length;
    // Evidence that the fault hit work in flight: jobs the frontends sent again.
    res.resubmitted = (res.resubmitted || 0) + (added.match(/before any event: resubmitted/g) || []).length;
  }
  scn.faults.push(`${res.resubmitted} job(s) resubmitted by the frontends`);
  res.faults = scn.faults;
  return res;
}

async function workerScenario() {
  const scn = newScenario('worker', `a worker SIGKILLed every 2 s for ${LOAD_S} s, restarted at once`);
  return scenario(scn, async () => {
    const workers = procNames().filter((n) => n.startsWith('worker'));
    await sleep(1000);
    const end = now() + LOAD_S * 1000;
    for (let i = 0; now() < end; i++) {
      const w = workers[i % workers.length];
      const argv = argvOf(w);
      await kill(w, 'SIGKILL');
      respawn(w, argv);
      scn.faults.push(`${w}@${((now() - scn.t0) / 1000).toFixed(1)}s`);
      await sleep(2000);
    }
    await sleep(1000);
  });
}

async function postgresScenario() {
  const scn = newScenario('postgres', 'PostgreSQL stopped 20 s, then started');
  scn.allow500 = true; // docs/limits.md: a request generated before the outage was seen may end 500 store_failed
  return scenario(scn, async () => {
    await sleep(3000);
    pgCtl('stop');
    scn.faults.push('pg stopped');
    try {
      await sleep(20000);
    } finally {
      pgCtl('start');
      scn.faults.push('pg started');
    }
    await sleep(5000);
  });
}

async function brokerScenario() {
  const scn = newScenario('broker', 'broker SIGKILLed and restarted at once, then again after 5 s');
  return scenario(scn, async () => {
    await sleep(3000);
    let argv = argvOf('broker');
    await kill('broker', 'SIGKILL');
    respawn('broker', argv);
    scn.faults.push('broker killed+restarted');
    await sleep(6000);
    argv = argvOf('broker');
    await kill('broker', 'SIGKILL');
    scn.faults.push('broker killed');
    await sleep(5000);
    respawn('broker', argv);
    scn.faults.push('broker restarted 5 s later');
    await sleep(5000);
  });
}

async function frontendScenario() {
  const scn = newScenario('frontend', 'fe1 sent SIGTERM under load (drains), then restarted');
  return scenario(scn, async (_, load) => {
    await sleep(4000);
    // Requests in flight when the signal comes are what the drain is for: a
    // slow one of each kind on fe1 (1.5 s before the upstream answers).
    for (const kind of KINDS) load.extra(kind, cfg.urls[0], 1500);
    await sleep(500);
    const argv = argvOf('frontend1');
    const mark = statSync(`${cfg.varDir}/log/frontend1.log`).size;
    const t = now();
    try {
      await kill('frontend1', 'SIGTERM');
    } finally {
      const m = /signal 15: draining (\d+) requests/.exec(logSince('frontend1', mark));
      scn.faults.push(`frontend1 drained ${m ? m[1] : '?'} requests and exited in ${((now() - t) / 1000).toFixed(1)} s`);
      if (!alive(pidOf('frontend1'))) respawn('frontend1', argv);
      scn.faults.push('frontend1 restarted');
      if (!m || Number(m[1]) < KINDS.length) throw new Error(`frontend1 drained ${m ? m[1] : 'no'} requests: the slow ones were not in flight`);
    }
    await sleep(5000);
  }, { allowConnErrorsOn: cfg.urls[0] });
}

// ---- main -------------------------------------------------------------------------

const all = { worker: workerScenario, postgres: postgresScenario, broker: brokerScenario, frontend: frontendScenario };
const results = [];
for (const name of ONLY) {
  if (!all[name]) throw new Error(`unknown scenario ${name}`);
  process.stdout.write(`fault scenario ${name}: running\n`);
  let res;
  try {
    res = await all[name]();
  } catch (e) { // the scenario could not run to its end: a failure, reported as such
    res = { name, sent: 0, byStatus: {}, connErrors: 0, timeouts: 0, cut: 0, streamErrors: 0, rows: 0, orphanRows: 0,
      storedFound: 0, storedExpected: 0, chained: 0, errorLines: 0, maxMs: 0, faults: [], lost: [], bad: [`scenario aborted: ${e.stack}`] };
  }
  results.push(res);
  process.stdout.write(`fault scenario ${name}: ${res.sent} sent, ${res.lost.length} lost, ${res.bad.length} wrong (${res.seconds} s; faults: ${res.faults.join(', ')})\n`);
}

const fmt = (o) => Object.entries(o).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k}: ${v}`).join('<br>');
console.log('\n| scenario | sent | answered by status | conn errors / timeouts | slowest answer | streams cut / error events | request_log rows (answered) | orphan rows | stored found / expected, chained | error log lines | lost | wrong |');
console.log('|---|---|---|---|---|---|---|---|---|---|---|---|');
for (const r of results) {
  const answered = r.sent - r.connErrors - r.timeouts;
  console.log(`| ${r.name} | ${r.sent} | ${fmt(r.byStatus)} | ${r.connErrors} / ${r.timeouts} | ${((r.maxMs ?? 0) / 1000).toFixed(1)} s | ${r.cut} / ${r.streamErrors} | ${r.rows} / ${answered} | ${r.orphanRows} | ${r.storedFound} / ${r.storedExpected}, ${r.chained} | ${r.errorLines} | ${r.lost.length} | ${r.bad.length} |`);
}
let failedN = 0;
for (const r of results) {
  const pass = r.lost.length === 0 && r.bad.length === 0;
  if (!pass) failedN++;
  if (r.lost.length) console.log(`\n${r.name}: lost\n  ${r.lost.slice(0, 30).join('\n  ')}${r.lost.length > 30 ? `\n  … ${r.lost.length - 30} more` : ''}`);
  if (r.bad.length) console.log(`\n${r.name}: wrong\n  ${r.bad.slice(0, 30).join('\n  ')}${r.bad.length > 30 ? `\n  … ${r.bad.length - 30} more` : ''}`);
}
console.log(`\nfault suite: ${results.length - failedN} passed, ${failedN} failed`);
process.exit(failedN ? 1 : 0);
