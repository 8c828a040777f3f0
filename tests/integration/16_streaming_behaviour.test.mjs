// How streams behave when the upstream misbehaves or the client leaves, in
// every inbound style (the stack runs frontends with --stream-keepalive-ms
// 1000 and workers with --stream-idle-timeout-ms 4000):
//   - a stalled upstream: keep-alives (": keep-alive" comments; "event: ping"
//     for Messages) about once a second, then after ~4 s the style's error event;
//   - an upstream error before the first byte: the HTTP status and error body;
//   - an upstream that drops mid-stream: the style's error event, never a clean end;
//   - a client that aborts: the upstream is cancelled at once, request_log says 499;
//   - a length stop: response.incomplete / length / max_tokens / MAX_TOKENS;
//   - every stream has one request_log row with stream = true.
// Timing assertions are deliberately generous.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import {
  cfg, client, emuStats, ensureModel, http, psql, recordingFetch, sse, styleHeaders, unique, upstreamRequestContaining,
  waitFor,
} from './harness.mjs';
import { validateEvent } from './openresponses.mjs';


function assertValidEvents(events) {
  for (const e of events) {
    assert.ok(validateEvent(e.data), `${e.event} is not a valid Open Responses streaming event: `
      + `${JSON.stringify(validateEvent.errors?.slice(0, 5))}\n${e.text}`);
  }
}

// A model of its own: these tests fail its upstream on purpose, many times in a
// row, which opens its circuit (docs/limits.md); other files' models stay closed.
const MODEL = ensureModel('emu-chat-stream-faults');
const STATUS_NAME = { 503: 'UNAVAILABLE' };

// Per inbound style: the request, what a keep-alive, an error event and a clean end look like.
const STYLES = {
  responses: {
    path: '/v1/responses',
    body: (text) => ({ model: MODEL, input: text, stream: true }),
    isKeepAlive: (it) => 'comment' in it,
    isError: (it) => it.event === 'error',
    isCleanEnd: (it) => ['response.completed', 'response.incomplete'].includes(it.event),
    text: (events) => events.filter((e) => e.event === 'response.output_text.delta').map((e) => e.data.delta).join(''),
    assertErrorBody(res) {
      assert.ok(res.json?.error, res.raw);
      for (const k of ['message', 'type', 'param', 'code']) assert.ok(k in res.json.error, `error.${k}: ${res.raw}`);
    },
    // The error event then response.failed, the last event; all valid Open Responses events.
    assertErrorEnd(r) {
      assertValidEvents(r.events);
      r.events.forEach((e, i) => assert.equal(e.data.sequence_number, i));
      const [err, failed] = r.events.slice(-2);
      assert.equal(err.event, 'error', r.raw.slice(-600));
      for (const k of ['type', 'code', 'message', 'param']) assert.ok(k in err.data.error, `error.${k}: ${err.text}`);
      assert.ok(err.data.error.message.length > 0);
      assert.equal(failed.event, 'response.failed');
      assert.equal(failed.data.response.status, 'failed');
      assert.ok(failed.data.response.error, 'the failed response carries its error');
      assert.equal(failed.data.response.id, r.events[0].data.response.id);
    },
  },
  chat: {
    path: '/v1/chat/completions',
    body: (text) => ({ model: MODEL, messages: [{ role: 'user', content: text }], stream: true }),
    isKeepAlive: (it) => 'comment' in it,
    isError: (it) => 'event' in it && it.data?.error !== undefined,
    isCleanEnd: (it) => it.text === '[DONE]' || it.data?.choices?.some?.((c) => c.finish_reason),
    text: (events) => events.map((e) => e.data?.choices?.[0]?.delta?.content ?? '').join(''),
    assertErrorBody(res) {
      assert.ok(res.json?.error, res.raw);
      for (const k of ['message', 'type', 'param', 'code']) assert.ok(k in res.json.error, `error.${k}: ${res.raw}`);
    },
    // A data line {"error":{...}}, the last one: no [DONE].
    assertErrorEnd(r) {
      const last = r.events.at(-1);
      assert.ok(last.data?.error, `the last data line is an error: ${r.raw.slice(-600)}`);
      assert.equal(last.event, null);
      assert.equal(typeof last.data.error.message, 'string');
      assert.ok('type' in last.data.error);
      assert.ok(!r.events.some((e) => e.text === '[DONE]'), 'no [DONE] after an error');
    },
  },
  messages: {
    path: '/v1/messages',
    headers: styleHeaders('messages'),
    body: (text) => ({ model: MODEL, max_tokens: 500, messages: [{ role: 'user', content: text }], stream: true }),
    isKeepAlive: (it) => it.event === 'ping',
    isError: (it) => it.event === 'error',
    isCleanEnd: (it) => it.event === 'message_stop',
    text: (events) => events.filter((e) => e.data?.delta?.type === 'text_delta').map((e) => e.data.delta.text).join(''),
    assertErrorBody(res) {
      assert.equal(res.json?.type, 'error', res.raw);
      assert.equal(typeof res.json.error.type, 'string');
      assert.equal(typeof res.json.error.message, 'string');
    },
    // event: error {"type":"error","error":{type,message}}, the last event: no message_stop.
    assertErrorEnd(r) {
      const last = r.events.at(-1);
      assert.equal(last.event, 'error', r.raw.slice(-600));
      assert.equal(last.data.type, 'error');
      assert.equal(typeof last.data.error.type, 'string');
      assert.equal(typeof last.data.error.message, 'string');
      assert.ok(!r.events.some((e) => e.event === 'message_stop'));
    },
  },
  gemini: {
    path: `/v1beta/models/${MODEL}:streamGenerateContent?alt=sse`,
    headers: styleHeaders('gemini'),
    body: (text) => ({ contents: [{ role: 'user', parts: [{ text }] }] }),
    isKeepAlive: (it) => 'comment' in it,
    isError: (it) => 'event' in it && it.data?.error !== undefined,
    isCleanEnd: (it) => it.data?.candidates?.some?.((c) => c.finishReason),
    text: (events) => events.map((e) => (e.data?.candidates?.[0]?.content?.parts ?? []).map((p) => p.text ?? '').join('')).join(''),
    assertErrorBody(res, status) {
      assert.equal(res.json?.error?.code, status, res.raw);
      if (STATUS_NAME[status]) assert.equal(res.json.error.status, STATUS_NAME[status]);
      assert.equal(typeof res.json.error.message, 'string');
    },
    // data: {"error":{code,message,status}}, the last one: no finishReason chunk.
    assertErrorEnd(r) {
      const last = r.events.at(-1);
      assert.ok(last.data?.error, `the last data line is an error: ${r.raw.slice(-600)}`);
      assert.equal(typeof last.data.error.message, 'string');
      assert.equal(typeof last.data.error.code, 'number');
      assert.equal(typeof last.data.error.status, 'string');
    },
  },
};

