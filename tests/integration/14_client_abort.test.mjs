// A client that hangs up mid-request: the gateway notices at once (evhttp
// alone would not while the request is pending), cancels the job, the
// worker closes the upstream connection, and the request log records 499.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cfg, psql, unique, upstreamRequestContaining, waitFor } from './harness.mjs';

async function emuStats() {
  return (await fetch(`${cfg.emu}/_emu/stats`)).json();
}

for (const [style, path, body] of [
  ['Responses', '/v1/responses', (m) => ({ model: 'emu-chat', input: `[[emu:hang]] ${m}` })],
  ['Messages', '/v1/messages', (m) => ({ model: 'emu-claude', max_tokens: 50, messages: [{ role: 'user', content: `[[emu:hang]] ${m}` }] })],
]) {
  test(`${style}: a client that hangs up cancels the upstream request; the log says 499`, async () => {
    const m = unique('abort');
    const before = (await emuStats()).closed_by_client;
    const logged = Number(psql("SELECT count(*) FROM request_log WHERE status = 499 AND path = :'v1'", path)[0]);
    const ac = new AbortController();
    const pending = fetch(cfg.frontendA + path, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${cfg.key}`, 'content-type': 'application/json', 'anthropic-version': '2023-06-01',
      },
      body: JSON.stringify(body(m)),
      signal: ac.signal,
    }).catch((e) => e);
    assert.ok(await waitFor(() => upstreamRequestContaining(m), { timeout: 5000 }), 'the upstream got the request');
    const t0 = Date.now();
    ac.abort();
    const err = await pending;
    assert.equal(err.name, 'AbortError');
    const closed = await waitFor(async () => (await emuStats()).closed_by_client > before, { timeout: 3000, interval: 5 });
    const ms = Date.now() - t0;
    assert.ok(closed, 'the upstream connection was closed by the worker');
    console.log(`# ${style}: upstream closed ${ms} ms after the client hung up`);
    const rows = await waitFor(
      () => Number(psql("SELECT count(*) FROM request_log WHERE status = 499 AND path = :'v1'", path)[0]) > logged,
      { timeout: 5000, interval: 50 });
    assert.ok(rows, 'a 499 row in request_log');
  });
}

test('a pipelined keep-alive client is not mistaken for one that left', async () => {
  // Two sequential requests on one keep-alive connection (Node's fetch pools
  // connections): both answered.
  for (let i = 0; i < 3; i++) {
    const res = await fetch(`${cfg.frontendA}/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${cfg.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'emu-chat', input: `keepalive ${i}` }),
    });
    assert.equal(res.status, 200);
    assert.equal((await res.json()).output[0].content[0].text, `You said: keepalive ${i}`);
  }
});
