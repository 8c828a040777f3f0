// Structured output in both styles: Responses text.format and Chat
// Completions response_format (json_schema, json_object), strict-schema
// checks, the worker's validation with one retry, strict tool arguments, and
// the structured_output capability.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import {
  client, http, unique, ensureModel, upstreamRequestContaining, upstreamRequestsContaining, assertOpenAIError,
} from './harness.mjs';

const ajv = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);

// A strict-mode schema with nested objects, arrays, enum, $defs/$ref, minLength and minimum.
const reviewSchema = {
  type: 'object',
  properties: {
    summary: { type: 'string', minLength: 3 },
    rating: { type: 'integer', minimum: 1, maximum: 5 },
    sentiment: { type: 'string', enum: ['positive', 'neutral', 'negative'] },
    tags: { type: 'array', items: { type: 'string', enum: ['food', 'service', 'price'] } },
    author: { $ref: '#/$defs/person' },
    scores: {
      type: 'object',
      properties: { taste: { type: 'number', minimum: 0.5 }, value: { type: 'number', minimum: 0, maximum: 10 } },
      required: ['taste', 'value'],
      additionalProperties: false,
    },
    reviewers: { type: 'array', items: { $ref: '#/$defs/person' } },
  },
  required: ['summary', 'rating', 'sentiment', 'tags', 'author', 'scores', 'reviewers'],
  additionalProperties: false,
  $defs: {
    person: {
      type: 'object',
      properties: { name: { type: 'string', minLength: 2 }, age: { type: 'integer', minimum: 18 } },
      required: ['name', 'age'],
      additionalProperties: false,
    },
  },
};
const validateReview = ajv.compile(reviewSchema);

const simpleSchema = {
  type: 'object',
  properties: { answer: { type: 'string' }, count: { type: 'integer', minimum: 3 } },
  required: ['answer', 'count'],
  additionalProperties: false,
};
const validateSimple = ajv.compile(simpleSchema);

const textFormat = (name, schema, strict = true) => ({ format: { type: 'json_schema', name, strict, schema } });
const chatFormat = (name, schema, strict = true) => ({ type: 'json_schema', json_schema: { name, strict, schema } });
const postResp = (body) => http('POST', '/v1/responses', { body });
const postChat = (body) => http('POST', '/v1/chat/completions', { body });

function responseText(r) {
  const msg = r.output.find((o) => o.type === 'message');
  assert.ok(msg, JSON.stringify(r.output));
  return msg.content.filter((p) => p.type === 'output_text').map((p) => p.text).join('');
}

test('Responses text.format json_schema: valid JSON output, upstream response_format, format echoed', async () => {
  const m = unique('rev');
  const r = await client().responses.create({
    model: 'emu-chat', input: `Review of the cafe ${m}`, text: textFormat('cafe_review', reviewSchema),
  });
  assert.equal(r.status, 'completed');
  const out = JSON.parse(r.output_text);
  assert.ok(validateReview(out), JSON.stringify(validateReview.errors));
  assert.equal(out.summary, `Review of the cafe ${m}`, 'the first free-form string carries the user text');
  assert.deepEqual(r.text.format, { type: 'json_schema', name: 'cafe_review', strict: true, schema: reviewSchema });

  const up = await upstreamRequestContaining(`Review of the cafe ${m}`);
  assert.equal(up.body.response_format.type, 'json_schema');
  assert.equal(up.body.response_format.json_schema.name, 'cafe_review');
  assert.equal(up.body.response_format.json_schema.strict, true);
  assert.deepEqual(up.body.response_format.json_schema.schema, reviewSchema);

  // The stored response keeps the format too.
  const got = await http('GET', `/v1/responses/${r.id}`);
  assert.equal(got.status, 200);
  assert.deepEqual(got.json.text.format, r.text.format);
});

