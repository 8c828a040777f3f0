// Several brokers, active-active (issue 20; docs/protocol.md, "Several
// brokers"). Beside the stack's broker this starts a second one, and a third
// frontend and a third worker that connect to both (the stack's own
// frontends and workers know only the first). Through the third frontend:
// jobs are spread over both brokers; a broker SIGKILLed under load loses
// nothing that had not started answering (resubmitted through the other at
// once), a stream that had ends with the style's error event, new requests go
// to the other broker at once, and every request has one request_log row;
// restarted, the broker is used again without restarting anything else.
// Bounded: well under 60 s. Everything it starts is stopped at the end.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cfg, http, psql, sse, unique, waitFor } from './harness.mjs';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const portOf = (url) => Number(new URL(url).port);

function freePort() {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => res(port)); });
  });
}

// lib.sh, with two brokers and a third frontend port; the stack's own
// processes are untouched.
function lib(script, env = {}) {
  return execFileSync('bash', ['-c', `source "$0/deploy/local/lib.sh" && ${script}`, REPO], {
    env: { ...process.env, SB_BROKERS: '2', ...env }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'],
  });
}

const run = (name) => `${cfg.varDir}/run/${name}`;
const adminUrl = (name) => `http://127.0.0.1:${readFileSync(run(`${name}.admin-port`), 'utf8').trim()}`;
const pid = (name) => Number(readFileSync(run(`${name}.pid`), 'utf8').trim());

async function metric(name, series) {
  const text = await (await fetch(`${adminUrl(name)}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}
const dispatched = (name) => metric(name, 'sb_broker_jobs_dispatched_total{model="emu-chat"}');

let fe3 = null;
let ports = null;

async function start() {
  ports = `${portOf(cfg.frontendA)} ${portOf(cfg.frontendB)} ${await freePort()}`;
  lib('sb_start_broker 2 && sb_start_worker 3 && sb_start_frontend 3', { SB_FRONTEND_PORTS: ports });
  fe3 = `http://127.0.0.1:${ports.split(' ')[2]}`;
  const up = await waitFor(async () => {
    try { return (await fetch(`${adminUrl('frontend3')}/readyz`)).status === 200; } catch { return false; }
  }, { timeout: 10000, interval: 100 });
  assert.ok(up, 'the third frontend is ready');
}

after(() => {
  for (const name of ['frontend3', 'worker3', 'broker2']) {
    try { lib(`sb_stop_proc ${name}`); } catch { /* already gone */ }
  }
});

const chat = (text, extra = {}) => http('POST', '/v1/chat/completions', {
  base: fe3, body: { model: 'emu-chat', messages: [{ role: 'user', content: text }], ...extra },
});

test('jobs are spread over both brokers; the third worker serves both', async () => {
  await start();
  const b1 = await dispatched('broker'), b2 = await dispatched('broker2');
  const texts = Array.from({ length: 8 }, () => unique('spread'));
  const answers = await Promise.all(texts.map((t) => chat(`[[emu:latency=200]] ${t}`)));
  answers.forEach((r, i) => {
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.choices[0].message.content, `You said: ${texts[i]}`);
  });
  const d1 = (await dispatched('broker')) - b1, d2 = (await dispatched('broker2')) - b2;
  assert.equal(d1 + d2, 8);
  assert.ok(d1 >= 2 && d2 >= 2, `both brokers dispatched some: ${d1} and ${d2}`);
  assert.equal(await metric('broker2', 'sb_broker_workers'), 1, 'the third worker, on the second broker');
});

test('a broker killed under load: nothing unanswered is lost, streams end with an error event, new jobs go on', async () => {
  const plain = Array.from({ length: 6 }, () => unique('kill'));
  const t0 = Date.now();
  const held = plain.map((t) => chat(`[[emu:latency=1500]] ${t}`));
  const streams = Array.from({ length: 4 }, () => sse('/v1/chat/completions', {
    base: fe3, timeout: 15000,
    body: { model: 'emu-chat', stream: true, messages: [{ role: 'user', content: `[[emu:chunk_delay=150]] ${unique('s')} a b c d e f g h i j` }] },
  }));
  await sleep(600); // dispatched: the plain ones wait on the upstream, the streams are answering
  const before = await dispatched('broker');
  process.kill(pid('broker2'), 'SIGKILL');
  const killedAt = Date.now();
  // New requests at once: the other broker takes them.
  const fresh = unique('fresh');
  const r = await chat(fresh);
  const firstOk = Date.now() - killedAt;
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.choices[0].message.content, `You said: ${fresh}`);
  assert.ok(firstOk < 1000, `a new request succeeded ${firstOk} ms after the kill`);
  const answers = await Promise.all(held);
  answers.forEach((a, i) => {
    assert.equal(a.status, 200, a.text);
    assert.equal(a.json.choices[0].message.content, `You said: ${plain[i]}`);
  });
  assert.ok(Date.now() - t0 < 8000, 'the resubmitted ones did not wait for a deadline');
  const ends = (await Promise.all(streams)).map((s) => {
    assert.equal(s.status, 200);
    if (/\[DONE\]/.test(s.raw) && !/"error"/.test(s.raw)) return 'done';
    const last = s.events.at(-1);
    assert.ok(last && last.data && last.data.error, `a stream that did not finish ends with an error event: ${s.raw.slice(-300)}`);
    assert.ok(/broker/.test(last.data.error.message), last.text);
    return 'error';
  });
  // The resubmitted jobs went through the first broker (at least the
  // killed broker's share of the plain ones, and the fresh one).
  assert.ok((await dispatched('broker')) - before >= 2, 'the first broker took the resubmitted jobs');
  assert.ok(ends.includes('done'), `the streams on the surviving broker finished: ${ends}`);
  console.log(`stream ends: ${ends.join(' ')}; first success ${firstOk} ms after the kill`);
  // One request_log row per request, the resubmitted ones included.
  const ids = answers.map((a) => a.headers.get('x-request-id'));
  await waitFor(() => Number(psql(`SELECT count(*) FROM request_log WHERE request_id = ANY(string_to_array(:'v1', ','))`, ids.join(','))[0]) === ids.length,
    { timeout: 5000, interval: 100 });
  const rows = psql(`SELECT request_id, count(*) FROM request_log WHERE request_id = ANY(string_to_array(:'v1', ',')) GROUP BY 1`, ids.join(','));
  assert.equal(rows.length, ids.length, rows.join(' '));
  for (const row of rows) assert.ok(row.endsWith('|1'), `one row per request: ${row}`);
});

test('the killed broker restarted: the frontend and the worker use it again, nothing else restarted', async () => {
  const fePid = pid('frontend3'), wPid = pid('worker3');
  lib('sb_start_broker 2', { SB_FRONTEND_PORTS: ports });
  const joined = await waitFor(async () => (await metric('broker2', 'sb_broker_workers')) === 1, { timeout: 5000, interval: 100 });
  assert.ok(joined, 'the third worker registered with the restarted broker');
  const used = await waitFor(async () => {
    await Promise.all(Array.from({ length: 4 }, () => chat(unique('again'))));
    return (await dispatched('broker2')) > 0;
  }, { timeout: 5000, interval: 100 });
  assert.ok(used, 'the restarted broker dispatches the third frontend\'s jobs');
  assert.equal(pid('frontend3'), fePid);
  assert.equal(pid('worker3'), wPid);
});
