// Streaming ("stream": true) in every inbound style, driven by the official
// SDKs' streaming helpers and by raw fetch with a small SSE reader:
//   Responses         event order, names, sequence numbers, every event valid
//                     against Open Responses; text, function calls, reasoning;
//                     the stored response equals response.completed; chaining.
//   Chat Completions  chunks, role delta, tool_calls deltas, include_usage, n=2,
//                     the stored completion equals the joined chunks.
//   Messages          message_start ... message_stop, text / tool_use / thinking.
//   Generate Content  ?alt=sse chunks (\r\n\r\n), the JSON array without alt=sse,
//                     function calls.
// Streamed text always joins to exactly what a non-streamed request with the
// same input returns.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import {
  cfg, client, http, sse, styleHeaders, unique, upstreamRequestContaining,
} from './harness.mjs';
import { validateEvent, validateResponse } from './openresponses.mjs';

// ---- Open Responses streaming schema ---------------------------------------------------


function assertValidEvents(events) {
  for (const e of events) {
    assert.ok(validateEvent(e.data), `${e.event} is not a valid Open Responses streaming event: `
      + `${JSON.stringify(validateEvent.errors?.slice(0, 5))}\n${e.text}`);
  }
}

// Event names with runs of the same delta event collapsed to "name+".
function collapsed(names) {
  const out = [];
  for (const n of names) {
    const last = out.at(-1);
    if (n.endsWith('.delta') || n === 'content_block_delta') {
      if (last === `${n}+`) continue;
      out.push(`${n}+`);
    } else {
      out.push(n);
    }
  }
  return out;
}

// Raw Responses stream: status, content type, names = data.type, sequence numbers 0,1,2...
async function responsesStream(body, opts = {}) {
  const r = await sse('/v1/responses', { body: { ...body, stream: true }, ...opts });
  assert.equal(r.status, 200, r.raw);
  assert.match(r.contentType, /^text\/event-stream/);
  r.events.forEach((e, i) => {
    assert.equal(e.event, e.data.type, `event line and data.type agree: ${e.text}`);
    assert.equal(e.data.sequence_number, i, `sequence_number ${e.data.sequence_number} at position ${i}`);
  });
  r.byType = (t) => r.events.filter((e) => e.data.type === t).map((e) => e.data);
  r.one = (t) => {
    const l = r.byType(t);
    assert.equal(l.length, 1, `exactly one ${t}`);
    return l[0];
  };
  return r;
}

const WEATHER = {
  name: 'get_weather',
  description: 'Weather for a city',
  parameters: {
    type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false,
  },
};
const respTools = [{ type: 'function', ...WEATHER }];
const chatTools = [{ type: 'function', function: WEATHER }];
const claudeTools = [{ name: WEATHER.name, description: WEATHER.description, input_schema: WEATHER.parameters }];
const geminiTools = [{ functionDeclarations: [{ name: WEATHER.name, description: WEATHER.description, parametersJsonSchema: WEATHER.parameters }] }];

// ============================== Responses ===============================================

// The SDK's finalResponse() has no output_text helper (only create() adds it): join it here.
const outText = (r) => r.output.filter((o) => o.type === 'message')
  .flatMap((o) => o.content).filter((c) => c.type === 'output_text').map((c) => c.text).join('');

test('Responses: the SDK stream helper yields the deltas of the non-streamed text, and finalResponse() is the completed response', async () => {
  const m = unique('rs');
  const c = client();
  const input = `hello ${m}`;
  const plain = await c.responses.create({ model: 'emu-chat', input, store: false });
  assert.equal(plain.output_text, `You said: hello ${m}`);

  const stream = c.responses.stream({ model: 'emu-chat', input });
  const types = [];
  let deltas = '';
  let onDelta = '';
  stream.on('response.output_text.delta', (e) => { onDelta += e.delta; });
  for await (const ev of stream) {
    types.push(ev.type);
    if (ev.type === 'response.output_text.delta') deltas += ev.delta;
  }
  const final = await stream.finalResponse();
  assert.equal(types[0], 'response.created');
  assert.equal(types.at(-1), 'response.completed');
  assert.equal(deltas, plain.output_text);
  assert.equal(onDelta, plain.output_text);
  assert.equal(final.status, 'completed');
  assert.equal(outText(final), plain.output_text);
  assert.match(final.id, /^resp_/);
  assert.equal(final.store, true);
  assert.equal(final.usage.output_tokens, plain.usage.output_tokens);
  assert.equal(final.usage.input_tokens, plain.usage.input_tokens);
  // Stored (store defaults to true): retrievable on both frontends, the same output.
  for (const base of [cfg.frontendA, cfg.frontendB]) {
    const got = await client(base).responses.retrieve(final.id);
    assert.equal(got.id, final.id);
    assert.equal(got.status, 'completed');
    assert.equal(got.output_text, plain.output_text); // retrieve() adds it
  }
});

