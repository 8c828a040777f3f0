// The 4 × 4 matrix: every inbound style (Responses, Chat Completions,
// Messages, Generate Content), driven by its official SDK, against every
// upstream kind (openai-chat, openai-responses, anthropic, gemini — all
// spoken by the emulator). Each cell: text, system instructions, multi-turn
// history, one tool round trip, structured output, and an image.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import { cfg, client, unique, upstreamRequestContaining } from './harness.mjs';

const MODELS = {
  'openai-chat': 'emu-chat',
  'openai-responses': 'emu-responses',
  anthropic: 'emu-claude',
  gemini: 'emu-gemini',
};

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const PNG_BYTES = Buffer.from(PNG, 'base64').length;

const WEATHER = {
  name: 'get_weather',
  description: 'Weather for a city',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' } },
    required: ['city'],
    additionalProperties: false,
  },
};

const PERSON = {
  type: 'object',
  properties: { name: { type: 'string' }, age: { type: 'integer', minimum: 1 } },
  required: ['name', 'age'],
  additionalProperties: false,
};

// ---- one driver per inbound style: the same conversation in its own shapes ----

const openai = () => client();
const anthropic = () => new Anthropic({ apiKey: cfg.key, baseURL: cfg.frontendA, maxRetries: 0 });
const genai = () => new GoogleGenAI({ apiKey: cfg.key, httpOptions: { baseUrl: cfg.frontendA } });

// turn: {system?, history?: [[user, assistant], ...], text, image?, tools?, schema?}
// returns {text, calls: [{id, name, args}], raw, next(toolResults) → {text}}
const styles = {
  async responses(model, t) {
    const input = [];
    for (const [u, a] of t.history ?? []) input.push({ role: 'user', content: u }, { role: 'assistant', content: a });
    const content = [{ type: 'input_text', text: t.text }];
    if (t.image) content.push({ type: 'input_image', image_url: `data:image/png;base64,${PNG}` });
    input.push({ role: 'user', content });
    const req = { model, input, store: false };
    if (t.system) req.instructions = t.system;
    if (t.tools) req.tools = [{ type: 'function', ...WEATHER }];
    if (t.schema) req.text = { format: { type: 'json_schema', name: 'person', strict: true, schema: PERSON } };
    const r = await openai().responses.create(req);
    const calls = r.output.filter((o) => o.type === 'function_call')
      .map((o) => ({ id: o.call_id, name: o.name, args: JSON.parse(o.arguments) }));
    return {
      text: r.output_text,
      calls,
      async next(results) {
        const r2 = await openai().responses.create({
          ...req,
          input: [...input, ...r.output, ...results.map((x) => ({ type: 'function_call_output', call_id: x.id, output: x.output }))],
        });
        return { text: r2.output_text };
      },
    };
  },

  async chat(model, t) {
    const messages = [];
    if (t.system) messages.push({ role: 'system', content: t.system });
    for (const [u, a] of t.history ?? []) messages.push({ role: 'user', content: u }, { role: 'assistant', content: a });
    const content = [{ type: 'text', text: t.text }];
    if (t.image) content.push({ type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } });
    messages.push({ role: 'user', content });
    const req = { model, messages, store: false };
    if (t.tools) req.tools = [{ type: 'function', function: WEATHER }];
    if (t.schema) req.response_format = { type: 'json_schema', json_schema: { name: 'person', strict: true, schema: PERSON } };
    const c = await openai().chat.completions.create(req);
    const msg = c.choices[0].message;
    const calls = (msg.tool_calls ?? []).map((x) => ({ id: x.id, name: x.function.name, args: JSON.parse(x.function.arguments) }));
    return {
      text: msg.content ?? '',
      calls,
      async next(results) {
        const c2 = await openai().chat.completions.create({
          ...req,
          messages: [...messages, msg, ...results.map((x) => ({ role: 'tool', tool_call_id: x.id, content: x.output }))],
        });
        return { text: c2.choices[0].message.content ?? '' };
      },
    };
  },

  async messages(model, t) {
    const messages = [];
    for (const [u, a] of t.history ?? []) messages.push({ role: 'user', content: u }, { role: 'assistant', content: a });
    const content = [{ type: 'text', text: t.text }];
    if (t.image) content.push({ type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } });
    messages.push({ role: 'user', content });
    const req = { model, max_tokens: 512, messages };
    if (t.system) req.system = t.system;
    if (t.tools) req.tools = [{ name: WEATHER.name, description: WEATHER.description, input_schema: WEATHER.parameters }];
    if (t.schema) req.output_config = { format: { type: 'json_schema', schema: PERSON } };
    const m = await anthropic().messages.create(req);
    const text = m.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
    const calls = m.content.filter((b) => b.type === 'tool_use').map((b) => ({ id: b.id, name: b.name, args: b.input }));
    return {
      text,
      calls,
      async next(results) {
        const m2 = await anthropic().messages.create({
          ...req,
          messages: [...messages, { role: 'assistant', content: m.content },
            { role: 'user', content: results.map((x) => ({ type: 'tool_result', tool_use_id: x.id, content: x.output })) }],
        });
        return { text: m2.content.filter((b) => b.type === 'text').map((b) => b.text).join('') };
      },
    };
  },

  async gemini(model, t) {
    const contents = [];
    for (const [u, a] of t.history ?? []) contents.push({ role: 'user', parts: [{ text: u }] }, { role: 'model', parts: [{ text: a }] });
    const parts = [{ text: t.text }];
    if (t.image) parts.push({ inlineData: { mimeType: 'image/png', data: PNG } });
    contents.push({ role: 'user', parts });
    const config = {};
    if (t.system) config.systemInstruction = t.system;
    if (t.tools) config.tools = [{ functionDeclarations: [{ name: WEATHER.name, description: WEATHER.description, parametersJsonSchema: WEATHER.parameters }] }];
    if (t.schema) { config.responseMimeType = 'application/json'; config.responseJsonSchema = PERSON; }
    const r = await genai().models.generateContent({ model, contents, config });
    const cand = r.candidates[0];
    const calls = (cand.content.parts ?? []).filter((p) => p.functionCall)
      .map((p) => ({ id: p.functionCall.id, name: p.functionCall.name, args: p.functionCall.args }));
    const text = (cand.content.parts ?? []).filter((p) => p.text && !p.thought).map((p) => p.text).join('');
    return {
      text,
      calls,
      async next(results) {
        const r2 = await genai().models.generateContent({
          model,
          config,
          contents: [...contents, cand.content,
            { role: 'user', parts: results.map((x) => ({ functionResponse: { name: x.name, id: x.id, response: { result: x.output } } })) }],
        });
        return { text: (r2.candidates[0].content.parts ?? []).filter((p) => p.text && !p.thought).map((p) => p.text).join('') };
      },
    };
  },
};

