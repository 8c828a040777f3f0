// Generate Content (Google Gemini's wire format), driven by the official
// @google/genai SDK: text, system instruction, multi-turn, inline data,
// function calling round trips, structured output (JSON Schema and Google's
// Schema), several candidates, thinking with thought signatures, MAX_TOKENS,
// models.list / models.get; and Google's error body over raw HTTP.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GoogleGenAI, Type, FunctionCallingConfigMode } from '@google/genai';
import {
  cfg, http, unique, newAccountKey, ensureModel, upstreamRequestContaining,
} from './harness.mjs';

const MODEL = 'emu-chat';
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
const PNG_BYTES = Buffer.from(PNG, 'base64').length;

const genai = (apiKey = cfg.key, base = cfg.frontendA) => new GoogleGenAI({ apiKey, httpOptions: { baseUrl: base } });
const ai = genai();
const generate = (params) => ai.models.generateContent({ model: MODEL, ...params });

// Raw HTTP with Google's key header (or none: key null).
const gpost = (path, body, { key = cfg.key, headers = {}, raw } = {}) =>
  http('POST', path, { key: null, headers: key === null ? headers : { 'x-goog-api-key': key, ...headers }, body, raw });
const gget = (path, { key = cfg.key } = {}) => http('GET', path, { key: null, headers: key === null ? {} : { 'x-goog-api-key': key } });
const gen = (body, opts) => gpost(`/v1beta/models/${MODEL}:generateContent`, body, opts);

const STATUS = {
  400: 'INVALID_ARGUMENT', 401: 'UNAUTHENTICATED', 403: 'PERMISSION_DENIED', 404: 'NOT_FOUND',
  429: 'RESOURCE_EXHAUSTED', 500: 'INTERNAL', 502: 'UNAVAILABLE', 503: 'UNAVAILABLE', 504: 'DEADLINE_EXCEEDED',
};

function assertGoogleError(res, code) {
  assert.equal(res.status, code, `status ${res.status} body ${res.text}`);
  assert.ok(res.json && res.json.error, `Google error body expected, got ${res.text}`);
  const e = res.json.error;
  assert.equal(e.code, code);
  assert.equal(e.status, STATUS[code]);
  assert.equal(typeof e.message, 'string');
  assert.ok(e.message.length > 0);
  return e;
}

async function rejects400(promise, pattern) {
  await assert.rejects(promise, (err) => {
    assert.equal(err.status, 400, String(err));
    const body = JSON.parse(err.message);
    assert.equal(body.error.status, 'INVALID_ARGUMENT');
    if (pattern) assert.match(body.error.message, pattern);
    return true;
  });
}

const textOf = (cand) => (cand.content.parts ?? []).filter((p) => typeof p.text === 'string' && !p.thought).map((p) => p.text).join('');
const userText = (text) => ({ role: 'user', parts: [{ text }] });

const WEATHER = {
  name: 'get_weather',
  description: 'Weather for a city',
  parameters: { type: Type.OBJECT, properties: { city: { type: Type.STRING, description: 'City name' } }, required: ['city'] },
};
const TIME = { name: 'get_time', description: 'Local time', parametersJsonSchema: { type: 'object', properties: { tz: { type: 'string' } } } };

// ---- text, system, turns, shape ------------------------------------------------

test('text: the SDK gets a GenerateContentResponse with one candidate, usage, modelVersion and responseId', async () => {
  const m = unique('g');
  const r = await generate({ contents: `hello ${m}` });
  assert.equal(r.text, `You said: hello ${m}`);
  assert.equal(r.candidates.length, 1);
  const c = r.candidates[0];
  assert.equal(c.content.role, 'model');
  assert.deepEqual(c.content.parts, [{ text: `You said: hello ${m}` }]);
  assert.equal(c.finishReason, 'STOP');
  assert.equal(c.index, 0);
  assert.equal(r.modelVersion, MODEL);
  assert.ok(typeof r.responseId === 'string' && r.responseId.length >= 16);
  const u = r.usageMetadata;
  assert.ok(u.promptTokenCount > 0);
  assert.equal(u.candidatesTokenCount, 4);
  assert.equal(u.totalTokenCount, u.promptTokenCount + u.candidatesTokenCount);
  assert.equal(u.thoughtsTokenCount, undefined);
});