test('Responses raw stream: text event order, sequence numbers, ids, and every event valid against Open Responses', async () => {
  const m = unique('rraw');
  const input = `order ${m}`;
  const plain = await http('POST', '/v1/responses', { body: { model: 'emu-chat', input, store: false } });
  assert.equal(plain.status, 200, plain.text);
  const want = plain.json.output[0].content[0].text;
  assert.equal(want, `You said: order ${m}`);

  const r = await responsesStream({ model: 'emu-chat', input });
  assertValidEvents(r.events);
  assert.deepEqual(collapsed(r.events.map((e) => e.data.type)), [
    'response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added',
    'response.output_text.delta+', 'response.output_text.done', 'response.content_part.done',
    'response.output_item.done', 'response.completed',
  ]);
  const created = r.one('response.created').response;
  const inProgress = r.one('response.in_progress').response;
  const completed = r.one('response.completed').response;
  assert.match(created.id, /^resp_/);
  assert.equal(created.status, 'in_progress');
  assert.deepEqual(created.output, []);
  assert.equal(inProgress.id, created.id);
  assert.equal(inProgress.status, 'in_progress');
  assert.equal(completed.id, created.id);
  assert.equal(completed.status, 'completed');
  assert.ok(validateResponse(completed), JSON.stringify(validateResponse.errors));

  const added = r.one('response.output_item.added');
  assert.equal(added.output_index, 0);
  assert.equal(added.item.type, 'message');
  assert.equal(added.item.role, 'assistant');
  assert.equal(added.item.status, 'in_progress');
  assert.match(added.item.id, /^msg_/);
  const partAdded = r.one('response.content_part.added');
  assert.deepEqual(partAdded.part, { type: 'output_text', text: '', annotations: [] });
  const deltas = r.byType('response.output_text.delta');
  assert.ok(deltas.length >= 3, `text arrives in pieces (${deltas.length} deltas)`);
  for (const d of [partAdded, ...deltas, r.one('response.output_text.done'), r.one('response.content_part.done')]) {
    assert.equal(d.item_id, added.item.id);
    assert.equal(d.output_index, 0);
    assert.equal(d.content_index, 0);
  }
  const joined = deltas.map((d) => d.delta).join('');
  assert.equal(joined, want);
  assert.equal(r.one('response.output_text.done').text, want);
  assert.equal(r.one('response.content_part.done').part.text, want);
  const itemDone = r.one('response.output_item.done').item;
  assert.equal(itemDone.id, added.item.id);
  assert.equal(itemDone.status, 'completed');
  assert.equal(itemDone.content[0].text, want);
  assert.deepEqual(completed.output, [itemDone]);
  assert.equal(completed.usage.output_tokens, plain.json.usage.output_tokens);
  assert.equal(completed.usage.input_tokens, plain.json.usage.input_tokens);

  // Stored complete: a GET of it (either frontend) is exactly the response.completed response.
  for (const base of [cfg.frontendA, cfg.frontendB]) {
    const got = await http('GET', `/v1/responses/${completed.id}`, { base });
    assert.equal(got.status, 200, got.text);
    assert.deepEqual(got.json, completed);
  }
});

test('Responses: a streamed function call (added with name/call_id/empty arguments, argument deltas, done), then the round trip streamed', async () => {
  const m = unique('rfc');
  const args = JSON.stringify({ city: `Paris-${m}` });
  const body = { model: 'emu-chat', input: `CALL get_weather ${args}`, tools: respTools };
  const r = await responsesStream(body);
  assertValidEvents(r.events);
  assert.deepEqual(collapsed(r.events.map((e) => e.data.type)), [
    'response.created', 'response.in_progress', 'response.output_item.added',
    'response.function_call_arguments.delta+', 'response.function_call_arguments.done',
    'response.output_item.done', 'response.completed',
  ]);
  const added = r.one('response.output_item.added');
  assert.equal(added.item.type, 'function_call');
  assert.equal(added.item.name, 'get_weather');
  assert.match(added.item.call_id, /^call_/);
  assert.equal(added.item.arguments, '');
  const deltas = r.byType('response.function_call_arguments.delta');
  for (const d of deltas) {
    assert.equal(d.item_id, added.item.id);
    assert.equal(d.output_index, 0);
  }
  assert.equal(deltas.map((d) => d.delta).join(''), args);
  assert.equal(r.one('response.function_call_arguments.done').arguments, args);
  const done = r.one('response.output_item.done').item;
  assert.equal(done.type, 'function_call');
  assert.equal(done.id, added.item.id);
  assert.equal(done.call_id, added.item.call_id);
  assert.equal(done.name, 'get_weather');
  assert.equal(done.arguments, args);
  assert.equal(done.status, 'completed');
  const completed = r.one('response.completed').response;
  assert.deepEqual(completed.output, [done]);

  // The SDK helper: the call arrives complete; the tool result goes back (chained), streamed too.
  const c = client();
  const s1 = c.responses.stream(body);
  let argDeltas = '';
  s1.on('response.function_call_arguments.delta', (e) => { argDeltas += e.delta; });
  const f1 = await s1.finalResponse();
  assert.equal(argDeltas, args);
  const call = f1.output.find((o) => o.type === 'function_call');
  assert.equal(call.name, 'get_weather');
  assert.deepEqual(JSON.parse(call.arguments), { city: `Paris-${m}` });
  const s2 = c.responses.stream({
    model: 'emu-chat', tools: respTools, previous_response_id: f1.id,
    input: [{ type: 'function_call_output', call_id: call.call_id, output: `sunny-${m}` }],
  });
  const f2 = await s2.finalResponse();
  assert.equal(outText(f2), `Tool result: sunny-${m}`);
  assert.equal(f2.previous_response_id, f1.id);
});

