// Chat Completions, complete: shape, roles and content parts, Responses-only
// features refused, n (native and fanned out), tools, forwarded parameters,
// refusals, and stored completions (retrieve, messages, update, list, delete).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  cfg, client, ensureModel, http, newAccountKey, psql, unique,
  upstreamRequestContaining, upstreamRequestsContaining, assertOpenAIError,
} from './harness.mjs';

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');

// A short, valid 8 kHz mono 16-bit PCM WAV.
function wav(samples = 400) {
  const data = Buffer.alloc(samples * 2);
  for (let i = 0; i < samples; i++) data.writeInt16LE(Math.round(Math.sin(i / 5) * 8000), i * 2);
  const h = Buffer.alloc(44);
  h.write('RIFF', 0); h.writeUInt32LE(36 + data.length, 4); h.write('WAVE', 8);
  h.write('fmt ', 12); h.writeUInt32LE(16, 16); h.writeUInt16LE(1, 20); h.writeUInt16LE(1, 22);
  h.writeUInt32LE(8000, 24); h.writeUInt32LE(16000, 28); h.writeUInt16LE(2, 32); h.writeUInt16LE(16, 34);
  h.write('data', 36); h.writeUInt32LE(data.length, 40);
  return Buffer.concat([h, data]);
}

const user = (content) => ({ role: 'user', content });
const chat = (body, opts = {}) => http('POST', '/v1/chat/completions', { ...opts, body: { model: 'emu-chat', ...body } });

function chatRows(id) {
  return Number(psql("SELECT count(*) FROM chat_completions WHERE id = :'v1'", id)[0]);
}

// ---- shape ---------------------------------------------------------------------

test('a chat completion has the full OpenAI shape', async () => {
  const marker = unique('shape');
  const res = await chat({ messages: [user(`hello ${marker}`)] });
  assert.equal(res.status, 200, res.text);
  const c = res.json;
  assert.match(c.id, /^chatcmpl-/);
  assert.equal(c.object, 'chat.completion');
  assert.ok(Number.isInteger(c.created) && Math.abs(c.created - Date.now() / 1000) < 300);
  assert.equal(c.model, 'emu-chat');
  assert.equal(c.choices.length, 1);
  const ch = c.choices[0];
  assert.equal(ch.index, 0);
  assert.equal(ch.finish_reason, 'stop');
  assert.ok('logprobs' in ch);
  assert.equal(ch.logprobs, null);
  assert.equal(ch.message.role, 'assistant');
  assert.equal(ch.message.content, `You said: hello ${marker}`);
  assert.ok('refusal' in ch.message);
  assert.equal(ch.message.refusal, null);
  assert.ok(!ch.message.tool_calls || ch.message.tool_calls.length === 0);
  const u = c.usage;
  assert.ok(u.prompt_tokens > 0 && u.completion_tokens > 0);
  assert.equal(u.total_tokens, u.prompt_tokens + u.completion_tokens);
  assert.equal(typeof u.prompt_tokens_details, 'object');
  assert.equal(typeof u.completion_tokens_details, 'object');
  assert.equal(typeof u.completion_tokens_details.reasoning_tokens, 'number');
  assert.ok(res.headers.get('x-request-id'));
});

// ---- messages, roles, parts ----------------------------------------------------