test('system instruction reaches the upstream as a system message; multi-turn history keeps its roles', async () => {
  const m = unique('sys');
  const r = await generate({
    contents: [userText(`first ${m}`), { role: 'model', parts: [{ text: `reply ${m}` }] }, userText(`second ${m}`)],
    config: { systemInstruction: `SYS-${m}`, temperature: 0.5, topP: 0.9, seed: 7, stopSequences: ['zzz'] },
  });
  assert.equal(r.text, `You said: second ${m}`);
  const up = await upstreamRequestContaining(`second ${m}`);
  assert.ok(up, 'the upstream saw the request');
  const msgs = up.body.messages;
  assert.deepEqual(msgs.map((x) => x.role), ['system', 'user', 'assistant', 'user']);
  assert.equal(msgs[0].content, `SYS-${m}`);
  assert.equal(msgs[2].content, `reply ${m}`);
  assert.equal(up.body.temperature, 0.5);
  assert.equal(up.body.top_p, 0.9);
  assert.equal(up.body.seed, 7);
  assert.deepEqual(up.body.stop, ['zzz']);

  // A role-less content is the user's; snake_case field names work as in proto3 JSON.
  const m2 = unique('snake');
  const raw = await gen({ contents: [{ parts: [{ text: `snake ${m2}` }] }], system_instruction: { parts: [{ text: 'S' }] },
    generation_config: { max_output_tokens: 50 } });
  assert.equal(raw.status, 200, raw.text);
  assert.equal(raw.json.candidates[0].content.parts[0].text, `You said: snake ${m2}`);
  const up2 = await upstreamRequestContaining(`snake ${m2}`);
  assert.equal(up2.body.messages[0].content, 'S');
  assert.equal(up2.body.max_tokens, 50);
});

test('inline data: image, PDF and WAV reach the upstream; unsupported media are a 400', async () => {
  const m = unique('img');
  const r = await generate({ contents: [{ role: 'user', parts: [{ text: `look ${m}` }, { inlineData: { mimeType: 'image/png', data: PNG } }] }] });
  assert.equal(r.text, `You said: look ${m} [image: data:image/png, ${PNG_BYTES} bytes]`);
  const up = await upstreamRequestContaining(`look ${m}`);
  const last = up.body.messages.at(-1).content;
  assert.equal(last[1].type, 'image_url');
  assert.equal(last[1].image_url.url, `data:image/png;base64,${PNG}`);

  const pdf = Buffer.from(`%PDF-1.4 ${m}`);
  const wav = Buffer.concat([Buffer.from('RIFF'), Buffer.alloc(40, 1)]);
  const r2 = await generate({ contents: [{ role: 'user', parts: [{ text: `docs ${m}` },
    { inlineData: { mimeType: 'application/pdf', data: pdf.toString('base64') } },
    { inlineData: { mimeType: 'audio/wav', data: wav.toString('base64') } }] }] });
  assert.ok(r2.text.includes(`[file: file.pdf, application/pdf, ${pdf.length} bytes]`), r2.text);
  assert.ok(r2.text.includes(`[audio: wav, ${wav.length} bytes]`), r2.text);

  // An image by http(s) URL through fileData.
  const r3 = await generate({ contents: [{ role: 'user', parts: [{ text: `url ${m}` }, { fileData: { mimeType: 'image/png', fileUri: 'https://example.com/cat.png' } }] }] });
  assert.equal(r3.text, `You said: url ${m} [image: https://example.com/cat.png]`);

  assertGoogleError(await gen({ contents: [{ parts: [{ inlineData: { mimeType: 'video/mp4', data: 'AAAA' } }] }] }), 400);
  assertGoogleError(await gen({ contents: [{ parts: [{ fileData: { mimeType: 'application/pdf', fileUri: 'https://generativelanguage.googleapis.com/v1beta/files/abc' } }] }] }), 400);
  assertGoogleError(await gen({ contents: [{ parts: [{ inlineData: { mimeType: 'image/png', data: '***' } }] }] }), 400);
});

