// HTTP limits, each answered with the right status and the error body of the
// request's API style, none crashing the frontend or leaking: headers over
// --max-header-bytes (431, decided as the bytes arrive, however many more are
// coming), bodies over the limit (413: declared Content-Length before the body
// is sent, and chunked),
// JSON nesting and element count (400), the absolute read deadline (408:
// slowloris on headers, on the request line and on the body), and the
// per-instance connection cap (503 + Retry-After: 1), with an exact count
// after thousands of connections.
//
// Limits with small values run against a frontend of this file's own (same
// database and broker, logging to $SB_VAR/log/frontend-limits.log so the ASan
// pass scans it), stopped with SIGTERM at the end. Raw sockets throughout:
// fetch hides the status line, reuses connections (which would count against
// the cap) and cannot trickle bytes (the helpers are in rawhttp.mjs).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { cfg, waitFor } from './harness.mjs';
import {
  Conn, exchange, head, killFrontend, logProblems, parseResponse, post, sleep, startFrontend, stopFrontend, trickle, assertStyleError,
} from './rawhttp.mjs';

const mainPort = Number(new URL(cfg.frontendA).port);

// The small settings of the frontend this file starts.
const LIM = {
  maxConnections: 6,
  readDeadlineMs: 1500,
  maxBodyBytes: 65536,
  maxFileBytes: 32768, // an upload's body may be the file + 64 KiB of multipart framing: 98304
  maxHeaderBytes: 4096,
  maxJsonDepth: 16,
  maxJsonElements: 64,
};

const STYLES = [
  {
    name: 'Responses', kind: 'openai', path: '/v1/responses',
    auth: (k) => ({ authorization: `Bearer ${k}` }),
    body: (text) => ({ model: 'emu-chat', input: text }),
  },
  {
    name: 'Chat Completions', kind: 'openai', path: '/v1/chat/completions',
    auth: (k) => ({ authorization: `Bearer ${k}` }),
    body: (text) => ({ model: 'emu-chat', messages: [{ role: 'user', content: text }] }),
  },
  {
    name: 'Messages', kind: 'anthropic', path: '/v1/messages',
    auth: (k) => ({ 'x-api-key': k, 'anthropic-version': '2023-06-01' }),
    body: (text) => ({ model: 'emu-claude', max_tokens: 50, messages: [{ role: 'user', content: text }] }),
  },
  {
    name: 'Generate Content', kind: 'google', path: '/v1beta/models/emu-gemini:generateContent',
    auth: (k) => ({ 'x-goog-api-key': k }),
    body: (text) => ({ contents: [{ role: 'user', parts: [{ text }] }] }),
  },
];

// What each limit's answer says, per style.
const E431 = { code: 'headers_too_large', openai: 'invalid_request_error', anthropic: 'request_too_large', google: 'INVALID_ARGUMENT', message: /header/i };
const E413 = { code: 'request_too_large', openai: 'invalid_request_error', anthropic: 'request_too_large', google: 'INVALID_ARGUMENT', message: /exceeds the limit/ };
const EDEEP = { code: 'json_too_deep', openai: 'invalid_request_error', anthropic: 'invalid_request_error', google: 'INVALID_ARGUMENT', message: /nesting deeper than/ };
const EMANY = { code: 'json_too_many_elements', openai: 'invalid_request_error', anthropic: 'invalid_request_error', google: 'INVALID_ARGUMENT', message: /more than \d+ values/ };
const E408 = { code: 'request_timeout', openai: 'timeout_error', anthropic: 'timeout_error', google: 'DEADLINE_EXCEEDED', message: /not received completely within/ };
const E503 = { code: 'too_many_connections', openai: 'server_error', anthropic: 'overloaded_error', google: 'UNAVAILABLE', message: /too many open connections/ };

// ---- the frontend with small limits ------------------------------------------

let fe = null; // startFrontend's {proc, pid, port, log, logStart, exit, exited}

before(async () => {
  fe = await startFrontend('frontend-limits', [
    '--max-connections', String(LIM.maxConnections), '--read-deadline-ms', String(LIM.readDeadlineMs),
    '--max-body-bytes', String(LIM.maxBodyBytes), '--max-file-bytes', String(LIM.maxFileBytes),
    '--max-header-bytes', String(LIM.maxHeaderBytes), '--max-json-depth', String(LIM.maxJsonDepth),
    '--max-json-elements', String(LIM.maxJsonElements),
  ]);
});

