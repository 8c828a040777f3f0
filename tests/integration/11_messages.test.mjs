// The Messages style (POST /v1/messages, Anthropic's wire format) driven by
// both official SDKs: the 1.x one (Authorization: Bearer) and a 0.x one
// (x-api-key). Text, system, multi-turn, images and documents, tool use,
// structured output, thinking blocks with sealed signatures, max_tokens, and
// every error in Anthropic's body.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic1 from '@anthropic-ai/sdk';
import Anthropic0 from 'anthropic-sdk-0x';
import { cfg, http, newAccountKey, unique, upstreamRequestContaining } from './harness.mjs';

const PNG_B64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const PNG_BYTES = Buffer.from(PNG_B64, 'base64').length;
const PDF_B64 = Buffer.from('%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n').toString('base64');

const weatherTool = {
  name: 'get_weather',
  description: 'Current weather for a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

// Both SDK generations, each with a fetch that records the request headers
// it sent (to show which authentication header each one uses).
const sdks = [
  ['1.x', Anthropic1, 'authorization'],
  ['0.x', Anthropic0, 'x-api-key'],
].map(([name, Ctor, authHeader]) => {
  const sent = [];
  const recordingFetch = (url, init) => {
    sent.push(new Headers(init?.headers));
    return fetch(url, init);
  };
  const make = (apiKey = cfg.key) => new Ctor({ apiKey, baseURL: cfg.frontendA, maxRetries: 0, timeout: 30000, fetch: recordingFetch });
  return { name, Ctor, make, authHeader, sent };
});

// Raw POST /v1/messages with x-api-key and anthropic-version unless overridden.
function postMessages(body, { key = cfg.key, version = '2023-06-01', headers = {}, raw } = {}) {
  const h = { ...headers };
  if (key !== null) h['x-api-key'] = key;
  if (version !== null) h['anthropic-version'] = version;
  return http('POST', '/v1/messages', { key: null, body, raw, headers: h });
}

function assertAnthropicError(res, status, type, messageIncludes) {
  assert.equal(res.status, status, `status ${res.status} body ${res.text}`);
  const b = res.json;
  assert.ok(b, `JSON error body expected, got ${res.text}`);
  assert.equal(b.type, 'error', res.text);
  assert.equal(b.error.type, type, res.text);
  assert.equal(typeof b.error.message, 'string');
  assert.ok(b.error.message.length > 0);
  assert.match(b.request_id, /^req_/);
  if (messageIncludes) assert.ok(b.error.message.includes(messageIncludes), `"${b.error.message}" lacks "${messageIncludes}"`);
}

// An SDK call that must fail: returns the SDK's APIError.
async function sdkError(promise) {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  assert.fail('the call succeeded');
}

function text(msg) {
  return msg.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
}

function flipOne(s) {
  const i = Math.floor(s.length / 2);
  return s.slice(0, i) + (s[i] === 'A' ? 'B' : 'A') + s.slice(i + 1);
}

for (const sdk of sdks) {
  test(`[${sdk.name}] text round trip: the full message object`, async () => {
    const m = unique('mtext');
    const before = sdk.sent.length;
    const msg = await sdk.make().messages.create({
      model: 'emu-chat', max_tokens: 100, messages: [{ role: 'user', content: `hello ${m}` }],
    });
    assert.match(msg.id, /^msg_[0-9a-f]{24}$/);
    assert.equal(msg.type, 'message');
    assert.equal(msg.role, 'assistant');
    assert.equal(msg.model, 'emu-chat');
    assert.deepEqual(msg.content, [{ type: 'text', text: `You said: hello ${m}` }]);
    assert.equal(msg.stop_reason, 'end_turn');
    assert.equal(msg.stop_sequence, null);
    assert.ok(msg.usage.input_tokens > 0 && msg.usage.output_tokens > 0);
    assert.equal(msg.usage.cache_creation_input_tokens, 0);
    assert.equal(msg.usage.cache_read_input_tokens, 0);
    // The SDK authenticated the way its generation does.
    const h = sdk.sent[before];
    assert.ok(h.get(sdk.authHeader), `${sdk.name} sent ${sdk.authHeader}`);
    assert.match(h.get('anthropic-version'), /^\d{4}-\d{2}-\d{2}$/);
    // Nothing is stored: the upstream saw max_tokens and the text.
    const up = await upstreamRequestContaining(`hello ${m}`);
    assert.equal(up.body.max_tokens, 100);
    assert.deepEqual(up.body.messages, [{ role: 'user', content: `hello ${m}` }]);
  });

  test(`[${sdk.name}] system as a string and as blocks reaches upstream as a system message`, async () => {
    const client = sdk.make();
    const m1 = unique('msys');
    await client.messages.create({
      model: 'emu-chat', max_tokens: 50, system: `Be terse ${m1}.`, messages: [{ role: 'user', content: `q ${m1}` }],
    });
    let up = await upstreamRequestContaining(`q ${m1}`);
    assert.deepEqual(up.body.messages[0], { role: 'system', content: `Be terse ${m1}.` });
    assert.equal(up.body.messages[1].role, 'user');

    const m2 = unique('msysb');
    await client.messages.create({
      model: 'emu-chat', max_tokens: 50,
      system: [{ type: 'text', text: `Rule one ${m2}.` }, { type: 'text', text: 'Rule two.', cache_control: { type: 'ephemeral' } }],
      messages: [{ role: 'user', content: `q ${m2}` }],
    });
    up = await upstreamRequestContaining(`q ${m2}`);
    assert.deepEqual(up.body.messages[0], { role: 'system', content: `Rule one ${m2}.\n\nRule two.` });
  });

  test(`[${sdk.name}] multi-turn history and sampling parameters are forwarded`, async () => {
    const m = unique('mturn');
    const msg = await sdk.make().messages.create({
      model: 'emu-chat', max_tokens: 100, temperature: 0, top_p: 0.5, stop_sequences: ['NEVERSEEN'],
      metadata: { user_id: `user-${m}` },
      messages: [
        { role: 'user', content: `first ${m}` },
        { role: 'assistant', content: [{ type: 'text', text: 'earlier answer' }] },
        { role: 'user', content: [{ type: 'text', text: `second ${m}` }] },
      ],
    });
    assert.equal(text(msg), `You said: second ${m}`);
    const up = await upstreamRequestContaining(`second ${m}`);
    assert.deepEqual(up.body.messages.map((x) => x.role), ['user', 'assistant', 'user']);
    assert.equal(up.body.messages[1].content, 'earlier answer');
    assert.equal(up.body.temperature, 0);
    assert.equal(up.body.top_p, 0.5);
    assert.deepEqual(up.body.stop, ['NEVERSEEN']);
    assert.equal(up.body.user, `user-${m}`);
    // top_k: Anthropic and Gemini upstreams take it; OpenAI's APIs have no such
    // setting, so it is left out for them (a sampling hint, docs/compatibility.md)
    // unless an openai-chat route says its server takes it (capabilities top_k).
    const mk = unique('topk');
    await sdk.make().messages.create({ model: 'emu-claude', max_tokens: 50, top_k: 5, messages: [{ role: 'user', content: `k ${mk}` }] });
    assert.equal((await upstreamRequestContaining(`k ${mk}`)).body.top_k, 5);
    const mg = unique('topkg');
    await sdk.make().messages.create({ model: 'emu-gemini', max_tokens: 50, top_k: 7, messages: [{ role: 'user', content: `g ${mg}` }] });
    assert.equal((await upstreamRequestContaining(`g ${mg}`)).body.generationConfig.topK, 7);
    for (const model of ['emu-chat', 'emu-responses']) {
      const mo = unique('topko');
      await sdk.make().messages.create({ model, max_tokens: 50, top_k: 5, messages: [{ role: 'user', content: `o ${mo}` }] });
      assert.equal('top_k' in (await upstreamRequestContaining(`o ${mo}`)).body, false, model);
    }
  });

  test(`[${sdk.name}] images (base64 and url) and documents (PDF and text)`, async () => {
    const m = unique('mimg');
    const url = `https://example.com/${m}.png`;
    const msg = await sdk.make().messages.create({
      model: 'emu-chat', max_tokens: 200,
      messages: [{
        role: 'user',
        content: [
          { type: 'text', text: `look ${m}` },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG_B64 } },
          { type: 'image', source: { type: 'url', url } },
          { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: PDF_B64 } },
          { type: 'document', title: 'notes.txt', source: { type: 'text', media_type: 'text/plain', data: 'hello' } },
        ],
      }],
    });
    const t = text(msg);
    assert.ok(t.startsWith(`You said: look ${m}`), t);
    assert.ok(t.includes(`[image: data:image/png, ${PNG_BYTES} bytes]`), t);
    assert.ok(t.includes(`[image: ${url}]`), t);
    assert.ok(t.includes('[file: document.pdf, application/pdf,'), t);
    // A text document reaches this upstream kind as text, "<filename>:\n<content>".
    assert.ok(t.includes('notes.txt:\nhello'), t);
    const up = await upstreamRequestContaining(`look ${m}`);
    const parts = up.body.messages[0].content;
    assert.deepEqual(parts.map((p) => p.type), ['text', 'image_url', 'image_url', 'file', 'text']);
    assert.equal(parts[3].file.filename, 'document.pdf');
    assert.equal(parts[3].file.file_data, `data:application/pdf;base64,${PDF_B64}`);
  });

  test(`[${sdk.name}] tool use round trip: tool_use block, then tool_result`, async () => {
    const client = sdk.make();
    const m = unique('mtool');
    const question = { role: 'user', content: `CALL get_weather {"city":"Paris"}\n${m}` };
    const first = await client.messages.create({
      model: 'emu-chat', max_tokens: 200, tools: [weatherTool], messages: [question],
    });
    assert.equal(first.stop_reason, 'tool_use');
    const use = first.content.find((b) => b.type === 'tool_use');
    assert.ok(use, JSON.stringify(first.content));
    assert.equal(use.name, 'get_weather');
    assert.deepEqual(use.input, { city: 'Paris' });
    assert.ok(typeof use.id === 'string' && use.id.length > 0);
    let up = await upstreamRequestContaining(m);
    assert.equal(up.body.tools[0].function.name, 'get_weather');
    assert.deepEqual(up.body.tools[0].function.parameters, weatherTool.input_schema);

    const second = await client.messages.create({
      model: 'emu-chat', max_tokens: 200, tools: [weatherTool],
      messages: [
        question,
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: `sunny ${m}` }] },
      ],
    });
    assert.equal(second.stop_reason, 'end_turn');
    assert.equal(text(second), `Tool result: sunny ${m}`);
    up = await upstreamRequestContaining(`sunny ${m}`);
    const call = up.body.messages.find((x) => x.role === 'assistant').tool_calls[0];
    assert.equal(call.id, use.id);
    assert.deepEqual(JSON.parse(call.function.arguments), { city: 'Paris' });
    assert.deepEqual(up.body.messages.at(-1), { role: 'tool', tool_call_id: use.id, content: `sunny ${m}` });

    // is_error and text blocks; tool_choice tool + disable_parallel_tool_use.
    const m2 = unique('mtool2');
    const third = await client.messages.create({
      model: 'emu-chat', max_tokens: 200, tools: [weatherTool],
      tool_choice: { type: 'tool', name: 'get_weather', disable_parallel_tool_use: true },
      messages: [
        question,
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, is_error: true, content: [{ type: 'text', text: `boom ${m2}` }] }] },
      ],
    });
    assert.ok(third.content.length > 0);
    up = await upstreamRequestContaining(`boom ${m2}`);
    assert.equal(up.body.messages.at(-1).content, `Error: boom ${m2}`);
    assert.deepEqual(up.body.tool_choice, { type: 'function', function: { name: 'get_weather' } });
    assert.equal(up.body.parallel_tool_calls, false);
  });

  test(`[${sdk.name}] structured output through output_config.format json_schema`, async () => {
    const m = unique('mjson');
    const schema = {
      type: 'object', properties: { answer: { type: 'string' }, n: { type: 'integer' } },
      required: ['answer', 'n'], additionalProperties: false,
    };
    const msg = await sdk.make().messages.create({
      model: 'emu-chat', max_tokens: 200, output_config: { format: { type: 'json_schema', schema } },
      messages: [{ role: 'user', content: `extract ${m}` }],
    });
    const out = JSON.parse(text(msg));
    assert.equal(out.answer, `extract ${m}`);
    assert.equal(out.n, 0);
    const up = await upstreamRequestContaining(`extract ${m}`);
    assert.equal(up.body.response_format.type, 'json_schema');
    assert.equal(up.body.response_format.json_schema.strict, true);
    assert.deepEqual(up.body.response_format.json_schema.schema, schema);
  });

  test(`[${sdk.name}] thinking: a thinking block with a signature that can be passed back, not tampered with`, async () => {
    const client = sdk.make();
    const m = unique('mthink');
    const question = { role: 'user', content: `ponder ${m}` };
    const msg = await client.messages.create({
      model: 'emu-chat', max_tokens: 2000, thinking: { type: 'enabled', budget_tokens: 1024 }, messages: [question],
    });
    assert.deepEqual(msg.content.map((b) => b.type), ['thinking', 'text']);
    const th = msg.content[0];
    assert.equal(th.thinking, `Reasoning (low) about: ponder ${m}`);
    assert.ok(typeof th.signature === 'string' && th.signature.length > 40);
    assert.equal(text(msg), `You said: ponder ${m}`);
    assert.equal((await upstreamRequestContaining(`ponder ${m}`)).body.reasoning_effort, 'low');

    // Passed back unchanged: accepted.
    const m2 = unique('mthink2');
    const next = await client.messages.create({
      model: 'emu-chat', max_tokens: 20000, thinking: { type: 'enabled', budget_tokens: 16384 },
      messages: [question, { role: 'assistant', content: msg.content }, { role: 'user', content: `again ${m2}` }],
    });
    assert.equal(text(next), `You said: again ${m2}`);
    assert.equal((await upstreamRequestContaining(`again ${m2}`)).body.reasoning_effort, 'high');

    // Tampered: 400 invalid_request_error.
    const bad = [{ ...th, signature: flipOne(th.signature) }, msg.content[1]];
    const e = await sdkError(client.messages.create({
      model: 'emu-chat', max_tokens: 100,
      messages: [question, { role: 'assistant', content: bad }, { role: 'user', content: 'again' }],
    }));
    assert.equal(e.status, 400);
    assert.equal(e.error.type, 'error');
    assert.equal(e.error.error.type, 'invalid_request_error');
    assert.ok(e.error.error.message.includes('signature'), e.error.error.message);
  });

  test(`[${sdk.name}] stop_reason max_tokens`, async () => {
    const m = unique('mmax');
    const msg = await sdk.make().messages.create({
      model: 'emu-chat', max_tokens: 2, messages: [{ role: 'user', content: `one two three four ${m}` }],
    });
    assert.equal(msg.stop_reason, 'max_tokens');
    assert.equal(text(msg), 'You said:');
  });

  test(`[${sdk.name}] errors surface as the SDK's typed errors with Anthropic's body`, async () => {
    let e = await sdkError(sdk.make('sk-not-a-key-of-this-gateway-000000000000').messages.create({
      model: 'emu-chat', max_tokens: 10, messages: [{ role: 'user', content: 'x' }],
    }));
    assert.equal(e.status, 401);
    assert.ok(e instanceof sdk.Ctor.AuthenticationError, e.constructor.name);
    assert.equal(e.error.error.type, 'authentication_error');

    e = await sdkError(sdk.make().messages.create({
      model: 'no-such-model-anywhere', max_tokens: 10, messages: [{ role: 'user', content: 'x' }],
    }));
    assert.equal(e.status, 404);
    assert.equal(e.error.error.type, 'not_found_error');

    e = await sdkError(sdk.make().messages.create({
      model: 'emu-chat', max_tokens: 10, messages: [{ role: 'system', content: 'x' }],
    }));
    assert.equal(e.status, 400);
    assert.equal(e.error.error.type, 'invalid_request_error');
    assert.ok(e.error.error.message.includes("role 'user' or 'assistant'"), e.error.error.message);
  });
}