// ---- function calling ----------------------------------------------------------

test('function call round trip: functionCall part with an id, then functionResponse → "Tool result: ..."', async () => {
  const m = unique('fc');
  const config = { tools: [{ functionDeclarations: [WEATHER, TIME] }] };
  const first = userText(`CALL get_weather {"city":"Paris-${m}"}`);
  const r = await generate({ contents: [first], config });
  const calls = r.functionCalls;
  assert.equal(calls.length, 1);
  assert.equal(calls[0].name, 'get_weather');
  assert.deepEqual(calls[0].args, { city: `Paris-${m}` });
  assert.ok(typeof calls[0].id === 'string' && calls[0].id.length > 0);
  assert.equal(r.candidates[0].finishReason, 'STOP');

  // Google's Schema was converted to JSON Schema for the upstream (non-strict).
  const up = await upstreamRequestContaining(`Paris-${m}`);
  const tools = up.body.tools.map((t) => t.function);
  assert.deepEqual(tools.map((t) => t.name), ['get_weather', 'get_time']);
  assert.deepEqual(tools[0].parameters, { type: 'object', properties: { city: { type: 'string', description: 'City name' } }, required: ['city'] });
  assert.deepEqual(tools[1].parameters, TIME.parametersJsonSchema);
  assert.ok(!tools[0].strict);

  // With the id given back.
  const cand = r.candidates[0].content;
  const r2 = await generate({
    contents: [first, cand, { role: 'user', parts: [{ functionResponse: { name: 'get_weather', id: calls[0].id, response: { temp: 21, tag: m } } }] }],
    config,
  });
  assert.equal(r2.text, `Tool result: {"temp":21,"tag":"${m}"}`);
  const up2 = await upstreamRequestContaining(m);
  const tail = up2.body.messages.slice(-2);
  assert.equal(tail[0].role, 'assistant');
  assert.equal(tail[0].tool_calls[0].id, calls[0].id);
  assert.equal(tail[1].role, 'tool');
  assert.equal(tail[1].tool_call_id, calls[0].id);

  // Without ids (as older clients send them): matched by name; {"result": "..."} is the output itself.
  const r3 = await generate({
    contents: [first, { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: { city: 'Paris' } } }] },
      { role: 'user', parts: [{ functionResponse: { name: 'get_weather', response: { result: `sunny-${m}` } } }] }],
    config,
  });
  assert.equal(r3.text, `Tool result: sunny-${m}`);

  // A response to a function nobody called.
  await rejects400(generate({
    contents: [first, { role: 'user', parts: [{ functionResponse: { name: 'get_time', response: { x: 1 } } }] }], config,
  }), /get_time/);
});

test('toolConfig: ANY with one allowed name forces that function, NONE turns tools off', async () => {
  const m = unique('any');
  const config = {
    tools: [{ functionDeclarations: [WEATHER, TIME] }],
    toolConfig: { functionCallingConfig: { mode: FunctionCallingConfigMode.ANY, allowedFunctionNames: ['get_weather'] } },
  };
  const r = await generate({ contents: `weather in ${m}`, config });
  assert.equal(r.functionCalls.length, 1);
  assert.equal(r.functionCalls[0].name, 'get_weather');
  const up = await upstreamRequestContaining(`weather in ${m}`);
  assert.deepEqual(up.body.tool_choice, { type: 'function', function: { name: 'get_weather' } });

  const m2 = unique('none');
  const r2 = await generate({ contents: `no tools ${m2}`, config: { ...config, toolConfig: { functionCallingConfig: { mode: FunctionCallingConfigMode.NONE } } } });
  assert.equal(r2.text, `You said: no tools ${m2}`);
  assert.equal((await upstreamRequestContaining(`no tools ${m2}`)).body.tool_choice, 'none');

  await rejects400(generate({ contents: 'x', config: { ...config, toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['nope'] } } } }));
  // googleSearch is run by the gateway (27_tools); a filter it cannot honour is still refused.
  await rejects400(generate({ contents: 'x', config: { tools: [{ googleSearch: { timeRangeFilter: { startTime: '2026-01-01T00:00:00Z', endTime: '2026-02-01T00:00:00Z' } } }] } }),
    /time_range_filter|timeRangeFilter/);
  // codeExecution is run by the gateway too (31_code_styles); a tool it does not run is refused.
  await rejects400(generate({ contents: 'x', config: { tools: [{ urlContext: {} }] } }));
});

