// Rate limits, concurrency, token quotas, context and output limits: each hit
// exactly at its boundary with requests spread over both frontends at once,
// answered 429 (or 400) in each style's own body, with usage drawn once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  cfg, http, psql, sbctl, newAccountKey, unique, waitFor, sse, openSSE, ensureModel, upstreamRequestsContaining,
} from './harness.mjs';
import { STYLES, send, assert429, keyId, settledUsage } from './limits_harness.mjs';

for (const style of STYLES) {
  test(`${style}: requests per minute of a key hold exactly at the limit across both frontends`, async () => {
    const { account, key } = newAccountKey();
    sbctl('limits', 'set', '--key', keyId(account), '--rpm', '6');
    const all = await Promise.all(Array.from({ length: 12 }, (_, i) =>
      send(style, key, { base: i % 2 ? cfg.frontendB : cfg.frontendA })));
    const ok = all.filter((r) => r.status === 200);
    const limited = all.filter((r) => r.status === 429);
    assert.equal(ok.length, 6, all.map((r) => r.status).join(' '));
    assert.equal(limited.length, 6);
    for (const r of limited) assert429(style, r, 'rate');
    assert.match(limited[0].json.error.message, /requests per minute/);
  });
}

test('a token group limit is shared by all its keys, on both frontends', async () => {
  const { account, group, key } = newAccountKey();
  const key2 = sbctl('key', 'create', '--account', account, '--group', group);
  sbctl('limits', 'set', '--group', group, '--rpm', '4');
  const all = await Promise.all(Array.from({ length: 8 }, (_, i) =>
    send('chat', i % 2 ? key2 : key, { base: i % 3 ? cfg.frontendB : cfg.frontendA })));
  assert.equal(all.filter((r) => r.status === 200).length, 4, all.map((r) => r.status).join(' '));
  const limited = all.filter((r) => r.status === 429);
  assert.equal(limited.length, 4);
  for (const r of limited) {
    assert429('chat', r, 'rate');
    assert.match(r.json.error.message, /token group/);
  }
});

test('concurrent requests: the limit+1th waits out as 429; a slot frees the moment a request ends', async () => {
  const { account, key } = newAccountKey();
  sbctl('limits', 'set', '--key', keyId(account), '--concurrency', '2');
  const slow = [
    send('chat', key, { base: cfg.frontendA, text: 'slow one [[emu:latency=1500]]' }),
    send('responses', key, { base: cfg.frontendB, text: 'slow two [[emu:latency=1500]]' }),
  ];
  await waitFor(() => Number(psql("SELECT count(*) FROM limit_leases l JOIN accounts a ON a.id = l.account_id WHERE a.name = :'v1' AND l.active", account)[0]) === 2);
  for (const style of STYLES) {
    const r = await send(style, key, { base: style === 'chat' ? cfg.frontendB : cfg.frontendA });
    assert429(style, r, 'rate');
    assert.match(r.json.error.message, /concurrent requests/);
  }
  for (const r of await Promise.all(slow)) assert.equal(r.status, 200, r.text);
  // A sequential client at the limit never sees a 429: each request's slot is
  // free before its reply reaches the client, whichever frontend is next.
  sbctl('limits', 'set', '--key', keyId(account), '--concurrency', '1');
  await new Promise((r) => setTimeout(r, 300));
  for (let i = 0; i < 12; i++) {
    const r = await send(STYLES[i % 4], key, { base: i % 2 ? cfg.frontendB : cfg.frontendA });
    assert.equal(r.status, 200, `request ${i}: ${r.text}`);
  }
  for (let i = 0; i < 4; i++) {
    const s = await sse('/v1/chat/completions', {
      base: i % 2 ? cfg.frontendA : cfg.frontendB, key,
      body: { model: 'emu-chat', stream: true, messages: [{ role: 'user', content: `stream ${i}` }] },
    });
    assert.equal(s.status, 200, s.raw);
    assert.equal(s.events.at(-1).data, '[DONE]');
  }
});