after(async () => { await killFrontend(fe); });

// A normal generation through the limits frontend: 200 and the echo.
async function served(style = STYLES[0], text = 'still serving') {
  const { res, ms } = await exchange(fe.port, [post(style, style.body(text))], { timeout: 10000 });
  assert.equal(res?.status, 200, `${style.name}: ${res?.status} ${res?.text}`);
  assert.ok(res.text.includes(text), res.text);
  return ms;
}

// ---- header size ----------------------------------------------------------------

test('431: headers over --max-header-bytes get 431 in each style\'s error body; just under is served', async () => {
  for (const style of STYLES) {
    const over = post(style, style.body('hi'), { headers: { 'x-pad': 'a'.repeat(70000) } });
    const { res } = await exchange(mainPort, [over]);
    assertStyleError(style, res, 431, E431);
    assert.match(res.text, /exceed the limit of 65536 bytes/);
    const under = post(style, style.body('under the header limit'), { headers: { 'x-pad': 'a'.repeat(60000) } });
    const ok = await exchange(mainPort, [under]);
    assert.equal(ok.res?.status, 200, `${style.name}: ${ok.res?.text}`);
  }
  // On the limits frontend (4096 bytes): a few headers that add up count too.
  const many = {};
  for (let i = 0; i < 50; i++) many[`x-h${i}`] = 'v'.repeat(90);
  const { res } = await exchange(fe.port, [post(STYLES[2], STYLES[2].body('x'), { headers: many })]);
  assertStyleError(STYLES[2], res, 431, E431);
});

test('431 for headers far over the limit: the style\'s body as soon as the limit is passed, then closed', async () => {
  for (const style of STYLES) {
    // 300 KB of headers against the 64 KiB limit: there is no second, larger
    // ceiling; the head is refused once its first 64 KiB are in.
    const { res, closed, resMs } = await exchange(mainPort, [head('POST', style.path, { 'x-pad': 'b'.repeat(300000) })], { untilClose: true });
    assertStyleError(style, res, 431, E431);
    assert.equal(res.headers.connection, 'close');
    assert.ok(closed, 'the connection is closed');
    assert.ok(resMs < 2000, `431 after ${resMs} ms`);
  }
  // A request line alone over the limit of the limits frontend (4096 bytes):
  // the path is not known yet, so OpenAI's body.
  const { res } = await exchange(fe.port, [`GET /v1/${'x'.repeat(20000)}`], { untilClose: true });
  assertStyleError(STYLES[0], res, 431, E431);
});

// ---- body size ------------------------------------------------------------------

test('413: a declared Content-Length over the limit is refused at once, before the body is sent', async () => {
  for (const style of STYLES) {
    const h = head('POST', style.path, { ...style.auth(cfg.key), 'content-type': 'application/json', 'content-length': 64 << 20 });
    const { res, closed, ms } = await exchange(mainPort, [h], { untilClose: true, timeout: 5000 });
    assertStyleError(style, res, 413, E413);
    assert.match(res.json?.error?.message ?? '', /67108864 bytes/);
    assert.equal(res.headers.connection, 'close');
    assert.ok(closed && ms < 2000, `answered and closed without waiting for the body (${ms} ms)`);
  }
  // With Expect: 100-continue the client never sends the body: no "100 Continue" first.
  const style = STYLES[1];
  const { res } = await exchange(fe.port, [head('POST', style.path, {
    ...style.auth(cfg.key), 'content-type': 'application/json', 'content-length': 200000, expect: '100-continue',
  })], { untilClose: true, timeout: 5000 });
  assertStyleError(style, res, 413, E413);
});

