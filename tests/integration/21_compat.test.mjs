// Fidelity to what the real APIs accept today (issue 12, docs/compatibility.md):
// fields real clients send are carried, translated or ignored as the policy
// says, through the official SDKs; reasoning signatures survive every
// cross-style tool round trip with the history resent, store on and off.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import {
  cfg, client, http, assertOpenAIError, unique, ensureModel, upstreamRequestContaining, upstreamRequestsContaining,
} from './harness.mjs';

const oai = client();
const anthropic = new Anthropic({ apiKey: cfg.key, baseURL: cfg.frontendA, maxRetries: 0, timeout: 30000 });

const fnTool = {
  type: 'function', name: 'get_weather', description: 'Weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
};

// ---- Responses: fields Codex and the Agents SDK send ---------------------------------

test('Responses: client_metadata, caching hints, safety_identifier, service_tier, truncation, context_management are accepted', async () => {
  const m = unique('rfields');
  const res = await oai.responses.create({
    model: 'emu-responses', input: `fields ${m}`, store: false,
    client_metadata: { session_id: 's1', 'x-codex-turn-metadata': '{"a":1}' },
    prompt_cache_key: 'k1', prompt_cache_retention: '24h', safety_identifier: 'user-hash', service_tier: 'auto',
    truncation: 'auto', max_tool_calls: 3, parallel_tool_calls: true,
    context_management: [{ type: 'compaction', compact_threshold: 200000 }],
    tools: [fnTool],
  });
  assert.equal(res.status, 'completed');
  assert.match(res.output_text, new RegExp(m));
  const up = await upstreamRequestContaining(m);
  assert.ok(up, 'the request reached the upstream');
  // Client telemetry changes nothing in the answer and is not passed on.
  assert.equal(JSON.stringify(up.body).includes('x-codex-turn-metadata'), false);
  // A wrong type is still the real API's 400.
  assertOpenAIError(await http('POST', '/v1/responses', { body: { model: 'emu-chat', input: 'x', client_metadata: 'no' } }),
    400, { type: 'invalid_request_error' });
});

test('Responses: conversation names a conversation this gateway does not hold: 404', async () => {
  const res = await http('POST', '/v1/responses', { body: { model: 'emu-chat', input: 'x', conversation: 'conv_123' } });
  assertOpenAIError(res, 404);
  assert.equal(res.json.error.param, 'conversation');
});