// ---- errors in Anthropic's body, over raw HTTP --------------------------------------

test('anthropic-version: required, a date from 2023-06-01 on', async () => {
  const body = { model: 'emu-chat', max_tokens: 10, messages: [{ role: 'user', content: 'version' }] };
  assertAnthropicError(await postMessages(body, { version: null }), 400, 'invalid_request_error',
    'anthropic-version: header is required');
  for (const v of ['2023-01-01', 'latest', '2023-06-01x', '2024-13-01']) {
    assertAnthropicError(await postMessages(body, { version: v }), 400, 'invalid_request_error', 'is not a valid version');
  }
  for (const v of ['2023-06-01', '2026-10-21']) {
    const res = await postMessages(body, { version: v });
    assert.equal(res.status, 200, res.text);
  }
});

test('authentication: x-api-key or Bearer; a wrong key is 401 authentication_error', async () => {
  const body = { model: 'emu-chat', max_tokens: 10, messages: [{ role: 'user', content: 'auth' }] };
  assert.equal((await postMessages(body)).status, 200);
  const bearer = await http('POST', '/v1/messages', { body, headers: { 'anthropic-version': '2023-06-01' } });
  assert.equal(bearer.status, 200, bearer.text);
  assertAnthropicError(await postMessages(body, { key: 'sk-wrong-key-0000000000000000000000' }), 401, 'authentication_error');
  assertAnthropicError(await postMessages(body, { key: null }), 401, 'authentication_error');
});

