// Upstream resilience: every emulator fault mode gives its documented status
// within the model's timeout; retries stay within the 1.2x budget; fallback
// chains answer from the next model; the broker's circuit breaker opens after
// K failures, answers 503 fast, and recovers through a half-open probe; it is
// fair: one key's failing requests open a circuit for that key only, a route
// that fails for several keys opens for everyone.
// The broker runs with --breaker-failures 5 --breaker-cooldown-ms 2000 here
// (tests/run), the workers with their default retry settings.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cfg, http, psql, sbctl, unique, waitFor, sse, newAccountKey } from './harness.mjs';

const BASE = { 'openai-chat': '/v1', 'openai-responses': '/v1', anthropic: '', gemini: '/v1beta' };

// A model on a route of its own: its own upstream model name, so faults set
// for it and the emulator's per-model counters concern this test only.
function routeModel(prefix, { provider = 'openai-chat', timeoutMs = 3000 } = {}) {
  const id = unique(prefix);
  const upstream = `up-${id}`;
  sbctl('model', 'add', id, '--provider', provider, '--base-url', `${cfg.emu}${BASE[provider]}`,
    '--upstream-model', upstream, '--credential-ref', 'SB_EMU_UPSTREAM_KEY', '--timeout-ms', String(timeoutMs));
  return { id, upstream };
}

async function setFault(upstream, directives, count = 0) {
  const res = await fetch(`${cfg.emu}/_emu/faults/${encodeURIComponent(upstream)}`, {
    method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ directives, count }),
  });
  assert.equal(res.status, 200, await res.text());
}

async function clearFault(upstream) {
  await fetch(`${cfg.emu}/_emu/faults/${encodeURIComponent(upstream)}`, { method: 'DELETE' });
}

async function upstreamCount(upstream) {
  const s = await (await fetch(`${cfg.emu}/_emu/stats`)).json();
  return s.by_model?.[upstream]?.requests ?? 0;
}

function chat(model, text = 'hello', { base = cfg.frontendA, key = cfg.key, stream = false } = {}) {
  return http('POST', '/v1/chat/completions', {
    base, key, body: { model, store: false, stream, messages: [{ role: 'user', content: text }] },
  });
}

async function timed(fn) {
  const t0 = Date.now();
  const r = await fn();
  return { r, ms: Date.now() - t0 };
}

// ---- fault modes -----------------------------------------------------------------------

const FAULTS = [
  { name: '500', directive: 'status=500', status: 500 },
  { name: '502', directive: 'status=502', status: 502 },
  { name: '503', directive: 'status=503', status: 503 },
  { name: '429 with Retry-After', directive: 'status=429 retry_after=7', status: 429, retryAfter: '7', code: 'rate_limit_exceeded' },
  // Only OpenAI tells a spent quota from a rate limit; Anthropic and Gemini say 429 for both.
  { name: 'insufficient quota upstream', directive: 'status=429 quota', status: 429, code: 'insufficient_quota', openaiOnly: true },
  { name: 'slow first byte past the timeout', directive: 'latency=5000', status: 504, slow: true },
  { name: 'slow trickle past the timeout', directive: 'trickle=400', status: 504, slow: true },
  { name: 'connection reset mid-body', directive: 'reset', status: 502 },
  { name: 'malformed JSON', directive: 'malformed', status: 502 },
];

for (const provider of ['openai-chat', 'anthropic', 'gemini', 'openai-responses']) {
  test(`${provider}: every fault mode gives its documented status within the timeout`, async () => {
    const timeoutMs = 1500;
    for (const f of FAULTS) {
      const { id } = routeModel('fault', { provider, timeoutMs });
      const { r, ms } = await timed(() => chat(id, `fault ${f.name} [[emu:${f.directive.replace(/ /g, ']] [[emu:')}]]`));
      assert.equal(r.status, f.status, `${provider} ${f.name}: ${r.text}`);
      assert.ok(r.json?.error?.message, `${f.name}: OpenAI error body`);
      if (f.retryAfter) assert.equal(r.headers.get('retry-after'), f.retryAfter);
      if (f.code && (!f.openaiOnly || provider.startsWith('openai'))) {
        assert.equal(r.json.error.code, f.code, `${provider} ${f.name}: ${r.text}`);
      }
      if (f.status === 504) assert.match(r.json.error.message, /timeout/i);
      // Fast faults answer at once; slow ones at the model's timeout, not later.
      const limit = f.slow ? timeoutMs + 1500 : 1500;
      assert.ok(ms < limit, `${provider} ${f.name} took ${ms} ms`);
      if (f.slow) assert.ok(ms >= timeoutMs - 100, `${f.name} waited the timeout (${ms} ms)`);
    }
  });
}