test('Responses: namespace tools are flattened for the upstream and shown with their namespace', async () => {
  for (const model of ['emu-chat', 'emu-responses', 'emu-claude', 'emu-gemini']) {
    const m = unique('ns');
    const ns = {
      type: 'namespace', name: 'multi_agent_v1', description: 'Sub-agents.',
      tools: [{ type: 'function', name: 'close_agent', description: 'Close an agent',
        parameters: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'], additionalProperties: false } }],
    };
    const first = await oai.responses.create({
      model, store: false, tools: [ns, fnTool],
      input: `CALL multi_agent_v1__close_agent {"id":"a1"}\n${m}`,
    });
    const call = first.output.find((o) => o.type === 'function_call');
    assert.ok(call, `${model}: a call`);
    assert.equal(call.name, 'close_agent', model);
    assert.equal(call.namespace, 'multi_agent_v1', model);
    const up1 = await upstreamRequestContaining(m);
    const names = JSON.stringify(up1.body.tools ?? up1.body);
    assert.ok(names.includes('multi_agent_v1__close_agent'), `${model}: flattened for the upstream`);
    // The client sends the call back as it got it, with its result.
    const second = await oai.responses.create({
      model, store: false, tools: [ns, fnTool],
      input: [{ role: 'user', content: `CALL multi_agent_v1__close_agent {"id":"a1"}\n${m}` }, ...first.output,
        { type: 'function_call_output', call_id: call.call_id, output: `closed ${m}` }],
    });
    assert.equal(second.status, 'completed', model);
    assert.match(second.output_text, new RegExp(`closed ${m}`), model);
  }
});

test('Responses: a built-in tool the model cannot run, offered beside function tools, is left out; alone or forced it is a 400', async () => {
  // Web search is the gateway's for every model (docs/tools.md) once a search
  // backend is configured: this model says it may not use it.
  const model = ensureModel('it21-no-search', { capabilities: { web_search: false } });
  const m = unique('ws');
  const ok = await oai.responses.create({ model, input: `offered ${m}`, tools: [fnTool, { type: 'web_search' }] });
  assert.equal(ok.status, 'completed');
  const up = await upstreamRequestContaining(`offered ${m}`);
  assert.deepEqual(up.body.tools.map((t) => t.function?.name ?? t.type), ['get_weather']);
  const alone = await http('POST', '/v1/responses', { body: { model, input: 'x', tools: [{ type: 'web_search' }] } });
  assertOpenAIError(alone, 400, { code: 'unsupported_parameter' });
  const forced = await http('POST', '/v1/responses', {
    body: { model, input: 'x', tools: [fnTool, { type: 'web_search' }], tool_choice: { type: 'web_search' } },
  });
  assertOpenAIError(forced, 400, { code: 'unsupported_parameter' });
});

// ---- Messages: what Claude Code sends ----------------------------------------------

test('Messages: context_management, betas, a system message after the user turn, cache_control and output_format are accepted', async () => {
  for (const model of ['emu-claude', 'emu-chat', 'emu-gemini']) {
    const m = unique('cc');
    const res = await anthropic.beta.messages.create({
      model, max_tokens: 2000,
      betas: ['claude-code-20250219', 'interleaved-thinking-2025-05-14', 'context-management-2025-06-27',
        'advanced-tool-use-2025-11-20', 'effort-2025-11-24'],
      context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
      thinking: { type: 'adaptive', display: 'omitted' }, output_config: { effort: 'high' },
      metadata: { user_id: '{"device_id":"d"}' },
      system: [{ type: 'text', text: 'You are terse.', cache_control: { type: 'ephemeral' } }],
      messages: [
        { role: 'user', content: [{ type: 'text', text: `<system-reminder>x</system-reminder>` }, { type: 'text', text: `hello ${m}` }] },
        { role: 'system', content: [{ type: 'text', text: `Env note ${m}` }] },
      ],
      tools: [{ name: 'Bash', description: 'Run', input_schema: { type: 'object', properties: { command: { type: 'string' } } } },
        { name: 'Deferred', description: 'Later', input_schema: { type: 'object' }, defer_loading: true }],
    });
    assert.equal(res.type, 'message', model);
    const up = await upstreamRequestContaining(`hello ${m}`);
    assert.ok(JSON.stringify(up.body).includes(`Env note ${m}`), `${model}: the system message reached the upstream`);
  }
  const res = await anthropic.messages.create({
    model: 'emu-claude', max_tokens: 100, messages: [{ role: 'user', content: 'json please' }],
    output_format: { type: 'json_schema', schema: { type: 'object', properties: { echo: { type: 'string' } }, required: ['echo'], additionalProperties: false } },
  });
  assert.doesNotThrow(() => JSON.parse(res.content[0].text));
});

// ---- Generate Content ---------------------------------------------------------------

test('Generate Content: safetySettings go to a Gemini upstream, are ignored elsewhere; labels accepted', async () => {
  const ai = new GoogleGenAI({ apiKey: cfg.key, httpOptions: { baseUrl: cfg.frontendA } });
  const safety = [{ category: 'HARM_CATEGORY_HARASSMENT', threshold: 'BLOCK_NONE' }];
  for (const model of ['emu-gemini', 'emu-chat']) {
    const m = unique('safe');
    const res = await ai.models.generateContent({ model, contents: `safe ${m}`, config: { safetySettings: safety } });
    assert.match(res.text, new RegExp(m));
    const up = await upstreamRequestContaining(`safe ${m}`);
    assert.equal(JSON.stringify(up.body).includes('HARM_CATEGORY_HARASSMENT'), model === 'emu-gemini', model);
  }
  const raw = await http('POST', '/v1beta/models/emu-chat:generateContent', {
    key: null, headers: { 'x-goog-api-key': cfg.key },
    body: { contents: [{ role: 'user', parts: [{ text: 'labelled' }] }], labels: { team: 'a' } },
  });
  assert.equal(raw.status, 200, raw.text);
});

// ---- reasoning signatures through every style, history resent -------------------------

const styles = {
  async responses(model, text, store) {
    const input = [{ role: 'user', content: text }];
    const r1 = await oai.responses.create({ model, input, tools: [fnTool], reasoning: { effort: 'low' }, store });
    const call = r1.output.find((o) => o.type === 'function_call');
    assert.ok(call, 'a call');
    assert.ok(!JSON.stringify(r1).includes('emu-sig'), 'no upstream signature in plain');
    const r2 = await oai.responses.create({
      model, tools: [fnTool], reasoning: { effort: 'low' }, store,
      input: [...input, ...r1.output, { type: 'function_call_output', call_id: call.call_id, output: 'sunny' }],
    });
    return r2.output_text;
  },
  async chat(model, text, store) {
    const messages = [{ role: 'user', content: text }];
    const tools = [{ type: 'function', function: { name: fnTool.name, parameters: fnTool.parameters } }];
    const c1 = await oai.chat.completions.create({ model, messages, tools, reasoning_effort: 'low', store });
    const msg = c1.choices[0].message;
    assert.ok(msg.tool_calls?.length, 'a call');
    const c2 = await oai.chat.completions.create({
      model, tools, reasoning_effort: 'low', store,
      messages: [...messages, msg, { role: 'tool', tool_call_id: msg.tool_calls[0].id, content: 'sunny' }],
    });
    return c2.choices[0].message.content;
  },
  async messages(model, text) {
    const tools = [{ name: fnTool.name, input_schema: fnTool.parameters }];
    const messages = [{ role: 'user', content: text }];
    const thinking = { type: 'enabled', budget_tokens: 1024 };
    const m1 = await anthropic.messages.create({ model, max_tokens: 2000, thinking, tools, messages });
    const use = m1.content.find((b) => b.type === 'tool_use');
    assert.ok(use, 'a tool_use');
    const m2 = await anthropic.messages.create({
      model, max_tokens: 2000, thinking, tools,
      messages: [...messages, { role: 'assistant', content: m1.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'sunny' }] }],
    });
    return m2.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
  },
  async gemini(model, text) {
    const ai = new GoogleGenAI({ apiKey: cfg.key, httpOptions: { baseUrl: cfg.frontendA } });
    const config = { tools: [{ functionDeclarations: [{ name: fnTool.name, parametersJsonSchema: fnTool.parameters }] }],
      thinkingConfig: { thinkingBudget: 1024 } };
    const contents = [{ role: 'user', parts: [{ text }] }];
    const g1 = await ai.models.generateContent({ model, contents, config });
    const content = g1.candidates[0].content;
    const fc = content.parts.find((p) => p.functionCall)?.functionCall;
    assert.ok(fc, 'a functionCall');
    const g2 = await ai.models.generateContent({
      model, config,
      contents: [...contents, content,
        { role: 'user', parts: [{ functionResponse: { id: fc.id, name: fc.name, response: { result: 'sunny' } } }] }],
    });
    return g2.text;
  },
};

