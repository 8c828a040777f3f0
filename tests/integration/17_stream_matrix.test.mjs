// The 4 × 4 streaming matrix: every inbound style (Responses, Chat
// Completions, Messages, Generate Content), streamed through its official
// SDK's streaming helper, from every upstream kind (openai-chat,
// openai-responses, anthropic, gemini — all spoken by the emulator). Each
// cell: the streamed text arrives in pieces that join to exactly the
// non-streamed text, and a streamed tool call arrives complete with the right
// name and arguments (its argument pieces joining to the same arguments).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import { cfg, client, http, sse, unique, upstreamRequestContaining } from './harness.mjs';
import { validateEvent } from './openresponses.mjs';

const MODELS = {
  'openai-chat': 'emu-chat',
  'openai-responses': 'emu-responses',
  anthropic: 'emu-claude',
  gemini: 'emu-gemini',
};
// The path each upstream kind is called on.
const UPSTREAM_PATH = {
  'openai-chat': /^\/v1\/chat\/completions$/,
  'openai-responses': /^\/v1\/responses$/,
  anthropic: /^\/v1\/messages$/,
  gemini: /^\/v1beta\/models\/[^/]+:streamGenerateContent$/,
};

const WEATHER = {
  name: 'get_weather',
  description: 'Weather for a city',
  parameters: {
    type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false,
  },
};

const openai = () => client();
const anthropic = () => new Anthropic({ apiKey: cfg.key, baseURL: cfg.frontendA, maxRetries: 0, timeout: 30000 });
const genai = () => new GoogleGenAI({ apiKey: cfg.key, httpOptions: { baseUrl: cfg.frontendA } });

const respText = (r) => r.output.filter((o) => o.type === 'message')
  .flatMap((o) => o.content).filter((c) => c.type === 'output_text').map((c) => c.text).join('');
const geminiText = (cand) => (cand?.content?.parts ?? []).filter((p) => typeof p.text === 'string' && !p.thought).map((p) => p.text).join('');

