// Responses items and tools: the full Response object (validated against the
// Open Responses schema), input item forms, function tools and their
// round trip (server- and client-side), metadata, and the input_items list.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import {
  cfg, client, http, unique, newAccountKey, upstreamRequestContaining, assertOpenAIError,
} from './harness.mjs';

const spec = JSON.parse(readFileSync(new URL('../../../shared/spec/openresponses-openapi.json', import.meta.url)));
const ajv = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema({ $id: 'openresponses', components: spec.components });
const validateResponse = ajv.compile({ $ref: 'openresponses#/components/schemas/ResponseResource' });

// A 1x1 PNG (70 bytes decoded).
const PNG_B64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
const PNG_BYTES = Buffer.from(PNG_B64, 'base64').length;

const weatherParams = {
  type: 'object',
  properties: { city: { type: 'string' } },
  required: ['city'],
  additionalProperties: false,
};
const weatherTool = { type: 'function', name: 'get_weather', description: 'Current weather in a city', parameters: weatherParams };

const post = (body, opts = {}) => http('POST', '/v1/responses', { body, ...opts });

// The text of a message item: string content or its text parts joined.
function itemText(item) {
  if (typeof item.content === 'string') return item.content;
  return (item.content || []).filter((p) => typeof p.text === 'string').map((p) => p.text).join(' ');
}

// The text of an upstream Chat Completions message (string or text parts).
function upText(m) {
  if (typeof m.content === 'string') return m.content;
  return (m.content || []).filter((p) => p.type === 'text').map((p) => p.text).join(' ');
}

function assertFullResponse(r, { model = 'emu-chat' } = {}) {
  assert.equal('output_text' in r, false, 'output_text is an SDK helper, never sent');
  for (const f of ['id', 'object', 'created_at', 'status', 'model', 'output', 'usage', 'error', 'incomplete_details',
    'instructions', 'previous_response_id', 'store', 'text', 'tools', 'reasoning', 'metadata']) {
    assert.ok(f in r, `field ${f} missing from ${JSON.stringify(r)}`);
  }
  assert.match(r.id, /^resp_/);
  assert.equal(r.object, 'response');
  assert.equal(typeof r.created_at, 'number');
  assert.ok(Number.isInteger(r.created_at) && r.created_at > 1.6e9 && r.created_at < 1e10, 'created_at in seconds');
  assert.equal(r.model, model);
  assert.ok(Array.isArray(r.output) && r.output.length > 0);
  assert.equal(r.error, null);
  assert.equal(typeof r.usage.input_tokens, 'number');
  assert.equal(typeof r.usage.output_tokens, 'number');
  assert.equal(r.usage.total_tokens, r.usage.input_tokens + r.usage.output_tokens);
  assert.equal(typeof r.usage.output_tokens_details.reasoning_tokens, 'number');
  assert.ok(Array.isArray(r.tools));
  assert.equal(typeof r.text, 'object');
  assert.ok(r.reasoning && 'effort' in r.reasoning && 'summary' in r.reasoning, `reasoning ${JSON.stringify(r.reasoning)}`);
  assert.equal(typeof r.metadata, 'object');
  assert.notEqual(r.metadata, null);
  for (const item of r.output) assert.ok(typeof item.id === 'string' && item.id.length > 0, `output item without id: ${JSON.stringify(item)}`);
  const ok = validateResponse(r);
  assert.ok(ok, JSON.stringify(validateResponse.errors));
}