test('Responses: a streamed reasoning item (reasoning_text part, response.reasoning.delta/done) comes before the message', async () => {
  const m = unique('rrs');
  const body = { model: 'emu-chat', input: `think ${m}`, reasoning: { effort: 'low' } };
  const plain = await http('POST', '/v1/responses', { body: { ...body, store: false } });
  assert.equal(plain.status, 200, plain.text);
  const r = await responsesStream(body);
  assertValidEvents(r.events);
  assert.deepEqual(collapsed(r.events.map((e) => e.data.type)), [
    'response.created', 'response.in_progress',
    'response.output_item.added', 'response.content_part.added', 'response.reasoning.delta+', 'response.reasoning.done',
    'response.content_part.done', 'response.output_item.done',
    'response.output_item.added', 'response.content_part.added', 'response.output_text.delta+', 'response.output_text.done',
    'response.content_part.done', 'response.output_item.done',
    'response.completed',
  ]);
  const reasoningText = `Reasoning (low) about: think ${m}`;
  const [rsAdded, msgAdded] = r.byType('response.output_item.added');
  assert.equal(rsAdded.item.type, 'reasoning');
  assert.equal(rsAdded.output_index, 0);
  assert.equal(msgAdded.item.type, 'message');
  assert.equal(msgAdded.output_index, 1);
  const [rsPart] = r.byType('response.content_part.added');
  assert.equal(rsPart.part.type, 'reasoning_text');
  assert.equal(rsPart.item_id, rsAdded.item.id);
  const rdeltas = r.byType('response.reasoning.delta');
  for (const d of rdeltas) assert.equal(d.item_id, rsAdded.item.id);
  assert.equal(rdeltas.map((d) => d.delta).join(''), reasoningText);
  assert.equal(r.one('response.reasoning.done').text, reasoningText);
  const [rsDone, msgDone] = r.byType('response.output_item.done');
  assert.deepEqual(rsDone.item.content, [{ type: 'reasoning_text', text: reasoningText }]);
  assert.equal(msgDone.item.content[0].text, `You said: think ${m}`);
  const completed = r.one('response.completed').response;
  assert.deepEqual(completed.output, [rsDone.item, msgDone.item]);
  assert.deepEqual(completed.output.map((o) => o.type), plain.json.output.map((o) => o.type));
  assert.equal(completed.usage.output_tokens_details.reasoning_tokens, plain.json.usage.output_tokens_details.reasoning_tokens);
});

test('Responses: previous_response_id chains from a streamed response, on the other frontend too', async () => {
  const m1 = unique('rch1');
  const m2 = unique('rch2');
  const m3 = unique('rch3');
  const first = await client(cfg.frontendA).responses.stream({ model: 'emu-chat', input: `first ${m1}` }).finalResponse();
  assert.equal(outText(first), `You said: first ${m1}`);
  const second = await client(cfg.frontendB).responses
    .stream({ model: 'emu-chat', input: `second ${m2}`, previous_response_id: first.id }).finalResponse();
  assert.equal(outText(second), `You said: second ${m2}`);
  assert.equal(second.previous_response_id, first.id);
  const up = await upstreamRequestContaining(`second ${m2}`);
  assert.deepEqual(up.body.messages.map((x) => x.content), [`first ${m1}`, `You said: first ${m1}`, `second ${m2}`]);
  // A non-streamed request chains from the streamed chain.
  const third = await client(cfg.frontendA).responses.create({ model: 'emu-chat', input: `third ${m3}`, previous_response_id: second.id });
  assert.equal(third.output_text, `You said: third ${m3}`);
  const up3 = await upstreamRequestContaining(`third ${m3}`);
  assert.deepEqual(up3.body.messages.map((x) => x.content), [
    `first ${m1}`, `You said: first ${m1}`, `second ${m2}`, `You said: second ${m2}`, `third ${m3}`,
  ]);
});

test('Responses: a streamed response with store:false is not stored', async () => {
  const r = await responsesStream({ model: 'emu-chat', input: unique('rnostore'), store: false });
  const completed = r.one('response.completed').response;
  assert.equal(completed.store, false);
  const got = await http('GET', `/v1/responses/${completed.id}`);
  assert.equal(got.status, 404, got.text);
});

// ============================== Chat Completions ========================================

