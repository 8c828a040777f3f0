// Stored responses: chaining across frontends, store:false, GET/DELETE,
// and owner scoping (another account gets 404).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cfg, client, http, newAccountKey, unique, upstreamRequestContaining, assertOpenAIError } from './harness.mjs';

test('a response created on frontend A chains on frontend B with earlier input and output, without old instructions', async () => {
  const m1 = unique('alpha');
  const m2 = unique('beta');
  const a = client(cfg.frontendA);
  const b = client(cfg.frontendB);
  const first = await a.responses.create({ model: 'emu-chat', input: `first ${m1}`, instructions: `INSTR-${m1}` });
  const second = await b.responses.create({ model: 'emu-chat', input: `second ${m2}`, previous_response_id: first.id });
  assert.equal(second.previous_response_id, first.id);
  assert.equal(second.output_text, `You said: second ${m2}`);
  assert.equal(second.instructions, null);
  const up = await upstreamRequestContaining(`second ${m2}`);
  const msgs = up.body.messages;
  assert.deepEqual(msgs.map((m) => m.role), ['user', 'assistant', 'user']);
  assert.equal(msgs[0].content, `first ${m1}`);
  assert.equal(msgs[1].content, `You said: first ${m1}`);
  assert.equal(msgs[2].content, `second ${m2}`);
  assert.ok(!JSON.stringify(msgs).includes(`INSTR-${m1}`), 'instructions are not carried over');

  // A third turn sees the whole history, in order.
  const m3 = unique('gamma');
  await a.responses.create({ model: 'emu-chat', input: `third ${m3}`, previous_response_id: second.id });
  const up3 = await upstreamRequestContaining(`third ${m3}`);
  assert.deepEqual(up3.body.messages.map((m) => m.content), [
    `first ${m1}`, `You said: first ${m1}`, `second ${m2}`, `You said: second ${m2}`, `third ${m3}`,
  ]);
});

test('client-side chaining (output items appended to input) works the same', async () => {
  const m = unique('client');
  const c = client();
  const first = await c.responses.create({ model: 'emu-chat', input: `one ${m}`, store: false });
  const second = await c.responses.create({
    model: 'emu-chat',
    input: [{ role: 'user', content: `one ${m}` }, ...first.output, { role: 'user', content: `two ${m}` }],
    store: false,
  });
  assert.equal(second.output_text, `You said: two ${m}`);
  const up = await upstreamRequestContaining(`two ${m}`);
  assert.deepEqual(up.body.messages.map((x) => x.role), ['user', 'assistant', 'user']);
});

test('store:false responses cannot be fetched or chained', async () => {
  const r = await client().responses.create({ model: 'emu-chat', input: unique('nostore'), store: false });
  assert.equal(r.store, false);
  assertOpenAIError(await http('GET', `/v1/responses/${r.id}`), 404);
  const chained = await http('POST', '/v1/responses', {
    body: { model: 'emu-chat', input: 'next', previous_response_id: r.id },
  });
  assertOpenAIError(chained, 404, { code: 'previous_response_not_found' });
  assert.equal(chained.json.error.param, 'previous_response_id');
});

test('GET returns the stored response on any frontend; DELETE removes it everywhere', async () => {
  const r = await client().responses.create({ model: 'emu-chat', input: unique('get') });
  const got = await client(cfg.frontendB).responses.retrieve(r.id);
  assert.equal(got.id, r.id);
  assert.deepEqual(got.output, r.output);
  assert.equal(got.output_text, r.output_text);
  const del = await http('DELETE', `/v1/responses/${r.id}`, { base: cfg.frontendB });
  assert.equal(del.status, 200);
  assert.deepEqual(del.json, { id: r.id, object: 'response.deleted', deleted: true });
  assertOpenAIError(await http('GET', `/v1/responses/${r.id}`), 404);
  assertOpenAIError(await http('DELETE', `/v1/responses/${r.id}`), 404);
  assertOpenAIError(await http('POST', '/v1/responses', {
    body: { model: 'emu-chat', input: 'x', previous_response_id: r.id },
  }), 404);
});

test('another account gets 404 for a stored response, and cannot chain or delete it', async () => {
  const r = await client().responses.create({ model: 'emu-chat', input: unique('owner') });
  const other = newAccountKey();
  assertOpenAIError(await http('GET', `/v1/responses/${r.id}`, { key: other.key }), 404);
  assertOpenAIError(await http('DELETE', `/v1/responses/${r.id}`, { key: other.key }), 404);
  assertOpenAIError(await http('POST', '/v1/responses', {
    key: other.key, body: { model: 'emu-chat', input: 'x', previous_response_id: r.id },
  }), 404);
  // Still there for its owner.
  assert.equal((await http('GET', `/v1/responses/${r.id}`)).status, 200);
});
