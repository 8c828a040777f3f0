// Background responses (issue 18, docs/background.md): POST /v1/responses
// with background: true answers queued at once; the job runs on a worker that
// keeps its events in PostgreSQL; any frontend polls it, resumes its stream
// from any sequence number, cancels it, and finalizes it (final body, output
// items, one request_log row) — also after the frontend that took it died.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { cfg, client, emuStats, http, newAccountKey, pidOf, psql, psqlAsync, unique } from './harness.mjs';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function pollUntil(id, { base = cfg.frontendB, key = cfg.key, done = (b) => !['queued', 'in_progress'].includes(b.status), timeout = 20000 } = {}) {
  const t0 = Date.now();
  const seen = new Set();
  for (;;) {
    const res = await http('GET', `/v1/responses/${id}`, { base, key });
    assert.equal(res.status, 200, res.text);
    seen.add(res.json.status);
    if (done(res.json)) return { body: res.json, seen };
    assert.ok(Date.now() - t0 < timeout, `still ${res.json.status} after ${timeout} ms`);
    await sleep(50);
  }
}

// Every SSE event of a response body: [{event, data (parsed), raw}].
async function sseEvents(res) {
  const text = await res.text();
  return text.split('\n\n').filter((b) => b.includes('data:')).map((b) => {
    const event = (b.match(/^event: (.*)$/m) || [])[1];
    const data = b.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
    return { event, data: JSON.parse(data), raw: data };
  });
}