// Raw chat stream: "data:" lines only, chunks then [DONE].
async function chatStream(body, opts = {}) {
  const r = await sse('/v1/chat/completions', { body: { ...body, stream: true }, ...opts });
  assert.equal(r.status, 200, r.raw);
  assert.match(r.contentType, /^text\/event-stream/);
  for (const e of r.events) assert.equal(e.event, null, `no event: lines in a chat stream (${e.event})`);
  assert.equal(r.events.at(-1)?.text, '[DONE]', 'the stream ends with data: [DONE]');
  r.chunks = r.events.slice(0, -1).map((e) => e.data);
  for (const ch of r.chunks) {
    assert.equal(ch.object, 'chat.completion.chunk', JSON.stringify(ch));
    assert.match(ch.id, /^chatcmpl-/);
    assert.equal(ch.id, r.chunks[0].id, 'one id for every chunk');
    assert.equal(ch.created, r.chunks[0].created);
    assert.equal(ch.model, body.model);
  }
  // Per choice index: the deltas in order.
  r.deltas = (index) => r.chunks.flatMap((ch) => ch.choices.filter((c) => c.index === index));
  r.text = (index = 0) => r.deltas(index).map((c) => c.delta.content ?? '').join('');
  return r;
}

test('Chat: the SDK stream helper: content events join to the non-streamed content; finalChatCompletion() is complete', async () => {
  const m = unique('cs');
  const c = client();
  const messages = [{ role: 'user', content: `hello ${m}` }];
  const plain = await c.chat.completions.create({ model: 'emu-chat', messages, store: false });
  const want = plain.choices[0].message.content;
  assert.equal(want, `You said: hello ${m}`);

  const stream = c.chat.completions.stream({ model: 'emu-chat', messages, store: false });
  let onContent = '';
  stream.on('content', (delta) => { onContent += delta; });
  const chunks = [];
  for await (const ch of stream) chunks.push(ch);
  const final = await stream.finalChatCompletion();
  assert.ok(chunks.length >= 4, `several chunks (${chunks.length})`);
  assert.equal(chunks.map((ch) => ch.choices[0]?.delta?.content ?? '').join(''), want);
  assert.equal(onContent, want);
  assert.equal(final.id, chunks[0].id);
  assert.equal(final.choices.length, 1);
  assert.equal(final.choices[0].message.role, 'assistant');
  assert.equal(final.choices[0].message.content, want);
  assert.equal(final.choices[0].finish_reason, 'stop');
});

test('Chat raw stream: a role delta first, content deltas, one finish_reason chunk, then [DONE]', async () => {
  const m = unique('craw');
  const messages = [{ role: 'user', content: `order ${m}` }];
  const plain = await http('POST', '/v1/chat/completions', { body: { model: 'emu-chat', messages, store: false } });
  const want = plain.json.choices[0].message.content;
  const r = await chatStream({ model: 'emu-chat', messages, store: false });
  const d = r.deltas(0);
  assert.equal(d[0].delta.role, 'assistant');
  assert.equal(d[0].delta.content, '');
  assert.equal(d[0].finish_reason, null);
  assert.ok(d.length >= 5, `role, several content deltas, finish (${d.length})`);
  assert.equal(r.text(0), want);
  const fin = d.filter((x) => x.finish_reason !== null);
  assert.equal(fin.length, 1, 'exactly one chunk with a finish_reason');
  assert.equal(fin[0].finish_reason, 'stop');
  assert.equal(d.at(-1), fin[0], 'the finish_reason chunk is the last of the choice');
  for (const x of d.slice(1)) assert.ok(!('role' in x.delta), 'the role comes only once');
});

test('Chat: stream_options.include_usage: usage null on every chunk, then a choices:[] chunk with the usage', async () => {
  const m = unique('cusage');
  const messages = [{ role: 'user', content: `count me ${m}` }];
  const plain = await http('POST', '/v1/chat/completions', { body: { model: 'emu-chat', messages, store: false } });
  const r = await chatStream({ model: 'emu-chat', messages, store: false, stream_options: { include_usage: true } });
  const last = r.chunks.at(-1);
  assert.deepEqual(last.choices, []);
  assert.equal(last.usage.prompt_tokens, plain.json.usage.prompt_tokens);
  assert.equal(last.usage.completion_tokens, plain.json.usage.completion_tokens);
  assert.equal(last.usage.total_tokens, last.usage.prompt_tokens + last.usage.completion_tokens);
  for (const ch of r.chunks.slice(0, -1)) {
    assert.ok('usage' in ch, `usage present: ${JSON.stringify(ch)}`);
    assert.equal(ch.usage, null);
  }
  assert.equal(r.text(0), `You said: count me ${m}`);

  // The SDK sees the usage on its final completion.
  const stream = client().chat.completions.stream({ model: 'emu-chat', messages, store: false, stream_options: { include_usage: true } });
  const final = await stream.finalChatCompletion();
  assert.equal(final.usage.prompt_tokens, plain.json.usage.prompt_tokens);
  assert.equal(final.usage.completion_tokens, plain.json.usage.completion_tokens);
});