function run(style, text, opts = {}) {
  const s = STYLES[style];
  return sse(s.path, { key: s.headers ? null : undefined, headers: s.headers ?? {}, body: s.body(text), ...opts });
}

async function logRow(requestId) {
  const rows = await waitFor(() => {
    const r = psql("SELECT status, stream FROM request_log WHERE request_id = :'v1'", requestId);
    return r.length ? r : null;
  }, { timeout: 5000 });
  assert.ok(rows, `a request_log row for ${requestId}`);
  const [status, stream] = rows[0].split('|');
  return { status: Number(status), stream: stream === 't' };
}

for (const style of Object.keys(STYLES)) {
  const s = STYLES[style];

  test(`${style}: a stalled upstream stream gets keep-alives about once a second, then the idle-timeout error event`, async () => {
    const m = unique('stall');
    const r = await run(style, `[[emu:hang_after=2]] stall ${m} one two three four`, { timeout: 20000 });
    assert.equal(r.status, 200, r.raw);
    assert.match(r.contentType, /^text\/event-stream/);
    const errAt = r.items.findIndex((it) => s.isError(it));
    assert.ok(errAt > 0, `an error event ends the stream: ${r.raw.slice(-800)}`);
    // The last real event before the stall, and the keep-alives after it.
    let lastReal = errAt - 1;
    while (lastReal >= 0 && s.isKeepAlive(r.items[lastReal])) lastReal -= 1;
    assert.ok(lastReal >= 0, 'some events came before the stall');
    const kas = r.items.slice(lastReal + 1, errAt);
    assert.ok(kas.length >= 2, `at least 2 keep-alives during the ~4 s stall, got ${kas.length}`);
    const t0 = r.items[lastReal].at;
    assert.ok(kas[0].at - t0 <= 2500, `first keep-alive ${kas[0].at - t0} ms after the stall began`);
    for (let i = 1; i < kas.length; i++) {
      const gap = kas[i].at - kas[i - 1].at;
      assert.ok(gap >= 300 && gap <= 2500, `keep-alive gap ${gap} ms`);
    }
    const idle = r.items[errAt].at - t0;
    assert.ok(idle >= 3000 && idle <= 12000, `the idle error came ${idle} ms after the last upstream bytes`);
    if (style === 'messages') for (const p of kas) assert.deepEqual(p.data, { type: 'ping' });
    else for (const c of kas) assert.equal(c.comment, 'keep-alive');
    assert.ok(!r.items.some((it) => s.isCleanEnd(it)), 'no clean end');
    s.assertErrorEnd(r);
    // The text that did arrive is the start of the answer.
    assert.ok(`You said: stall ${m} one two three four`.startsWith(s.text(r.events)), s.text(r.events));
  });

  test(`${style}: an upstream error before the first byte is the HTTP status with the style's error body, not a stream`, async () => {
    const m = unique('early');
    const r = await run(style, `[[emu:status=503]] early ${m}`);
    assert.equal(r.status, 503, r.raw);
    assert.match(r.contentType, /^application\/json/);
    s.assertErrorBody(r, 503);
  });

  test(`${style}: an upstream that drops mid-stream ends the stream with the error event, never a clean end`, async () => {
    const m = unique('drop');
    const r = await run(style, `[[emu:drop_after=3]] drop ${m} one two three four five six`, { timeout: 20000 });
    assert.equal(r.status, 200, r.raw);
    assert.ok(r.events.length >= 2, r.raw);
    assert.ok(!r.items.some((it) => s.isCleanEnd(it)), `no clean end: ${r.raw.slice(-600)}`);
    s.assertErrorEnd(r);
  });

  test(`${style}: [[emu:length]] ends the stream as a length stop`, async () => {
    const m = unique('len');
    const r = await run(style, `[[emu:length]] many words here ${m}`);
    assert.equal(r.status, 200, r.raw);
    assert.equal(s.text(r.events), 'You');
    if (style === 'responses') {
      assertValidEvents(r.events);
      const last = r.events.at(-1);
      assert.equal(last.event, 'response.incomplete');
      assert.equal(last.data.response.status, 'incomplete');
      assert.deepEqual(last.data.response.incomplete_details, { reason: 'max_output_tokens' });
      // The message item's status is what the non-streamed response says for the same stop.
      const plain = await http('POST', '/v1/responses', { body: { model: MODEL, input: `[[emu:length]] many words here ${m}`, store: false } });
      assert.equal(plain.json.status, 'incomplete');
      const itemDone = r.events.filter((e) => e.event === 'response.output_item.done').at(-1).data.item;
      assert.equal(itemDone.status, plain.json.output.at(-1).status);
      assert.deepEqual(last.data.response.output, [itemDone]);
      assert.ok(!r.events.some((e) => e.event === 'response.completed'));
      const got = await http('GET', `/v1/responses/${last.data.response.id}`);
      assert.equal(got.status, 200, got.text);
      assert.deepEqual(got.json, last.data.response);
    } else if (style === 'chat') {
      const fin = r.events.filter((e) => e.data?.choices?.[0]?.finish_reason);
      assert.equal(fin.length, 1);
      assert.equal(fin[0].data.choices[0].finish_reason, 'length');
      assert.equal(r.events.at(-1).text, '[DONE]');
    } else if (style === 'messages') {
      const md = r.events.find((e) => e.event === 'message_delta');
      assert.equal(md.data.delta.stop_reason, 'max_tokens');
      assert.equal(r.events.at(-1).event, 'message_stop');
    } else {
      assert.equal(r.events.at(-1).data.candidates[0].finishReason, 'MAX_TOKENS');
    }
  });

  test(`${style}: a completed stream leaves one request_log row with status 200 and stream = true`, async () => {
    const m = unique('logok');
    const r = await run(style, `logged ${m}`);
    assert.equal(r.status, 200, r.raw);
    assert.equal(s.text(r.events), `You said: logged ${m}`);
    assert.match(r.requestId, /^req_/);
    assert.deepEqual(await logRow(r.requestId), { status: 200, stream: true });
  });
}