// ---- structured output -----------------------------------------------------------

test('structured output: responseJsonSchema and Google\'s responseSchema both give parseable JSON', async () => {
  const PERSON = {
    type: 'object',
    properties: { name: { type: 'string' }, age: { type: 'integer', minimum: 1 } },
    required: ['name', 'age'],
    additionalProperties: false,
  };
  const m = unique('json');
  const r = await generate({ contents: `person ${m}`, config: { responseMimeType: 'application/json', responseJsonSchema: PERSON } });
  const v = JSON.parse(r.text);
  assert.equal(typeof v.name, 'string');
  assert.ok(Number.isInteger(v.age) && v.age >= 1);
  const up = await upstreamRequestContaining(`person ${m}`);
  assert.equal(up.body.response_format.type, 'json_schema');
  assert.deepEqual(up.body.response_format.json_schema.schema, PERSON);

  const m2 = unique('schema');
  const r2 = await generate({
    contents: `pet ${m2}`,
    config: {
      responseMimeType: 'application/json',
      responseSchema: {
        type: Type.OBJECT,
        properties: {
          kind: { type: Type.STRING, enum: ['cat', 'dog'] },
          legs: { type: Type.INTEGER, minimum: 0, maximum: 8 },
          nick: { type: Type.STRING, nullable: true },
          tags: { type: Type.ARRAY, items: { type: Type.STRING }, minItems: '1' },
        },
        required: ['kind', 'legs', 'tags'],
        propertyOrdering: ['kind', 'legs', 'nick', 'tags'],
      },
    },
  });
  const pet = JSON.parse(r2.text);
  assert.ok(['cat', 'dog'].includes(pet.kind));
  assert.ok(Number.isInteger(pet.legs));
  assert.ok(Array.isArray(pet.tags) && pet.tags.length >= 1);
  const up2 = await upstreamRequestContaining(`pet ${m2}`);
  const schema = up2.body.response_format.json_schema.schema;
  assert.equal(schema.type, 'object');
  assert.equal(schema.properties.legs.type, 'integer');
  assert.deepEqual(schema.properties.nick.type, ['string', 'null']);
  assert.equal(schema.properties.tags.minItems, 1);
  assert.equal(schema.propertyOrdering, undefined);
  assert.equal(up2.body.response_format.json_schema.strict, false);

  // application/json alone is JSON mode (the upstream wants "json" in the prompt).
  const m3 = unique('mode');
  const r3 = await generate({ contents: `json please ${m3}`, config: { responseMimeType: 'application/json' } });
  assert.deepEqual(JSON.parse(r3.text), { echo: `json please ${m3}` });

  await rejects400(generate({ contents: 'x', config: { responseMimeType: 'text/csv' } }));
  assertGoogleError(await gen({ contents: [userText('x')], generationConfig: { responseSchema: { type: 'OBJECT' } } }), 400);
  assertGoogleError(await gen({ contents: [userText('x')], generationConfig: { responseMimeType: 'application/json', responseSchema: { type: 'OBJECT', bogus: 1 } } }), 400);
});

// ---- candidates, thinking, finish reasons -----------------------------------------

test('candidateCount 2 gives two candidates', async () => {
  const m = unique('n');
  const r = await generate({ contents: `twice ${m}`, config: { candidateCount: 2 } });
  assert.equal(r.candidates.length, 2);
  assert.deepEqual(r.candidates.map((c) => c.index), [0, 1]);
  assert.equal(textOf(r.candidates[0]), `You said: twice ${m}`);
  assert.equal(textOf(r.candidates[1]), `You said: twice ${m} #1`);
  assert.equal((await upstreamRequestContaining(`twice ${m}`)).body.n, 2);
  assertGoogleError(await gen({ contents: [userText('x')], generationConfig: { candidateCount: 9 } }), 400);
});