test('model not allowed for the key is 403 permission_error; unknown model is 404 not_found_error', async () => {
  const { key } = newAccountKey({ models: ['emu-some-other-model'] });
  const body = { model: 'emu-chat', max_tokens: 10, messages: [{ role: 'user', content: 'perm' }] };
  assertAnthropicError(await postMessages(body, { key }), 403, 'permission_error');
  assertAnthropicError(await postMessages({ ...body, model: 'no-such-model-xyz' }), 404, 'not_found_error');
});

test('request validation: required fields, unknown fields, other styles\' bodies', async () => {
  const msgs = [{ role: 'user', content: 'validate' }];
  const bad = [
    [{ model: 'emu-chat', messages: msgs }, 'max_tokens: Field required'],
    [{ max_tokens: 10, messages: msgs }, 'model: Field required'],
    [{ model: 'emu-chat', max_tokens: 10 }, 'messages: Field required'],
    [{ model: 'emu-chat', max_tokens: 10, messages: [] }, 'at least one message'],
    [{ model: 'emu-chat', max_tokens: 0, messages: msgs }, 'max_tokens'],
    [{ model: 'emu-chat', max_tokens: 10, messages: msgs, frobnicate: 1 }, 'frobnicate: Extra inputs are not permitted'],
    [{ model: 'emu-chat', input: 'hello' }, 'input'],
    [{ model: 'emu-chat', contents: [{ parts: [{ text: 'hi' }] }] }, 'contents'],
    [{ model: 'emu-chat', max_tokens: 10, messages: msgs, response_format: { type: 'json_object' } }, 'response_format'],
    [{ model: 'emu-chat', max_tokens: 10, messages: msgs, stream: 'yes' }, 'stream: Input should be a valid boolean'],
    [{ model: 'emu-chat', max_tokens: 10, messages: msgs, temperature: 1.5 }, 'temperature'],
    [{ model: 'emu-chat', max_tokens: 10, messages: [{ role: 'system', content: 'x' }] }, "role 'user' or 'assistant'"],
    [{ model: 'emu-chat', max_tokens: 10, messages: [...msgs, { role: 'system', content: [{ type: 'image', source: {} }] }] },
      'text blocks only'],
    [{ model: 'emu-chat', max_tokens: 10, messages: msgs, mcp_servers: [{ type: 'url', name: 'x' }] },
      'mcp_servers.0.url: Field required'],
    [{ model: 'emu-chat', max_tokens: 10, messages: msgs, context_management: { edits: [{ type: 'frobnicate' }] } },
      'context_management.edits.0.type'],
    [{
      model: 'emu-chat', max_tokens: 10, messages: msgs,
      tools: [{ type: 'web_search_20250305', name: 'web_search', allowed_domains: ['a.test'], blocked_domains: ['b.test'] }],
    }, 'Cannot specify both allowed_domains and blocked_domains'],
    [{ model: 'emu-chat', max_tokens: 10, messages: msgs, tools: [{ type: 'bash_20250124', name: 'bash' }] },
      'unsupported parameter'],
    [{ model: 'emu-chat', max_tokens: 2000, messages: msgs, thinking: { type: 'enabled', budget_tokens: 100 } }, '1024'],
    [{ model: 'emu-chat', max_tokens: 1500, messages: msgs, thinking: { type: 'enabled', budget_tokens: 1500 } },
      'max_tokens'],
    [{
      model: 'emu-chat', max_tokens: 10,
      messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_nowhere', content: 'x' }] }],
    }, 'toolu_nowhere'],
    [{
      model: 'emu-chat', max_tokens: 10,
      messages: [{ role: 'assistant', content: [{ type: 'redacted_thinking', data: 'not-a-token' }] }],
    }, 'redacted_thinking'],
  ];
  for (const [body, needle] of bad) {
    assertAnthropicError(await postMessages(body), 400, 'invalid_request_error', needle);
  }
  assertAnthropicError(await postMessages(undefined, { raw: '{"model":' }), 400, 'invalid_request_error');
});