test('an aborted stream frees its slot and its usage is drawn once', async () => {
  const { account, key } = newAccountKey();
  sbctl('limits', 'set', '--key', keyId(account), '--concurrency', '1');
  sbctl('limits', 'set', '--account', account, '--quota-tokens', '100000');
  const s = await openSSE('/v1/chat/completions', {
    key, body: { model: 'emu-chat', stream: true, messages: [{ role: 'user', content: 'one two three four five six [[emu:chunk_delay=300]]' }] },
  });
  assert.equal(s.status, 200);
  const it = s.items();
  await it.next(); // the stream is running
  await it.next();
  s.abort();
  const r = await waitFor(async () => {
    const x = await send('chat', key, { base: cfg.frontendB });
    return x.status === 200 ? x : null;
  }, { timeout: 3000, interval: 100 });
  assert.ok(r, 'a new request is admitted once the aborted one is gone');
  const { used, logged, leases } = await settledUsage(account, 2);
  const aborted = psql("SELECT status, tokens_in, tokens_out, stream FROM request_log WHERE request_id = :'v1'", s.requestId)[0];
  assert.ok(aborted, 'the aborted stream has its log row');
  const [status, tin, tout, stream] = aborted.split('|');
  assert.equal(status, '499');
  assert.equal(stream, 't');
  assert.ok(Number(tin) > 0 && Number(tout) > 0, `an aborted stream is charged what it used: ${aborted}`);
  assert.equal(used, logged, 'the quota drew exactly what request_log records');
  assert.equal(leases, 0);
});

test('tokens per minute: a reservation over what is left is a 429 naming tokens per minute', async () => {
  const { account, key } = newAccountKey();
  sbctl('limits', 'set', '--key', keyId(account), '--tpm', '100');
  const first = await send('chat', key, { text: 'a short question', maxTokens: 50 });
  assert.equal(first.status, 200, first.text);
  // Each request reserves its input estimate plus max_tokens: 150 more cannot fit in what is left.
  const r = await send('messages', key, { base: cfg.frontendB, text: 'another question', maxTokens: 150 });
  assert429('messages', r, 'rate');
  assert.match(r.json.error.message, /tokens per minute/);
  const small = await send('gemini', key, { base: cfg.frontendB, text: 'tiny', maxTokens: 5 });
  assert.equal(small.status, 200, 'a smaller reservation still fits: ' + small.text);
});

test('admissions arriving together (one batch) each get their own verdict', async () => {
  // A frontend sends one key's simultaneous admissions as one batch
  // (schema/007_limit_batches.sql). A reservation over the bucket's whole
  // minute (tpm 1000) is refused whatever the order; small ones pass: the
  // verdicts must land on their own requests.
  const { account, key } = newAccountKey();
  sbctl('limits', 'set', '--key', keyId(account), '--tpm', '1000');
  const big = new Set([2, 5, 7]);
  const res = await Promise.all([...Array(10).keys()].map((i) => send('chat', key, {
    text: `batch ${i}`, maxTokens: big.has(i) ? 5000 : 5,
  })));
  res.forEach((r, i) => {
    if (big.has(i)) {
      // (Retry-After says when it would fit: never within the minute here.)
      assert.equal(r.status, 429, `request ${i}: ${r.text}`);
      assert.equal(r.json.error.code, 'rate_limit_exceeded');
      assert.match(r.json.error.message, /tokens per minute/);
    } else {
      assert.equal(r.status, 200, `request ${i}: ${r.text}`);
    }
  });
});

