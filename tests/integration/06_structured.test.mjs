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