// ---- relayed as it arrives, from every upstream kind ---------------------------------------

for (const [kind, model] of Object.entries({
  'openai-chat': 'emu-chat', 'openai-responses': 'emu-responses', anthropic: 'emu-claude', gemini: 'emu-gemini',
})) {
  test(`${kind} upstream: a slow upstream stream is relayed piece by piece, not gathered to the end`, async () => {
    const m = unique('slow');
    // ~14 upstream events 200 ms apart: the first text must reach the client long before the end.
    const r = await sse('/v1/responses', {
      body: { model, input: `[[emu:chunk_delay=200]] slow ${m} a b c d e f g h`, stream: true, store: false },
    });
    assert.equal(r.status, 200, r.raw);
    const deltas = r.events.filter((e) => e.event === 'response.output_text.delta');
    assert.equal(deltas.map((e) => e.data.delta).join(''), `You said: slow ${m} a b c d e f g h`);
    const end = r.events.find((e) => e.event === 'response.completed');
    assert.ok(end, 'completed');
    const lead = end.at - deltas[0].at;
    assert.ok(lead >= 1000, `the first text arrived only ${lead} ms before the end`);
    const spread = deltas.at(-1).at - deltas[0].at;
    assert.ok(spread >= 800, `the text deltas arrived within ${spread} ms of each other`);
  });
}