test('quota: two frontends draining one account never overdraw it; each request is drawn once', async () => {
  const { account, key } = newAccountKey();
  const quota = 600;
  sbctl('limits', 'set', '--account', account, '--quota-tokens', String(quota));
  // A burst on both frontends, then one request at a time until the quota is out.
  const text = 'please repeat these seven words back';
  const burst = await Promise.all(Array.from({ length: 24 }, (_, i) =>
    send(STYLES[i % 4], key, { base: i % 2 ? cfg.frontendB : cfg.frontendA, text, maxTokens: 32 })));
  for (const r of burst.filter((x) => x.status !== 200)) assert429(STYLES[burst.indexOf(r) % 4], r, 'quota');
  let sent = burst.length;
  let last;
  for (let i = 0; i < 60; i++) {
    last = await send(STYLES[i % 4], key, { base: i % 2 ? cfg.frontendA : cfg.frontendB, text, maxTokens: 32 });
    sent++;
    if (last.status === 429) break;
    assert.equal(last.status, 200, last.text);
  }
  assert429(STYLES[(sent - burst.length - 1) % 4], last, 'quota');
  const { used, logged, leases } = await settledUsage(account, sent);
  assert.equal(used, logged, 'drawn exactly once: account_usage equals the request_log total');
  assert.equal(leases, 0, 'no lease left behind');
  // Documented burst (docs/limits.md): a request reserves its input estimate
  // plus max_tokens; only input the estimate missed can overdraw.
  const [missed] = psql(`SELECT COALESCE(sum(greatest(tokens_in - tokens_estimated, 0)), 0) FROM request_log l
                         JOIN accounts a ON a.id = l.account_id WHERE a.name = :'v1' AND l.status = 200`, account).map(Number);
  assert.ok(used <= quota + missed, `used ${used} of ${quota} (estimate missed ${missed})`);
  const [remaining] = psql("SELECT tokens_remaining FROM quota_remaining WHERE account = :'v1'", account).map(Number);
  assert.equal(remaining, quota - used);
  // What is left is less than one more request's reservation.
  assert.ok(remaining < 32 + 30, `left ${remaining}`);
  // A bigger quota applies at once on both frontends.
  sbctl('limits', 'set', '--account', account, '--quota-tokens', String(quota + 1000));
  const back = await waitFor(async () => (await send('chat', key, { base: cfg.frontendB })).status === 200, { timeout: 1000 });
  assert.ok(back, 'a raised quota applies within 1 s');
});

test('limit changes reach both frontends within a second; none clears them', async () => {
  const { account, key } = newAccountKey();
  assert.equal((await send('chat', key, { base: cfg.frontendA })).status, 200);
  assert.equal((await send('chat', key, { base: cfg.frontendB })).status, 200);
  sbctl('limits', 'set', '--key', keyId(account), '--rpm', '1');
  const t0 = Date.now();
  const hit = await waitFor(async () => {
    const a = await send('chat', key, { base: cfg.frontendA });
    const b = await send('chat', key, { base: cfg.frontendB });
    return a.status === 429 && b.status === 429;
  }, { timeout: 1000, interval: 20 });
  assert.ok(hit, 'both frontends refuse within 1 s');
  assert.ok(Date.now() - t0 < 1000);
  sbctl('limits', 'set', '--key', keyId(account), '--rpm', 'none');
  const free = await waitFor(async () => (await send('chat', key, { base: cfg.frontendB })).status === 200, { timeout: 1000 });
  assert.ok(free, 'cleared within 1 s');
});

test('usage views answer ops questions with SQL', async () => {
  const { account, key } = newAccountKey();
  sbctl('limits', 'set', '--account', account, '--quota-tokens', '5000');
  for (let i = 0; i < 3; i++) assert.equal((await send('chat', key, { base: i % 2 ? cfg.frontendB : cfg.frontendA })).status, 200);
  assert.equal((await send('chat', key, { model: 'no-such-model' })).status, 404);
  const { used } = await settledUsage(account, 4);
  const [requests, errors, tin, tout] = psql(
    "SELECT requests, errors, tokens_in, tokens_out FROM usage_per_key_daily WHERE account = :'v1' AND day = (now() AT TIME ZONE 'UTC')::date",
    account)[0].split('|').map(Number);
  assert.equal(requests, 4);
  assert.equal(errors, 1);
  assert.equal(tin + tout, used);
  const [quota, drawn, remaining] = psql("SELECT quota_tokens, tokens_used, tokens_remaining FROM quota_remaining WHERE account = :'v1'", account)[0].split('|').map(Number);
  assert.deepEqual([quota, drawn, remaining], [5000, used, 5000 - used]);
  const rate = psql("SELECT requests, server_errors, error_rate FROM model_error_rate WHERE model = 'emu-chat' AND hour = date_trunc('hour', now() AT TIME ZONE 'UTC')")[0].split('|').map(Number);
  assert.ok(rate[0] >= 3 && rate[2] >= 0 && rate[2] <= 1, rate.join(' '));
});