test('the raw Response object has every field, no output_text, and validates (message, function_call and reasoning items)', async () => {
  const m = unique('shape');
  const plain = await post({ model: 'emu-chat', input: `plain ${m}` });
  assert.equal(plain.status, 200, plain.text);
  assertFullResponse(plain.json);
  assert.equal(plain.json.status, 'completed');
  assert.equal(plain.json.incomplete_details, null);
  assert.equal(plain.json.instructions, null);
  assert.equal(plain.json.previous_response_id, null);
  assert.equal(plain.json.store, true);
  assert.deepEqual(plain.json.tools, []);
  assert.deepEqual(plain.json.metadata, {});
  assert.equal(plain.json.usage.output_tokens_details.reasoning_tokens, 0);
  const msg = plain.json.output.find((o) => o.type === 'message');
  assert.equal(msg.content[0].text, `You said: plain ${m}`);

  // A function call with reasoning: output holds a reasoning item and a function_call item.
  const withCall = await post({
    model: 'emu-chat',
    input: `CALL get_weather {"city":"Paris"}\n${m}`,
    tools: [weatherTool],
    reasoning: { effort: 'low' },
  });
  assert.equal(withCall.status, 200, withCall.text);
  assertFullResponse(withCall.json);
  const types = withCall.json.output.map((o) => o.type);
  assert.deepEqual(types, ['reasoning', 'function_call']);
  assert.match(withCall.json.output[0].id, /^rs_/);
  assert.match(withCall.json.output[1].id, /^fc_/);
  assert.equal(withCall.json.reasoning.effort, 'low');
  assert.ok(withCall.json.usage.output_tokens_details.reasoning_tokens > 0);
});

test('input as a string, as role/content items with text and image parts, and the upstream messages', async () => {
  const m = unique('inp');
  const r = await client().responses.create({ model: 'emu-chat', input: `just a string ${m}` });
  assert.equal(r.output_text, `You said: just a string ${m}`);

  const url = `https://example.com/cat-${m}.png`;
  const r2 = await client().responses.create({
    model: 'emu-chat',
    input: [
      { role: 'developer', content: 'Be helpful.' },
      { role: 'system', content: [{ type: 'input_text', text: 'System rules.' }] },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: `earlier ${m}` }] },
      { role: 'assistant', content: 'An earlier answer.' },
      {
        role: 'user',
        content: [
          { type: 'input_text', text: `look ${m}` },
          { type: 'input_image', image_url: url, detail: 'auto' },
          { type: 'input_image', image_url: `data:image/png;base64,${PNG_B64}` },
        ],
      },
    ],
  });
  assert.equal(r2.output_text, `You said: look ${m} [image: ${url}] [image: data:image/png, ${PNG_BYTES} bytes]`);
  const up = await upstreamRequestContaining(`look ${m}`);
  assert.deepEqual(up.body.messages.map((x) => x.role), ['developer', 'system', 'user', 'assistant', 'user']);
  assert.equal(upText(up.body.messages[0]), 'Be helpful.');
  assert.equal(upText(up.body.messages[1]), 'System rules.');
  assert.equal(upText(up.body.messages[2]), `earlier ${m}`);
  assert.equal(upText(up.body.messages[3]), 'An earlier answer.');
  const parts = up.body.messages[4].content;
  assert.ok(Array.isArray(parts), JSON.stringify(up.body.messages[4]));
  const images = parts.filter((p) => p.type === 'image_url');
  assert.equal(images.length, 2, JSON.stringify(parts));
  assert.equal(images[0].image_url.url, url);
  assert.equal(images[1].image_url.url, `data:image/png;base64,${PNG_B64}`);
  assert.deepEqual(parts.filter((p) => p.type === 'text').map((p) => p.text), [`look ${m}`]);
});

test('400 for inputs and parameters the Responses style does not take', async () => {
  const user = (content) => ({ model: 'emu-chat', input: [{ role: 'user', content }] });
  const cases = [
    ['image URL that is not a URL', user([{ type: 'input_text', text: 'x' }, { type: 'input_image', image_url: 'not a url' }])],
    ['image with an ftp URL', user([{ type: 'input_image', image_url: 'ftp://example.com/a.png' }])],
    ['data URL that is not base64 image data', user([{ type: 'input_image', image_url: 'data:image/png;base64,%%%not-base64%%%' }])],
    ['input_audio part', user([{ type: 'input_audio', input_audio: { data: 'UklGRiQAAABXQVZF', format: 'wav' } }])],
    ['n', { model: 'emu-chat', input: 'x', n: 2 }],
    ['modalities', { model: 'emu-chat', input: 'x', modalities: ['text', 'audio'] }],
    ['audio', { model: 'emu-chat', input: 'x', audio: { voice: 'alloy', format: 'wav' } }],
    ['messages instead of input', { model: 'emu-chat', messages: [{ role: 'user', content: 'x' }] }],
    ['unknown item type', { model: 'emu-chat', input: [{ type: 'no_such_item', foo: 1 }] }],
  ];
  for (const [name, body] of cases) {
    const res = await post(body);
    assert.equal(res.status, 400, `${name}: ${res.status} ${res.text}`);
    assertOpenAIError(res, 400, { type: 'invalid_request_error' });
  }
});