// Per inbound style: plain(model, text, tools) → {text, calls}; streamed(model, text, tools) →
// {pieces: [text deltas], text (of the final object), calls: [{name, args, streamedArgs}]}.
const styles = {
  responses: {
    async plain(model, text, tools) {
      const r = await openai().responses.create({ model, input: text, store: false, ...(tools ? { tools: [{ type: 'function', ...WEATHER }] } : {}) });
      return { text: r.output_text, calls: r.output.filter((o) => o.type === 'function_call').map((o) => ({ name: o.name, args: JSON.parse(o.arguments) })) };
    },
    async streamed(model, text, tools) {
      const s = openai().responses.stream({ model, input: text, store: false, ...(tools ? { tools: [{ type: 'function', ...WEATHER }] } : {}) });
      const pieces = [];
      const argPieces = {};
      for await (const ev of s) {
        if (ev.type === 'response.output_text.delta') pieces.push(ev.delta);
        if (ev.type === 'response.function_call_arguments.delta') argPieces[ev.item_id] = (argPieces[ev.item_id] ?? '') + ev.delta;
      }
      const final = await s.finalResponse();
      assert.equal(final.status, 'completed');
      const calls = final.output.filter((o) => o.type === 'function_call')
        .map((o) => ({ name: o.name, args: JSON.parse(o.arguments), streamedArgs: argPieces[o.id] }));
      return { pieces, text: respText(final), calls };
    },
  },

  chat: {
    async plain(model, text, tools) {
      const c = await openai().chat.completions.create({
        model, store: false, messages: [{ role: 'user', content: text }], ...(tools ? { tools: [{ type: 'function', function: WEATHER }] } : {}),
      });
      const msg = c.choices[0].message;
      return { text: msg.content ?? '', calls: (msg.tool_calls ?? []).map((t) => ({ name: t.function.name, args: JSON.parse(t.function.arguments) })) };
    },
    async streamed(model, text, tools) {
      const s = openai().chat.completions.stream({
        model, store: false, messages: [{ role: 'user', content: text }], ...(tools ? { tools: [{ type: 'function', function: WEATHER }] } : {}),
      });
      const pieces = [];
      const argPieces = {};
      for await (const ch of s) {
        const d = ch.choices[0]?.delta;
        if (d?.content) pieces.push(d.content);
        for (const t of d?.tool_calls ?? []) argPieces[t.index] = (argPieces[t.index] ?? '') + (t.function?.arguments ?? '');
      }
      const final = await s.finalChatCompletion();
      const msg = final.choices[0].message;
      const calls = (msg.tool_calls ?? []).map((t, i) => ({ name: t.function.name, args: JSON.parse(t.function.arguments), streamedArgs: argPieces[i] }));
      assert.equal(final.choices[0].finish_reason, calls.length ? 'tool_calls' : 'stop');
      return { pieces, text: msg.content ?? '', calls };
    },
  },

  messages: {
    async plain(model, text, tools) {
      const m = await anthropic().messages.create({
        model, max_tokens: 512, messages: [{ role: 'user', content: text }],
        ...(tools ? { tools: [{ name: WEATHER.name, description: WEATHER.description, input_schema: WEATHER.parameters }] } : {}),
      });
      return {
        text: m.content.filter((b) => b.type === 'text').map((b) => b.text).join(''),
        calls: m.content.filter((b) => b.type === 'tool_use').map((b) => ({ name: b.name, args: b.input })),
      };
    },
    async streamed(model, text, tools) {
      const s = anthropic().messages.stream({
        model, max_tokens: 512, messages: [{ role: 'user', content: text }],
        ...(tools ? { tools: [{ name: WEATHER.name, description: WEATHER.description, input_schema: WEATHER.parameters }] } : {}),
      });
      const pieces = [];
      let json = '';
      s.on('text', (d) => pieces.push(d));
      s.on('inputJson', (d) => { json += d; });
      const final = await s.finalMessage();
      const uses = final.content.filter((b) => b.type === 'tool_use');
      assert.equal(final.stop_reason, uses.length ? 'tool_use' : 'end_turn');
      return {
        pieces,
        text: final.content.filter((b) => b.type === 'text').map((b) => b.text).join(''),
        calls: uses.map((b) => ({ name: b.name, args: b.input, streamedArgs: uses.length === 1 ? json : undefined })),
      };
    },
  },

  gemini: {
    async plain(model, text, tools) {
      const config = tools ? { tools: [{ functionDeclarations: [{ name: WEATHER.name, description: WEATHER.description, parametersJsonSchema: WEATHER.parameters }] }] } : {};
      const r = await genai().models.generateContent({ model, contents: text, config });
      const parts = r.candidates[0].content.parts ?? [];
      return { text: geminiText(r.candidates[0]), calls: parts.filter((p) => p.functionCall).map((p) => ({ name: p.functionCall.name, args: p.functionCall.args })) };
    },
    async streamed(model, text, tools) {
      const config = tools ? { tools: [{ functionDeclarations: [{ name: WEATHER.name, description: WEATHER.description, parametersJsonSchema: WEATHER.parameters }] }] } : {};
      const pieces = [];
      const calls = [];
      let finish;
      for await (const ch of await genai().models.generateContentStream({ model, contents: text, config })) {
        const cand = ch.candidates?.[0];
        const t = geminiText(cand);
        if (t) pieces.push(t);
        for (const p of cand?.content?.parts ?? []) {
          if (p.functionCall) calls.push({ name: p.functionCall.name, args: p.functionCall.args, streamedArgs: JSON.stringify(p.functionCall.args) });
        }
        if (cand?.finishReason) finish = cand.finishReason;
      }
      assert.equal(finish, 'STOP');
      return { pieces, text: pieces.join(''), calls };
    },
  },
};