test('a thinking signature is bound to its account', async () => {
  const m = unique('mbind');
  const question = { role: 'user', content: `bind ${m}` };
  const res = await postMessages({
    model: 'emu-chat', max_tokens: 2000, thinking: { type: 'enabled', budget_tokens: 1024 }, messages: [question],
  });
  assert.equal(res.status, 200, res.text);
  const other = newAccountKey({ models: ['emu-chat'] });
  const replay = {
    model: 'emu-chat', max_tokens: 100,
    messages: [question, { role: 'assistant', content: res.json.content }, { role: 'user', content: 'again' }],
  };
  assert.equal((await postMessages(replay)).status, 200);
  assertAnthropicError(await postMessages(replay, { key: other.key }), 400, 'invalid_request_error', 'signature');
});

test('upstream failures: 429 rate_limit_error, 500 api_error, 503 overloaded_error', async () => {
  const cases = [[429, 'rate_limit_error'], [500, 'api_error'], [503, 'overloaded_error']];
  for (const [status, type] of cases) {
    const res = await postMessages({
      model: 'emu-chat', max_tokens: 10, messages: [{ role: 'user', content: `fail [[emu:status=${status}]]` }],
    });
    assertAnthropicError(res, status, type);
  }
});

test('an unknown path under /v1/messages answers in Anthropic\'s body', async () => {
  assertAnthropicError(await http('GET', '/v1/messages/nope', { key: null, headers: { 'x-api-key': cfg.key } }), 404,
    'not_found_error');
});