test('thinking: includeThoughts gives a thought part with a thoughtSignature that round-trips; a tampered one is a 400', async () => {
  const m = unique('think');
  const config = { thinkingConfig: { includeThoughts: true, thinkingBudget: 1024 } };
  const first = userText(`ponder ${m}`);
  const r = await generate({ contents: [first], config });
  const parts = r.candidates[0].content.parts;
  assert.equal(parts.length, 2);
  assert.equal(parts[0].thought, true);
  assert.equal(parts[0].text, `Reasoning (low) about: ponder ${m}`);
  assert.ok(typeof parts[0].thoughtSignature === 'string' && parts[0].thoughtSignature.length > 20);
  assert.ok(!parts[0].thoughtSignature.includes(m), 'the signature is sealed');
  assert.equal(r.text, `You said: ponder ${m}`);
  assert.ok(r.usageMetadata.thoughtsTokenCount > 0);
  assert.equal(r.usageMetadata.totalTokenCount,
    r.usageMetadata.promptTokenCount + r.usageMetadata.candidatesTokenCount + r.usageMetadata.thoughtsTokenCount);
  assert.equal((await upstreamRequestContaining(`ponder ${m}`)).body.reasoning_effort, 'low');

  const m2 = unique('again');
  const r2 = await generate({ contents: [first, r.candidates[0].content, userText(`again ${m2}`)], config });
  assert.equal(r2.text, `You said: again ${m2}`);
  const up2 = await upstreamRequestContaining(`again ${m2}`);
  assert.deepEqual(up2.body.messages.map((x) => x.role), ['user', 'assistant', 'user']);
  assert.equal(up2.body.messages[1].content, `You said: ponder ${m}`);

  const sig = parts[0].thoughtSignature;
  const i = Math.floor(sig.length / 2);
  const tampered = sig.slice(0, i) + (sig[i] === 'A' ? 'B' : 'A') + sig.slice(i + 1);
  const bad = { role: 'model', parts: [{ ...parts[0], thoughtSignature: tampered }, parts[1]] };
  await rejects400(generate({ contents: [first, bad, userText('x')], config }), /thought signature/);

  // Another account cannot use it either.
  const other = newAccountKey();
  await rejects400(genai(other.key).models.generateContent({ model: MODEL, contents: [first, r.candidates[0].content, userText('y')], config }));

  // Without includeThoughts no thought is shown; the signature rides on the text part and round-trips.
  const m3 = unique('quiet');
  const r3 = await generate({ contents: `quiet ${m3}`, config: { thinkingConfig: { thinkingBudget: 20000 } } });
  const p3 = r3.candidates[0].content.parts;
  assert.equal(p3.length, 1);
  assert.equal(p3[0].text, `You said: quiet ${m3}`);
  assert.ok(typeof p3[0].thoughtSignature === 'string');
  assert.equal((await upstreamRequestContaining(`quiet ${m3}`)).body.reasoning_effort, 'high');
  const r4 = await generate({ contents: [userText(`quiet ${m3}`), r3.candidates[0].content, userText(`more ${m3}`)] });
  assert.equal(r4.text, `You said: more ${m3}`);

  // Budget 0 turns thinking off.
  const m5 = unique('off');
  await generate({ contents: `off ${m5}`, config: { thinkingConfig: { thinkingBudget: 0 } } });
  assert.equal((await upstreamRequestContaining(`off ${m5}`)).body.reasoning_effort, 'none');
});