// ---- context length and output limits ----------------------------------------------

const SMALL = 'limits-small-ctx';

test('input over the context length: 400 context_length_exceeded in every style, nothing sent upstream', async () => {
  ensureModel(SMALL);
  sbctl('model', 'set', SMALL, '--context-length', '60', '--max-output-tokens', '40');
  const marker = unique('ctx');
  const long = `${marker} ` + Array.from({ length: 80 }, (_, i) => `word${String.fromCharCode(97 + (i % 26))}`).join(' ');
  for (const style of STYLES) {
    const r = await send(style, cfg.key, { model: SMALL, text: long, maxTokens: 10 });
    assert.equal(r.status, 400, `${style}: ${r.text}`);
    assert.match(r.json.error.message, /context length exceeded/);
    if (style === 'responses' || style === 'chat') assert.equal(r.json.error.code, 'context_length_exceeded');
    if (style === 'messages') assert.equal(r.json.error.type, 'invalid_request_error');
    if (style === 'gemini') assert.equal(r.json.error.status, 'INVALID_ARGUMENT');
  }
  assert.equal((await upstreamRequestsContaining(marker)).length, 0, 'nothing went upstream');
  // Input that fits, plus an output limit that does not: also refused up front.
  const r = await send('chat', cfg.key, { model: SMALL, text: `${marker} short`, maxTokens: 40 + 1 });
  assert.equal(r.status, 400);
  assert.equal(r.json.error.param, 'max_tokens');
  const ok = await send('chat', cfg.key, { model: SMALL, text: `${marker} short`, maxTokens: 20 });
  assert.equal(ok.status, 200, ok.text);
  // 25 words fit in 60 tokens; with 40 more asked for the output they do not.
  const medium = `${marker} ` + Array.from({ length: 24 }, (_, i) => `wd${String.fromCharCode(97 + i)}`).join(' ');
  assert.equal((await send('responses', cfg.key, { model: SMALL, text: medium })).status, 200);
  const over = await send('responses', cfg.key, { model: SMALL, text: medium, maxTokens: 40 });
  assert.equal(over.status, 400, 'input + max_output_tokens over the context length');
  assert.equal(over.json.error.code, 'context_length_exceeded');
  assert.match(over.json.error.message, /max_output_tokens asks for 40 more/);
});

test('max_tokens above the model\'s max output: 400 in every style', async () => {
  ensureModel(SMALL);
  sbctl('model', 'set', SMALL, '--context-length', '100000', '--max-output-tokens', '40');
  const params = { responses: 'max_output_tokens', chat: 'max_tokens', messages: 'max_tokens' };
  for (const style of STYLES) {
    const r = await send(style, cfg.key, { model: SMALL, text: 'hi', maxTokens: 41 });
    assert.equal(r.status, 400, `${style}: ${r.text}`);
    assert.match(r.json.error.message, /too large: 41.*at most 40/);
    if (params[style] && style !== 'messages') assert.equal(r.json.error.param, params[style]);
  }
  assert.equal((await send('messages', cfg.key, { model: SMALL, text: 'hi', maxTokens: 40 })).status, 200);
});

test('the upstream\'s own context error maps to the same 400 in every style', async () => {
  const models = { 'emu-chat': 'openai-chat', 'emu-responses': 'openai-responses', 'emu-claude': 'anthropic', 'emu-gemini': 'gemini' };
  for (const model of Object.keys(models)) {
    for (const style of STYLES) {
      const r = await send(style, cfg.key, { model, text: 'too long for you [[emu:context_exceeded]]' });
      assert.equal(r.status, 400, `${style} -> ${model}: ${r.text}`);
      assert.match(r.json.error.message, /context length exceeded/, `${style} -> ${model}`);
      if (style === 'responses' || style === 'chat') assert.equal(r.json.error.code, 'context_length_exceeded');
    }
  }
});