for (const [style, drive] of Object.entries(styles)) {
  for (const [kind, model] of Object.entries(MODELS)) {
    test(`stream ${style} ← ${kind}: text pieces join to the non-streamed text`, async () => {
      const m = unique(`s${style}${kind}`.replace(/[^a-z0-9]/gi, ''));
      const text = `hello ${m} how are you today`;
      const plain = await drive.plain(model, text);
      assert.equal(plain.text.trim(), `You said: ${text}`);
      const s = await drive.streamed(model, text);
      assert.ok(s.pieces.length >= 3, `the text arrives in pieces (${s.pieces.length}: ${JSON.stringify(s.pieces)})`);
      assert.equal(s.pieces.join(''), plain.text);
      assert.equal(s.text, plain.text);
      const up = await upstreamRequestContaining(m);
      assert.ok(up, 'the upstream saw the request');
      assert.match(up.path, UPSTREAM_PATH[kind], `the upstream was asked to stream (${up.path})`);
      if (kind !== 'gemini') assert.equal(up.body.stream, true, 'the upstream was asked to stream');
    });

    test(`stream ${style} ← ${kind}: a streamed tool call arrives complete with its name and arguments`, async () => {
      const m = unique('stool');
      const args = { city: `Paris-${m}` };
      const text = `CALL get_weather ${JSON.stringify(args)}`;
      const plain = await drive.plain(model, text, true);
      assert.deepEqual(plain.calls, [{ name: 'get_weather', args }]);
      const s = await drive.streamed(model, text, true);
      assert.equal(s.calls.length, 1, JSON.stringify(s.calls));
      assert.equal(s.calls[0].name, 'get_weather');
      assert.deepEqual(s.calls[0].args, args);
      assert.ok(s.calls[0].streamedArgs, 'the arguments were streamed');
      assert.deepEqual(JSON.parse(s.calls[0].streamedArgs), args, 'the argument pieces join to the arguments');
      assert.equal(s.text, '');
    });
  }
}

// The raw Responses events, whatever the upstream kind: valid Open Responses streaming events
// with sequence numbers 0,1,2..., and the stored response equals response.completed.

for (const [kind, model] of Object.entries(MODELS)) {
  test(`raw Responses stream ← ${kind}: every event valid and numbered; the stored response equals response.completed`, async () => {
    const m = unique('rawm');
    const args = JSON.stringify({ city: `Oslo-${m}` });
    for (const body of [
      { model, input: `hello ${m}`, stream: true },
      { model, input: `CALL get_weather ${args}`, stream: true, tools: [{ type: 'function', ...WEATHER }] },
    ]) {
      const r = await sse('/v1/responses', { body });
      assert.equal(r.status, 200, r.raw);
      r.events.forEach((e, i) => {
        assert.equal(e.event, e.data.type);
        assert.equal(e.data.sequence_number, i);
        assert.ok(validateEvent(e.data), `${e.event}: ${JSON.stringify(validateEvent.errors?.slice(0, 5))}\n${e.text}`);
      });
      assert.equal(r.events[0].event, 'response.created');
      const last = r.events.at(-1);
      assert.equal(last.event, 'response.completed', r.raw.slice(-600));
      const out = last.data.response.output;
      if (body.tools) {
        const fc = out.filter((o) => o.type === 'function_call');
        assert.equal(fc.length, 1, JSON.stringify(out));
        assert.equal(fc[0].name, 'get_weather');
        assert.deepEqual(JSON.parse(fc[0].arguments), JSON.parse(args));
        const deltas = r.events.filter((e) => e.event === 'response.function_call_arguments.delta').map((e) => e.data.delta).join('');
        assert.deepEqual(JSON.parse(deltas), JSON.parse(args));
      } else {
        const deltas = r.events.filter((e) => e.event === 'response.output_text.delta').map((e) => e.data.delta).join('');
        assert.equal(deltas, `You said: hello ${m}`);
        assert.equal(respText(last.data.response), deltas);
      }
      const got = await http('GET', `/v1/responses/${last.data.response.id}`);
      assert.equal(got.status, 200, got.text);
      assert.deepEqual(got.json, last.data.response);
    }
  });
}