test('Chat: streamed tool calls: index, id, type and name on the first piece, then argument pieces; finish_reason tool_calls', async () => {
  const m = unique('ctool');
  const a1 = JSON.stringify({ city: `Paris-${m}` });
  const a2 = JSON.stringify({ city: `Oslo-${m}` });
  const messages = [{ role: 'user', content: `CALL get_weather ${a1}\nCALL get_weather ${a2}` }];
  const r = await chatStream({ model: 'emu-chat', messages, tools: chatTools, store: false });
  const d = r.deltas(0);
  assert.equal(d[0].delta.role, 'assistant');
  const pieces = d.flatMap((x) => x.delta.tool_calls ?? []);
  const byIndex = new Map();
  for (const p of pieces) {
    if (!byIndex.has(p.index)) {
      assert.match(p.id, /^call_/, `the first piece of call ${p.index} has its id`);
      assert.equal(p.type, 'function');
      assert.equal(p.function.name, 'get_weather');
      byIndex.set(p.index, { id: p.id, name: p.function.name, args: p.function.arguments ?? '' });
    } else {
      assert.ok(!p.id && !p.function?.name, `later pieces carry only arguments: ${JSON.stringify(p)}`);
      byIndex.get(p.index).args += p.function.arguments;
    }
  }
  assert.deepEqual([...byIndex.keys()], [0, 1]);
  assert.equal(byIndex.get(0).args, a1);
  assert.equal(byIndex.get(1).args, a2);
  assert.notEqual(byIndex.get(0).id, byIndex.get(1).id);
  assert.ok(pieces.length > 2, 'the arguments arrive in pieces');
  const fin = d.filter((x) => x.finish_reason !== null);
  assert.equal(fin.length, 1);
  assert.equal(fin[0].finish_reason, 'tool_calls');

  // SDK: finalChatCompletion() has both calls complete; the round trip streamed.
  const c = client();
  const s1 = c.chat.completions.stream({ model: 'emu-chat', messages, tools: chatTools, store: false });
  const f1 = await s1.finalChatCompletion();
  const msg = f1.choices[0].message;
  assert.equal(f1.choices[0].finish_reason, 'tool_calls');
  assert.deepEqual(msg.tool_calls.map((t) => [t.function.name, JSON.parse(t.function.arguments)]),
    [['get_weather', { city: `Paris-${m}` }], ['get_weather', { city: `Oslo-${m}` }]]);
  const s2 = c.chat.completions.stream({
    model: 'emu-chat', tools: chatTools, store: false,
    messages: [...messages, msg, ...msg.tool_calls.map((t, i) => ({ role: 'tool', tool_call_id: t.id, content: `w${i}-${m}` }))],
  });
  const f2 = await s2.finalChatCompletion();
  assert.equal(f2.choices[0].message.content, `Tool result: w1-${m}`);
});

test('Chat: n=2 streams chunks for choice 0 and choice 1, each joining to the non-streamed choice text', async () => {
  const m = unique('cn2');
  const messages = [{ role: 'user', content: `two ways ${m}` }];
  const plain = await http('POST', '/v1/chat/completions', { body: { model: 'emu-chat', messages, n: 2, store: false } });
  assert.equal(plain.status, 200, plain.text);
  const r = await chatStream({ model: 'emu-chat', messages, n: 2, store: false });
  const indexes = new Set(r.chunks.flatMap((ch) => ch.choices.map((c) => c.index)));
  assert.deepEqual([...indexes].sort(), [0, 1]);
  for (const i of [0, 1]) {
    const d = r.deltas(i);
    assert.equal(d[0].delta.role, 'assistant');
    assert.equal(r.text(i), plain.json.choices[i].message.content);
    const fin = d.filter((x) => x.finish_reason !== null);
    assert.equal(fin.length, 1, `one finish_reason for choice ${i}`);
    assert.equal(fin[0].finish_reason, 'stop');
  }
  assert.equal(r.text(1), `You said: two ways ${m} #1`);

  const final = await client().chat.completions.stream({ model: 'emu-chat', messages, n: 2, store: false }).finalChatCompletion();
  assert.deepEqual(final.choices.map((c) => c.message.content), plain.json.choices.map((c) => c.message.content));
});

test('Chat: a streamed completion is stored as the non-streamed shape of its joined chunks', async () => {
  const m = unique('cstore');
  const messages = [{ role: 'user', content: `keep ${m}` }];
  const plain = await http('POST', '/v1/chat/completions', { body: { model: 'emu-chat', messages } });
  assert.equal(plain.status, 200, plain.text);
  const plainGot = await http('GET', `/v1/chat/completions/${plain.json.id}`);
  assert.equal(plainGot.status, 200, plainGot.text);

  const r = await chatStream({ model: 'emu-chat', messages, stream_options: { include_usage: true } });
  const first = r.chunks[0];
  assert.equal(r.text(0), `You said: keep ${m}`);
  const expected = { ...plainGot.json, id: first.id, created: first.created };
  for (const base of [cfg.frontendA, cfg.frontendB]) {
    const got = await http('GET', `/v1/chat/completions/${first.id}`, { base });
    assert.equal(got.status, 200, got.text);
    assert.deepEqual(got.json, expected);
    assert.equal(got.json.choices[0].message.content, r.text(0));
    assert.deepEqual(got.json.usage, r.chunks.at(-1).usage);
  }
  // store:false streams are not kept.
  const ns = await chatStream({ model: 'emu-chat', messages, store: false });
  assert.equal((await http('GET', `/v1/chat/completions/${ns.chunks[0].id}`)).status, 404);
});

// ============================== Messages ================================================