test('all roles and text, image_url and input_audio parts reach the upstream', async () => {
  const marker = unique('roles');
  const audio = wav();
  const url = `https://example.com/${marker}.png`;
  const c = await client().chat.completions.create({
    model: 'emu-chat',
    messages: [
      { role: 'system', content: 'You are terse.' },
      { role: 'developer', content: 'Answer in English.' },
      user(`first ${marker}`),
      { role: 'assistant', content: 'earlier answer' },
      user('run it'),
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_r1', type: 'function', function: { name: 'lookup', arguments: '{"q":"x"}' } }] },
      { role: 'tool', tool_call_id: 'call_r1', content: 'tool says hi' },
      user([
        { type: 'text', text: `look ${marker}` },
        { type: 'image_url', image_url: { url } },
        { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG.toString('base64')}` } },
        { type: 'input_audio', input_audio: { data: audio.toString('base64'), format: 'wav' } },
      ]),
    ],
    tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } } } } }],
  });
  assert.equal(c.choices[0].message.content,
    `You said: look ${marker} [image: ${url}] [image: data:image/png, ${PNG.length} bytes] [audio: wav, ${audio.length} bytes]`);
  const up = await upstreamRequestContaining(`look ${marker}`);
  const msgs = up.body.messages;
  assert.deepEqual(msgs.map((m) => m.role), ['system', 'developer', 'user', 'assistant', 'user', 'assistant', 'tool', 'user']);
  assert.equal(msgs[5].tool_calls[0].id, 'call_r1');
  assert.equal(msgs[5].tool_calls[0].function.name, 'lookup');
  assert.equal(msgs[6].tool_call_id, 'call_r1');
  const last = msgs[7].content;
  assert.ok(Array.isArray(last));
  assert.deepEqual(last.map((p) => p.type), ['text', 'image_url', 'image_url', 'input_audio']);
  assert.equal(last[1].image_url.url, url);
  assert.equal(last[3].input_audio.data, audio.toString('base64'));
  assert.equal(last[3].input_audio.format, 'wav');
});

test('a model with capabilities {"audio": false} refuses input_audio with 400', async () => {
  const model = ensureModel('it10-no-audio', { capabilities: { audio: false } });
  const marker = unique('noaud');
  const res = await chat({
    model,
    messages: [user([{ type: 'text', text: `hear ${marker}` }, { type: 'input_audio', input_audio: { data: wav().toString('base64'), format: 'wav' } }])],
  });
  assertOpenAIError(res, 400, { code: 'unsupported_parameter' });
  assert.equal(await upstreamRequestContaining(`hear ${marker}`), undefined);
  assert.equal((await chat({ model, messages: [user(`text only ${marker}`)] })).status, 200);
});

test('Responses-only features are 400 unsupported_parameter', async () => {
  const cases = [
    [{ messages: [user('x')], tools: [{ type: 'web_search' }] }, /^tools/],
    [{ messages: [user('x')], web_search_options: {} }, /^web_search_options$/],
    [{ input: 'x' }, /^input$/],
    [{ messages: [user('x')], instructions: 'Be brief.' }, /^instructions$/],
    [{ messages: [user('x')], reasoning: { summary: 'auto' } }, /^reasoning$/],
  ];
  for (const [body, param] of cases) {
    const res = await chat(body);
    assertOpenAIError(res, 400, { code: 'unsupported_parameter', type: 'invalid_request_error' });
    assert.match(String(res.json.error.param), param, res.text);
  }
});

test('audio output (modalities with "audio") is 400', async () => {
  const res = await chat({ messages: [user('x')], modalities: ['text', 'audio'], audio: { voice: 'alloy', format: 'wav' } });
  assertOpenAIError(res, 400);
  const res2 = await chat({ messages: [user('x')], modalities: ['text', 'audio'] });
  assertOpenAIError(res2, 400);
});

// ---- n -------------------------------------------------------------------------

test('n=3 gives three choices from one native upstream request', async () => {
  const marker = unique('n3');
  const c = await client().chat.completions.create({ model: 'emu-chat', n: 3, messages: [user(`many ${marker}`)] });
  assert.equal(c.choices.length, 3);
  assert.deepEqual(c.choices.map((x) => x.index), [0, 1, 2]);
  assert.deepEqual(c.choices.map((x) => x.message.content),
    [`You said: many ${marker}`, `You said: many ${marker} #1`, `You said: many ${marker} #2`]);
  for (const ch of c.choices) assert.equal(ch.finish_reason, 'stop');
  const ups = await upstreamRequestsContaining(`many ${marker}`);
  assert.equal(ups.length, 1);
  assert.equal(ups[0].body.n, 3);
});

test('a model without native n is fanned out: n upstream requests without n, usage summed', async () => {
  const model = ensureModel('it10-fanout', { upstream: 'emu-single-test', capabilities: { n: false } });
  const base = unique('fb');
  const one = await client().chat.completions.create({ model, messages: [user(`fan ${base}`)] });
  assert.equal(one.choices.length, 1);
  const marker = unique('fo');
  const c = await client().chat.completions.create({ model, n: 3, messages: [user(`fan ${marker}`)] });
  assert.equal(c.choices.length, 3);
  assert.deepEqual(c.choices.map((x) => x.index), [0, 1, 2]);
  for (const ch of c.choices) {
    assert.equal(ch.message.content, `You said: fan ${marker}`);
    assert.equal(ch.finish_reason, 'stop');
  }
  const ups = await upstreamRequestsContaining(`fan ${marker}`);
  assert.equal(ups.length, 3);
  for (const u of ups) {
    assert.equal(u.body.model, 'emu-single-test');
    assert.ok(!('n' in u.body), `upstream got n: ${JSON.stringify(u.body)}`);
  }
  assert.equal(c.usage.prompt_tokens, 3 * one.usage.prompt_tokens);
  assert.equal(c.usage.completion_tokens, 3 * one.usage.completion_tokens);
  assert.equal(c.usage.total_tokens, c.usage.prompt_tokens + c.usage.completion_tokens);
});

test('n=0 and n=17 are 400', async () => {
  for (const n of [0, 17, -1]) {
    const res = await chat({ n, messages: [user('x')] });
    assertOpenAIError(res, 400);
    assert.equal(res.json.error.param, 'n');
  }
});

// ---- tools ---------------------------------------------------------------------

const weatherTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Weather for a city',
    // Loose for strict mode (no required, no additionalProperties:false): fine when non-strict.
    parameters: { type: 'object', properties: { city: { type: 'string' }, days: { type: 'integer' } } },
  },
};

test('function tools are non-strict by default; CALL gives tool_calls, and a tool result gives the final answer', async () => {
  const marker = unique('tool');
  const c = client();
  const first = await c.chat.completions.create({
    model: 'emu-chat',
    messages: [user(`CALL get_weather {"city":"${marker}"}`)],
    tools: [weatherTool],
  });
  const ch = first.choices[0];
  assert.equal(ch.finish_reason, 'tool_calls');
  assert.equal(ch.message.content, null);
  assert.equal(ch.message.tool_calls.length, 1);
  const tc = ch.message.tool_calls[0];
  assert.equal(typeof tc.id, 'string');
  assert.ok(tc.id.length > 0);
  assert.equal(tc.type, 'function');
  assert.equal(tc.function.name, 'get_weather');
  assert.deepEqual(JSON.parse(tc.function.arguments), { city: marker });
  const up = await upstreamRequestContaining(marker);
  assert.equal(up.body.tools[0].function.name, 'get_weather');
  assert.notEqual(up.body.tools[0].function.strict, true, 'non-strict by default');

  const follow = await c.chat.completions.create({
    model: 'emu-chat',
    messages: [
      user(`CALL get_weather {"city":"${marker}"}`),
      ch.message,
      { role: 'tool', tool_call_id: tc.id, content: `sunny in ${marker}` },
    ],
    tools: [weatherTool],
  });
  assert.equal(follow.choices[0].message.content, `Tool result: sunny in ${marker}`);
  assert.equal(follow.choices[0].finish_reason, 'stop');
  const up2 = await upstreamRequestContaining(`sunny in ${marker}`);
  assert.deepEqual(up2.body.messages.map((m) => m.role), ['user', 'assistant', 'tool']);
  assert.equal(up2.body.messages[1].tool_calls[0].id, tc.id);
  assert.equal(up2.body.messages[2].tool_call_id, tc.id);
});

test('legacy functions work', async () => {
  const marker = unique('legacy');
  const res = await chat({
    messages: [user(`CALL get_weather {"city":"${marker}"}`)],
    functions: [weatherTool.function],
  });
  assert.equal(res.status, 200, res.text);
  const msg = res.json.choices[0].message;
  const name = msg.tool_calls?.[0]?.function?.name ?? msg.function_call?.name;
  assert.equal(name, 'get_weather');
  assert.ok(['tool_calls', 'function_call'].includes(res.json.choices[0].finish_reason));
  const up = await upstreamRequestContaining(marker);
  const sent = up.body.tools?.map((t) => t.function.name) ?? up.body.functions?.map((f) => f.name);
  assert.deepEqual(sent, ['get_weather']);
});

test('tool_choice naming a function that is not in tools is 400; a forced function is called', async () => {
  const bad = await chat({
    messages: [user('x')], tools: [weatherTool], tool_choice: { type: 'function', function: { name: 'nope' } },
  });
  assertOpenAIError(bad, 400);
  assert.equal(bad.json.error.param, 'tool_choice');
  const marker = unique('forced');
  const forced = await chat({
    messages: [user(`weather please ${marker}`)], tools: [weatherTool],
    tool_choice: { type: 'function', function: { name: 'get_weather' } },
  });
  assert.equal(forced.status, 200, forced.text);
  assert.equal(forced.json.choices[0].message.tool_calls[0].function.name, 'get_weather');
  assert.equal(forced.json.choices[0].finish_reason, 'tool_calls');
  const up = await upstreamRequestContaining(marker);
  assert.equal(up.body.tool_choice.function.name, 'get_weather');
});

test('a tool message whose tool_call_id matches no tool call is 400', async () => {
  const marker = unique('orphan');
  const res = await chat({
    messages: [
      user(`CALL get_weather {"city":"x"} ${marker}`),
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_known', type: 'function', function: { name: 'get_weather', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'call_unknown', content: `r ${marker}` },
    ],
    tools: [weatherTool],
  });
  assertOpenAIError(res, 400);
  const noCall = await chat({ messages: [user('hi'), { role: 'tool', tool_call_id: 'call_nothing', content: `r2 ${marker}` }] });
  assertOpenAIError(noCall, 400);
  assert.equal(await upstreamRequestContaining(`r ${marker}`), undefined);
  assert.equal(await upstreamRequestContaining(`r2 ${marker}`), undefined);
});

// ---- parameters ----------------------------------------------------------------

test('max_tokens and max_completion_tokens are forwarded and cut with finish_reason length', async () => {
  const m1 = unique('mt');
  const a = await client().chat.completions.create({ model: 'emu-chat', max_tokens: 2, messages: [user(`one two three four ${m1}`)] });
  assert.equal(a.choices[0].finish_reason, 'length');
  assert.equal(a.choices[0].message.content, 'You said:');
  const upA = await upstreamRequestContaining(m1);
  assert.equal(upA.body.max_tokens ?? upA.body.max_completion_tokens, 2);

  const m2 = unique('mct');
  const b = await client().chat.completions.create({ model: 'emu-chat', max_completion_tokens: 3, messages: [user(`one two three four ${m2}`)] });
  assert.equal(b.choices[0].finish_reason, 'length');
  assert.equal(b.choices[0].message.content, 'You said: one');
  const upB = await upstreamRequestContaining(m2);
  assert.equal(upB.body.max_completion_tokens ?? upB.body.max_tokens, 3);

  // A limit that is not reached leaves finish_reason stop.
  const m3 = unique('mtok');
  const d = await client().chat.completions.create({ model: 'emu-chat', max_tokens: 50, messages: [user(`short ${m3}`)] });
  assert.equal(d.choices[0].finish_reason, 'stop');
  assert.equal(d.choices[0].message.content, `You said: short ${m3}`);
});

test('temperature, top_p, seed, user and stop are forwarded; metadata is not', async () => {
  const marker = unique('params');
  const c = await client().chat.completions.create({
    model: 'emu-chat',
    messages: [user(`alpha ${marker} beta`)],
    temperature: 0.3, top_p: 0.5, seed: 42, user: `user-${marker}`,
    stop: 'beta', metadata: { tag: `meta-${marker}` },
  });
  assert.equal(c.choices[0].message.content.trimEnd(), `You said: alpha ${marker}`);
  assert.equal(c.choices[0].finish_reason, 'stop');
  const up = await upstreamRequestContaining(`alpha ${marker}`);
  assert.equal(up.body.temperature, 0.3);
  assert.equal(up.body.top_p, 0.5);
  assert.equal(up.body.seed, 42);
  assert.equal(up.body.user, `user-${marker}`);
  assert.deepEqual([up.body.stop].flat(), ['beta']);
  assert.ok(!('metadata' in up.body), 'metadata is not sent upstream');
  assert.ok(!JSON.stringify(up.body).includes(`meta-${marker}`));

  const m2 = unique('stops');
  const s = await client().chat.completions.create({
    model: 'emu-chat', messages: [user(`one two ${m2} three`)], stop: ['ZZZ', 'three'],
  });
  assert.equal(s.choices[0].message.content.trimEnd(), `You said: one two ${m2}`);
  const up2 = await upstreamRequestContaining(m2);
  assert.deepEqual(up2.body.stop, ['ZZZ', 'three']);

  const five = await chat({ messages: [user('x')], stop: ['a', 'b', 'c', 'd', 'e'] });
  assertOpenAIError(five, 400);
  assert.equal(five.json.error.param, 'stop');
});

test('penalties are forwarded; logprobs, top_logprobs and logit_bias are refused rather than dropped', async () => {
  const marker = unique('pen');
  await client().chat.completions.create({
    model: 'emu-chat', messages: [user(`pen ${marker}`)], frequency_penalty: 0.5, presence_penalty: -0.25,
  });
  const up = await upstreamRequestContaining(`pen ${marker}`);
  assert.equal(up.body.frequency_penalty, 0.5);
  assert.equal(up.body.presence_penalty, -0.25);
  for (const extra of [{ logprobs: true }, { logprobs: true, top_logprobs: 2 }, { logit_bias: { 50256: -100 } }]) {
    const res = await chat({ messages: [user('x')], ...extra });
    assertOpenAIError(res, 400, { code: 'unsupported_parameter' });
  }
  assertOpenAIError(await chat({ messages: [user('x')], frequency_penalty: 3 }), 400);
  // logprobs:false is the default and fine.
  const ok = await chat({ messages: [user('x')], logprobs: false });
  assert.equal(ok.status, 200);
});

test('reasoning_effort "low" gives message.reasoning_content', async () => {
  const marker = unique('reason');
  const res = await chat({ messages: [user(`think ${marker}`)], reasoning_effort: 'low' });
  assert.equal(res.status, 200, res.text);
  const msg = res.json.choices[0].message;
  assert.equal(msg.content, `You said: think ${marker}`);
  assert.equal(msg.reasoning_content, `Reasoning (low) about: think ${marker}`);
  assert.ok(res.json.usage.completion_tokens_details.reasoning_tokens > 0);
  const up = await upstreamRequestContaining(`think ${marker}`);
  assert.equal(up.body.reasoning_effort, 'low');
});

test('[[emu:refuse]] gives message.refusal and null content', async () => {
  const marker = unique('refuse');
  const c = await client().chat.completions.create({ model: 'emu-chat', messages: [user(`[[emu:refuse]] ${marker}`)] });
  const msg = c.choices[0].message;
  assert.equal(msg.content, null);
  assert.equal(typeof msg.refusal, 'string');
  assert.ok(msg.refusal.length > 0);
});

test('an assistant refusal part in the history is sent back upstream (not dropped, not rejected)', async () => {
  const marker = unique('refhist');
  const res = await chat({
    messages: [
      user(`forbidden ${marker}`),
      { role: 'assistant', content: [{ type: 'refusal', refusal: `No way ${marker}` }] },
      user(`then this ${marker}`),
    ],
  });
  assert.equal(res.status, 200, res.text);
  assert.equal(res.json.choices[0].message.content, `You said: then this ${marker}`);
  const up = await upstreamRequestContaining(`then this ${marker}`);
  const asst = up.body.messages.find((m) => m.role === 'assistant');
  assert.ok(asst && JSON.stringify(asst).includes(`No way ${marker}`), JSON.stringify(up.body.messages));
});

test('out-of-range sampling parameters are 400', async () => {
  for (const [k, v] of [['max_tokens', 0], ['max_completion_tokens', -3], ['temperature', 3], ['top_p', 1.5], ['seed', 'x']]) {
    const res = await chat({ messages: [user('x')], [k]: v });
    assertOpenAIError(res, 400);
    assert.equal(res.json.error.param, k, res.text);
  }
});

test('stream_options without stream is 400', async () => {
  const res = await chat({ messages: [user('x')], stream_options: { include_usage: true } });
  assertOpenAIError(res, 400);
  assert.equal(res.json.error.param, 'stream_options');
});

// ---- stored completions ----------------------------------------------------------

test('a completion is stored by default: retrieve on both frontends, one row in chat_completions', async () => {
  const marker = unique('store');
  const created = await chat({ messages: [{ role: 'system', content: 'S' }, user(`keep ${marker}`)] });
  assert.equal(created.status, 200, created.text);
  const id = created.json.id;
  assert.equal(chatRows(id), 1);
  for (const base of [cfg.frontendA, cfg.frontendB]) {
    const got = await http('GET', `/v1/chat/completions/${id}`, { base });
    assert.equal(got.status, 200, got.text);
    assert.deepEqual(got.json, created.json);
    const sdk = await client(base).chat.completions.retrieve(id);
    assert.equal(sdk.id, id);
    assert.equal(sdk.choices[0].message.content, `You said: keep ${marker}`);
  }
});

test('messages lists the request messages; update changes metadata', async () => {
  const marker = unique('msgs');
  const c = client();
  const created = await c.chat.completions.create({
    model: 'emu-chat', metadata: { a: '1' },
    messages: [{ role: 'system', content: `sys ${marker}` }, user(`hi ${marker}`)],
  });
  const page = await c.chat.completions.messages.list(created.id);
  const msgs = [];
  for await (const m of page) msgs.push(m);
  assert.deepEqual(msgs.map((m) => m.role), ['system', 'user']);
  assert.deepEqual(msgs.map((m) => m.content), [`sys ${marker}`, `hi ${marker}`]);
  for (const m of msgs) assert.equal(typeof m.id, 'string');

  const updated = await c.chat.completions.update(created.id, { metadata: { a: '2', b: marker } });
  assert.equal(updated.id, created.id);
  assert.deepEqual(updated.metadata, { a: '2', b: marker });
  const again = await client(cfg.frontendB).chat.completions.retrieve(created.id);
  assert.deepEqual(again.metadata, { a: '2', b: marker });
  assert.equal(again.choices[0].message.content, `You said: hi ${marker}`);
  assertOpenAIError(await http('POST', `/v1/chat/completions/${created.id}`, { body: { model: 'x' } }), 400);
});

test('list honours limit, order and model', async () => {
  const other = newAccountKey(); // a fresh account: only these completions
  const modelB = ensureModel('it10-list-b');
  const c = client(cfg.frontendA, other.key);
  const ids = [];
  for (let i = 0; i < 3; i++) ids.push((await c.chat.completions.create({ model: 'emu-chat', messages: [user(`l${i}`)] })).id);
  const idB = (await c.chat.completions.create({ model: modelB, messages: [user('lb')] })).id;

  const all = await http('GET', '/v1/chat/completions?limit=100', { key: other.key });
  assert.equal(all.status, 200, all.text);
  assert.equal(all.json.object, 'list');
  assert.deepEqual(all.json.data.map((x) => x.id).sort(), [...ids, idB].sort());

  const asc = await http('GET', '/v1/chat/completions?limit=2&order=asc', { key: other.key });
  assert.deepEqual(asc.json.data.map((x) => x.id), ids.slice(0, 2));
  assert.equal(asc.json.has_more, true);
  const desc = await http('GET', '/v1/chat/completions?limit=2&order=desc', { key: other.key });
  assert.deepEqual(desc.json.data.map((x) => x.id), [idB, ids[2]]);

  const page2 = await http('GET', `/v1/chat/completions?limit=2&order=asc&after=${ids[1]}`, { key: other.key });
  assert.deepEqual(page2.json.data.map((x) => x.id), [ids[2], idB]);
  assert.equal(page2.json.has_more, false);

  const onlyChat = await http('GET', '/v1/chat/completions?model=emu-chat&order=asc', { key: other.key });
  assert.deepEqual(onlyChat.json.data.map((x) => x.id), ids);
  const seen = [];
  for await (const x of c.chat.completions.list({ model: modelB })) seen.push(x.id);
  assert.deepEqual(seen, [idB]);
  // The dev account's list does not show them.
  const dev = await http('GET', '/v1/chat/completions?limit=100&order=desc');
  assert.ok(!dev.json.data.some((x) => ids.includes(x.id) || x.id === idB));
});

test('DELETE removes a stored completion; store:false is never stored', async () => {
  const created = await client().chat.completions.create({ model: 'emu-chat', messages: [user(unique('del'))] });
  const del = await client(cfg.frontendB).chat.completions.delete(created.id);
  assert.deepEqual({ ...del }, { id: created.id, object: 'chat.completion.deleted', deleted: true });
  assert.equal(chatRows(created.id), 0);
  assertOpenAIError(await http('GET', `/v1/chat/completions/${created.id}`), 404);
  assertOpenAIError(await http('DELETE', `/v1/chat/completions/${created.id}`), 404);
  assertOpenAIError(await http('GET', `/v1/chat/completions/${created.id}/messages`), 404);

  const marker = unique('nostore');
  const ns = await client().chat.completions.create({ model: 'emu-chat', store: false, messages: [user(`gone ${marker}`)] });
  assert.equal(ns.choices[0].message.content, `You said: gone ${marker}`);
  assertOpenAIError(await http('GET', `/v1/chat/completions/${ns.id}`), 404);
  assertOpenAIError(await http('GET', `/v1/chat/completions/${ns.id}`, { base: cfg.frontendB }), 404);
  assert.equal(chatRows(ns.id), 0);
});

test('another account gets 404 for retrieve, messages, update and delete', async () => {
  const created = await client().chat.completions.create({ model: 'emu-chat', messages: [user(unique('own'))] });
  const other = newAccountKey();
  const key = other.key;
  assertOpenAIError(await http('GET', `/v1/chat/completions/${created.id}`, { key }), 404);
  assertOpenAIError(await http('GET', `/v1/chat/completions/${created.id}/messages`, { key }), 404);
  assertOpenAIError(await http('POST', `/v1/chat/completions/${created.id}`, { key, body: { metadata: { x: 'y' } } }), 404);
  assertOpenAIError(await http('DELETE', `/v1/chat/completions/${created.id}`, { key }), 404);
  // Untouched for its owner.
  const got = await http('GET', `/v1/chat/completions/${created.id}`);
  assert.equal(got.status, 200);
  assert.deepEqual(got.json.metadata, {});
  assert.equal(chatRows(created.id), 1);
});
