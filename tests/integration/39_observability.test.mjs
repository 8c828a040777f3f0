// Operability (issue 19): every process's admin port (/metrics, /healthz,
// /readyz), metrics that move with a scripted load and agree with the
// request log, readiness with PostgreSQL away and during a drain, a SIGTERM
// under load that loses no request and no row, JSON log lines, and W3C
// traceparent from the client through the job to the upstream and into
// request_log.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { cfg, http, pgCtl, psql, sbctl, newAccountKey, unique, waitFor, upstreamRequestsContaining, sse } from './harness.mjs';
import { send, keyId, STYLES } from './limits_harness.mjs';
import { startFrontend, stopFrontend, killFrontend, freePort, sleep } from './rawhttp.mjs';

const FRONTEND_ADMIN = (process.env.SB_FRONTEND_ADMIN_URLS ?? '').split(' ').filter(Boolean);
const BROKER_ADMIN = process.env.SB_BROKER_ADMIN_URL ?? '';
const WORKER_ADMIN = (process.env.SB_WORKER_ADMIN_URLS ?? '').split(' ').filter(Boolean);

// The text exposition format into {name, labels, value} samples.
function parseMetrics(text) {
  const out = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(m, `not a sample line: ${line}`);
    const labels = {};
    if (m[3]) for (const lm of m[3].matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[lm[1]] = lm[2];
    out.push({ name: m[1], labels, value: m[4] === '+Inf' ? Infinity : Number(m[4]) });
  }
  return out;
}