test('thinking with a function call: the signature on the functionCall part carries the reasoning and the call', async () => {
  const m = unique('thinkcall');
  const config = { tools: [{ functionDeclarations: [WEATHER] }], thinkingConfig: { thinkingBudget: 2048 } };
  const first = userText(`CALL get_weather {"city":"Oslo-${m}"}`);
  const r = await generate({ contents: [first], config });
  const parts = r.candidates[0].content.parts;
  assert.equal(parts.length, 1, JSON.stringify(parts));
  assert.equal(parts[0].functionCall.name, 'get_weather');
  assert.ok(typeof parts[0].thoughtSignature === 'string', 'the call carries the reasoning before it');
  const id = parts[0].functionCall.id;
  const reply = { role: 'user', parts: [{ functionResponse: { name: 'get_weather', id, response: { output: `rain-${m}` } } }] };
  const r2 = await generate({ contents: [first, r.candidates[0].content, reply], config });
  assert.equal(r2.text, `Tool result: rain-${m}`);

  // The signature belongs to that call: moved onto another call it is refused.
  const moved = { role: 'model', parts: [{ functionCall: { name: 'get_weather', id: 'call_other', args: { city: 'x' } }, thoughtSignature: parts[0].thoughtSignature }] };
  await rejects400(generate({ contents: [first, moved, { role: 'user', parts: [{ functionResponse: { name: 'get_weather', id: 'call_other', response: {} } }] }], config }));

  // With includeThoughts the thought comes first, as its own part.
  const m2 = unique('thinkcall2');
  const r3 = await generate({ contents: `CALL get_weather {"city":"Rome-${m2}"}`, config: { ...config, thinkingConfig: { thinkingBudget: 2048, includeThoughts: true } } });
  const p3 = r3.candidates[0].content.parts;
  assert.deepEqual(p3.map((p) => (p.thought ? 'thought' : p.functionCall ? 'call' : 'text')), ['thought', 'call']);
});

test('maxOutputTokens: a cut answer has finishReason MAX_TOKENS', async () => {
  const m = unique('len');
  const r = await generate({ contents: `one two three ${m}`, config: { maxOutputTokens: 1 } });
  assert.equal(r.candidates[0].finishReason, 'MAX_TOKENS');
  assert.equal(r.text, 'You');
  assert.equal((await upstreamRequestContaining(`one two three ${m}`)).body.max_tokens, 1);
});

// ---- models ----------------------------------------------------------------------

test('models.list and models.get: Google\'s Model resource, only the models the key\'s group allows', async () => {
  const seen = [];
  for await (const model of await ai.models.list()) seen.push(model);
  const chat = seen.find((x) => x.name === `models/${MODEL}`);
  assert.ok(chat, JSON.stringify(seen.map((x) => x.name)));
  assert.equal(chat.displayName, MODEL);
  assert.equal(chat.version, '001');
  assert.ok(chat.inputTokenLimit > 0 && chat.outputTokenLimit > 0);
  assert.deepEqual(chat.supportedActions ?? chat.supportedGenerationMethods, ['generateContent', 'countTokens']);

  // Paging one by one gives the same list.
  const paged = [];
  for await (const model of await ai.models.list({ config: { pageSize: 1 } })) paged.push(model.name);
  assert.deepEqual(paged, seen.map((x) => x.name));

  const got = await ai.models.get({ model: MODEL });
  assert.equal(got.name, `models/${MODEL}`);
  assert.equal(got.inputTokenLimit, chat.inputTokenLimit);

  const other = ensureModel('it12-other');
  const narrow = newAccountKey({ models: [MODEL] });
  const list = await gget('/v1beta/models', { key: narrow.key });
  assert.equal(list.status, 200, list.text);
  assert.deepEqual(list.json.models.map((x) => x.name), [`models/${MODEL}`]);
  assert.equal(list.json.nextPageToken, undefined);
  assertGoogleError(await gget(`/v1beta/models/${other}`, { key: narrow.key }), 404);
  assertGoogleError(await gget('/v1beta/models/no-such-model-it12'), 404);
  const one = await gget(`/v1beta/models/${MODEL}`);
  assert.equal(one.status, 200);
  assert.equal(one.json.name, `models/${MODEL}`);
});

// ---- errors in Google's body ----------------------------------------------------------