test('a malformed image URL is refused by the gateway itself, naming the Responses input field', async () => {
  for (const bad of ['data:image/png;base64,%%%not-base64%%%', 'data:text/plain;base64,aGVsbG8=', 'javascript:alert(1)']) {
    const m = unique('badimg');
    const res = await post({
      model: 'emu-chat',
      input: [{ role: 'user', content: [{ type: 'input_text', text: m }, { type: 'input_image', image_url: bad }] }],
    });
    assertOpenAIError(res, 400, { type: 'invalid_request_error' });
    assert.match(String(res.json.error.param), /^input\[0\]/, `${bad}: the error names the field the client sent: ${res.text}`);
    assert.equal(await upstreamRequestContaining(m), undefined, `${bad}: no upstream request for an invalid input`);
  }
});

test('function tools: internally tagged, strict when the schema allows, echoed; a loose schema runs non-strict', async () => {
  const m = unique('tools');
  const r = await post({ model: 'emu-chat', input: `no call ${m}`, tools: [weatherTool] });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.tools.length, 1);
  const t = r.json.tools[0];
  assert.equal(t.type, 'function');
  assert.equal(t.name, 'get_weather');
  assert.equal(t.description, 'Current weather in a city');
  assert.deepEqual(t.parameters, weatherParams);
  assert.equal(t.strict, true, 'function tools are strict by default in the Responses style');
  const up = await upstreamRequestContaining(`no call ${m}`);
  assert.equal(up.body.tools.length, 1);
  assert.equal(up.body.tools[0].type, 'function');
  assert.equal(up.body.tools[0].function.name, 'get_weather');
  assert.deepEqual(up.body.tools[0].function.parameters, weatherParams);

  const loose = { type: 'object', properties: { city: { type: 'string' }, unit: { type: 'string' } }, required: ['city'] };
  // As OpenAI: with strict omitted, a schema strict mode cannot express (an optional property) runs non-strict;
  // only an explicit strict:true refuses it.
  const omitted = await post({ model: 'emu-chat', input: `omitted ${m}`, tools: [{ type: 'function', name: 'loose_fn', parameters: loose }] });
  assert.equal(omitted.status, 200, omitted.text);
  assert.equal(omitted.json.tools[0].strict, false);
  assert.deepEqual(omitted.json.tools[0].parameters, loose);
  const refused = await post({ model: 'emu-chat', input: 'x', tools: [{ type: 'function', name: 'loose_fn', parameters: loose, strict: true }] });
  assertOpenAIError(refused, 400);
  const accepted = await post({
    model: 'emu-chat', input: `loose ${m}`, tools: [{ type: 'function', name: 'loose_fn', parameters: loose, strict: false }],
  });
  assert.equal(accepted.status, 200, accepted.text);
  assert.equal(accepted.json.tools[0].strict, false);
  assert.deepEqual(accepted.json.tools[0].parameters, loose);

  // An externally tagged (Chat-style) tool is not the Responses shape.
  const external = await post({ model: 'emu-chat', input: 'x', tools: [{ type: 'function', function: { name: 'f', parameters: weatherParams } }] });
  assertOpenAIError(external, 400);
});