const anthropic = () => new Anthropic({ apiKey: cfg.key, baseURL: cfg.frontendA, maxRetries: 0, timeout: 30000 });
const textOf = (msg) => msg.content.filter((b) => b.type === 'text').map((b) => b.text).join('');

// Raw Messages stream: event names = data.type; pings set aside.
async function messagesStream(body) {
  const r = await sse('/v1/messages', { key: null, headers: styleHeaders('messages'), body: { ...body, stream: true } });
  assert.equal(r.status, 200, r.raw);
  assert.match(r.contentType, /^text\/event-stream/);
  for (const e of r.events) assert.equal(e.event, e.data.type, `event line and data.type agree: ${e.text}`);
  r.main = r.events.filter((e) => e.event !== 'ping').map((e) => e.data);
  r.names = collapsed(r.main.map((d) => d.type));
  return r;
}

test('Messages: the SDK stream helper: text events join to the non-streamed text; finalMessage() equals the non-streamed message', async () => {
  const m = unique('ms');
  const c = anthropic();
  const req = { model: 'emu-chat', max_tokens: 200, messages: [{ role: 'user', content: `hello ${m}` }] };
  const plain = await c.messages.create(req);
  assert.equal(textOf(plain), `You said: hello ${m}`);

  const stream = c.messages.stream(req);
  let joined = '';
  let pieces = 0;
  stream.on('text', (delta) => { joined += delta; pieces += 1; });
  const final = await stream.finalMessage();
  assert.equal(joined, textOf(plain));
  assert.ok(pieces >= 3, `the text arrives in pieces (${pieces})`);
  assert.match(final.id, /^msg_/);
  assert.equal(final.role, 'assistant');
  assert.equal(final.model, plain.model);
  assert.deepEqual(final.content, plain.content);
  assert.equal(final.stop_reason, 'end_turn');
  assert.equal(final.stop_sequence, null);
  assert.equal(final.usage.input_tokens, plain.usage.input_tokens);
  assert.equal(final.usage.output_tokens, plain.usage.output_tokens);
});

test('Messages raw stream: message_start, content_block_start/delta/stop, message_delta, message_stop', async () => {
  const m = unique('mraw');
  const req = { model: 'emu-chat', max_tokens: 200, messages: [{ role: 'user', content: `order ${m}` }] };
  const plain = await anthropic().messages.create(req);
  const r = await messagesStream(req);
  assert.deepEqual(r.names, ['message_start', 'content_block_start', 'content_block_delta+', 'content_block_stop', 'message_delta', 'message_stop']);
  const start = r.main[0].message;
  assert.match(start.id, /^msg_/);
  assert.equal(start.type, 'message');
  assert.equal(start.role, 'assistant');
  assert.deepEqual(start.content, []);
  assert.equal(start.stop_reason, null);
  assert.equal(typeof start.usage.input_tokens, 'number');
  const blockStart = r.main[1];
  assert.equal(blockStart.index, 0);
  assert.deepEqual(blockStart.content_block, { type: 'text', text: '' });
  const deltas = r.main.filter((d) => d.type === 'content_block_delta');
  for (const d of deltas) {
    assert.equal(d.index, 0);
    assert.equal(d.delta.type, 'text_delta');
  }
  assert.equal(deltas.map((d) => d.delta.text).join(''), textOf(plain));
  assert.equal(r.main.find((d) => d.type === 'content_block_stop').index, 0);
  const md = r.main.find((d) => d.type === 'message_delta');
  assert.equal(md.delta.stop_reason, 'end_turn');
  assert.equal(md.delta.stop_sequence, null);
  assert.equal(md.usage.output_tokens, plain.usage.output_tokens);
  // The prompt's count: in message_start, or (when only known at the end) in message_delta.
  assert.equal(md.usage.input_tokens ?? start.usage.input_tokens, plain.usage.input_tokens);
  assert.deepEqual(r.main.at(-1), { type: 'message_stop' });
  for (const p of r.events.filter((e) => e.event === 'ping')) assert.deepEqual(p.data, { type: 'ping' });
});

test('Messages: a streamed tool_use block (input_json_delta pieces), stop_reason tool_use, then the round trip streamed', async () => {
  const m = unique('mtool');
  const args = { city: `Paris-${m}` };
  const req = { model: 'emu-chat', max_tokens: 200, tools: claudeTools, messages: [{ role: 'user', content: `CALL get_weather ${JSON.stringify(args)}` }] };
  const r = await messagesStream(req);
  assert.deepEqual(r.names, ['message_start', 'content_block_start', 'content_block_delta+', 'content_block_stop', 'message_delta', 'message_stop']);
  const block = r.main[1].content_block;
  assert.equal(block.type, 'tool_use');
  assert.ok(typeof block.id === 'string' && block.id.length > 0);
  assert.equal(block.name, 'get_weather');
  assert.deepEqual(block.input, {});
  const deltas = r.main.filter((d) => d.type === 'content_block_delta');
  for (const d of deltas) assert.equal(d.delta.type, 'input_json_delta');
  assert.deepEqual(JSON.parse(deltas.map((d) => d.delta.partial_json).join('')), args);
  assert.equal(r.main.find((d) => d.type === 'message_delta').delta.stop_reason, 'tool_use');

  const c = anthropic();
  const s1 = c.messages.stream(req);
  let json = '';
  s1.on('inputJson', (piece) => { json += piece; });
  const f1 = await s1.finalMessage();
  assert.deepEqual(JSON.parse(json), args);
  assert.equal(f1.stop_reason, 'tool_use');
  const use = f1.content.find((b) => b.type === 'tool_use');
  assert.ok(typeof use.id === 'string' && use.id.length > 0);
  assert.equal(use.name, 'get_weather');
  assert.deepEqual(use.input, args);
  const f2 = await c.messages.stream({
    ...req,
    messages: [...req.messages, { role: 'assistant', content: f1.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: `sunny-${m}` }] }],
  }).finalMessage();
  assert.equal(textOf(f2), `Tool result: sunny-${m}`);
});