test('auth: x-goog-api-key or ?key=; a bad or missing key is 401 UNAUTHENTICATED', async () => {
  const body = { contents: [userText(`auth ${unique()}`)] };
  assertGoogleError(await gen(body, { key: 'sk-bad-key-0000000000000000000000000000' }), 401);
  assertGoogleError(await gen(body, { key: null }), 401);
  const q = await gpost(`/v1beta/models/${MODEL}:generateContent?key=${encodeURIComponent(cfg.key)}`, body, { key: null });
  assert.equal(q.status, 200, q.text);
  assert.ok(q.json.candidates[0].content.parts[0].text.startsWith('You said: auth'));
  await assert.rejects(genai('not-a-real-key').models.generateContent({ model: MODEL, contents: 'x' }), (e) => e.status === 401);
});

test('model not allowed is 403 PERMISSION_DENIED; unknown model is 404 NOT_FOUND', async () => {
  const other = ensureModel('it12-other');
  const narrow = newAccountKey({ models: [MODEL] });
  const body = { contents: [userText('x')] };
  assertGoogleError(await gpost(`/v1beta/models/${other}:generateContent`, body, { key: narrow.key }), 403);
  assertGoogleError(await gpost('/v1beta/models/no-such-model-it12:generateContent', body), 404);
  const ok = await gpost(`/v1beta/models/${MODEL}:generateContent`, body, { key: narrow.key });
  assert.equal(ok.status, 200, ok.text);
});

test('request errors are 400 INVALID_ARGUMENT in Google\'s words', async () => {
  let e = assertGoogleError(await gen({ contents: [userText('x')], foo: 1 }), 400);
  assert.equal(e.message, 'Invalid JSON payload received. Unknown name "foo": Cannot find field.');
  e = assertGoogleError(await gen({ contents: [userText('x')], generationConfig: { temprature: 1 } }), 400);
  assert.equal(e.message, 'Invalid JSON payload received. Unknown name "temprature" at \'generation_config\': Cannot find field.');
  e = assertGoogleError(await gen({ contents: [{ role: 'user', parts: [{ txt: 'x' }] }] }), 400);
  assert.match(e.message, /Unknown name "txt" at 'contents\[0\]\.parts\[0\]'/);
  // Other styles' bodies.
  assertGoogleError(await gen({ messages: [{ role: 'user', content: 'x' }] }), 400);
  assertGoogleError(await gen({ input: 'x' }), 400);
  // Shapes and values.
  assertGoogleError(await gen({}), 400);
  assertGoogleError(await gen({ contents: [] }), 400);
  assertGoogleError(await gen({ contents: [{ role: 'assistant', parts: [{ text: 'x' }] }] }), 400);
  assertGoogleError(await gen({ contents: [{ role: 'user', parts: [] }] }), 400);
  assertGoogleError(await gen({ contents: [userText('x')], generationConfig: { temperature: 'hot' } }), 400);
  assertGoogleError(await gen({ contents: [userText('x')], generationConfig: { temperature: 3 } }), 400);
  assertGoogleError(await gen({ contents: 'x' }), 400);
  assertGoogleError(await gen(undefined, { raw: '{not json', headers: { 'content-type': 'application/json' } }), 400);
  // Parameters the gateway cannot honour say why.
  // safetySettings are carried to a Gemini upstream and ignored by others (docs/compatibility.md; 21_compat).
  const safe = await gen({ contents: [userText(`safe ${unique()}`)], safetySettings: [{ category: 'HARM_CATEGORY_HARASSMENT', threshold: 'BLOCK_NONE' }] });
  assert.equal(safe.status, 200, safe.text);
  const empty = await gen({ contents: [userText(`safe ${unique()}`)], safetySettings: [] });
  assert.equal(empty.status, 200, empty.text);
  assertGoogleError(await gen({ contents: [userText('x')], cachedContent: 'cachedContents/abc' }), 400);
  assertGoogleError(await gen({ contents: [userText('x')], generationConfig: { responseModalities: ['IMAGE'] } }), 400);
});