test('an endless stream ends with a timeout error event at the model\'s deadline', async () => {
  const { id, upstream } = routeModel('endless', { timeoutMs: 1500 });
  const t0 = Date.now();
  const s = await sse('/v1/chat/completions', {
    body: { model: id, stream: true, messages: [{ role: 'user', content: 'go on forever [[emu:endless]] [[emu:chunk_delay=50]]' }] },
    timeout: 10000,
  });
  const ms = Date.now() - t0;
  assert.equal(s.status, 200);
  const deltas = s.events.filter((e) => e.data?.choices?.[0]?.delta?.content);
  assert.ok(deltas.length > 5, 'content kept coming');
  const last = s.events.at(-1);
  assert.ok(last.data?.error, `ends with an error event: ${JSON.stringify(last)}`);
  assert.match(last.data.error.message, /timeout|deadline/i);
  assert.ok(ms >= 1400 && ms < 1500 + 3000, `ended at ${ms} ms`);
  // The upstream connection was closed, not left streaming.
  const open = await waitFor(async () => {
    const st = await (await fetch(`${cfg.emu}/_emu/stats`)).json();
    return st.open_requests === 0;
  }, { timeout: 3000 });
  assert.ok(open, 'the emulator saw the endless stream closed');
  assert.ok((await upstreamCount(upstream)) === 1, 'a stream that started is never retried');
});

test('streamed requests fail before their first byte with the plain error', async () => {
  const { id } = routeModel('sfault');
  const s = await sse('/v1/chat/completions', {
    body: { model: id, stream: true, messages: [{ role: 'user', content: 'x [[emu:status=503]]' }] },
  });
  assert.equal(s.status, 503);
  assert.ok(s.json?.error);
});

// ---- retries and their budget ----------------------------------------------------------

test('a transient 503 is retried with backoff and the client gets 200', async () => {
  const { id, upstream } = routeModel('retry');
  // Budget: each call deposits 0.2 retries; five good calls pay for one retry per worker.
  for (let i = 0; i < 10; i++) assert.equal((await chat(id, `warm ${i}`)).status, 200);
  const before = await upstreamCount(upstream);
  await setFault(upstream, 'status=503 retry_after=1', 1);
  const { r, ms } = await timed(() => chat(id, 'after the blip'));
  assert.equal(r.status, 200, r.text);
  assert.equal(await upstreamCount(upstream), before + 2, 'one failure, one retry');
  assert.ok(ms >= 900, `the retry waited the upstream's Retry-After (${ms} ms)`);
});

test('a failing upstream is never hit with more than 1.2x the client requests', async () => {
  const { id, upstream } = routeModel('budget');
  await setFault(upstream, 'status=503');
  const n = 60;
  const results = [];
  for (let i = 0; i < n; i += 6) {
    results.push(...await Promise.all(Array.from({ length: 6 }, (_, k) =>
      chat(id, `b${i + k}`, { base: k % 2 ? cfg.frontendB : cfg.frontendA }))));
  }
  await clearFault(upstream);
  const hits = await upstreamCount(upstream);
  const statuses = new Set(results.map((r) => r.status));
  for (const s of statuses) assert.ok(s === 503, `statuses ${[...statuses]}`);
  assert.ok(hits >= results.filter((r) => r.status === 503 && !/circuit/.test(r.text)).length, `at least one attempt per request that reached the upstream (${hits})`);
  assert.ok(hits <= Math.floor(1.2 * n), `${hits} upstream attempts for ${n} requests`);
});

// ---- fallbacks -------------------------------------------------------------------------

test('a fallback chain answers from the next model; the answer and the log name it', async () => {
  const a = routeModel('fba');
  const b = routeModel('fbb', { provider: 'anthropic' });
  const c = routeModel('fbc', { provider: 'gemini' });
  sbctl('model', 'fallback', a.id, b.id, c.id);
  await setFault(a.upstream, 'status=503');
  await setFault(b.upstream, 'status=500');
  await new Promise((r) => setTimeout(r, 200)); // the frontends' model caches refresh
  const r = await chat(a.id, 'who answers?');
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.model, c.id, 'the model that answered');
  const logged = await waitFor(() => psql("SELECT model, requested_model, status FROM request_log WHERE request_id = :'v1'", r.headers.get('x-request-id'))[0]);
  assert.equal(logged, `${c.id}|${a.id}|200`);
  // Every style, streamed too: the client sees only the answer.
  await clearFault(b.upstream);
  const m = await http('POST', '/v1/messages', {
    base: cfg.frontendB, key: null, headers: { 'x-api-key': cfg.key, 'anthropic-version': '2023-06-01' },
    body: { model: a.id, max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] },
  });
  assert.equal(m.status, 200, m.text);
  assert.equal(m.json.model, b.id);
  const g = await http('POST', `/v1beta/models/${a.id}:generateContent`, {
    key: null, headers: { 'x-goog-api-key': cfg.key }, body: { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] },
  });
  assert.equal(g.status, 200, g.text);
  assert.equal(g.json.modelVersion, b.id);
  const s = await sse('/v1/responses', { body: { model: a.id, input: 'stream it', stream: true, store: false } });
  assert.equal(s.status, 200);
  const done = s.events.find((e) => e.event === 'response.completed');
  assert.equal(done.data.response.model, b.id);
  // Client errors are not failed over: a 400 from A's upstream stays a 400.
  await clearFault(a.upstream);
  const own = await chat(a.id, 'x [[emu:status=400]]');
  assert.equal(own.status, 400, own.text);
  assert.equal(own.json.error.message.includes('emulated upstream error 400'), true);
});