// ---- POST /v1/messages/count_tokens --------------------------------------------------

// Each seeded model kind and the upstream endpoint its count must reach: the
// provider's own counting endpoint, or (openai-chat has none) a generation
// of one output token.
const COUNT_MODELS = [
  ['emu-chat', '/v1/chat/completions'],
  ['emu-responses', '/v1/responses/input_tokens'],
  ['emu-claude', '/v1/messages/count_tokens'],
  ['emu-gemini', '/v1beta/models/emu-model:countTokens'],
];

function postCount(body, opts = {}) {
  const h = { ...(opts.headers ?? {}) };
  if (opts.key !== null) h['x-api-key'] = opts.key ?? cfg.key;
  h['anthropic-version'] = '2023-06-01';
  return http('POST', '/v1/messages/count_tokens', { key: null, body, headers: h });
}

for (const sdk of sdks) {
  for (const [model, endpoint] of COUNT_MODELS) {
    test(`[${sdk.name}] countTokens on ${model}: the input_tokens a generation reports, counted at ${endpoint}`, async () => {
      const client = sdk.make();
      const m = unique('mcount');
      const params = {
        model,
        system: `Answer briefly ${m}.`,
        tools: [weatherTool],
        messages: [
          { role: 'user', content: `first question ${m}` },
          { role: 'assistant', content: 'an earlier answer' },
          { role: 'user', content: [{ type: 'text', text: `count these five words ${m}` }] },
        ],
      };
      const count = await client.messages.countTokens(params);
      assert.ok(Number.isInteger(count.input_tokens) && count.input_tokens > 0, JSON.stringify(count));
      const up = await upstreamRequestContaining(m);
      assert.equal(up.path, endpoint);
      assert.equal(up.status, 200);
      if (model === 'emu-chat') assert.equal(up.body.max_tokens, 1); // counted by a one-token generation
      else assert.equal(up.body.max_tokens, undefined);

      const msg = await client.messages.create({ ...params, max_tokens: 200 });
      assert.equal(count.input_tokens, msg.usage.input_tokens);
    });
  }

  test(`[${sdk.name}] countTokens errors are the SDK's typed errors`, async () => {
    let e = await sdkError(sdk.make().messages.countTokens({
      model: 'no-such-model-anywhere', messages: [{ role: 'user', content: 'x' }],
    }));
    assert.equal(e.status, 404);
    assert.equal(e.error.error.type, 'not_found_error');
    e = await sdkError(sdk.make().messages.countTokens({ model: 'emu-claude' }));
    assert.equal(e.status, 400);
    assert.equal(e.error.error.type, 'invalid_request_error');
    assert.ok(e.error.error.message.includes('messages: Field required'), e.error.error.message);
  });
}

