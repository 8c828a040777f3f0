// Shared helpers for the black-box tests. tests/run starts the real stack
// (PostgreSQL, broker, two workers, two frontends, emulator) and passes its
// addresses in the environment; nothing here fakes a component.
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

function need(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run these tests through tests/run`);
  return v;
}

export const cfg = {
  frontendA: need('SB_TEST_FRONTEND_A'),
  frontendB: need('SB_TEST_FRONTEND_B'),
  key: need('SB_TEST_KEY'),
  emu: need('SB_EMU_URL'),
  dsn: need('SB_PG_DSN'),
  sbctl: need('SBCTL'),
  varDir: need('SB_VAR'),
};

export function client(base = cfg.frontendA, apiKey = cfg.key, opts = {}) {
  return new OpenAI({ apiKey, baseURL: `${base}/v1`, maxRetries: 0, timeout: 30000, ...opts });
}

// Raw HTTP, for what the SDK hides (status codes, headers, exact bodies).
export async function http(method, path, { base = cfg.frontendA, key = cfg.key, body, headers = {}, raw } = {}) {
  const h = { ...headers };
  if (key !== null) h.authorization = `Bearer ${key}`;
  let payload;
  if (raw !== undefined) payload = raw;
  else if (body !== undefined) payload = JSON.stringify(body);
  if (payload !== undefined && !h['content-type']) h['content-type'] = 'application/json';
  const res = await fetch(base + path, { method, headers: h, body: payload });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, headers: res.headers, text, json };
}

export function psql(sql, ...params) {
  // Values are passed as psql variables and quoted by psql itself (:'v1'), never spliced.
  const args = [cfg.dsn, '-X', '-At', '-v', 'ON_ERROR_STOP=1'];
  params.forEach((p, i) => args.push('-v', `v${i + 1}=${p}`));
  const out = execFileSync('psql', args, { input: sql, encoding: 'utf8' });
  return out.split('\n').filter((l) => l.length > 0);
}

// psql without blocking the event loop: for sampling the database while
// requests of the same test are in flight.
export function psqlAsync(sql, ...params) {
  const args = [cfg.dsn, '-X', '-At', '-v', 'ON_ERROR_STOP=1'];
  params.forEach((p, i) => args.push('-v', `v${i + 1}=${p}`));
  return new Promise((resolve, reject) => {
    const child = spawn('psql', args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { err += d; });
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(out.split('\n').filter((l) => l.length > 0))
      : reject(new Error(`psql exited ${code}: ${err}`))));
    child.stdin.end(sql);
  });
}

export function sbctl(...args) {
  return execFileSync(cfg.sbctl, args, { encoding: 'utf8', env: process.env }).trim();
}

let uniq = 0;
export function unique(prefix = 'T') {
  uniq += 1;
  return `${prefix}${process.pid}x${Date.now().toString(36)}x${uniq}`;
}

// The emulator's journal of what it received upstream.
export async function upstreamRequests() {
  const res = await fetch(`${cfg.emu}/_emu/requests?limit=1000`);
  const j = await res.json();
  return j.requests;
}

export async function upstreamRequestContaining(marker) {
  const reqs = await upstreamRequests();
  const hits = reqs.filter((r) => JSON.stringify(r.body ?? null).includes(marker));
  return hits[hits.length - 1];
}

export async function waitFor(fn, { timeout = 5000, interval = 50 } = {}) {
  const start = Date.now();
  let last;
  while (Date.now() - start < timeout) {
    last = await fn();
    if (last) return last;
    await new Promise((r) => setTimeout(r, interval));
  }
  return last;
}

export function pidOf(name) {
  return Number(readFileSync(`${cfg.varDir}/run/${name}.pid`, 'utf8').trim());
}

// A fresh account + group + key, for isolation and cross-account checks.
export function newAccountKey({ models = ['*'] } = {}) {
  const account = unique('acct');
  const group = unique('grp');
  sbctl('account', 'create', account);
  sbctl('group', 'create', group);
  for (const m of models) sbctl('group', 'allow', group, m);
  const key = sbctl('key', 'create', '--account', account, '--group', group);
  return { account, group, key };
}

export function assertOpenAIError(res, status, { code, type } = {}) {
  assert.equal(res.status, status, `status ${res.status} body ${res.text}`);
  assert.ok(res.json && res.json.error, `OpenAI error body expected, got ${res.text}`);
  const e = res.json.error;
  assert.equal(typeof e.message, 'string');
  assert.ok(e.message.length > 0);
  assert.ok('type' in e && 'param' in e && 'code' in e, 'error has message, type, param, code');
  if (code !== undefined) assert.equal(e.code, code);
  if (type !== undefined) assert.equal(e.type, type);
}

// A model routed to the emulator, created once per id (idempotent), with the
// given upstream model name and capabilities object.
export function ensureModel(id, { upstream = 'emu-model', capabilities = {} } = {}) {
  sbctl('model', 'add', id, '--if-not-exists', '--provider', 'openai-chat', '--base-url', `${cfg.emu}/v1`,
    '--upstream-model', upstream, '--credential-ref', 'SB_EMU_UPSTREAM_KEY');
  sbctl('model', 'set', id, '--upstream-model', upstream, '--capabilities', JSON.stringify(capabilities),
    '--max-output-tokens', '65536');
  return id;
}

// The emulator's journal entries whose body contains marker, oldest first.
export async function upstreamRequestsContaining(marker) {
  const reqs = await upstreamRequests();
  return reqs.filter((r) => JSON.stringify(r.body ?? null).includes(marker));
}

// ---- streaming: fetch + a small Server-Sent Events reader --------------------------
//
// Items, in arrival order: an event block is {event, data, text, at} (event null when the
// block has no "event:" line; data the parsed JSON of its data lines, or the text itself
// when it is not JSON, e.g. "[DONE]"); a comment line (": keep-alive") is {comment, at}.
// at = milliseconds since the request was sent. Lines may end in CRLF, LF or CR; an
// unterminated block at the end of the body is dropped, as the SSE spec says.
function sseItem(block, at) {
  const text = block.data.join('\n');
  let data = text;
  try { data = JSON.parse(text); } catch { /* not JSON */ }
  return { event: block.event, data, text, at };
}

export async function* readSSE(res, t0 = Date.now(), sink = null) {
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  let block = { event: null, data: [], any: false };
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (!done) {
        const s = decoder.decode(value, { stream: true });
        if (sink) sink.raw += s;
        buf += s;
      }
      for (;;) {
        const m = /\r\n|\n|\r/.exec(buf);
        if (!m) break;
        if (m[0] === '\r' && m.index === buf.length - 1 && !done) break; // may be half a CRLF
        const line = buf.slice(0, m.index);
        buf = buf.slice(m.index + m[0].length);
        const at = Date.now() - t0;
        if (line === '') {
          if (block.any) yield sseItem(block, at);
          block = { event: null, data: [], any: false };
        } else if (line.startsWith(':')) {
          yield { comment: line.slice(1).trim(), at };
        } else {
          const i = line.indexOf(':');
          const field = i < 0 ? line : line.slice(0, i);
          let value = i < 0 ? '' : line.slice(i + 1);
          if (value.startsWith(' ')) value = value.slice(1);
          if (field === 'event') { block.event = value; block.any = true; }
          if (field === 'data') { block.data.push(value); block.any = true; }
        }
      }
      if (done) return;
    }
  } finally {
    reader.releaseLock();
  }
}

// Auth headers the way each inbound style's SDK sends them.
export function styleHeaders(style, key = cfg.key) {
  if (style === 'messages') return { authorization: `Bearer ${key}`, 'anthropic-version': '2023-06-01' };
  if (style === 'gemini') return { 'x-goog-api-key': key };
  return { authorization: `Bearer ${key}` };
}

// Starts a streamed request and returns as soon as the headers are in:
// {res, status, headers, requestId, items() (the SSE reader), abort(), raw()}.
// Key: a bearer token unless `headers` carries the credential (key null).
export async function openSSE(path, { base = cfg.frontendA, key = cfg.key, body, headers = {}, method = 'POST' } = {}) {
  const h = { 'content-type': 'application/json', accept: 'text/event-stream', ...headers };
  if (key !== null && !h.authorization) h.authorization = `Bearer ${key}`;
  const ac = new AbortController();
  const t0 = Date.now();
  const res = await fetch(base + path, {
    method, headers: h, body: body === undefined ? undefined : JSON.stringify(body), signal: ac.signal,
  });
  const sink = { raw: '' };
  return {
    res,
    status: res.status,
    headers: res.headers,
    requestId: res.headers.get('x-request-id'),
    t0,
    items: () => readSSE(res, t0, sink),
    raw: () => sink.raw,
    abort: () => ac.abort(),
  };
}

// A whole streamed request: {status, headers, requestId, contentType, items, events
// (items without comments), comments, raw (the body text), json (the body parsed, when
// it is a plain JSON reply, e.g. an error before the stream started)}. timeout bounds it.
export async function sse(path, { timeout = 30000, ...opts } = {}) {
  const s = await openSSE(path, opts);
  const timer = setTimeout(() => s.abort(), timeout);
  try {
    const contentType = s.headers.get('content-type') ?? '';
    if (!contentType.startsWith('text/event-stream')) {
      const text = await s.res.text();
      let json = null;
      try { json = JSON.parse(text); } catch { /* not JSON */ }
      return { status: s.status, headers: s.headers, requestId: s.requestId, contentType, items: [], events: [], comments: [], raw: text, json };
    }
    const items = [];
    try {
      for await (const it of s.items()) items.push(it);
    } catch (e) {
      if (e.name !== 'AbortError') throw e;
      throw new Error(`the stream did not end within ${timeout} ms; it ended with: ${s.raw().slice(-600)}`);
    }
    return {
      status: s.status,
      headers: s.headers,
      requestId: s.requestId,
      contentType,
      items,
      events: items.filter((x) => !('comment' in x)),
      comments: items.filter((x) => 'comment' in x),
      raw: s.raw(),
      json: null,
    };
  } finally {
    clearTimeout(timer);
  }
}

// The emulator's counters (closed_by_client: upstream requests whose client, a worker, hung up).
export async function emuStats() {
  return (await fetch(`${cfg.emu}/_emu/stats`)).json();
}

// A fetch that remembers every response it got (for x-request-id behind an SDK).
export function recordingFetch() {
  const responses = [];
  const f = async (url, init) => {
    const res = await fetch(url, init);
    responses.push(res);
    return res;
  };
  f.responses = responses;
  f.lastRequestId = () => responses.at(-1)?.headers.get('x-request-id') ?? null;
  return f;
}

// pg_ctl on this stack's data dir (SB_VAR), as deploy/local runs it: stops
// ('stop', fast) or starts this stack's PostgreSQL, waiting until done.
export function pgCtl(action) {
  const lib = fileURLToPath(new URL('../../deploy/local/lib.sh', import.meta.url));
  const script = `source "$0" && bin="$(sb_pg_bindir)" && sb_as_pg "$bin/pg_ctl" ${action} -D "$SB_VAR/pg/data" `
    + `-l "$SB_VAR/log/postgres.log" -w -t 60 ${action === 'stop' ? '-m fast' : ''} >/dev/null`;
  execFileSync('bash', ['-c', script, lib], { env: { ...process.env, SB_VAR: cfg.varDir }, stdio: ['ignore', 'ignore', 'inherit'] });
}