test('a fallback the key\'s token group may not call is skipped', async () => {
  const a = routeModel('fga');
  const b = routeModel('fgb');
  sbctl('model', 'fallback', a.id, b.id);
  await setFault(a.upstream, 'status=502');
  const { key } = newAccountKey({ models: [a.id] });
  await new Promise((r) => setTimeout(r, 200));
  const r = await chat(a.id, 'x', { key });
  assert.equal(r.status, 502, r.text);
  assert.equal(await upstreamCount(b.upstream), 0);
  await clearFault(a.upstream);
});

// ---- circuit breaker -------------------------------------------------------------------

test('the circuit opens after 5 failures, answers 503 fast, and recovers through a probe', async () => {
  const { id, upstream } = routeModel('breaker');
  await setFault(upstream, 'status=500');
  for (let i = 0; i < 5; i++) assert.equal((await chat(id, `fail ${i}`, { base: i % 2 ? cfg.frontendB : cfg.frontendA })).status, 500);
  const attempts = await upstreamCount(upstream);
  const { r, ms } = await timed(() => chat(id, 'while open'));
  assert.equal(r.status, 503, r.text);
  assert.equal(r.json.error.code, 'circuit_open');
  assert.ok(Number(r.headers.get('retry-after')) >= 1);
  assert.ok(ms < 200, `an open circuit answers at once (${ms} ms)`);
  // Every style says so in its own body.
  const m = await http('POST', '/v1/messages', {
    key: null, headers: { 'x-api-key': cfg.key, 'anthropic-version': '2023-06-01' },
    body: { model: id, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] },
  });
  assert.equal(m.status, 503);
  assert.equal(m.json.error.type, 'overloaded_error');
  assert.equal(await upstreamCount(upstream), attempts, 'no job reached the upstream while open');
  // The upstream recovers; after the cooldown one probe goes through and closes the circuit.
  await clearFault(upstream);
  const back = await waitFor(async () => (await chat(id, 'probe?')).status === 200, { timeout: 6000, interval: 250 });
  assert.ok(back, 'the circuit closed again');
  for (let i = 0; i < 3; i++) assert.equal((await chat(id, `closed ${i}`, { base: i % 2 ? cfg.frontendB : cfg.frontendA })).status, 200);
});

test('when a model and its fallbacks are all down the answer is a fast 503', async () => {
  const a = routeModel('downa');
  const b = routeModel('downb');
  sbctl('model', 'fallback', a.id, b.id);
  await setFault(a.upstream, 'status=503');
  await setFault(b.upstream, 'status=503');
  await new Promise((r) => setTimeout(r, 200));
  for (let i = 0; i < 6; i++) await chat(a.id, `down ${i}`);
  const { r, ms } = await timed(() => chat(a.id, 'all down'));
  assert.equal(r.status, 503, r.text);
  assert.ok(ms < 200, `${ms} ms`);
  await clearFault(a.upstream);
  await clearFault(b.upstream);
});

// ---- a fair breaker (issue 12) -----------------------------------------------------------

// Two keys of one new account: the breaker tells keys apart, not accounts.
function twoKeys() {
  const { account, group, key } = newAccountKey();
  return { keyA: key, keyB: sbctl('key', 'create', '--account', account, '--group', group) };
}