test('Messages: streamed thinking (thinking_delta, signature_delta) before the text; the streamed signature is valid when passed back', async () => {
  const m = unique('mthink');
  const question = { role: 'user', content: `ponder ${m}` };
  const req = { model: 'emu-chat', max_tokens: 2000, thinking: { type: 'enabled', budget_tokens: 1024 }, messages: [question] };
  const r = await messagesStream(req);
  assert.deepEqual(r.names, [
    'message_start',
    'content_block_start', 'content_block_delta+', 'content_block_stop',
    'content_block_start', 'content_block_delta+', 'content_block_stop',
    'message_delta', 'message_stop',
  ]);
  const starts = r.main.filter((d) => d.type === 'content_block_start');
  assert.equal(starts[0].index, 0);
  assert.equal(starts[0].content_block.type, 'thinking');
  assert.equal(starts[1].index, 1);
  assert.equal(starts[1].content_block.type, 'text');
  const d0 = r.main.filter((d) => d.type === 'content_block_delta' && d.index === 0);
  const thinking = d0.filter((d) => d.delta.type === 'thinking_delta').map((d) => d.delta.thinking).join('');
  assert.equal(thinking, `Reasoning (low) about: ponder ${m}`);
  const sigs = d0.filter((d) => d.delta.type === 'signature_delta');
  assert.equal(sigs.length, 1, 'one signature_delta');
  assert.equal(d0.at(-1).delta.type, 'signature_delta', 'the signature comes after the thinking text');
  const d1 = r.main.filter((d) => d.type === 'content_block_delta' && d.index === 1);
  assert.equal(d1.map((d) => d.delta.text).join(''), `You said: ponder ${m}`);

  // SDK: 'thinking' events, finalMessage() thinking + text; its signature passes back.
  const c = anthropic();
  const s = c.messages.stream(req);
  let th = '';
  s.on('thinking', (delta) => { th += delta; });
  const final = await s.finalMessage();
  assert.equal(th, `Reasoning (low) about: ponder ${m}`);
  assert.deepEqual(final.content.map((b) => b.type), ['thinking', 'text']);
  assert.ok(final.content[0].signature.length > 40);
  const m2 = unique('mthink2');
  const next = await c.messages.create({
    model: 'emu-chat', max_tokens: 2000, thinking: { type: 'enabled', budget_tokens: 1024 },
    messages: [question, { role: 'assistant', content: final.content }, { role: 'user', content: `again ${m2}` }],
  });
  assert.equal(textOf(next), `You said: again ${m2}`);
  const tampered = { ...final.content[0], signature: `${final.content[0].signature.slice(0, -4)}AAAA` };
  await assert.rejects(c.messages.create({
    model: 'emu-chat', max_tokens: 100,
    messages: [question, { role: 'assistant', content: [tampered, final.content[1]] }, { role: 'user', content: 'again' }],
  }), (e) => e.status === 400);
});

// ============================== Generate Content ========================================

const genai = (base = cfg.frontendA) => new GoogleGenAI({ apiKey: cfg.key, httpOptions: { baseUrl: base } });
const partsText = (cand) => (cand?.content?.parts ?? []).filter((p) => typeof p.text === 'string' && !p.thought).map((p) => p.text).join('');
const GMODEL = 'emu-chat';

test('Gemini: generateContentStream chunks join to the non-streamed text; the last has finishReason and usageMetadata', async () => {
  const m = unique('gs');
  const ai = genai();
  const contents = `hello ${m}`;
  const plain = await ai.models.generateContent({ model: GMODEL, contents });
  assert.equal(plain.text, `You said: hello ${m}`);
  const chunks = [];
  for await (const ch of await ai.models.generateContentStream({ model: GMODEL, contents })) chunks.push(ch);
  assert.ok(chunks.length >= 3, `several chunks (${chunks.length})`);
  assert.equal(chunks.map((ch) => partsText(ch.candidates?.[0])).join(''), plain.text);
  const last = chunks.at(-1);
  assert.equal(last.candidates[0].finishReason, 'STOP');
  for (const ch of chunks.slice(0, -1)) assert.equal(ch.candidates?.[0]?.finishReason, undefined, 'finishReason only on the last chunk');
  assert.equal(last.usageMetadata.promptTokenCount, plain.usageMetadata.promptTokenCount);
  assert.equal(last.usageMetadata.candidatesTokenCount, plain.usageMetadata.candidatesTokenCount);
  assert.equal(last.usageMetadata.totalTokenCount, plain.usageMetadata.totalTokenCount);
  for (const ch of chunks) {
    assert.equal(ch.modelVersion, GMODEL);
    assert.equal(ch.responseId, chunks[0].responseId);
  }
});