// ---- upstream failures from every upstream kind, and what the SDKs make of them -------------

for (const [kind, model] of Object.entries({
  'openai-responses': 'emu-responses', anthropic: 'emu-claude', gemini: 'emu-gemini',
})) {
  test(`${kind} upstream: a drop mid-stream and a stalled stream both end in error + response.failed`, async () => {
    const m = unique('ufail');
    const drop = await sse('/v1/responses', {
      body: { model, input: `[[emu:drop_after=6]] drop ${m} one two three four five six`, stream: true }, timeout: 20000,
    });
    assert.equal(drop.status, 200, drop.raw);
    assert.ok(!drop.events.some((e) => e.event === 'response.completed'), drop.raw.slice(-600));
    STYLES.responses.assertErrorEnd(drop);
    const stall = await sse('/v1/responses', {
      body: { model, input: `[[emu:hang_after=6]] stall ${m} one two three four five six`, stream: true }, timeout: 20000,
    });
    assert.equal(stall.status, 200, stall.raw);
    assert.ok(stall.comments.length >= 2, `keep-alives during the stall (${stall.comments.length})`);
    assert.ok(!stall.events.some((e) => e.event === 'response.completed'), stall.raw.slice(-600));
    STYLES.responses.assertErrorEnd(stall);
  });
}

test('SDKs: an error before the first byte rejects the stream helper with the status', async () => {
  const m = unique('sdk503');
  const text = `[[emu:status=503]] early ${m}`;
  await assert.rejects(client().responses.stream({ model: MODEL, input: text }).finalResponse(), (e) => e.status === 503);
  await assert.rejects(client().chat.completions.stream({ model: MODEL, messages: [{ role: 'user', content: text }] })
    .finalChatCompletion(), (e) => e.status === 503);
  const claude = new Anthropic({ apiKey: cfg.key, baseURL: cfg.frontendA, maxRetries: 0, timeout: 30000 });
  await assert.rejects(claude.messages.stream({ model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: text }] })
    .finalMessage(), (e) => e.status === 503);
  const ai = new GoogleGenAI({ apiKey: cfg.key, httpOptions: { baseUrl: cfg.frontendA } });
  await assert.rejects(async () => {
    for await (const ch of await ai.models.generateContentStream({ model: MODEL, contents: text })) void ch;
  }, (e) => e.status === 503);
});

test('SDKs: a stream that breaks mid-way rejects the stream helper; it never yields a truncated final result', async () => {
  const m = unique('sdkdrop');
  const text = `[[emu:drop_after=3]] drop ${m} one two three four five six`;
  await assert.rejects(client().responses.stream({ model: MODEL, input: text }).finalResponse());
  await assert.rejects(client().chat.completions.stream({ model: MODEL, messages: [{ role: 'user', content: text }] })
    .finalChatCompletion());
  const claude = new Anthropic({ apiKey: cfg.key, baseURL: cfg.frontendA, maxRetries: 0, timeout: 30000 });
  await assert.rejects(claude.messages.stream({ model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: text }] })
    .finalMessage());
  const ai = new GoogleGenAI({ apiKey: cfg.key, httpOptions: { baseUrl: cfg.frontendA } });
  await assert.rejects(async () => {
    for await (const ch of await ai.models.generateContentStream({ model: MODEL, contents: text })) void ch;
  });
});

// ---- client aborts, through each SDK's own way of stopping a stream --------------------------

const LONG = Array.from({ length: 40 }, (_, i) => `w${i}`).join(' ');
const slowText = (m) => `[[emu:chunk_delay=250]] abort ${m} ${LONG}`;