test('one key whose requests fail upstream does not deny the model to another key', async () => {
  const { id, upstream } = routeModel('fair');
  const { keyA, keyB } = twoKeys();
  // A bad prompt of key A's: the upstream answers it 500 (the upstream is fine for others).
  for (let i = 0; i < 5; i++) {
    const r = await chat(id, `bad prompt ${i} [[emu:status=500]]`, { key: keyA, base: i % 2 ? cfg.frontendB : cfg.frontendA });
    assert.equal(r.status, 500, r.text);
  }
  const { r: sixth, ms: sixthMs } = await timed(() => chat(id, 'bad prompt 5 [[emu:status=500]]', { key: keyA }));
  const t6 = Date.now();
  // Key B, at once (within 100 ms of key A's sixth): served.
  const { r: b } = await timed(() => chat(id, 'a normal request', { key: keyB, base: cfg.frontendB }));
  const sentAfter = Date.now() - t6;
  assert.equal(b.status, 200, `key B is served: ${b.text}`);
  assert.ok(sentAfter < 1000, `key B's answer came at once (${sentAfter} ms)`);
  // Key A's own circuit is open: its sixth was refused fast, without reaching the upstream.
  assert.equal(sixth.status, 503, sixth.text);
  assert.equal(sixth.json.error.code, 'circuit_open');
  assert.match(sixth.json.error.message, /this client/);
  assert.ok(Number(sixth.headers.get('retry-after')) >= 1);
  assert.ok(sixthMs < 200, `key A is turned away at once (${sixthMs} ms)`);
  const before = await upstreamCount(upstream);
  const again = await chat(id, 'a normal one of key A\'s', { key: keyA });
  assert.equal(again.status, 503, 'key A waits out its own cooldown');
  assert.equal(await upstreamCount(upstream), before);
  // The default key and a key of another account are unaffected, on both frontends.
  for (let i = 0; i < 4; i++) {
    const r = await chat(id, `others ${i}`, { key: i % 2 ? cfg.key : keyB, base: i % 2 ? cfg.frontendB : cfg.frontendA });
    assert.equal(r.status, 200, r.text);
  }
});

test('a route that is really down opens for every key, answers fast 503, and still recovers', async () => {
  const { id, upstream } = routeModel('rdown');
  const { keyA, keyB } = twoKeys();
  await setFault(upstream, 'status=500');
  // Keys A and B in turn: failures from two keys open the model for everyone
  // within K (5) of them; no key has to exhaust its own circuit first.
  let opened = -1;
  for (let i = 0; i < 8 && opened < 0; i++) {
    const r = await chat(id, `down ${i}`, { key: i % 2 ? keyB : keyA, base: i % 2 ? cfg.frontendB : cfg.frontendA });
    if (r.status === 503 && r.json?.error?.code === 'circuit_open') opened = i;
    else assert.equal(r.status, 500, r.text);
  }
  assert.ok(opened >= 0 && opened <= 5, `the circuit opened after ${opened} failures`);
  const attempts = await upstreamCount(upstream);
  // Every key, a third one that never failed included, gets a fast 503 with Retry-After.
  for (const key of [keyA, keyB, cfg.key]) {
    const { r, ms } = await timed(() => chat(id, 'while down', { key }));
    assert.equal(r.status, 503, r.text);
    assert.equal(r.json.error.code, 'circuit_open');
    assert.doesNotMatch(r.json.error.message, /this client/, 'the model-wide circuit');
    assert.ok(Number(r.headers.get('retry-after')) >= 1);
    assert.ok(ms < 200, `answered at once (${ms} ms)`);
  }
  assert.equal(await upstreamCount(upstream), attempts, 'no job reached the upstream while open');
  await clearFault(upstream);
  const back = await waitFor(async () => (await chat(id, 'probe?', { key: cfg.key })).status === 200, { timeout: 6000, interval: 250 });
  assert.ok(back, 'the circuit closed again');
});

test('a route that is really down for two keys still sends them to the fallback at once', async () => {
  const a = routeModel('rdfa');
  const b = routeModel('rdfb');
  sbctl('model', 'fallback', a.id, b.id);
  const { keyA, keyB } = twoKeys();
  await setFault(a.upstream, 'status=500');
  await new Promise((r) => setTimeout(r, 200)); // the frontends' model caches refresh
  for (let i = 0; i < 6; i++) {
    const r = await chat(a.id, `fb ${i}`, { key: i % 2 ? keyB : keyA });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.model, b.id, 'answered by the fallback');
  }
  // a's circuit is open for everyone now: its upstream is no longer tried,
  // and every key, one that never failed included, is answered by b at once.
  const attempts = await upstreamCount(a.upstream);
  for (const key of [keyA, keyB, cfg.key]) {
    const { r, ms } = await timed(() => chat(a.id, 'fb while open', { key }));
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.model, b.id);
    assert.ok(ms < 1000, `no wait for a's upstream (${ms} ms)`);
  }
  assert.equal(await upstreamCount(a.upstream), attempts, 'a\'s open circuit sent nothing upstream');
  await clearFault(a.upstream);
});