const gstream = (model, body, { alt = 'sse', base } = {}) => sse(
  `/v1beta/models/${model}:streamGenerateContent${alt ? `?alt=${alt}` : ''}`,
  { key: null, headers: styleHeaders('gemini'), body, base },
);

test('Gemini raw ?alt=sse: "data: <GenerateContentResponse>" chunks separated by \\r\\n\\r\\n', async () => {
  const m = unique('graw');
  const body = { contents: [{ role: 'user', parts: [{ text: `order ${m}` }] }] };
  const plain = await http('POST', `/v1beta/models/${GMODEL}:generateContent`, { key: null, headers: styleHeaders('gemini'), body });
  assert.equal(plain.status, 200, plain.text);
  const r = await gstream(GMODEL, body);
  assert.equal(r.status, 200, r.raw);
  assert.match(r.contentType, /^text\/event-stream/);
  assert.ok(r.events.length >= 3, `several chunks (${r.events.length})`);
  for (const e of r.events) {
    assert.equal(e.event, null);
    assert.equal(typeof e.data, 'object', e.text);
    assert.ok(r.raw.includes(`data: ${e.text}\r\n\r\n`), `chunk framed as "data: ...\\r\\n\\r\\n": ${e.text}`);
    assert.equal(e.data.responseId, r.events[0].data.responseId);
  }
  const chunks = r.events.map((e) => e.data);
  assert.equal(chunks.map((ch) => partsText(ch.candidates?.[0])).join(''), partsText(plain.json.candidates[0]));
  const last = chunks.at(-1);
  assert.equal(last.candidates[0].finishReason, 'STOP');
  assert.deepEqual(
    [last.usageMetadata.promptTokenCount, last.usageMetadata.candidatesTokenCount, last.usageMetadata.totalTokenCount],
    [plain.json.usageMetadata.promptTokenCount, plain.json.usageMetadata.candidatesTokenCount, plain.json.usageMetadata.totalTokenCount],
  );
});

test('Gemini without alt=sse: one streamed JSON array of the same chunks', async () => {
  const m = unique('garr');
  const body = { contents: [{ role: 'user', parts: [{ text: `array ${m}` }] }] };
  const res = await http('POST', `/v1beta/models/${GMODEL}:streamGenerateContent`, { key: null, headers: styleHeaders('gemini'), body });
  assert.equal(res.status, 200, res.text);
  assert.match(res.headers.get('content-type'), /^application\/json/);
  assert.ok(Array.isArray(res.json), `a JSON array: ${res.text.slice(0, 200)}`);
  assert.ok(res.json.length >= 3, `several chunks (${res.json.length})`);
  assert.equal(res.json.map((ch) => partsText(ch.candidates?.[0])).join(''), `You said: array ${m}`);
  const last = res.json.at(-1);
  assert.equal(last.candidates[0].finishReason, 'STOP');
  assert.ok(last.usageMetadata.totalTokenCount > 0);
});

test('Gemini: a streamed function call arrives complete (name and args); the round trip streamed', async () => {
  const m = unique('gfc');
  const args = { city: `Paris-${m}` };
  const contents = [{ role: 'user', parts: [{ text: `CALL get_weather ${JSON.stringify(args)}` }] }];
  const r = await gstream(GMODEL, { contents, tools: geminiTools });
  assert.equal(r.status, 200, r.raw);
  const calls = r.events.flatMap((e) => (e.data.candidates?.[0]?.content?.parts ?? []).filter((p) => p.functionCall));
  assert.equal(calls.length, 1, JSON.stringify(r.events.map((e) => e.data)));
  assert.equal(calls[0].functionCall.name, 'get_weather');
  assert.deepEqual(calls[0].functionCall.args, args);
  assert.equal(r.events.at(-1).data.candidates[0].finishReason, 'STOP');

  const ai = genai();
  const config = { tools: geminiTools };
  const chunks = [];
  for await (const ch of await ai.models.generateContentStream({ model: GMODEL, contents, config })) chunks.push(ch);
  const fcs = chunks.flatMap((ch) => ch.functionCalls ?? []);
  assert.equal(fcs.length, 1);
  assert.equal(fcs[0].name, 'get_weather');
  assert.deepEqual(fcs[0].args, args);
  const modelTurn = { role: 'model', parts: chunks.flatMap((ch) => ch.candidates?.[0]?.content?.parts ?? []) };
  let text = '';
  const next = await ai.models.generateContentStream({
    model: GMODEL, config,
    contents: [...contents, modelTurn, { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { result: `sunny-${m}` } } }] }],
  });
  for await (const ch of next) text += partsText(ch.candidates?.[0]);
  assert.equal(text, `Tool result: sunny-${m}`);
});