function post(body, { base = cfg.frontendA, key = cfg.key } = {}) {
  return fetch(`${base}/v1/responses`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

function resume(id, after, { base = cfg.frontendB, key = cfg.key } = {}) {
  const q = after === undefined ? 'stream=true' : `stream=true&starting_after=${after}`;
  return fetch(`${base}/v1/responses/${id}?${q}`, { headers: { authorization: `Bearer ${key}` } });
}

test('background needs store; queued at once, then completed on any frontend, with one request_log row', async () => {
  const bad = await http('POST', '/v1/responses', { body: { model: 'emu-chat', input: 'x', background: true, store: false } });
  assert.equal(bad.status, 400, bad.text);
  assert.equal(bad.json.error.type, 'invalid_request_error');
  assert.equal(bad.json.error.param, 'background');

  const m = unique('bg');
  const res = await http('POST', '/v1/responses', {
    body: { model: 'emu-chat', input: `[[emu:latency=600]] ${m}`, background: true, metadata: { m } },
  });
  assert.equal(res.status, 200, res.text);
  assert.equal(res.json.status, 'queued');
  assert.equal(res.json.background, true);
  assert.deepEqual(res.json.output, []);
  assert.equal(res.json.metadata.m, m);
  const jobId = res.headers.get('x-request-id');
  // No request_log row yet: the job's row is written once, when it ends.
  assert.deepEqual(psql(`SELECT count(*) FROM request_log WHERE request_id = :'v1'`, jobId), ['0']);

  const { body, seen } = await pollUntil(res.json.id);
  assert.ok(seen.has('in_progress') || seen.has('queued'), [...seen].join(','));
  assert.equal(body.status, 'completed');
  assert.equal(body.background, true);
  assert.equal(body.id, res.json.id);
  assert.equal(body.created_at, res.json.created_at);
  assert.match(body.output[0].content[0].text, new RegExp(m));
  assert.ok(body.usage.input_tokens > 0 && body.usage.output_tokens > 0);

  const rows = psql(`SELECT status, tokens_in, tokens_out, path FROM request_log WHERE request_id = :'v1'`, jobId);
  assert.deepEqual(rows, [`200|${body.usage.input_tokens}|${body.usage.output_tokens}|/v1/responses`]);
  // Same body from the other frontend, and its items chain.
  const again = await http('GET', `/v1/responses/${body.id}`, { base: cfg.frontendA });
  assert.deepEqual(again.json, body);
  const items = await http('GET', `/v1/responses/${body.id}/input_items`);
  assert.equal(items.status, 200, items.text);
  assert.equal(items.json.data.length, 1);
  const next = await client(cfg.frontendA).responses.create({
    model: 'emu-chat', input: 'and then?', previous_response_id: body.id, store: false,
  });
  assert.equal(next.status, 'completed');
});

test('background streams carry sequence numbers; a resume from every starting_after gives exactly the rest', async () => {
  const m = unique('bgs');
  const res = await post({ model: 'emu-chat', input: `${m} one two three four five`, background: true, stream: true });
  assert.equal(res.status, 200);
  const events = await sseEvents(res);
  assert.deepEqual(events.slice(0, 3).map((e) => e.event), ['response.created', 'response.queued', 'response.in_progress']);
  assert.equal(events[0].data.response.status, 'queued');
  assert.equal(events[0].data.response.background, true);
  assert.equal(events.at(-1).event, 'response.completed');
  events.forEach((e, i) => assert.equal(e.data.sequence_number, i));
  const id = events[0].data.response.id;
  const final = events.at(-1).data.response;
  assert.match(final.output[0].content[0].text, new RegExp(m));

  for (let after = -1; after < events.length; after++) {
    const r = await resume(id, after < 0 ? undefined : after, { base: after % 2 ? cfg.frontendA : cfg.frontendB });
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type'), /text\/event-stream/);
    const got = await sseEvents(r);
    assert.deepEqual(got.map((e) => e.raw), events.slice(after + 1).map((e) => e.raw), `starting_after=${after}`);
  }
  const got = await http('GET', `/v1/responses/${id}`);
  assert.deepEqual(got.json, final);
  // Not a background response: no stream to resume; a bad cursor is a 400.
  const plain = await client().responses.create({ model: 'emu-chat', input: 'plain' });
  const r1 = await resume(plain.id, 0);
  assert.equal(r1.status, 400);
  const r2 = await fetch(`${cfg.frontendA}/v1/responses/${id}?stream=true&starting_after=x`, {
    headers: { authorization: `Bearer ${cfg.key}` },
  });
  assert.equal(r2.status, 400);
  assert.equal((await r2.json()).error.param, 'starting_after');
});

test('a stream resumed while the response runs follows it live to the end', async () => {
  const m = unique('bgl');
  const res = await http('POST', '/v1/responses', {
    body: { model: 'emu-chat', input: `[[emu:chunk_delay=150]] ${m} a b c d e f`, background: true },
  });
  assert.equal(res.status, 200, res.text);
  await sleep(300);
  const live = await sseEvents(await resume(res.json.id, 2));
  assert.equal(live[0].data.sequence_number, 3);
  assert.equal(live.at(-1).event, 'response.completed');
  const deltas = live.filter((e) => e.event === 'response.output_text.delta').map((e) => e.data.delta).join('');
  assert.match(deltas, new RegExp(m));
});

test('cancel: a running response is cancelled (upstream closed, one request_log row); idempotent; finished and plain ones are 400s', async () => {
  const before = (await emuStats()).closed_by_client;
  const res = await http('POST', '/v1/responses', {
    body: { model: 'emu-chat', input: `[[emu:endless]] ${unique('bgc')}`, background: true },
  });
  assert.equal(res.status, 200, res.text);
  const id = res.json.id;
  const jobId = res.headers.get('x-request-id');
  await pollUntil(id, { done: (b) => b.status === 'in_progress' });
  const c1 = await http('POST', `/v1/responses/${id}/cancel`, { base: cfg.frontendB });
  assert.equal(c1.status, 200, c1.text);
  assert.equal(c1.json.status, 'cancelled');
  assert.equal(c1.json.id, id);
  const c2 = await http('POST', `/v1/responses/${id}/cancel`, { base: cfg.frontendA });
  assert.equal(c2.status, 200, c2.text);
  assert.deepEqual(c2.json, c1.json);
  const got = await http('GET', `/v1/responses/${id}`);
  assert.equal(got.json.status, 'cancelled');
  // The upstream call was closed (the endless stream stops only so).
  for (let i = 0; i < 100 && (await emuStats()).closed_by_client <= before; i++) await sleep(50);
  assert.ok((await emuStats()).closed_by_client > before, 'the upstream stream was not closed');
  await sleep(300);
  assert.deepEqual(psql(`SELECT status FROM request_log WHERE request_id = :'v1'`, jobId), ['499']);
  assert.deepEqual(psql(`SELECT state FROM background_responses WHERE response_id = :'v1'`, id), ['cancelled']);

  const done = await client().responses.create({ model: 'emu-chat', input: 'quick', background: true });
  const fin = await pollUntil(done.id);
  assert.equal(fin.body.status, 'completed');
  const c3 = await http('POST', `/v1/responses/${done.id}/cancel`);
  assert.equal(c3.status, 400, c3.text);
  assert.match(c3.json.error.message, /completed/);
  const plain = await client().responses.create({ model: 'emu-chat', input: 'plain' });
  const c4 = await http('POST', `/v1/responses/${plain.id}/cancel`);
  assert.equal(c4.status, 400, c4.text);
  const c5 = await http('POST', '/v1/responses/resp_nope/cancel');
  assert.equal(c5.status, 404, c5.text);
});

test('cancel right after submitting (queued or just started): cancelled, never run to its end', async () => {
  const res = await http('POST', '/v1/responses', {
    body: { model: 'emu-chat', input: `[[emu:latency=1500]] ${unique('bgq')}`, background: true },
  });
  assert.equal(res.status, 200, res.text);
  const c = await http('POST', `/v1/responses/${res.json.id}/cancel`, { base: cfg.frontendB });
  assert.equal(c.status, 200, c.text);
  assert.equal(c.json.status, 'cancelled');
  await sleep(2000); // past the upstream's latency: a job that ran on would have completed by now
  const got = await http('GET', `/v1/responses/${res.json.id}`);
  assert.equal(got.json.status, 'cancelled');
  assert.deepEqual(psql(`SELECT count(*) FROM request_log WHERE request_id = :'v1'`, res.headers.get('x-request-id')), ['1']);
});

test('cancel through the SDK while the client streams it: the stream ends cancelled', async () => {
  const res = await post({ model: 'emu-chat', input: `[[emu:endless]] ${unique('bgcs')}`, background: true, stream: true });
  assert.equal(res.status, 200);
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let raw = '';
  while (!raw.includes('response.output_text.delta')) {
    const { value, done } = await reader.read();
    assert.ok(!done, 'the stream ended before any text');
    raw += dec.decode(value, { stream: true });
  }
  const id = raw.match(/"id":"(resp_[0-9a-f]+)"/)[1];
  const cancelled = await client(cfg.frontendB).responses.cancel(id);
  assert.equal(cancelled.status, 'cancelled');
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    raw += dec.decode(value, { stream: true });
  }
  assert.match(raw, /event: response\.failed/);
  assert.match(raw, /"status":"cancelled"/);
});

test('another account sees none of it: 404 for GET, resume and cancel', async () => {
  const res = await http('POST', '/v1/responses', {
    body: { model: 'emu-chat', input: `[[emu:latency=300]] ${unique('bgo')}`, background: true },
  });
  const other = newAccountKey();
  for (const [method, path] of [['GET', `/v1/responses/${res.json.id}`], ['GET', `/v1/responses/${res.json.id}?stream=true`],
    ['POST', `/v1/responses/${res.json.id}/cancel`]]) {
    const r = await http(method, path, { key: other.key });
    assert.equal(r.status, 404, `${method} ${path}: ${r.text}`);
  }
  assert.equal((await pollUntil(res.json.id)).body.status, 'completed');
});

test('100 concurrent background responses all finish, each with one request_log row', async () => {
  const m = unique('bg100');
  const posted = await Promise.all(Array.from({ length: 100 }, (_, i) => http('POST', '/v1/responses', {
    base: i % 2 ? cfg.frontendB : cfg.frontendA,
    body: { model: 'emu-chat', input: `${m} ${i}`, background: true },
  })));
  for (const p of posted) assert.equal(p.status, 200, p.text);
  const finals = await Promise.all(posted.map((p, i) => pollUntil(p.json.id, { base: i % 2 ? cfg.frontendA : cfg.frontendB, timeout: 60000 })));
  finals.forEach(({ body }, i) => {
    assert.equal(body.status, 'completed');
    assert.match(body.output[0].content[0].text, new RegExp(`${m} ${i}`));
  });
  const ids = posted.map((p) => p.headers.get('x-request-id'));
  const [n] = await psqlAsync(`SELECT count(*) FROM request_log WHERE request_id = ANY(string_to_array(:'v1', ','))`, ids.join(','));
  assert.equal(n, '100');
  const [fin] = await psqlAsync(`SELECT count(*) FROM background_responses WHERE job_id = ANY(string_to_array(:'v1', ',')) AND finalized_at IS NOT NULL`, ids.join(','));
  assert.equal(fin, '100');
});

test('responses nobody polls are finalized by the sweep at the database\'s pace, not a batch per period', async () => {
  // Until it is finalized a background response holds its key's concurrency
  // slot and its usage is undrawn. The sweep finalizes 16 at a time; with a
  // backlog it goes again as soon as those are done (before: every 500 ms,
  // so 32 a second per frontend: 600 took about 10 s).
  const m = unique('bgsweep');
  const N = 600;
  const posted = [];
  for (let at = 0; at < N; at += 100) {
    posted.push(...await Promise.all(Array.from({ length: Math.min(100, N - at) }, (_, i) => http('POST', '/v1/responses', {
      base: (at + i) % 2 ? cfg.frontendB : cfg.frontendA,
      body: { model: 'emu-chat', input: `${m} ${at + i}`, background: true },
    }))));
  }
  for (const p of posted) assert.equal(p.status, 200, p.text);
  const ids = posted.map((p) => p.headers.get('x-request-id')).join(',');
  // How many of the responses whose jobs are idsCsv meet cond.
  const countOf = (idsCsv) => async (cond) => Number((await psqlAsync(`SELECT count(*) FROM background_responses WHERE job_id = ANY(string_to_array(:'v1', ',')) AND ${cond}`, idsCsv))[0]);
  const count = countOf(ids);
  let t0 = Date.now();
  while (await count('finished_at IS NOT NULL') < N) {
    assert.ok(Date.now() - t0 < 60000, 'the responses did not all finish within 60 s');
    await sleep(50);
  }
  t0 = Date.now();
  let open = await count('finalized_at IS NULL');
  const atFinish = open;
  while (open > 0) {
    assert.ok(Date.now() - t0 < 4000, `${open} of the ${atFinish} not finalized when all had finished were still open after 4 s`);
    await sleep(50);
    open = await count('finalized_at IS NULL');
  }
  const [n] = await psqlAsync(`SELECT count(*) FROM request_log WHERE request_id = ANY(string_to_array(:'v1', ','))`, ids);
  assert.equal(n, String(N));

  // The period still holds after the drain (running the periodic sweep early
  // had pushed its next run back a period each time): a few more, unpolled,
  // are finalized within a couple of periods of their end.
  const few = await Promise.all(Array.from({ length: 4 }, (_, i) => http('POST', '/v1/responses', {
    base: i % 2 ? cfg.frontendB : cfg.frontendA,
    body: { model: 'emu-chat', input: `${m} after ${i}`, background: true },
  })));
  for (const p of few) assert.equal(p.status, 200, p.text);
  const fewCount = countOf(few.map((p) => p.headers.get('x-request-id')).join(','));
  t0 = Date.now();
  while (await fewCount('finished_at IS NOT NULL') < few.length) {
    assert.ok(Date.now() - t0 < 20000, 'the last four did not finish within 20 s');
    await sleep(50);
  }
  t0 = Date.now();
  while (await fewCount('finalized_at IS NULL') > 0) {
    assert.ok(Date.now() - t0 < 2500, 'four responses were not finalized within 2.5 s of their end (the sweep\'s period is 500 ms)');
    await sleep(50);
  }
});

// Starts frontend K again as the stack started it (deploy/local/lib.sh), and
// waits until it answers.
async function startFrontend(k) {
  const port = (u) => u.slice(u.lastIndexOf(':') + 1);
  execFileSync('bash', ['-c', `source "$0/deploy/local/lib.sh" && sb_start_frontend ${k}`, REPO], {
    env: { ...process.env, SB_FRONTEND_PORTS: `${port(cfg.frontendA)} ${port(cfg.frontendB)}` },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const base = k === 1 ? cfg.frontendA : cfg.frontendB;
  for (let i = 0; i < 200; i++) {
    try {
      const r = await fetch(`${base}/v1/models`, { headers: { authorization: `Bearer ${cfg.key}` } });
      if (r.status === 200) return;
    } catch { /* not yet */ }
    await sleep(50);
  }
  throw new Error(`frontend ${k} did not come back`);
}

test('the frontend that took it dies: the response completes, and another frontend polls, resumes and finalizes it', async () => {
  const m = unique('bgk');
  const res = await http('POST', '/v1/responses', {
    base: cfg.frontendA,
    body: { model: 'emu-chat', input: `[[emu:chunk_delay=200]] ${m} a b c d e f g`, background: true },
  });
  assert.equal(res.status, 200, res.text);
  const jobId = res.headers.get('x-request-id');
  const pid = pidOf('frontend1');
  process.kill(pid, 'SIGKILL');
  try {
    const { body } = await pollUntil(res.json.id, { base: cfg.frontendB, timeout: 30000 });
    assert.equal(body.status, 'completed');
    assert.match(body.output[0].content[0].text, new RegExp(m));
    const events = await sseEvents(await resume(res.json.id, undefined, { base: cfg.frontendB }));
    assert.equal(events.at(-1).event, 'response.completed');
    assert.deepEqual(events.at(-1).data.response, body);
    const rows = psql(`SELECT status, frontend FROM request_log WHERE request_id = :'v1'`, jobId);
    assert.deepEqual(rows, ['200|fe2']);
  } finally {
    await startFrontend(1);
  }
});

test('the official SDK: background create, retrieve with stream and starting_after, and a client that leaves mid-stream', async () => {
  const openai = client();
  const m = unique('bgsdk');
  // A streaming client that goes away: the response still runs to its end.
  const ctrl = new AbortController();
  const res = await fetch(`${cfg.frontendA}/v1/responses`, {
    method: 'POST',
    signal: ctrl.signal,
    headers: { authorization: `Bearer ${cfg.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'emu-chat', input: `[[emu:chunk_delay=100]] ${m} a b c d e`, background: true, stream: true }),
  });
  const reader = res.body.getReader();
  let raw = '';
  while (!raw.includes('response.in_progress')) raw += new TextDecoder().decode((await reader.read()).value);
  const id = raw.match(/"id":"(resp_[0-9a-f]+)"/)[1];
  ctrl.abort();
  const { body } = await pollUntil(id);
  assert.equal(body.status, 'completed');
  assert.match(body.output[0].content[0].text, new RegExp(m));

  // The SDK's own resume: retrieve(id, {stream: true, starting_after}).
  const stream = await openai.responses.retrieve(id, { stream: true, starting_after: 4 });
  const seen = [];
  for await (const ev of stream) seen.push(ev);
  assert.equal(seen[0].sequence_number, 5);
  assert.equal(seen.at(-1).type, 'response.completed');
  assert.equal(seen.at(-1).response.id, id);
  const created = await openai.responses.create({ model: 'emu-chat', input: `${m} sdk`, background: true });
  assert.equal(created.status, 'queued');
  assert.equal(created.background, true);
  const cancelled = await openai.responses.cancel(created.id).catch((e) => e);
  // Either it was still running (cancelled) or it had already completed (400).
  if (cancelled instanceof Error) assert.equal(cancelled.status, 400);
  else assert.equal(cancelled.status, 'cancelled');
});