test('a function call round trip through previous_response_id', async () => {
  const m = unique('fcall');
  const c = client();
  const first = await c.responses.create({ model: 'emu-chat', input: `CALL get_weather {"city":"Paris"}\n${m}`, tools: [weatherTool] });
  const calls = first.output.filter((o) => o.type === 'function_call');
  assert.equal(calls.length, 1, JSON.stringify(first.output));
  const fc = calls[0];
  assert.match(fc.id, /^fc_/);
  assert.equal(typeof fc.call_id, 'string');
  assert.ok(fc.call_id.length > 0);
  assert.equal(fc.name, 'get_weather');
  assert.equal(fc.arguments, '{"city":"Paris"}');
  assert.equal(fc.status, 'completed');

  const result = `{"temp_c":21,"tag":"${m}-out"}`;
  const second = await c.responses.create({
    model: 'emu-chat',
    previous_response_id: first.id,
    input: [{ type: 'function_call_output', call_id: fc.call_id, output: result }],
    tools: [weatherTool],
  });
  assert.equal(second.output_text, `Tool result: ${result}`);
  const up = await upstreamRequestContaining(`${m}-out`);
  const msgs = up.body.messages;
  assert.deepEqual(msgs.map((x) => x.role), ['user', 'assistant', 'tool']);
  assert.equal(msgs[1].tool_calls.length, 1);
  assert.equal(msgs[1].tool_calls[0].id, fc.call_id);
  assert.equal(msgs[1].tool_calls[0].type, 'function');
  assert.equal(msgs[1].tool_calls[0].function.name, 'get_weather');
  assert.equal(msgs[1].tool_calls[0].function.arguments, '{"city":"Paris"}');
  assert.equal(msgs[2].tool_call_id, fc.call_id);
  assert.equal(upText(msgs[2]), result);

  // The follow-up's own input items: just the function_call_output.
  const items = await http('GET', `/v1/responses/${second.id}/input_items`);
  assert.equal(items.status, 200, items.text);
  assert.equal(items.json.data.length, 1, items.text);
  assert.equal(items.json.data[0].type, 'function_call_output');
  assert.equal(items.json.data[0].call_id, fc.call_id);
  assert.equal(items.json.data[0].output, result);
  assert.ok(items.json.data[0].id);
});

test('client-side chaining with function_call_output and store:false works the same', async () => {
  const m = unique('fclient');
  const c = client();
  const callText = `CALL get_weather {"city":"Oslo"}\n${m}`;
  const first = await c.responses.create({ model: 'emu-chat', input: callText, tools: [weatherTool], store: false });
  const fc = first.output.find((o) => o.type === 'function_call');
  assert.ok(fc, JSON.stringify(first.output));
  assert.equal(fc.arguments, '{"city":"Oslo"}');
  const result = `cold-${m}`;
  const second = await c.responses.create({
    model: 'emu-chat',
    store: false,
    tools: [weatherTool],
    input: [
      { role: 'user', content: callText },
      ...first.output,
      { type: 'function_call_output', call_id: fc.call_id, output: result },
    ],
  });
  assert.equal(second.output_text, `Tool result: ${result}`);
  assert.equal(second.store, false);
  const up = await upstreamRequestContaining(result);
  const msgs = up.body.messages;
  assert.deepEqual(msgs.map((x) => x.role), ['user', 'assistant', 'tool']);
  assert.equal(msgs[1].tool_calls[0].id, fc.call_id);
  assert.equal(msgs[1].tool_calls[0].function.arguments, '{"city":"Oslo"}');
  assert.equal(msgs[2].tool_call_id, fc.call_id);
});