for (const upstream of ['emu-gemini', 'emu-claude', 'emu-responses']) {
  for (const [style, run] of Object.entries(styles)) {
    const stores = style === 'responses' || style === 'chat' ? [true, false] : [undefined];
    for (const store of stores) {
      test(`signatures: ${upstream} reasoning + tool call round trip through ${style}${store === undefined ? '' : `, store ${store}`}`, async () => {
        const m = unique('sig');
        const text = await run(upstream, `CALL get_weather {"city":"Paris"}\n${m}`, store);
        assert.match(text ?? '', /sunny/);
        const ups = await upstreamRequestsContaining(m);
        const last = ups[ups.length - 1].body;
        const body = JSON.stringify(last);
        if (upstream === 'emu-gemini') assert.ok(body.includes('thoughtSignature'), 'the signature went back to Gemini');
        if (upstream === 'emu-claude') {
          const asst = last.messages.filter((x) => x.role === 'assistant').pop();
          assert.ok(['thinking', 'redacted_thinking'].includes(asst.content[0].type), 'the thinking went back to Anthropic');
        }
      });
    }
  }
}

// ---- model discovery in the shapes the SDKs and clients use --------------------------

test('GET /v1/models and /v1/models/{id}: OpenAI shape with Bearer, Anthropic shape with anthropic-version', async () => {
  const ids = [];
  for await (const m of oai.models.list()) ids.push(m.id);
  assert.ok(ids.includes('emu-claude') && ids.includes('emu-chat'), ids.join(','));
  const one = await oai.models.retrieve('emu-chat');
  assert.equal(one.id, 'emu-chat');
  assert.equal(one.object, 'model');
  await assert.rejects(oai.models.retrieve('no-such-model-x'), (e) => e.status === 404 && e.error?.code === 'model_not_found');

  const page = await anthropic.models.list();
  const aids = page.data.map((m) => m.id);
  assert.ok(aids.includes('emu-claude'), aids.join(','));
  assert.ok(page.data.every((m) => m.type === 'model' && typeof m.display_name === 'string' && !Number.isNaN(Date.parse(m.created_at))));
  const a = await anthropic.models.retrieve('emu-claude');
  assert.equal(a.type, 'model');
  assert.equal(a.id, 'emu-claude');
  await assert.rejects(anthropic.models.retrieve('no-such-model-x'), (e) => e.status === 404 && e.error?.error?.type === 'not_found_error');
  // A wrong key is Anthropic's 401 on the shared path.
  const res = await http('GET', '/v1/models/emu-claude', { key: null, headers: { 'x-api-key': 'sk-sb-wrong', 'anthropic-version': '2023-06-01' } });
  assert.equal(res.status, 401);
  assert.equal(res.json.type, 'error');
});