test('count_tokens: the raw body, and errors in Anthropic\'s body', async () => {
  const messages = [{ role: 'user', content: `raw count ${unique()}` }];
  const ok = await postCount({ model: 'emu-claude', messages });
  assert.equal(ok.status, 200, ok.text);
  assert.deepEqual(Object.keys(ok.json), ['input_tokens']);
  assert.match(ok.headers.get('request-id'), /^req_/);

  assertAnthropicError(await postCount({ model: 'no-such-model-xyz', messages }), 404, 'not_found_error');
  const { key } = newAccountKey({ models: ['emu-some-other-model'] });
  assertAnthropicError(await postCount({ model: 'emu-claude', messages }, { key }), 403, 'permission_error');
  assertAnthropicError(await postCount({ model: 'emu-claude', messages }, { key: 'sk-wrong-key-0000000000000000000000' }),
    401, 'authentication_error');
  assertAnthropicError(await postCount({ model: 'emu-claude' }), 400, 'invalid_request_error', 'messages: Field required');
  assertAnthropicError(await postCount({ messages }), 400, 'invalid_request_error', 'model: Field required');
  assertAnthropicError(await postCount({ model: 'emu-claude', messages: [] }), 400, 'invalid_request_error');
  // A Messages request's output settings are not count_tokens parameters.
  assertAnthropicError(await postCount({ model: 'emu-claude', messages, max_tokens: 10 }), 400, 'invalid_request_error',
    'max_tokens: Extra inputs are not permitted');
  assertAnthropicError(await postCount({ model: 'emu-claude', messages, stream: true }), 400, 'invalid_request_error',
    'stream: Extra inputs are not permitted');
  // Upstream failures keep their status.
  const failed = await postCount({ model: 'emu-chat', messages: [{ role: 'user', content: 'x [[emu:status=429]]' }] });
  assertAnthropicError(failed, 429, 'rate_limit_error');
});