test('Responses: strict schemas that break strict rules, bad names and missing schemas are 400', async () => {
  const loose = { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] };
  const res = await postResp({ model: 'emu-chat', input: 'x', text: textFormat('loose_schema_name', loose) });
  assertOpenAIError(res, 400, { type: 'invalid_request_error' });
  assert.match(res.json.error.message, /loose_schema_name/);

  const notAllRequired = { type: 'object', properties: { a: { type: 'string' }, b: { type: 'string' } }, required: ['a'], additionalProperties: false };
  const res2 = await postResp({ model: 'emu-chat', input: 'x', text: textFormat('partial_required', notAllRequired) });
  assertOpenAIError(res2, 400);
  assert.match(res2.json.error.message, /partial_required/);

  const nested = {
    type: 'object', properties: { inner: { type: 'object', properties: { z: { type: 'string' } }, required: ['z'] } },
    required: ['inner'], additionalProperties: false,
  };
  const res3 = await postResp({ model: 'emu-chat', input: 'x', text: textFormat('nested_loose', nested) });
  assertOpenAIError(res3, 400);
  assert.match(res3.json.error.message, /nested_loose/);

  assertOpenAIError(await postResp({ model: 'emu-chat', input: 'x', text: textFormat('bad name!', simpleSchema) }), 400);
  assertOpenAIError(await postResp({ model: 'emu-chat', input: 'x', text: textFormat('x'.repeat(65), simpleSchema) }), 400);
  assertOpenAIError(await postResp({ model: 'emu-chat', input: 'x', text: { format: { type: 'json_schema', name: 'no_schema', strict: true } } }), 400);
  assertOpenAIError(await postResp({ model: 'emu-chat', input: 'x', text: { format: { type: 'json_schema', schema: simpleSchema } } }), 400);
  assertOpenAIError(await postResp({ model: 'emu-chat', input: 'x', text: { format: { type: 'json_schema', name: 'arr', schema: [1] } } }), 400);
});

test('Responses: a schema violation once is retried by the worker and returns valid JSON', async () => {
  const tag = unique('once');
  const r = await client().responses.create({
    model: 'emu-chat', input: `[[emu:schema_violation_once=${tag}]] please ${tag}`, text: textFormat('simple', simpleSchema),
  });
  const out = JSON.parse(r.output_text);
  assert.ok(validateSimple(out), JSON.stringify(validateSimple.errors));
  const reqs = await upstreamRequestsContaining(tag);
  assert.equal(reqs.length, 2, 'one upstream request, one retry');
});

test('Responses: a schema violation every time is 502 invalid_structured_output after exactly one retry', async () => {
  const m = unique('always');
  const res = await postResp({ model: 'emu-chat', input: `[[emu:schema_violation]] ${m}`, text: textFormat('simple', simpleSchema) });
  assertOpenAIError(res, 502, { code: 'invalid_structured_output' });
  const reqs = await upstreamRequestsContaining(m);
  assert.equal(reqs.length, 2);
});

test('Responses: strict:false is not validated; the upstream body passes through', async () => {
  const m = unique('nostrict');
  const r = await client().responses.create({
    model: 'emu-chat', input: `[[emu:schema_violation]] ${m}`, text: textFormat('simple', simpleSchema, false),
  });
  assert.equal(r.status, 'completed');
  assert.equal(r.text.format.strict, false);
  const out = JSON.parse(r.output_text);
  assert.equal(validateSimple(out), false, 'the emulator broke the schema, and nothing fixed it');
  assert.equal((await upstreamRequestsContaining(m)).length, 1, 'no retry without strict');
});

