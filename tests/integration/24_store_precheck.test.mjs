// A request that will be stored checks that it can be stored before it spends
// an upstream call (issue 13, finding 9a): with PostgreSQL down, stored
// requests (Responses and Chat Completions store by default here) get a fast 503 in the
// style's body, retryable, and the upstream never sees them; store:false
// requests and styles that store nothing go on; stored requests work again
// once PostgreSQL is back. Stops and restarts this stack's PostgreSQL.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { cfg, http, pgCtl, psql, unique, upstreamRequestsContaining, waitFor } from './harness.mjs';


let pgDown = false;
after(() => { if (pgDown) pgCtl('start'); });

const stored = (m) => [
  ['/v1/responses', { model: 'emu-chat', input: `stored ${m}` }],
  ['/v1/responses', { model: 'emu-chat', input: `stored stream ${m}`, stream: true }],
  ['/v1/chat/completions', { model: 'emu-chat', store: true, messages: [{ role: 'user', content: `stored chat ${m}` }] }],
  ['/v1/chat/completions', { model: 'emu-chat', messages: [{ role: 'user', content: `default chat ${m}` }] }],
];

test('PostgreSQL down: stored requests get a fast 503 and cost no upstream call; store:false goes on', async () => {
  // Warm the key and model caches, as a running gateway has them.
  const warm = await http('POST', '/v1/responses', { body: { model: 'emu-chat', input: 'warm', store: false } });
  assert.equal(warm.status, 200, warm.text);
  const warmB = await http('POST', '/v1/responses', { base: cfg.frontendB, body: { model: 'emu-chat', input: 'warm', store: false } });
  assert.equal(warmB.status, 200, warmB.text);

  pgCtl('stop');
  pgDown = true;
  // The pools see their sockets close; a probe (not counted) tells when.
  for (const base of [cfg.frontendA, cfg.frontendB]) {
    const seen = await waitFor(async () => (await http('POST', '/v1/responses', {
      base, body: { model: 'emu-chat', input: `probe ${unique('p')}` } })).status === 503, { timeout: 5000 });
    assert.ok(seen, `${base} noticed the outage`);
  }

  const m = unique('nostore');
  const ids = [];
  for (const base of [cfg.frontendA, cfg.frontendB]) {
    for (const [path, body] of stored(m)) {
      const t0 = Date.now();
      const res = await http('POST', path, { base, body });
      const ms = Date.now() - t0;
      assert.equal(res.status, 503, `${path}: ${res.text}`);
      assert.equal(res.json.error.code, 'store_unavailable');
      assert.equal(res.json.error.type, 'server_error');
      assert.match(res.json.error.message, /store:false/);
      assert.equal(res.headers.get('retry-after'), '1');
      assert.ok(ms < 1000, `answered in ${ms} ms`);
      ids.push(res.headers.get('x-request-id'));
    }
  }
  assert.equal((await upstreamRequestsContaining(m)).length, 0, 'no upstream call for a request that could not be stored');

  // store:false, and a style that stores nothing, are generated as usual.
  const free = unique('free');
  const r1 = await http('POST', '/v1/responses', { body: { model: 'emu-chat', input: `free ${free}`, store: false } });
  assert.equal(r1.status, 200, r1.text);
  const r2 = await http('POST', '/v1/chat/completions', { base: cfg.frontendB, body: { model: 'emu-chat', store: false, messages: [{ role: 'user', content: `free ${free}` }] } });
  assert.equal(r2.status, 200, r2.text);
  const r3 = await http('POST', '/v1/messages', {
    key: null, headers: { 'x-api-key': cfg.key, 'anthropic-version': '2023-06-01' },
    body: { model: 'emu-chat', max_tokens: 50, messages: [{ role: 'user', content: `free ${free}` }] },
  });
  assert.equal(r3.status, 200, r3.text);
  assert.equal((await upstreamRequestsContaining(free)).length, 3);

  pgCtl('start');
  pgDown = false;
  // Stored requests work again once a pool connection is back (reconnect every second).
  for (const base of [cfg.frontendA, cfg.frontendB]) {
    const back = await waitFor(async () => (await http('POST', '/v1/responses', {
      base, body: { model: 'emu-chat', input: `back ${unique('b')}` } })).status === 200, { timeout: 10000, interval: 200 });
    assert.ok(back, `${base} stores again`);
  }
  // The refused requests were logged too (503, store_unavailable), once each.
  const rows = await waitFor(() => {
    const got = psql("SELECT request_id || ' ' || status FROM request_log WHERE request_id = ANY(string_to_array(:'v1', ','))", ids.join(','));
    return got.length === ids.length ? got : null;
  }, { timeout: 10000, interval: 200 });
  assert.ok(rows, 'every refused request has its request_log row');
  assert.ok(rows.every((r) => r.endsWith(' 503')), rows.join('\n'));
});