// ---- malformed input the real APIs refuse (issue 13, finding 10) ---------------------
// Each was answered 200 before; now the real API's status, code and wording, in the
// style's body, and nothing reaches the upstream.

async function refusedBeforeUpstream(marker) {
  const hits = await upstreamRequestsContaining(marker);
  assert.equal(hits.length, 0, `the refused request reached the upstream: ${JSON.stringify(hits[0]?.body)}`);
}

test('Chat: top_logprobs of the wrong type is OpenAI\'s invalid_type; logit_bias {} is still fine', async () => {
  const m = unique('toplp');
  const res = await http('POST', '/v1/chat/completions', {
    body: { model: 'emu-chat', messages: [{ role: 'user', content: m }], top_logprobs: {} },
  });
  assertOpenAIError(res, 400, { code: 'invalid_type', type: 'invalid_request_error' });
  assert.equal(res.json.error.param, 'top_logprobs');
  assert.equal(res.json.error.message, "Invalid type for 'top_logprobs': expected an integer, but got an object instead.");
  await refusedBeforeUpstream(m);
  const ok = await http('POST', '/v1/chat/completions', {
    body: { model: 'emu-chat', messages: [{ role: 'user', content: 'x' }], logit_bias: {} },
  });
  assert.equal(ok.status, 200, ok.text);
});

test('Chat: a user, system or tool message with content null or [], and an assistant one with [], is OpenAI\'s 400', async () => {
  const cases = [
    { messages: [{ role: 'user', content: null }], param: 'messages.[0].content', code: null,
      message: "Invalid value for 'content': expected a string, got null." },
    { messages: [{ role: 'user', content: [] }], param: 'messages[0].content', code: 'empty_array',
      message: "Invalid 'messages[0].content': empty array. Expected an array with minimum length 1, but got an empty array instead." },
    { messages: [{ role: 'system', content: null }, { role: 'user', content: 'x' }], param: 'messages.[0].content', code: null },
    { messages: [{ role: 'user' }], param: 'messages[0].content', code: 'missing_required_parameter' },
    { messages: [{ role: 'user', content: 'x' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: [] }], param: 'messages[2].content', code: 'empty_array' },
    { messages: [{ role: 'user', content: 'x' }, { role: 'assistant', content: [] }, { role: 'user', content: 'y' }],
      param: 'messages[1].content', code: 'empty_array' },
  ];
  for (const c of cases) {
    const res = await http('POST', '/v1/chat/completions', { body: { model: 'emu-chat', messages: c.messages } });
    assertOpenAIError(res, 400, { code: c.code, type: 'invalid_request_error' });
    assert.equal(res.json.error.param, c.param, res.text);
    if (c.message) assert.equal(res.json.error.message, c.message);
  }
  // An assistant message with tool calls may still leave content null (as the SDKs send it).
  const ok = await http('POST', '/v1/chat/completions', { body: { model: 'emu-chat', messages: cases[4].messages.slice(0, 2).concat([
    { role: 'tool', tool_call_id: 'call_1', content: 'sunny' }]) } });
  assert.equal(ok.status, 200, ok.text);
});