// Runs start(fetch) (which must stop the stream after a few pieces), then checks that the
// emulator saw its client (the worker) hang up within ~2 s and that the log says 499, stream.
async function assertAbortCancels(m, start) {
  const rec = recordingFetch();
  const before = (await emuStats()).closed_by_client;
  const t0 = await start(rec);
  assert.ok(await upstreamRequestContaining(m), 'the upstream got the request');
  const closed = await waitFor(async () => (await emuStats()).closed_by_client > before, { timeout: 2000, interval: 10 });
  assert.ok(closed, 'the upstream request was cancelled within 2 s of the abort');
  console.log(`upstream closed ${Date.now() - t0} ms (or less) after the abort`);
  const requestId = rec.lastRequestId();
  assert.match(requestId ?? '', /^req_/);
  const row = await waitFor(async () => {
    const r = await logRow(requestId);
    return r.status === 499 ? r : null;
  }, { timeout: 5000 });
  assert.deepEqual(row, { status: 499, stream: true }, `request_log for ${requestId}`);
}

test('responses: breaking out of the SDK stream iterator cancels the upstream; request_log 499, stream', async () => {
  const m = unique('abr');
  await assertAbortCancels(m, async (rec) => {
    const stream = client(cfg.frontendA, cfg.key, { fetch: rec }).responses.stream({ model: MODEL, input: slowText(m) });
    let deltas = 0;
    for await (const ev of stream) {
      if (ev.type === 'response.output_text.delta') deltas += 1;
      if (deltas >= 2) break;
    }
    assert.equal(deltas, 2);
    return Date.now();
  });
});

test('chat: stream.controller.abort() cancels the upstream; request_log 499, stream', async () => {
  const m = unique('abc');
  await assertAbortCancels(m, async (rec) => {
    const stream = await client(cfg.frontendA, cfg.key, { fetch: rec }).chat.completions.create({
      model: MODEL, stream: true, messages: [{ role: 'user', content: slowText(m) }],
    });
    let pieces = 0;
    try {
      for await (const ch of stream) {
        if (ch.choices[0]?.delta?.content) pieces += 1;
        if (pieces >= 2) { stream.controller.abort(); break; }
      }
    } catch (e) {
      assert.equal(e.name, 'AbortError', String(e));
    }
    assert.equal(pieces, 2);
    return Date.now();
  });
});

test('messages: MessageStream.abort() cancels the upstream; request_log 499, stream', async () => {
  const m = unique('abm');
  await assertAbortCancels(m, async (rec) => {
    const c = new Anthropic({ apiKey: cfg.key, baseURL: cfg.frontendA, maxRetries: 0, timeout: 30000, fetch: rec });
    const stream = c.messages.stream({ model: MODEL, max_tokens: 500, messages: [{ role: 'user', content: slowText(m) }] });
    let pieces = 0;
    let t0 = 0;
    await new Promise((resolve) => {
      stream.on('text', () => {
        pieces += 1;
        if (pieces === 2) { t0 = Date.now(); stream.abort(); resolve(); }
      });
      stream.on('error', resolve);
      stream.on('end', resolve);
    });
    await stream.finalMessage().catch(() => {});
    assert.equal(pieces, 2);
    return t0;
  });
});

test('gemini: aborting generateContentStream (config.abortSignal) cancels the upstream; request_log 499, stream', async () => {
  const m = unique('abg');
  await assertAbortCancels(m, async (rec) => {
    const ai = new GoogleGenAI({ apiKey: cfg.key, httpOptions: { baseUrl: cfg.frontendA, fetch: rec } });
    const ac = new AbortController();
    const stream = await ai.models.generateContentStream({
      model: MODEL, contents: slowText(m), config: { abortSignal: ac.signal },
    });
    let pieces = 0;
    try {
      for await (const ch of stream) {
        if (ch.text) pieces += 1;
        if (pieces >= 2) { ac.abort(); break; }
      }
    } catch (e) {
      assert.equal(e.name, 'AbortError', String(e));
    }
    assert.equal(pieces, 2);
    return Date.now();
  });
});

test('raw fetch: an AbortController on a streamed Responses request cancels the upstream; request_log 499, stream', async () => {
  const m = unique('abf');
  await assertAbortCancels(m, async (rec) => {
    const ac = new AbortController();
    const res = await rec(`${cfg.frontendA}/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${cfg.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, input: slowText(m), stream: true }),
      signal: ac.signal,
    });
    assert.equal(res.status, 200);
    const reader = res.body.getReader();
    let seen = '';
    while (!seen.includes('response.output_text.delta')) {
      const { value, done } = await reader.read();
      assert.ok(!done, 'the stream is still going');
      seen += new TextDecoder().decode(value);
    }
    ac.abort();
    await reader.read().catch(() => {});
    return Date.now();
  });
});