test('Chat Completions response_format json_schema: valid output, retry once, 502 on repeated violation', async () => {
  const m = unique('chatjs');
  const c = await client().chat.completions.create({
    model: 'emu-chat', messages: [{ role: 'user', content: `Review ${m}` }], response_format: chatFormat('cafe_review', reviewSchema),
  });
  const out = JSON.parse(c.choices[0].message.content);
  assert.ok(validateReview(out), JSON.stringify(validateReview.errors));
  assert.equal(out.summary, `Review ${m}`);
  const up = await upstreamRequestContaining(`Review ${m}`);
  assert.deepEqual(up.body.response_format, chatFormat('cafe_review', reviewSchema));

  const tag = unique('conce');
  const c2 = await client().chat.completions.create({
    model: 'emu-chat', messages: [{ role: 'user', content: `[[emu:schema_violation_once=${tag}]] go ${tag}` }],
    response_format: chatFormat('simple', simpleSchema),
  });
  assert.ok(validateSimple(JSON.parse(c2.choices[0].message.content)));
  assert.equal((await upstreamRequestsContaining(tag)).length, 2);

  const m3 = unique('calways');
  const res = await postChat({
    model: 'emu-chat', messages: [{ role: 'user', content: `[[emu:schema_violation]] ${m3}` }], response_format: chatFormat('simple', simpleSchema),
  });
  assertOpenAIError(res, 502, { code: 'invalid_structured_output' });
  assert.equal((await upstreamRequestsContaining(m3)).length, 2);

  // strict:false passes the upstream's body through unvalidated.
  const m4 = unique('cnostrict');
  const c4 = await client().chat.completions.create({
    model: 'emu-chat', messages: [{ role: 'user', content: `[[emu:schema_violation]] ${m4}` }], response_format: chatFormat('simple', simpleSchema, false),
  });
  assert.equal(validateSimple(JSON.parse(c4.choices[0].message.content)), false);
  assert.equal((await upstreamRequestsContaining(m4)).length, 1);

  // Strict-rule and name errors, as in Responses.
  const loose = { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] };
  const bad = await postChat({ model: 'emu-chat', messages: [{ role: 'user', content: 'x' }], response_format: chatFormat('chat_loose', loose) });
  assertOpenAIError(bad, 400);
  assert.match(bad.json.error.message, /chat_loose/);
  assertOpenAIError(await postChat({ model: 'emu-chat', messages: [{ role: 'user', content: 'x' }], response_format: chatFormat('bad name', simpleSchema) }), 400);
});

test('Chat Completions json_object: works when a message says "json", else the upstream 400 passes through', async () => {
  const m = unique('jobj');
  const c = await client().chat.completions.create({
    model: 'emu-chat', messages: [{ role: 'system', content: 'Reply in JSON.' }, { role: 'user', content: `echo ${m}` }],
    response_format: { type: 'json_object' },
  });
  assert.deepEqual(JSON.parse(c.choices[0].message.content), { echo: `echo ${m}` });
  const up = await upstreamRequestContaining(`echo ${m}`);
  assert.deepEqual(up.body.response_format, { type: 'json_object' });

  const res = await postChat({
    model: 'emu-chat', messages: [{ role: 'user', content: `no magic word ${unique()}` }], response_format: { type: 'json_object' },
  });
  assertOpenAIError(res, 400);
  assert.match(res.json.error.message, /json/);
});

test('strict function tool arguments are schema-valid, and a violating call is retried (Responses and Chat)', async () => {
  const params = {
    type: 'object',
    properties: {
      city: { type: 'string', minLength: 2 },
      days: { type: 'integer', minimum: 1, maximum: 7 },
      unit: { type: 'string', enum: ['c', 'f'] },
    },
    required: ['city', 'days', 'unit'],
    additionalProperties: false,
  };
  const validateArgs = ajv.compile(params);
  const tool = { type: 'function', name: 'forecast', description: 'Forecast', parameters: params };

  const m = unique('targs');
  const r = await client().responses.create({ model: 'emu-chat', input: `Oslo ${m}`, tools: [tool], tool_choice: { type: 'function', name: 'forecast' } });
  const fc = r.output.find((o) => o.type === 'function_call');
  assert.ok(fc, JSON.stringify(r.output));
  const args = JSON.parse(fc.arguments);
  assert.ok(validateArgs(args), JSON.stringify(validateArgs.errors));
  assert.equal(args.city, `Oslo ${m}`);

  const tag = unique('tonce');
  const r2 = await client().responses.create({
    model: 'emu-chat', input: `[[emu:schema_violation_once=${tag}]] Oslo ${tag}`, tools: [tool], tool_choice: 'required',
  });
  const fc2 = r2.output.find((o) => o.type === 'function_call');
  assert.ok(fc2, JSON.stringify(r2.output));
  assert.ok(validateArgs(JSON.parse(fc2.arguments)), fc2.arguments);
  assert.equal((await upstreamRequestsContaining(tag)).length, 2, 'strict tool arguments are validated and retried once');

  const tag3 = unique('ctonce');
  const c = await client().chat.completions.create({
    model: 'emu-chat', messages: [{ role: 'user', content: `[[emu:schema_violation_once=${tag3}]] Bergen ${tag3}` }],
    tools: [{ type: 'function', function: { name: 'forecast', parameters: params, strict: true } }],
    tool_choice: { type: 'function', function: { name: 'forecast' } },
  });
  const call = c.choices[0].message.tool_calls[0];
  assert.equal(call.function.name, 'forecast');
  assert.ok(validateArgs(JSON.parse(call.function.arguments)), call.function.arguments);
  assert.equal((await upstreamRequestsContaining(tag3)).length, 2);
});