async function scrape(url) {
  const res = await fetch(`${url}/metrics`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
  return parseMetrics(await res.text());
}

// The sum of the samples named name whose labels include want.
function total(samples, name, want = {}) {
  return samples.filter((s) => s.name === name && Object.entries(want).every(([k, v]) => s.labels[k] === v))
    .reduce((a, s) => a + s.value, 0);
}

async function scrapeAll(urls) {
  return (await Promise.all(urls.map(scrape))).flat();
}

test('every process has an admin port: /healthz, /readyz, /metrics; the public port has none', async () => {
  assert.equal(FRONTEND_ADMIN.length, 2, 'tests/run gives both frontends an admin port');
  assert.ok(BROKER_ADMIN && WORKER_ADMIN.length === 2, 'and the broker and both workers');
  for (const url of [...FRONTEND_ADMIN, BROKER_ADMIN, ...WORKER_ADMIN]) {
    const h = await fetch(`${url}/healthz`);
    assert.equal(h.status, 200, url);
    assert.equal(await h.text(), 'ok\n');
    const r = await fetch(`${url}/readyz`);
    assert.equal(r.status, 200, `${url}: ${await r.clone().text()}`);
    assert.equal(await r.text(), 'ready\n');
    const m = await scrape(url);
    assert.ok(m.length > 0);
    const post = await fetch(`${url}/metrics`, { method: 'POST', body: 'x' });
    assert.equal(post.status, 405);
    assert.equal(post.headers.get('allow'), 'GET');
    assert.equal((await fetch(`${url}/nope`)).status, 404);
  }
  // The public port does not serve them: a 404 in the OpenAI style.
  for (const p of ['/metrics', '/healthz', '/readyz']) {
    const res = await http('GET', p);
    assert.equal(res.status, 404, p);
    assert.equal(typeof res.json?.error?.message, 'string');
  }
});

test('frontend metrics move with a scripted load and equal the request log', async () => {
  const before = await scrapeAll(FRONTEND_ADMIN);
  const beforeBroker = await scrape(BROKER_ADMIN);
  const beforeWorkers = await scrapeAll(WORKER_ADMIN);
  const m = unique('metrics');
  const ids = [];
  const note = (res) => { ids.push(res.headers.get('x-request-id')); return res; };
  // 2 per style through A, 1 per style through B: 12 answered 200.
  for (const style of STYLES) {
    for (const base of [cfg.frontendA, cfg.frontendA, cfg.frontendB]) {
      const res = note(await send(style, cfg.key, { base, text: `${m} ${style}` }));
      assert.equal(res.status, 200, res.text);
    }
  }
  // Two streams (time to first token), a 404 (no such model), a 400.
  for (let i = 0; i < 2; i++) {
    const res = await fetch(`${cfg.frontendA}/v1/chat/completions`, {
      method: 'POST', headers: { authorization: `Bearer ${cfg.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'emu-chat', stream: true, messages: [{ role: 'user', content: `${m} stream ${i}` }] }),
    });
    assert.equal(res.status, 200);
    await res.text();
    ids.push(res.headers.get('x-request-id'));
  }
  const nf = note(await http('POST', '/v1/chat/completions', { body: { model: `nope-${m}`, messages: [{ role: 'user', content: 'x' }] } }));
  assert.equal(nf.status, 404);
  const bad = note(await http('POST', '/v1/chat/completions', { body: { model: 'emu-chat', messages: 'not a list' } }));
  assert.equal(bad.status, 400);

  // The rows land in batches; then the counters are read.
  const inList = `ARRAY[${ids.map((i) => `'${i.replace(/[^a-z0-9_]/gi, '')}'`).join(',')}]`;
  await waitFor(() => Number(psql(`SELECT count(*) FROM request_log WHERE request_id = ANY(${inList})`)[0]) === ids.length,
    { timeout: 5000 });
  const after = await scrapeAll(FRONTEND_ADMIN);
  const d = (name, want) => total(after, name, want) - total(before, name, want);

  // Counts by style and status equal what was sent and what the log holds.
  const rows = psql(`SELECT path, status, count(*), sum(tokens_in), sum(tokens_out) FROM request_log
    WHERE request_id = ANY(${inList}) GROUP BY 1, 2`).map((l) => l.split('|'));
  assert.equal(rows.reduce((a, r) => a + Number(r[2]), 0), ids.length);
  assert.equal(d('sb_requests_total', {}), ids.length, 'one count per request_log row');
  for (const style of ['responses', 'messages', 'gemini'])
    assert.equal(d('sb_requests_total', { style, model: 'emu-chat', upstream: 'openai-chat', status: '200' }), 3, style);
  assert.equal(d('sb_requests_total', { style: 'chat', model: 'emu-chat', status: '200' }), 5);
  assert.equal(d('sb_requests_total', { style: 'chat', model: '', status: '404' }), 1, 'an unknown model is not a label');
  assert.equal(d('sb_requests_total', { style: 'chat', status: '400' }), 1);
  // Tokens equal the rows' sums.
  const tin = rows.reduce((a, r) => a + Number(r[3] || 0), 0);
  const tout = rows.reduce((a, r) => a + Number(r[4] || 0), 0);
  assert.ok(tin > 0 && tout > 0);
  assert.equal(d('sb_tokens_total', { model: 'emu-chat', direction: 'input' }), tin);
  assert.equal(d('sb_tokens_total', { model: 'emu-chat', direction: 'output' }), tout);

  // Histograms: the +Inf bucket equals the count, the counts equal the
  // requests, buckets never decrease, and gateway-added <= total.
  assert.equal(d('sb_request_duration_seconds_count'), ids.length);
  assert.equal(d('sb_request_duration_seconds_bucket', { le: '+Inf' }), ids.length);
  assert.equal(d('sb_upstream_duration_seconds_count'), 14, 'the 14 requests that called an upstream');
  assert.equal(d('sb_gateway_added_seconds_count'), 14);
  assert.equal(d('sb_gateway_added_seconds_bucket', { le: '+Inf' }), 14);
  assert.ok(d('sb_gateway_added_seconds_sum') > 0);
  assert.ok(d('sb_gateway_added_seconds_sum') <= d('sb_request_duration_seconds_sum'));
  assert.equal(d('sb_time_to_first_token_seconds_count', { style: 'chat', model: 'emu-chat' }), 2);
  for (const one of await Promise.all(FRONTEND_ADMIN.map(scrape))) {
    for (const fam of ['sb_request_duration_seconds', 'sb_gateway_added_seconds']) {
      for (const s of one.filter((x) => x.name === `${fam}_count`)) {
        const counts = one.filter((x) => x.name === `${fam}_bucket` && x.labels.style === s.labels.style
          && x.labels.model === s.labels.model).map((b) => b.value);
        for (let i = 1; i < counts.length; i++) assert.ok(counts[i] >= counts[i - 1], `${fam} buckets are cumulative`);
        assert.equal(counts[counts.length - 1], s.value, `${fam}: the +Inf bucket is the count`);
      }
    }
  }
  // Broker and workers: 14 jobs queued, dispatched and finished; 14
  // upstream calls answered 200, most on reused connections.
  const broker = await scrape(BROKER_ADMIN);
  const bd = (name, want) => total(broker, name, want) - total(beforeBroker, name, want);
  assert.equal(bd('sb_broker_jobs_queued_total', { model: 'emu-chat' }), 14);
  assert.equal(bd('sb_broker_jobs_dispatched_total', { model: 'emu-chat' }), 14);
  assert.equal(bd('sb_broker_jobs_finished_total', { model: 'emu-chat' }), 14);
  assert.equal(bd('sb_broker_queue_wait_seconds_count', { model: 'emu-chat' }), 14);
  assert.equal(total(broker, 'sb_broker_workers'), 2);
  const workers = await scrapeAll(WORKER_ADMIN);
  const wd = (name, want) => total(workers, name, want) - total(beforeWorkers, name, want);
  assert.equal(wd('sb_worker_upstream_calls_total', { model: 'emu-chat', outcome: '200' }), 14);
  assert.ok(wd('sb_worker_upstream_connections_total', { reused: 'true' }) >= 10,
    `connections reused: ${wd('sb_worker_upstream_connections_total', { reused: 'true' })} of 14`);
});

test('limit refusals and gauges of work in flight', async () => {
  const { account, key } = newAccountKey();
  sbctl('limits', 'set', '--key', keyId(account), '--rpm', '2');
  const before = await scrapeAll(FRONTEND_ADMIN);
  const all = [];
  for (let i = 0; i < 5; i++) all.push(await send('chat', key, { text: `limited ${i}` }));
  const refused = all.filter((r) => r.status === 429).length;
  assert.equal(refused, 3);
  const after = await scrapeAll(FRONTEND_ADMIN);
  assert.equal(total(after, 'sb_limit_refusals_total', { kind: 'rate_limit' })
    - total(before, 'sb_limit_refusals_total', { kind: 'rate_limit' }), refused);

  // A slow stream: while it runs, it shows on the frontend, the broker and
  // a worker; then everything is back to zero.
  const slow = sse('/v1/chat/completions', {
    body: { model: 'emu-chat', stream: true, messages: [{ role: 'user', content: '[[emu:chunk_delay=150]] a b c d e f g h' }] },
  });
  const busy = await waitFor(async () => {
    const [fe, br, wk] = await Promise.all([scrape(FRONTEND_ADMIN[0]), scrape(BROKER_ADMIN), scrapeAll(WORKER_ADMIN)]);
    return total(fe, 'sb_frontend_streams_open') === 1 && total(fe, 'sb_frontend_requests_in_flight') >= 1
      && total(br, 'sb_broker_jobs_in_flight') === 1 && total(br, 'sb_broker_worker_credits', { state: 'used' }) === 1
      && total(wk, 'sb_worker_jobs_in_flight') === 1;
  }, { timeout: 3000, interval: 30 });
  assert.ok(busy, 'the running stream shows in every process');
  await slow;
  const idle = await waitFor(async () => {
    const [fe, br, wk] = await Promise.all([scrape(FRONTEND_ADMIN[0]), scrape(BROKER_ADMIN), scrapeAll(WORKER_ADMIN)]);
    return total(fe, 'sb_frontend_streams_open') === 0 && total(br, 'sb_broker_jobs_in_flight') === 0
      && total(wk, 'sb_worker_jobs_in_flight') === 0 && total(fe, 'sb_reqlog_rows_waiting') === 0;
  }, { timeout: 3000, interval: 50 });
  assert.ok(idle, 'and is gone from all of them once it ended');
});

test('readiness: false while PostgreSQL is down, true again after; health stays true', async () => {
  let down = false;
  try {
    pgCtl('stop');
    down = true;
    const notReady = await waitFor(async () => {
      const rs = await Promise.all(FRONTEND_ADMIN.map((u) => fetch(`${u}/readyz`)));
      return rs.every((r) => r.status === 503);
    }, { timeout: 8000, interval: 100 });
    assert.ok(notReady, 'both frontends report not ready');
    const why = await (await fetch(`${FRONTEND_ADMIN[0]}/readyz`)).text();
    assert.match(why, /PostgreSQL/);
    assert.equal((await fetch(`${FRONTEND_ADMIN[0]}/healthz`)).status, 200, 'alive all the same');
    const m = await scrape(FRONTEND_ADMIN[0]);
    assert.equal(total(m, 'sb_ready'), 0);
    assert.equal(total(m, 'sb_db_pool_connections', { state: 'idle' }) + total(m, 'sb_db_pool_connections', { state: 'busy' }), 0);
  } finally {
    if (down) pgCtl('start');
  }
  const ready = await waitFor(async () => {
    const rs = await Promise.all(FRONTEND_ADMIN.map((u) => fetch(`${u}/readyz`)));
    return rs.every((r) => r.status === 200);
  }, { timeout: 10000, interval: 100 });
  assert.ok(ready, 'ready again once PostgreSQL is back');
});

test('SIGTERM under load: readiness goes false, every request is answered and logged', async () => {
  const admin = await freePort();
  const fe = await startFrontend('fe-drain', ['--admin-listen', `127.0.0.1:${admin}`, '--drain-seconds', '15']);
  after(() => killFrontend(fe));
  const base = `http://127.0.0.1:${fe.port}`;
  // startFrontend waits for /v1/models, which needs no broker; readiness
  // also waits for the broker's first answer (under ASan 19 ms later once).
  const readyAtStart = await waitFor(async () => (await fetch(`http://127.0.0.1:${admin}/readyz`)).status === 200,
    { timeout: 5000, interval: 20 });
  assert.ok(readyAtStart, 'ready once its broker answers');
  const m = unique('drain');
  // 20 slow requests (about 1 s each), half streamed; then SIGTERM.
  const reqs = Array.from({ length: 20 }, (_, i) => http('POST', '/v1/chat/completions', {
    base,
    body: { model: 'emu-chat', stream: i % 2 === 0, messages: [{ role: 'user', content: `[[emu:chunk_delay=120]] ${m} ${i} a b c d e f g` }] },
  }));
  await waitFor(async () => total(await scrape(`http://127.0.0.1:${admin}`), 'sb_frontend_requests_in_flight') >= 20,
    { timeout: 5000, interval: 20 });
  fe.proc.kill('SIGTERM');
  const draining = await waitFor(async () => (await fetch(`http://127.0.0.1:${admin}/readyz`)).status === 503,
    { timeout: 2000, interval: 20 });
  assert.ok(draining, 'readiness goes false at once');
  assert.match(await (await fetch(`http://127.0.0.1:${admin}/readyz`)).text(), /draining/);
  const late = await http('POST', '/v1/chat/completions', { base, body: { model: 'emu-chat', messages: [{ role: 'user', content: 'late' }] } })
    .catch(() => null);
  if (late) assert.equal(late.status, 503, 'a new request while draining is refused, not dropped');
  const res = await Promise.all(reqs);
  for (const r of res) assert.equal(r.status, 200, r.text);
  for (const r of res.filter((x) => x.headers.get('content-type')?.startsWith('text/event-stream')))
    assert.match(r.text, /data: \[DONE\]/, 'streams finish whole');
  const exit = await stopFrontend(fe);
  assert.deepEqual(exit, { code: 0, signal: null }, `exit after draining; see ${fe.log}`);
  const ids = res.map((r) => r.headers.get('x-request-id'));
  const n = psql(`SELECT count(*) FROM request_log WHERE request_id = ANY(ARRAY[${ids.map((i) => `'${i}'`).join(',')}]) AND status = 200`)[0];
  assert.equal(Number(n), 20, 'every request has its row');
});

test('W3C traceparent: carried to the upstream as a child span, tracestate passed on, trace id in request_log', async () => {
  const trace = '4bf92f3577b34da6a3ce929d0e0e4736';
  const m = unique('trace');
  const res = await http('POST', '/v1/chat/completions', {
    headers: { traceparent: `00-${trace}-00f067aa0ba902b7-01`, tracestate: 'congo=t61rcWkgMzE' },
    body: { model: 'emu-chat', messages: [{ role: 'user', content: `${m} a` }] },
  });
  assert.equal(res.status, 200);
  const [up] = await upstreamRequestsContaining(`${m} a`);
  const tp = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(up.headers.traceparent);
  assert.ok(tp, `upstream traceparent: ${up.headers.traceparent}`);
  assert.equal(tp[1], trace);
  assert.notEqual(tp[2], '00f067aa0ba902b7', 'the upstream call is a span of its own');
  assert.equal(up.headers.tracestate, 'congo=t61rcWkgMzE');
  const rid = res.headers.get('x-request-id');
  await waitFor(() => psql(`SELECT trace_id FROM request_log WHERE request_id = :'v1'`, rid)[0] === trace);

  // Malformed: a new trace, and its tracestate is dropped.
  const res2 = await http('POST', '/v1/messages', {
    key: null, headers: { 'x-api-key': cfg.key, 'anthropic-version': '2023-06-01',
      traceparent: `00-${trace.toUpperCase()}-00f067aa0ba902b7-01`, tracestate: 'x=y' },
    body: { model: 'emu-chat', max_tokens: 50, messages: [{ role: 'user', content: `${m} b` }] },
  });
  assert.equal(res2.status, 200);
  const [up2] = await upstreamRequestsContaining(`${m} b`);
  const tp2 = /^00-([0-9a-f]{32})-[0-9a-f]{16}-00$/.exec(up2.headers.traceparent);
  assert.ok(tp2 && tp2[1] !== trace, up2.headers.traceparent);
  assert.equal(up2.headers.tracestate, undefined);
  const rid2 = res2.headers.get('request-id');
  await waitFor(() => psql(`SELECT trace_id FROM request_log WHERE request_id = :'v1'`, rid2)[0] === tp2[1]);

  // A background response's row (the finalizer's) has its trace id too.
  const bg = await http('POST', '/v1/responses', {
    headers: { traceparent: `00-${trace}-1111111111111111-01` },
    body: { model: 'emu-chat', input: `${m} c`, background: true },
  });
  assert.equal(bg.status, 200, bg.text);
  const done = await waitFor(async () => (await http('GET', `/v1/responses/${bg.json.id}`)).json.status === 'completed');
  assert.ok(done);
  await waitFor(() => psql(`SELECT trace_id FROM request_log WHERE request_id = :'v1'`, bg.headers.get('x-request-id'))[0] === trace);
});

test('log lines are JSON objects with time, level, component and message; a request\'s carry its ids', () => {
  for (const name of ['frontend1', 'broker', 'worker1']) {
    const lines = readFileSync(`${cfg.varDir}/log/${name}.log`, 'utf8').split('\n').filter((l) => l.startsWith('{'));
    assert.ok(lines.length > 0, `${name}.log has JSON lines`);
    for (const l of lines.slice(-200)) {
      const o = JSON.parse(l);
      assert.match(o.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      assert.ok(['debug', 'info', 'warn', 'error'].includes(o.level));
      assert.equal(typeof o.component, 'string');
      assert.equal(typeof o.msg, 'string');
      if ('trace_id' in o) assert.match(o.trace_id, /^[0-9a-f]{32}$/);
      if ('request_id' in o) assert.match(o.request_id, /^[A-Za-z0-9_-]+$/);
    }
  }
});