test('function_call_output with an unknown call_id, and tool_choice naming a missing function, are 400', async () => {
  const m = unique('badcall');
  const first = await client().responses.create({ model: 'emu-chat', input: `CALL get_weather {"city":"Rome"}\n${m}`, tools: [weatherTool] });
  const viaPrev = await post({
    model: 'emu-chat', previous_response_id: first.id, tools: [weatherTool],
    input: [{ type: 'function_call_output', call_id: 'call_doesnotexist123', output: 'x' }],
  });
  assertOpenAIError(viaPrev, 400, { code: 'invalid_function_call_output' });
  const noCallAtAll = await post({
    model: 'emu-chat', tools: [weatherTool], store: false,
    input: [{ role: 'user', content: 'hi' }, { type: 'function_call_output', call_id: 'call_nowhere456', output: 'x' }],
  });
  assertOpenAIError(noCallAtAll, 400, { code: 'invalid_function_call_output' });

  const badChoice = await post({
    model: 'emu-chat', input: 'x', tools: [weatherTool], tool_choice: { type: 'function', name: 'not_a_tool' },
  });
  assertOpenAIError(badChoice, 400);
  const choiceWithoutTools = await post({ model: 'emu-chat', input: 'x', tool_choice: { type: 'function', name: 'get_weather' } });
  assertOpenAIError(choiceWithoutTools, 400);
});

test('tool_choice "required" makes the model call the first tool, with arguments from its schema', async () => {
  const m = unique('req');
  const other = { type: 'function', name: 'get_time', parameters: { type: 'object', properties: { zone: { type: 'string' } }, required: ['zone'], additionalProperties: false } };
  const r = await client().responses.create({
    model: 'emu-chat', input: `weather please ${m}`, tools: [weatherTool, other], tool_choice: 'required',
  });
  const calls = r.output.filter((o) => o.type === 'function_call');
  assert.equal(calls.length, 1, JSON.stringify(r.output));
  assert.equal(calls[0].name, 'get_weather');
  assert.deepEqual(JSON.parse(calls[0].arguments), { city: `weather please ${m}` });
  assert.equal(r.tool_choice, 'required');
  const up = await upstreamRequestContaining(`weather please ${m}`);
  assert.equal(up.body.tool_choice, 'required');

  // A named function choice forces that one.
  const r2 = await client().responses.create({
    model: 'emu-chat', input: `what time ${m}`, tools: [weatherTool, other], tool_choice: { type: 'function', name: 'get_time' },
  });
  const c2 = r2.output.find((o) => o.type === 'function_call');
  assert.equal(c2.name, 'get_time');
  assert.deepEqual(JSON.parse(c2.arguments), { zone: `what time ${m}` });
});

test('metadata is echoed and stored; more than 16 keys is 400', async () => {
  const meta = { order: unique('ord'), customer: 'acme', empty: '' };
  const r = await post({ model: 'emu-chat', input: 'meta', metadata: meta });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json.metadata, meta);
  const got = await http('GET', `/v1/responses/${r.json.id}`);
  assert.equal(got.status, 200);
  assert.deepEqual(got.json.metadata, meta);

  const sixteen = Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`k${i}`, `v${i}`]));
  assert.equal((await post({ model: 'emu-chat', input: 'meta16', metadata: sixteen })).status, 200);
  const seventeen = { ...sixteen, k16: 'v16' };
  const res = await post({ model: 'emu-chat', input: 'meta17', metadata: seventeen });
  assertOpenAIError(res, 400, { type: 'invalid_request_error' });
  assert.equal(res.json.error.param, 'metadata');
  assertOpenAIError(await post({ model: 'emu-chat', input: 'x', metadata: { n: 1 } }), 400);
});