test('413: a chunked body over the limit is refused as it arrives, not buffered', async () => {
  for (const style of STYLES) {
    // One chunk-size line declaring more than the limit of the main frontend.
    const h = head('POST', style.path, { ...style.auth(cfg.key), 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    const one = await exchange(mainPort, [h, `${(64 << 20).toString(16)}\r\n`, 'abc'], { untilClose: true, timeout: 5000 });
    assertStyleError(style, one.res, 413, E413);
    // Many small chunks against the limits frontend (65536 bytes): refused once
    // the content passes the limit; the client can push at most what it sent
    // before the answer reached it.
    const chunk = Buffer.concat([Buffer.from('4000\r\n'), Buffer.alloc(0x4000, 0x61), Buffer.from('\r\n')]);
    const steps = [h];
    for (let i = 0; i < 200; i++) steps.push(chunk, 5); // up to 3.2 MiB, 5 ms apart
    const many = await exchange(fe.port, steps, { untilClose: true, timeout: 10000 });
    assertStyleError(style, many.res, 413, E413);
    assert.ok(many.written < 30 * chunk.length, `the client could send ${many.written} bytes before the 413`);
  }
});

test('413 just over the JSON body limit, declared or chunked, in each style\'s body', async () => {
  // The limits frontend: JSON bodies up to 65536 bytes (80 KB here).
  for (const style of STYLES) {
    const big = JSON.stringify({ ...style.body('x'), pad: 'p'.repeat(80000) });
    const declared = await exchange(fe.port, [post(style, big)]);
    assertStyleError(style, declared.res, 413, E413);
    const h = head('POST', style.path, { ...style.auth(cfg.key), 'content-type': 'application/json', 'transfer-encoding': 'chunked', connection: 'close' });
    const half = big.length >> 1;
    const chunked = await exchange(fe.port, [h,
      `${half.toString(16)}\r\n${big.slice(0, half)}\r\n`, `${(big.length - half).toString(16)}\r\n${big.slice(half)}\r\n`, '0\r\n\r\n']);
    assertStyleError(style, chunked.res, 413, E413);
    // A chunked body within the limits is read as usual.
    const small = JSON.stringify(style.body('sent in chunks'));
    const ok = await exchange(fe.port, [h, `5\r\n${small.slice(0, 5)}\r\n`, 20, `${(small.length - 5).toString(16)}\r\n${small.slice(5)}\r\n`, '0\r\n\r\n']);
    assert.equal(ok.res?.status, 200, `${style.name}: ${ok.res?.text}`);
    assert.ok(ok.res.text.includes('sent in chunks'));
  }
});

// ---- JSON depth and element count ----------------------------------------------------

test('400: JSON nested too deep or with too many elements, in each style\'s body (defaults 64 and 200000)', async () => {
  const deep = `${'['.repeat(65)}${']'.repeat(65)}`;
  const many = `[${'0,'.repeat(200000)}0]`; // 200001 elements, plus the body's own
  for (const style of STYLES) {
    const base = JSON.stringify(style.body('x')).slice(0, -1); // without the closing brace
    const d = await exchange(mainPort, [post(style, `${base},"pad":${deep}}`)]);
    assertStyleError(style, d.res, 400, EDEEP);
    const m = await exchange(mainPort, [post(style, `${base},"pad":${many}}`)]);
    assertStyleError(style, m.res, 400, EMANY);
  }
});

test('400 on the limits frontend (depth 16, 64 elements); brackets and commas inside strings are text', async () => {
  for (const style of STYLES) {
    const base = JSON.stringify(style.body('x')).slice(0, -1);
    const d = await exchange(fe.port, [post(style, `${base},"pad":${'{"a":'.repeat(16)}1${'}'.repeat(16)}}`)]);
    assertStyleError(style, d.res, 400, EDEEP);
    const m = await exchange(fe.port, [post(style, `${base},"pad":[${'1,'.repeat(63)}1]}`)]);
    assertStyleError(style, m.res, 400, EMANY);
    // 1000 brackets and commas and escaped quotes in the prompt: neither depth nor elements.
    const text = `tricky [[[{{{,,,\\"]]] ${'[{,'.repeat(1000)} "quoted, [x]"`;
    const ok = await exchange(fe.port, [post(style, style.body(text))]);
    assert.equal(ok.res?.status, 200, `${style.name}: ${ok.res?.text}`);
  }
});

// ---- the read deadline ---------------------------------------------------------------

test('408: headers trickled one byte per 200 ms get 408 in the style\'s body within the deadline + 1 s; others are served meanwhile', async () => {
  const slow = STYLES.map((style) => exchange(fe.port, [
    head('POST', style.path, { ...style.auth(cfg.key), 'content-type': 'application/json' }).slice(0, -2), // the head without its blank line
    ...trickle(`x-slow: ${'s'.repeat(60)}\r\n\r\n`, 200),
  ], { untilClose: true, timeout: 10000 }));
  // Meanwhile the frontend answers others at once (one connection at a time: the cap is 6).
  const t0 = Date.now();
  let servedCount = 0;
  while (Date.now() - t0 < LIM.readDeadlineMs) {
    const ms = await served(STYLES[servedCount % 4], `meanwhile ${servedCount}`);
    assert.ok(ms < 1000, `a normal request took ${ms} ms while slow clients were connected`);
    servedCount++;
  }
  assert.ok(servedCount >= 2);
  const results = await Promise.all(slow);
  results.forEach((r, i) => {
    assertStyleError(STYLES[i], r.res, 408, E408);
    assert.equal(r.res.headers.connection, 'close');
    assert.ok(r.closed, 'the connection is closed');
    assert.ok(r.ms >= LIM.readDeadlineMs - 100 && r.ms <= LIM.readDeadlineMs + 1000, `408 after ${r.ms} ms`);
  });
});

test('408: a request line trickled (path not known yet) gets OpenAI\'s body; a body trickled gets its style\'s', async () => {
  const line = await exchange(fe.port, trickle('POST /v1/messages HTTP/1.1\r\n', 200), { untilClose: true, timeout: 10000 });
  assertStyleError(STYLES[0], line.res, 408, E408);
  assert.ok(line.ms <= LIM.readDeadlineMs + 1000, `${line.ms} ms`);
  for (const style of [STYLES[2], STYLES[3]]) {
    const body = JSON.stringify(style.body('trickled body'));
    const h = head('POST', style.path, { ...style.auth(cfg.key), 'content-type': 'application/json', 'content-length': body.length });
    const r = await exchange(fe.port, [h, ...trickle(body, 200)], { untilClose: true, timeout: 10000 });
    assertStyleError(style, r.res, 408, E408);
    assert.ok(r.closed);
    assert.ok(r.ms <= LIM.readDeadlineMs + 1000, `${r.ms} ms`);
  }
});

test('the deadline covers reading only: not a keep-alive connection\'s idle time, nor a slow upstream', async () => {
  const c = new Conn(fe.port);
  const style = STYLES[0];
  const req = (text) => post(style, style.body(text), { headers: { connection: 'keep-alive' } });
  assert.equal((await c.request(req('first')))?.status, 200);
  await sleep(LIM.readDeadlineMs + 1000); // idle between requests: --read-timeout's business (30 s)
  const second = await c.request(req('second after a pause'));
  assert.equal(second?.status, 200, second?.text);
  c.close();
  // The upstream takes longer than the read deadline: the request was read in time.
  const t0 = Date.now();
  const { res } = await exchange(fe.port, [post(STYLES[1], STYLES[1].body('slow upstream [[emu:latency=2500]]'))], { timeout: 15000 });
  assert.equal(res?.status, 200, res?.text);
  assert.ok(Date.now() - t0 >= 2400);
});

// ---- the connection cap --------------------------------------------------------------

async function openIdle(n) {
  const socks = await Promise.all(Array.from({ length: n }, () => new Promise((resolve) => {
    const s = net.connect(fe.port, '127.0.0.1', () => resolve(s));
    s.on('error', () => {});
  })));
  await sleep(100); // accepted by the frontend
  return socks;
}

test('503 with Retry-After and the style\'s body on connections beyond --max-connections; the others are unaffected', async () => {
  await sleep(300); // lingering closes from earlier tests are over
  const idle = await openIdle(LIM.maxConnections);
  for (const style of STYLES) {
    const { res, closed } = await exchange(fe.port, [post(style, style.body('one too many'))], { untilClose: true });
    assertStyleError(style, res, 503, E503);
    assert.equal(res.headers['retry-after'], '1');
    assert.equal(res.headers.connection, 'close');
    assert.ok(closed, 'the refused connection is closed');
  }
  // Refused once its headers are in, before the body: a client that waits
  // (Expect: 100-continue) or is slow to send it gets the 503 at once.
  const style = STYLES[3];
  const early = await exchange(fe.port, [head('POST', style.path, {
    ...style.auth(cfg.key), 'content-type': 'application/json', 'content-length': 50000, expect: '100-continue',
  })], { untilClose: true, timeout: 5000 });
  assertStyleError(style, early.res, 503, E503);
  assert.equal(early.res.headers['retry-after'], '1');
  assert.ok(early.closed && early.ms < 1000, `answered without the body (${early.ms} ms)`);
  // The connections under the cap are served.
  const answers = await Promise.all(idle.map((s, i) => new Promise((resolve) => {
    let buf = Buffer.alloc(0);
    s.on('data', (d) => { buf = Buffer.concat([buf, d]); const r = parseResponse(buf); if (r) resolve(r); });
    s.on('close', () => resolve(parseResponse(buf)));
    s.write(post(STYLES[i % 4], STYLES[i % 4].body(`under the cap ${i}`)));
  })));
  answers.forEach((r, i) => assert.equal(r?.status, 200, `idle connection ${i}: ${r?.text}`));
  idle.forEach((s) => s.destroy());
  // Full again: closing two makes room for a new one.
  const again = await openIdle(LIM.maxConnections);
  const refused = await exchange(fe.port, [post(STYLES[3], STYLES[3].body('refused'))], { untilClose: true });
  assert.equal(refused.res?.status, 503);
  again[0].destroy();
  again[1].destroy();
  const ok = await waitFor(async () => (await exchange(fe.port, [post(STYLES[2], STYLES[2].body('room again'))])).res?.status === 200,
    { timeout: 3000, interval: 100 });
  assert.ok(ok, 'a new connection is served once two closed');
  again.forEach((s) => s.destroy());
});

test('the connection count stays exact after thousands of connections of every kind', async () => {
  const style = STYLES[0];
  const kinds = [
    // a complete request and its answer
    () => exchange(fe.port, [head('GET', '/v1/models', { authorization: `Bearer ${cfg.key}` })], { timeout: 5000 }),
    // half a request, then the client leaves
    () => exchange(fe.port, ['POST /v1/responses HTTP/1.1\r\nContent-Le', 5], { timeout: 30 }),
    // connect and leave
    () => exchange(fe.port, [], { timeout: 1 }),
    // refused before the body (413 from the declared length), lingering close
    () => exchange(fe.port, [head('POST', style.path, { 'content-length': 1 << 20 })], { untilClose: true, timeout: 5000 }),
    // refused by the framing (a malformed request line: 400, OpenAI's body)
    () => exchange(fe.port, ['NONSENSE\r\n\r\n'], { untilClose: true, timeout: 5000 }),
    // two requests on one keep-alive connection, the client closing after the second
    async () => {
      const c = new Conn(fe.port);
      await c.request(head('GET', '/v1/models', { authorization: `Bearer ${cfg.key}` }));
      await c.request(head('GET', '/v1/models', { authorization: `Bearer ${cfg.key}` }));
      c.close();
    },
    // 431 (headers over the limit: answered, then closed by the server)
    () => exchange(fe.port, [head('GET', '/v1/models', { 'x-pad': 'c'.repeat(5000) })], { timeout: 5000 }),
  ];
  const total = 2100;
  const parallel = Math.max(1, LIM.maxConnections - 1); // never over the cap: every kind gets its normal answer
  let next = 0;
  await Promise.all(Array.from({ length: parallel }, async () => {
    while (next < total) {
      const i = next++;
      await kinds[i % kinds.length]();
    }
  }));
  await sleep(500); // the server's side of the last closes
  // Exactly the cap is free again: N idle connections fit, the next is refused,
  // and each of the N is served.
  const idle = await openIdle(LIM.maxConnections);
  const over = await exchange(fe.port, [post(style, style.body('over'))], { untilClose: true });
  assert.equal(over.res?.status, 503, 'one connection more than the cap is refused (no count lost)');
  const answers = await Promise.all(idle.map((s) => new Promise((resolve) => {
    let buf = Buffer.alloc(0);
    s.on('data', (d) => { buf = Buffer.concat([buf, d]); const r = parseResponse(buf); if (r) resolve(r); });
    s.on('close', () => resolve(parseResponse(buf)));
    s.write(head('GET', '/v1/models', { authorization: `Bearer ${cfg.key}`, connection: 'close' }));
  })));
  answers.forEach((r, i) => assert.equal(r?.status, 200, `connection ${i} under the cap (no count leaked): ${r?.status}`));
  idle.forEach((s) => s.destroy());
});

// ---- afterwards ----------------------------------------------------------------------

test('after all that the limits frontend answers normally, logs no errors, and exits cleanly on SIGTERM', async () => {
  await sleep(200);
  for (const style of STYLES) await served(style, `after the limits, ${style.name}`);
  // The main frontend too.
  const { res } = await exchange(mainPort, [post(STYLES[0], STYLES[0].body('main still fine'))]);
  assert.equal(res?.status, 200);
  const exit = await stopFrontend(fe);
  assert.ok(exit, 'the frontend stopped within 20 s of SIGTERM');
  assert.deepEqual(exit, { code: 0, signal: null });
  assert.deepEqual(logProblems(fe), [], `errors in ${fe.log}`);
});
