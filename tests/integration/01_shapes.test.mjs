// Chat Completions and Responses through the official openai SDK: shapes,
// the emulator's deterministic answer, usage, and the Open Responses schema.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { cfg, client, http, unique, upstreamRequestContaining } from './harness.mjs';

const spec = JSON.parse(readFileSync(new URL('../../../shared/spec/openresponses-openapi.json', import.meta.url)));
const ajv = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema({ $id: 'openresponses', components: spec.components });
const validateResponse = ajv.compile({ $ref: 'openresponses#/components/schemas/ResponseResource' });

test('chat completion via the openai SDK has the OpenAI shape', async () => {
  const marker = unique('chat');
  const c = await client().chat.completions.create({
    model: 'emu-chat',
    messages: [
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: `hello ${marker}` },
    ],
  });
  assert.match(c.id, /^chatcmpl-/);
  assert.equal(c.object, 'chat.completion');
  assert.equal(typeof c.created, 'number');
  assert.equal(c.model, 'emu-chat');
  assert.equal(c.choices.length, 1);
  assert.equal(c.choices[0].index, 0);
  assert.equal(c.choices[0].message.role, 'assistant');
  assert.equal(c.choices[0].message.content, `You said: hello ${marker}`);
  assert.equal(c.choices[0].finish_reason, 'stop');
  assert.ok(c.usage.prompt_tokens > 0 && c.usage.completion_tokens > 0);
  assert.equal(c.usage.total_tokens, c.usage.prompt_tokens + c.usage.completion_tokens);
  // The upstream got the system message, the user text and the route's upstream model name.
  const up = await upstreamRequestContaining(marker);
  assert.equal(up.path, '/v1/chat/completions');
  assert.equal(up.body.model, 'emu-model');
  assert.deepEqual(up.body.messages.map((m) => m.role), ['system', 'user']);
});

test('responses create via the openai SDK has the Response shape and validates against Open Responses', async () => {
  const marker = unique('resp');
  const r = await client().responses.create({ model: 'emu-chat', input: `hi ${marker}`, instructions: 'Be brief.' });
  assert.match(r.id, /^resp_/);
  assert.equal(r.object, 'response');
  assert.equal(r.status, 'completed');
  assert.equal(r.model, 'emu-chat');
  assert.equal(r.instructions, 'Be brief.');
  assert.equal(r.store, true);
  assert.equal(r.output_text, `You said: hi ${marker}`); // SDK helper joins output_text parts
  const msg = r.output.find((o) => o.type === 'message');
  assert.match(msg.id, /^msg_/);
  assert.equal(msg.role, 'assistant');
  assert.equal(msg.content[0].type, 'output_text');
  assert.deepEqual(msg.content[0].annotations, []);
  assert.ok(r.usage.input_tokens > 0 && r.usage.output_tokens > 0);
  assert.equal(r.usage.total_tokens, r.usage.input_tokens + r.usage.output_tokens);

  const raw = await http('POST', '/v1/responses', { body: { model: 'emu-chat', input: `raw ${marker}` } });
  assert.equal(raw.status, 200);
  assert.equal('output_text' in raw.json, false, 'output_text is an SDK helper, never sent');
  const ok = validateResponse(raw.json);
  assert.ok(ok, JSON.stringify(validateResponse.errors));
  assert.ok(raw.headers.get('x-request-id'));
});

test('message-list input with roles and developer text reaches the upstream in order', async () => {
  const marker = unique('list');
  const r = await client().responses.create({
    model: 'emu-chat',
    input: [
      { role: 'developer', content: 'Answer in English.' },
      { role: 'user', content: [{ type: 'input_text', text: `first ${marker}` }] },
      { type: 'message', role: 'assistant', content: 'earlier answer' },
      { role: 'user', content: `second ${marker}` },
    ],
  });
  assert.equal(r.output_text, `You said: second ${marker}`);
  const up = await upstreamRequestContaining(`second ${marker}`);
  assert.deepEqual(up.body.messages.map((m) => m.role), ['developer', 'user', 'assistant', 'user']);
  assert.equal(up.body.messages[2].content, 'earlier answer');
});

test('GET /v1/models lists the models the key may call', async () => {
  const list = await client().models.list();
  const ids = [];
  for await (const m of list) ids.push(m.id);
  assert.ok(ids.includes('emu-chat'), ids.join(','));
});

test('an upstream length stop makes an incomplete response and finish_reason length', async () => {
  const marker = unique('len');
  const r = await client().responses.create({ model: 'emu-chat', input: `[[emu:length]] many words here ${marker}` });
  assert.equal(r.status, 'incomplete');
  assert.equal(r.incomplete_details.reason, 'max_output_tokens');
  const c = await client().chat.completions.create({
    model: 'emu-chat', messages: [{ role: 'user', content: `[[emu:length]] many words ${marker}` }],
  });
  assert.equal(c.choices[0].finish_reason, 'length');
  void cfg;
});