test('GET /v1/responses/{id}/input_items: list shape, own items only, order, limit and after', async () => {
  const m = unique('items');
  const c = client();
  const first = await c.responses.create({ model: 'emu-chat', input: `zero ${m}` });
  const second = await c.responses.create({
    model: 'emu-chat',
    previous_response_id: first.id,
    input: [
      { role: 'user', content: `one ${m}` },
      { role: 'user', content: [{ type: 'input_text', text: `two ${m}` }] },
      { type: 'message', role: 'user', content: `three ${m}` },
    ],
  });

  const desc = await http('GET', `/v1/responses/${second.id}/input_items`);
  assert.equal(desc.status, 200, desc.text);
  const L = desc.json;
  assert.equal(L.object, 'list');
  assert.ok(Array.isArray(L.data));
  // Only this request's own input: not the inherited "zero" turn nor its answer.
  assert.deepEqual(L.data.map(itemText), [`three ${m}`, `two ${m}`, `one ${m}`], 'default order is desc');
  for (const it of L.data) {
    assert.equal(it.type, 'message');
    assert.equal(it.role, 'user');
    assert.ok(typeof it.id === 'string' && it.id.length > 0);
  }
  assert.equal(new Set(L.data.map((x) => x.id)).size, 3);
  assert.equal(L.first_id, L.data[0].id);
  assert.equal(L.last_id, L.data[2].id);
  assert.equal(L.has_more, false);

  const asc = await http('GET', `/v1/responses/${second.id}/input_items?order=asc`);
  assert.equal(asc.status, 200);
  assert.deepEqual(asc.json.data.map(itemText), [`one ${m}`, `two ${m}`, `three ${m}`]);
  assert.deepEqual(asc.json.data.map((x) => x.id), [...L.data.map((x) => x.id)].reverse());

  const one = await http('GET', `/v1/responses/${second.id}/input_items?limit=1`);
  assert.equal(one.status, 200);
  assert.equal(one.json.data.length, 1);
  assert.equal(one.json.data[0].id, L.data[0].id);
  assert.equal(one.json.has_more, true);
  assert.equal(one.json.first_id, L.data[0].id);
  assert.equal(one.json.last_id, L.data[0].id);

  const next = await http('GET', `/v1/responses/${second.id}/input_items?limit=1&after=${encodeURIComponent(L.data[0].id)}`);
  assert.equal(next.status, 200);
  assert.deepEqual(next.json.data.map((x) => x.id), [L.data[1].id]);
  assert.equal(next.json.has_more, true);
  const rest = await http('GET', `/v1/responses/${second.id}/input_items?after=${encodeURIComponent(L.data[1].id)}`);
  assert.deepEqual(rest.json.data.map((x) => x.id), [L.data[2].id]);
  assert.equal(rest.json.has_more, false);
  const ascAfter = await http('GET', `/v1/responses/${second.id}/input_items?order=asc&after=${encodeURIComponent(asc.json.data[0].id)}`);
  assert.deepEqual(ascAfter.json.data.map(itemText), [`two ${m}`, `three ${m}`]);

  // The first response's own input: its string input as one user message.
  const firstItems = await http('GET', `/v1/responses/${first.id}/input_items`);
  assert.deepEqual(firstItems.json.data.map(itemText), [`zero ${m}`]);

  // The SDK's list works (and pages) the same.
  const page = await c.responses.inputItems.list(second.id, { order: 'asc' });
  assert.deepEqual(page.data.map((x) => x.id), asc.json.data.map((x) => x.id));
  const all = [];
  for await (const it of c.responses.inputItems.list(second.id, { limit: 1 })) all.push(it.id);
  assert.deepEqual(all, L.data.map((x) => x.id));

  assertOpenAIError(await http('GET', `/v1/responses/${second.id}/input_items?order=sideways`), 400);
});

test('input_items: another account gets 404; after DELETE it is 404 and cannot be chained', async () => {
  const m = unique('itdel');
  const r = await client().responses.create({ model: 'emu-chat', input: `gone soon ${m}` });
  const other = newAccountKey();
  assertOpenAIError(await http('GET', `/v1/responses/${r.id}/input_items`, { key: other.key }), 404);
  assert.equal((await http('GET', `/v1/responses/${r.id}/input_items`, { base: cfg.frontendB })).status, 200);
  const del = await http('DELETE', `/v1/responses/${r.id}`);
  assert.equal(del.status, 200, del.text);
  assertOpenAIError(await http('GET', `/v1/responses/${r.id}/input_items`), 404);
  assertOpenAIError(await http('GET', `/v1/responses/${r.id}/input_items`, { base: cfg.frontendB }), 404);
  assertOpenAIError(await post({ model: 'emu-chat', input: 'after delete', previous_response_id: r.id }), 404);
  assertOpenAIError(await http('GET', '/v1/responses/resp_doesnotexist000/input_items'), 404);
});