// Issue 12: a Responses function tool with "strict" omitted is handled as OpenAI does: made strict when adding
// additionalProperties:false to its objects is all it takes (echoed strict:true with that schema), else run
// non-strict as given (echoed strict:false, arguments not validated). Only an explicit strict:true is checked.
const looseParams = {
  type: 'object',
  properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['c', 'f'] } },
  required: ['city'], // "unit" is optional: strict mode cannot express that
};
const fixableParams = {
  type: 'object',
  properties: {
    city: { type: 'string' },
    where: { type: 'object', properties: { lat: { type: 'number' }, lon: { type: 'number' } }, required: ['lat', 'lon'] },
    stops: { type: 'array', items: { anyOf: [{ $ref: '#/$defs/stop' }, { type: 'null' }] } },
  },
  required: ['city', 'where', 'stops'],
  $defs: { stop: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } },
};
const closedParams = {
  ...fixableParams,
  additionalProperties: false,
  properties: {
    ...fixableParams.properties,
    where: { ...fixableParams.properties.where, additionalProperties: false },
  },
  $defs: { stop: { ...fixableParams.$defs.stop, additionalProperties: false } },
};

test('Responses: a loose function tool without strict is accepted non-strict, echoed strict:false, and round-trips', async () => {
  const m = unique('loose');
  const c = client();
  const tool = { type: 'function', name: 'lookup', description: 'Weather lookup', parameters: looseParams };
  const first = await c.responses.create({ model: 'emu-chat', input: `CALL lookup {"city":"Oslo"}\n${m}`, tools: [tool] });
  assert.equal(first.status, 'completed');
  assert.equal(first.tools.length, 1);
  assert.equal(first.tools[0].strict, false);
  assert.deepEqual(first.tools[0].parameters, looseParams, 'a non-strict schema is kept as given');
  const fc = first.output.find((o) => o.type === 'function_call');
  assert.ok(fc, JSON.stringify(first.output));
  assert.equal(fc.name, 'lookup');
  assert.equal(fc.arguments, '{"city":"Oslo"}');
  const up = await upstreamRequestContaining(m);
  assert.equal(up.body.tools[0].function.strict, false);
  assert.deepEqual(up.body.tools[0].function.parameters, looseParams);

  const result = `{"temp_c":3,"tag":"${m}-out"}`;
  const second = await c.responses.create({
    model: 'emu-chat', previous_response_id: first.id, tools: [tool],
    input: [{ type: 'function_call_output', call_id: fc.call_id, output: result }],
  });
  assert.equal(second.output_text, `Tool result: ${result}`);
  assert.equal(second.tools[0].strict, false);

  // Non-strict: arguments that break the schema are passed on, with no validation and no retry.
  const v = unique('loosev');
  const r = await c.responses.create({
    model: 'emu-chat', input: `[[emu:schema_violation]] Oslo ${v}`, tools: [tool], tool_choice: { type: 'function', name: 'lookup' },
  });
  const vc = r.output.find((o) => o.type === 'function_call');
  assert.ok(vc, JSON.stringify(r.output));
  assert.equal(JSON.parse(vc.arguments).city, undefined, 'the emulator dropped the required property');
  assert.equal((await upstreamRequestsContaining(v)).length, 1, 'no retry for a non-strict tool');
});

