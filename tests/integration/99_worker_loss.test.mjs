// Killing a worker mid-request (issue 13, finding 9b): a job that had sent
// nothing to its client is resubmitted once, by the frontend, to the other
// worker, and succeeds; a streamed job that had already shown the client part
// of its answer is not (the rest cannot be replayed invisibly): its client
// gets the error in the stream, well within the deadline. The broker keeps
// serving with the other worker. Runs last: it kills w1.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cfg, http, pidOf, psqlAsync, unique, upstreamRequests } from './harness.mjs';

const LATENCY_MS = 6000;

// A streamed chat request whose upstream sends a chunk every 400 ms; resolves
// once its first content chunk arrived, with `done` for the whole body.
async function slowStream(text) {
  const t0 = Date.now();
  const res = await fetch(`${cfg.frontendA}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${cfg.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'emu-chat', stream: true,
      messages: [{ role: 'user', content: `[[emu:chunk_delay=400]] ${text} one two three four five six seven eight nine ten` }],
    }),
  });
  assert.equal(res.status, 200);
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let raw = '';
  while (!/"content":"[^"]/.test(raw)) {
    const { value, done } = await reader.read();
    if (done) break;
    raw += dec.decode(value, { stream: true });
  }
  const done = (async () => {
    for (;;) {
      const { value, done: end } = await reader.read();
      if (end) break;
      raw += dec.decode(value, { stream: true });
    }
    return { raw, ms: Date.now() - t0 };
  })();
  return { done };
}

test('a worker killed mid-request: unseen jobs are resubmitted and succeed; streams already showing fail fast; the other worker keeps serving', async () => {
  const markers = [];
  const plain = Array.from({ length: 6 }, (_, i) => {
    const text = unique(`slow${i}`);
    markers.push(text);
    const t0 = Date.now();
    return http('POST', '/v1/chat/completions', {
      base: i % 2 ? cfg.frontendB : cfg.frontendA,
      body: { model: 'emu-chat', messages: [{ role: 'user', content: `[[emu:latency=${LATENCY_MS}]] ${text}` }] },
    }).then((res) => ({ res, text, ms: Date.now() - t0 }));
  });
  const streamMarkers = Array.from({ length: 4 }, (_, i) => unique(`stream${i}`));
  const streams = await Promise.all(streamMarkers.map((m) => slowStream(m)));
  // Background responses (docs/background.md), some running on the worker
  // about to die: each ends completed (not begun yet: resubmitted) or failed
  // with worker_lost, never stuck in progress, with one request_log row.
  const background = await Promise.all(Array.from({ length: 4 }, (_, i) => http('POST', '/v1/responses', {
    base: i % 2 ? cfg.frontendB : cfg.frontendA,
    body: { model: 'emu-chat', background: true, input: `[[emu:chunk_delay=400]] ${unique(`bg${i}`)} a b c d e f g h` },
  })));
  for (const b of background) assert.equal(b.status, 200, b.text);
  await new Promise((r) => setTimeout(r, 300)); // every job is running, on both workers
  process.kill(pidOf('worker1'), 'SIGKILL');

  const results = await Promise.all(plain);
  for (const x of results) {
    // Resubmitted: the first attempt's deadline is 62 s; one lost worker costs
    // its liveness period (2.5 s) plus a second upstream call.
    assert.equal(x.res.status, 200, x.res.text);
    assert.equal(x.res.json.choices[0].message.content, `You said: ${x.text}`);
    assert.ok(x.ms < LATENCY_MS * 2 + 6000, `answered in ${x.ms} ms`);
  }
  const upstream = await upstreamRequests();
  const sent = (m) => upstream.filter((r) => JSON.stringify(r.body ?? null).includes(m)).length;
  const resent = markers.filter((m) => sent(m) === 2);
  assert.ok(resent.length >= 1, `some jobs ran on the killed worker and went again: ${markers.map(sent)}`);
  assert.ok(markers.every((m) => sent(m) <= 2), `resubmitted at most once: ${markers.map(sent)}`);

  const ends = await Promise.all(streams.map((s) => s.done));
  let lost = 0;
  ends.forEach(({ raw, ms }, i) => {
    assert.ok(ms < 15000, `stream ended in ${ms} ms`);
    if (raw.includes('worker_lost')) {
      lost += 1;
      assert.ok(!raw.includes('[DONE]') || raw.indexOf('worker_lost') < raw.indexOf('[DONE]'), raw.slice(-400));
    } else {
      assert.ok(raw.includes('[DONE]'), raw.slice(-400));
    }
    assert.equal(sent(streamMarkers[i]), 1, 'a stream that had shown output is never resubmitted');
  });
  assert.ok(lost >= 1, 'some streams ran on the killed worker');

  let bgFailed = 0;
  for (const b of background) {
    let body;
    for (let i = 0; i < 300; i++) {
      body = (await http('GET', `/v1/responses/${b.json.id}`)).json;
      if (!['queued', 'in_progress'].includes(body.status)) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(['completed', 'failed'].includes(body.status), `background response ended ${body.status}`);
    if (body.status === 'failed') {
      bgFailed += 1;
      assert.equal(body.error.code, 'worker_lost', JSON.stringify(body.error));
    }
    const [n] = await psqlAsync(`SELECT count(*) FROM request_log WHERE request_id = :'v1'`, b.headers.get('x-request-id'));
    assert.equal(n, '1');
  }
  assert.ok(bgFailed < background.length, 'a background response on the surviving worker completed');

  // New requests are served by the surviving worker.
  for (let i = 0; i < 5; i++) {
    const text = unique('after');
    const res = await http('POST', '/v1/chat/completions', {
      body: { model: 'emu-chat', messages: [{ role: 'user', content: text }] },
    });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.choices[0].message.content, `You said: ${text}`);
  }
});
