// Killing a worker mid-request: the client gets an error within the deadline
// and the broker keeps serving with the other worker. Runs last: it kills w1.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { client, http, pidOf, unique } from './harness.mjs';

test('a worker killed mid-request gives its clients 502 quickly; the other worker keeps serving', async () => {
  const slow = Array.from({ length: 6 }, () => {
    const t0 = Date.now();
    return http('POST', '/v1/chat/completions', {
      body: { model: 'emu-chat', messages: [{ role: 'user', content: `[[emu:latency=6000]] ${unique('slow')}` }] },
    }).then((res) => ({ res, ms: Date.now() - t0 }));
  });
  await new Promise((r) => setTimeout(r, 500)); // jobs are now running on both workers
  process.kill(pidOf('worker1'), 'SIGKILL');
  const results = await Promise.all(slow);
  const lost = results.filter((x) => x.res.status === 502);
  const ok = results.filter((x) => x.res.status === 200);
  assert.ok(lost.length >= 1, `some requests ran on the killed worker: ${results.map((x) => x.res.status)}`);
  assert.equal(lost.length + ok.length, results.length, results.map((x) => x.res.text).join('\n'));
  for (const x of lost) {
    assert.equal(x.res.json.error.code, 'worker_lost');
    assert.ok(x.ms < 5000, `error within the deadline and well before the upstream answer (${x.ms} ms)`);
  }
  // New requests are served by the surviving worker.
  for (let i = 0; i < 5; i++) {
    const c = await client().chat.completions.create({ model: 'emu-chat', messages: [{ role: 'user', content: 'still there?' }] });
    assert.equal(c.choices[0].message.content, 'You said: still there?');
  }
});