test('upstream errors keep their status, with Google\'s status names', async () => {
  for (const status of [400, 429, 500, 502, 503]) {
    const res = await gen({ contents: [userText(`[[emu:status=${status}]] ${unique()}`)] });
    const e = assertGoogleError(res, status);
    assert.match(e.message, new RegExp(`emulated upstream error ${status}`));
  }
});

// ---- models.countTokens ------------------------------------------------------------------

// Each seeded model kind and the upstream endpoint its count must reach: the
// provider's own counting endpoint, or (openai-chat has none) a generation
// of one output token.
const COUNT_MODELS = [
  ['emu-chat', '/v1/chat/completions'],
  ['emu-responses', '/v1/responses/input_tokens'],
  ['emu-claude', '/v1/messages/count_tokens'],
  ['emu-gemini', '/v1beta/models/emu-model:countTokens'],
];

for (const [model, endpoint] of COUNT_MODELS) {
  test(`countTokens on ${model}: the promptTokenCount a generation reports, counted at ${endpoint}`, async () => {
    const m = unique('gcount');
    const contents = [
      userText(`first question ${m}`),
      { role: 'model', parts: [{ text: 'an earlier answer' }] },
      userText(`count these five words ${m}`),
    ];
    const count = await ai.models.countTokens({ model, contents });
    assert.ok(Number.isInteger(count.totalTokens) && count.totalTokens > 0, JSON.stringify(count));
    const up = await upstreamRequestContaining(m);
    assert.equal(up.path, endpoint);
    assert.equal(up.status, 200);
    if (model === 'emu-chat') assert.equal(up.body.max_tokens, 1); // counted by a one-token generation
    if (model === 'emu-gemini') assert.equal(up.body.generateContentRequest.model, 'models/emu-model');

    const r = await ai.models.generateContent({ model, contents });
    assert.equal(count.totalTokens, r.usageMetadata.promptTokenCount);

    // The generateContentRequest form counts everything a request sends.
    const m2 = unique('gcount2');
    const req = { contents: [userText(`with a system instruction ${m2}`)], systemInstruction: { parts: [{ text: `Be brief ${m2}.` }] } };
    const raw = await gpost(`/v1beta/models/${model}:countTokens`, { generateContentRequest: { model: `models/${model}`, ...req } });
    assert.equal(raw.status, 200, raw.text);
    assert.deepEqual(Object.keys(raw.json), ['totalTokens']);
    const gen2 = await gpost(`/v1beta/models/${model}:generateContent`, req);
    assert.equal(gen2.status, 200, gen2.text);
    assert.equal(raw.json.totalTokens, gen2.json.usageMetadata.promptTokenCount);
  });
}

test('countTokens errors in Google\'s body', async () => {
  const body = { contents: [userText(`count err ${unique()}`)] };
  const count = (model, b = body, opts) => gpost(`/v1beta/models/${model}:countTokens`, b, opts);
  assertGoogleError(await count('no-such-model-it12'), 404);
  await assert.rejects(ai.models.countTokens({ model: 'no-such-model-it12', contents: 'x' }), (e) => e.status === 404);
  const narrow = newAccountKey({ models: [MODEL] });
  assertGoogleError(await count('emu-gemini', body, { key: narrow.key }), 403);
  assertGoogleError(await count('emu-gemini', body, { key: 'sk-bad-key-0000000000000000000000000000' }), 401);
  let e = assertGoogleError(await count('emu-gemini', {}), 400);
  assert.match(e.message, /contents is not specified/);
  assertGoogleError(await count('emu-gemini', { contents: [] }), 400);
  e = assertGoogleError(await count('emu-gemini', { generateContentRequest: {} }), 400);
  assert.match(e.message, /contents is not specified/);
  assertGoogleError(await count('emu-gemini', { ...body, generateContentRequest: body }), 400);
  e = assertGoogleError(await count('emu-gemini', { ...body, generationConfig: {} }), 400);
  assert.match(e.message, /Unknown name "generationConfig"/);
  // Upstream failures keep their status.
  assertGoogleError(await count('emu-chat', { contents: [userText('x [[emu:status=503]]')] }), 503);
});