// ---- what each upstream kind must have received -------------------------------

// The system text as the upstream request carries it, per protocol.
function upstreamSystem(body) {
  if (Array.isArray(body.messages) && body.messages[0]?.role === 'system') {
    const c = body.messages[0].content;
    return typeof c === 'string' ? c : c.map((p) => p.text).join('');
  }
  if (Array.isArray(body.messages) && body.messages[0]?.role === 'developer') {
    const c = body.messages[0].content;
    return typeof c === 'string' ? c : c.map((p) => p.text).join('');
  }
  if (typeof body.instructions === 'string') return body.instructions;
  if (Array.isArray(body.input) && ['system', 'developer'].includes(body.input[0]?.role)) {
    const c = body.input[0].content;
    return typeof c === 'string' ? c : c.map((p) => p.text).join('');
  }
  if (body.system !== undefined) return typeof body.system === 'string' ? body.system : body.system.map((b) => b.text).join('');
  if (body.systemInstruction) return body.systemInstruction.parts.map((p) => p.text).join('');
  return null;
}

// The number of conversation turns the upstream request carries.
function upstreamTurns(body) {
  if (Array.isArray(body.contents)) return body.contents.length;
  if (Array.isArray(body.messages)) return body.messages.filter((m) => m.role !== 'system' && m.role !== 'developer').length;
  if (Array.isArray(body.input)) return body.input.filter((m) => m.role === 'user' || m.role === 'assistant').length;
  return -1;
}

for (const [style, drive] of Object.entries(styles)) {
  for (const [kind, model] of Object.entries(MODELS)) {
    test(`${style} → ${kind}: text, system, multi-turn, image`, async () => {
      const m = unique(`${style}${kind}`.replace(/[^a-z0-9]/gi, ''));
      const r = await drive(model, { text: `hello ${m}` });
      assert.equal(r.text.trim(), `You said: hello ${m}`);

      const sys = `SYS-${m}`;
      const r2 = await drive(model, { system: sys, history: [[`first ${m}`, `reply ${m}`]], text: `second ${m}` });
      assert.equal(r2.text.trim(), `You said: second ${m}`);
      const up = await upstreamRequestContaining(`second ${m}`);
      assert.ok(up, 'the upstream saw the request');
      assert.equal(upstreamSystem(up.body), sys);
      assert.equal(upstreamTurns(up.body), 3);

      const r3 = await drive(model, { text: `look ${m}`, image: true });
      assert.ok(r3.text.includes(`You said: look ${m}`), r3.text);
      assert.ok(r3.text.includes(`${PNG_BYTES} bytes`), `the image reached the upstream: ${r3.text}`);
    });

    test(`${style} → ${kind}: one tool round trip`, async () => {
      const m = unique('tool');
      const r = await drive(model, { text: `CALL get_weather {"city":"Paris-${m}"}`, tools: true });
      assert.equal(r.calls.length, 1);
      assert.equal(r.calls[0].name, 'get_weather');
      assert.deepEqual(r.calls[0].args, { city: `Paris-${m}` });
      const done = await r.next(r.calls.map((c) => ({ ...c, output: `sunny-${m}` })));
      assert.ok(done.text.includes(`Tool result: sunny-${m}`), done.text);
    });

    test(`${style} → ${kind}: structured output`, async () => {
      const m = unique('json');
      const r = await drive(model, { text: `person ${m}`, schema: true });
      const v = JSON.parse(r.text);
      assert.equal(typeof v.name, 'string');
      assert.ok(Number.isInteger(v.age) && v.age >= 1);
      assert.deepEqual(Object.keys(v).sort(), ['age', 'name']);
    });
  }
}