test('Responses: a function tool without strict that only lacks additionalProperties:false is made strict', async () => {
  const m = unique('fixable');
  const c = client();
  const tool = { type: 'function', name: 'route', parameters: fixableParams };
  const args = '{"city":"Rome","where":{"lat":41.9,"lon":12.5},"stops":[{"name":"Colosseo"},null]}';
  const first = await c.responses.create({ model: 'emu-chat', input: `CALL route ${args}\n${m}`, tools: [tool] });
  assert.equal(first.status, 'completed');
  assert.equal(first.tools[0].strict, true);
  assert.deepEqual(first.tools[0].parameters, closedParams, 'additionalProperties:false added to every object');
  const fc = first.output.find((o) => o.type === 'function_call');
  assert.ok(fc, JSON.stringify(first.output));
  assert.equal(fc.name, 'route');
  assert.equal(fc.arguments, args);
  // The upstream (which checks strict schemas as OpenAI does) gets the strict, closed schema.
  const up = await upstreamRequestContaining(m);
  assert.equal(up.body.tools[0].function.strict, true);
  assert.deepEqual(up.body.tools[0].function.parameters, closedParams);

  const result = `{"eta_min":12,"tag":"${m}-out"}`;
  const second = await c.responses.create({
    model: 'emu-chat', previous_response_id: first.id, tools: [tool],
    input: [{ type: 'function_call_output', call_id: fc.call_id, output: result }],
  });
  assert.equal(second.output_text, `Tool result: ${result}`);

  // Strict: the worker validates the arguments and retries once.
  const tag = unique('fixv');
  const r = await c.responses.create({
    model: 'emu-chat', input: `[[emu:schema_violation_once=${tag}]] Rome ${tag}`, tools: [tool],
    tool_choice: { type: 'function', name: 'route' },
  });
  const vc = r.output.find((o) => o.type === 'function_call');
  assert.ok(vc, JSON.stringify(r.output));
  assert.ok(ajv.compile(closedParams)(JSON.parse(vc.arguments)), vc.arguments);
  assert.equal((await upstreamRequestsContaining(tag)).length, 2, 'strict tool arguments are validated and retried once');
});

test('Responses: explicit strict:true with a loose schema is still 400; explicit strict:false is taken as given', async () => {
  const m = unique('explicit');
  await assert.rejects(
    client().responses.create({
      model: 'emu-chat', input: m, tools: [{ type: 'function', name: 'route', parameters: fixableParams, strict: true }],
    }),
    (e) => {
      assert.equal(e.status, 400);
      assert.equal(e.error.type, 'invalid_request_error');
      assert.equal(e.error.param, 'tools[0].parameters');
      assert.equal(e.message.replace(/^400 /, ''),
        "Invalid schema for function 'route': In context=(), 'additionalProperties' is required to be supplied and to be false.");
      return true;
    });
  await assert.rejects(
    client().responses.create({
      model: 'emu-chat', input: m, tools: [{ type: 'function', name: 'lookup', parameters: looseParams, strict: true }],
    }),
    (e) => e.status === 400 && /Invalid schema for function 'lookup'/.test(e.message));
  assert.equal((await upstreamRequestsContaining(m)).length, 0, 'refused before the upstream');

  const r = await client().responses.create({
    model: 'emu-chat', input: `CALL route {"city":"Pisa"}\n${m}`,
    tools: [{ type: 'function', name: 'route', parameters: fixableParams, strict: false }],
  });
  assert.equal(r.tools[0].strict, false);
  assert.deepEqual(r.tools[0].parameters, fixableParams, 'not normalised');
  assert.equal(r.output.find((o) => o.type === 'function_call').arguments, '{"city":"Pisa"}');
});

// text.format json_schema: "strict" defaults to false in the real API (unlike function tools), so an omitted strict
// with a loose schema is accepted and echoed strict:false.
test('Responses text.format with strict omitted is non-strict, whatever the schema', async () => {
  const m = unique('fmtdefault');
  const r = await client().responses.create({
    model: 'emu-chat', input: m, text: { format: { type: 'json_schema', name: 'loose_fmt', schema: looseParams } },
  });
  assert.equal(r.status, 'completed');
  assert.equal(r.text.format.strict, false);
  assert.deepEqual(r.text.format.schema, looseParams);
});

test('a model without structured_output refuses json_schema formats with 400 unsupported_parameter', async () => {
  const model = ensureModel('it06-no-structured', { capabilities: { structured_output: false } });
  const m = unique('nostruct');
  const r = await postResp({ model, input: m, text: textFormat('simple', simpleSchema) });
  assertOpenAIError(r, 400, { code: 'unsupported_parameter' });
  const c = await postChat({ model, messages: [{ role: 'user', content: m }], response_format: chatFormat('simple', simpleSchema) });
  assertOpenAIError(c, 400, { code: 'unsupported_parameter' });
  assert.equal((await upstreamRequestsContaining(m)).length, 0, 'refused before the upstream');
  // Plain text still works on that model.
  const ok = await postResp({ model, input: `plain ${m}` });
  assert.equal(ok.status, 200, ok.text);
});
