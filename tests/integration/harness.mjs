// Shared helpers for the black-box tests. tests/run starts the real stack
// (PostgreSQL, broker, two workers, two frontends, emulator) and passes its
// addresses in the environment; nothing here fakes a component.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
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
  sbctl('model', 'set', id, '--upstream-model', upstream, '--capabilities', JSON.stringify(capabilities));
  return id;
}

// The emulator's journal entries whose body contains marker, oldest first.
export async function upstreamRequestsContaining(marker) {
  const reqs = await upstreamRequests();
  return reqs.filter((r) => JSON.stringify(r.body ?? null).includes(marker));
}