test('Responses: unknown keys inside text, text.format and reasoning are OpenAI\'s unknown_parameter', async () => {
  const cases = [
    [{ text: { foo: 1 } }, 'text.foo'],
    [{ text: { verbosity: 'low', format: { type: 'text', strict: true } } }, 'text.format.strict'],
    [{ text: { format: { type: 'json_schema', name: 'x', schema: { type: 'object' }, json_schema: {} } } }, 'text.format.json_schema'],
    [{ reasoning: { effort: 'low', foo: 1 } }, 'reasoning.foo'],
  ];
  for (const [extra, param] of cases) {
    const m = unique('rkeys');
    const res = await http('POST', '/v1/responses', { body: { model: 'emu-responses', input: m, ...extra } });
    assertOpenAIError(res, 400, { code: 'unknown_parameter', type: 'invalid_request_error' });
    assert.equal(res.json.error.param, param);
    assert.equal(res.json.error.message, `Unknown parameter: '${param}'.`);
    await refusedBeforeUpstream(m);
  }
  // A verbosity outside the enum is the 400 too.
  assertOpenAIError(await http('POST', '/v1/responses', { body: { model: 'emu-chat', input: 'x', text: { verbosity: 'loud' } } }),
    400, { code: 'invalid_value' });
  // The SDK's other Reasoning keys at their defaults are accepted; other values would change the answer: refused.
  const m = unique('rdef');
  const ok = await oai.responses.create({
    model: 'emu-responses', input: `defaults ${m}`, store: false,
    text: { verbosity: 'low' }, reasoning: { effort: 'low', summary: 'auto', context: 'auto', mode: 'standard' },
  });
  assert.equal(ok.status, 'completed');
  const up = await upstreamRequestContaining(m);
  assert.deepEqual(Object.keys(up.body.reasoning).sort(), ['effort', 'summary']);
  for (const reasoning of [{ context: 'all_turns' }, { mode: 'pro' }]) {
    const res = await http('POST', '/v1/responses', { body: { model: 'emu-chat', input: 'x', reasoning } });
    assertOpenAIError(res, 400, { code: 'unsupported_parameter' });
    assert.equal(res.json.error.param, `reasoning.${Object.keys(reasoning)[0]}`);
  }
});

test('Generate Content: inlineData.data that is not base64 is Google\'s INVALID_ARGUMENT, as the emulator (Google\'s rules) says too', async () => {
  for (const data of ['str', 'ab!c', 'QQ=']) {
    const m = unique('b64');
    const body = { contents: [{ role: 'user', parts: [{ text: m }, { inlineData: { mimeType: 'image/png', data } }] }] };
    const res = await http('POST', '/v1beta/models/emu-chat:generateContent', { key: null, headers: { 'x-goog-api-key': cfg.key }, body });
    assert.equal(res.status, 400, res.text);
    assert.deepEqual(Object.keys(res.json.error).sort(), ['code', 'message', 'status']);
    assert.equal(res.json.error.status, 'INVALID_ARGUMENT');
    assert.equal(res.json.error.message,
      `Invalid value at 'contents[0].parts[1].inline_data.data' (TYPE_BYTES), Base64 decoding failed for "${data}"`);
    await refusedBeforeUpstream(m);
    if (process.env.SB_EMU_UPSTREAM_KEY) {
      const emu = await http('POST', '/v1beta/models/emu-gemini:generateContent', {
        base: cfg.emu, key: null, headers: { 'x-goog-api-key': process.env.SB_EMU_UPSTREAM_KEY }, body,
      });
      assert.equal(emu.status, 400, emu.text);
      assert.match(emu.json.error.message, /Base64 decoding failed/);
    }
  }
  // Canonical base64, padded, unpadded or URL-safe, is accepted.
  for (const data of ['aGk', 'aGk=', 'aGk_']) {
    const res = await http('POST', '/v1beta/models/emu-chat:generateContent', {
      key: null, headers: { 'x-goog-api-key': cfg.key },
      body: { contents: [{ role: 'user', parts: [{ inlineData: { mimeType: 'text/plain', data } }] }] },
    });
    assert.equal(res.status, 200, `${data}: ${res.text}`);
  }
});
