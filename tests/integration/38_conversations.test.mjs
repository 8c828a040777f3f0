// The Conversations API (issue 18): CRUD and items through the official
// SDK, responses that read a conversation and append their turn, concurrent
// turns that never interleave, owners (another account gets 404), and a
// deleted conversation that can no longer be used.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cfg, client, http, newAccountKey, unique, upstreamRequestContaining } from './harness.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

test('conversations CRUD and items through the SDK', async () => {
  const openai = client();
  const m = unique('conv');
  const conv = await openai.conversations.create({
    metadata: { topic: m },
    items: [{ type: 'message', role: 'user', content: `hello ${m}` }],
  });
  assert.match(conv.id, /^conv_[0-9a-f]+$/);
  assert.equal(conv.object, 'conversation');
  assert.equal(conv.metadata.topic, m);
  assert.ok(Math.abs(conv.created_at - Date.now() / 1000) < 60);

  const got = await client(cfg.frontendB).conversations.retrieve(conv.id);
  assert.deepEqual(got, conv);
  const upd = await openai.conversations.update(conv.id, { metadata: { topic: 'changed' } });
  assert.equal(upd.metadata.topic, 'changed');

  const added = await openai.conversations.items.create(conv.id, {
    items: [
      { type: 'message', role: 'assistant', content: 'Hi.' },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'second' }] },
    ],
  });
  assert.equal(added.object, 'list');
  assert.equal(added.data.length, 2);
  assert.equal(added.first_id, added.data[0].id);
  assert.equal(added.last_id, added.data[1].id);

  // Listed newest first by default; asc on request; paged with after.
  const desc = [];
  for await (const it of openai.conversations.items.list(conv.id, { limit: 2 })) desc.push(it);
  assert.equal(desc.length, 3);
  assert.equal(desc[0].id, added.data[1].id);
  const asc = await openai.conversations.items.list(conv.id, { order: 'asc' });
  assert.equal(asc.data[0].content[0].text, `hello ${m}`);
  assert.deepEqual(asc.data.map((i) => i.id), desc.map((i) => i.id).reverse());

  const one = await openai.conversations.items.retrieve(added.data[0].id, { conversation_id: conv.id });
  assert.equal(one.id, added.data[0].id);
  assert.equal(one.role, 'assistant');
  const after = await openai.conversations.items.delete(added.data[0].id, { conversation_id: conv.id });
  assert.equal(after.id, conv.id);
  const left = await openai.conversations.items.list(conv.id, { order: 'asc' });
  assert.equal(left.data.length, 2);
  const gone = await http('GET', `/v1/conversations/${conv.id}/items/${added.data[0].id}`);
  assert.equal(gone.status, 404, gone.text);

  // Bad input: too many items, an unknown field, an item that is not one.
  const many = Array.from({ length: 21 }, () => ({ type: 'message', role: 'user', content: 'x' }));
  const r1 = await http('POST', '/v1/conversations', { body: { items: many } });
  assert.equal(r1.status, 400, r1.text);
  assert.equal(r1.json.error.param, 'items');
  const r2 = await http('POST', '/v1/conversations', { body: { frob: 1 } });
  assert.equal(r2.status, 400, r2.text);
  const r3 = await http('POST', `/v1/conversations/${conv.id}/items`, { body: { items: [{ type: 'nonsense' }] } });
  assert.equal(r3.status, 400, r3.text);
  const r4 = await http('POST', `/v1/conversations/${conv.id}/items`, { body: {} });
  assert.equal(r4.status, 400, r4.text);
  assert.equal(r4.json.error.param, 'items');

  const del = await openai.conversations.delete(conv.id);
  assert.deepEqual(del, { id: conv.id, object: 'conversation.deleted', deleted: true });
  const r5 = await http('GET', `/v1/conversations/${conv.id}`);
  assert.equal(r5.status, 404, r5.text);
  assert.match(r5.json.error.message, /not found/);
});

test('responses read the conversation and append their turn; previous_response_id with it is a 400', async () => {
  const openai = client();
  const m = unique('turn');
  const conv = await openai.conversations.create({ items: [{ type: 'message', role: 'user', content: `remember ${m}` }] });
  const r1 = await openai.responses.create({ model: 'emu-chat', input: 'first question', conversation: conv.id });
  assert.equal(r1.status, 'completed');
  assert.equal(r1.conversation.id, conv.id);
  // The upstream saw the conversation's items before the new input.
  const r2 = await client(cfg.frontendB).responses.create({
    model: 'emu-chat', input: 'second question', conversation: { id: conv.id }, store: false,
  });
  assert.equal(r2.status, 'completed');
  const up = JSON.stringify((await upstreamRequestContaining(`second question`)).body);
  const order = [`remember ${m}`, 'first question', r1.output[0].content[0].text, 'second question'].map((t) => up.indexOf(t));
  assert.ok(order.every((p, i) => p >= 0 && (i === 0 || p > order[i - 1])), `context order in the upstream request: ${order}`);
  const items = (await openai.conversations.items.list(conv.id, { order: 'asc', limit: 100 })).data;
  // seed, (q1, a1), (q2, a2)
  assert.equal(items.length, 5);
  assert.equal(items[0].content[0].text, `remember ${m}`);
  assert.equal(items[1].content[0].text, 'first question');
  assert.equal(items[2].id, r1.output[0].id);
  assert.equal(items[3].content[0].text, 'second question');
  assert.equal(items[4].id, r2.output[0].id);

  const both = await http('POST', '/v1/responses', {
    body: { model: 'emu-chat', input: 'x', conversation: conv.id, previous_response_id: r1.id },
  });
  assert.equal(both.status, 400, both.text);
  assert.equal(both.json.error.param, 'conversation');

  // A streamed turn lands before the stream's end.
  const stream = await openai.responses.create({ model: 'emu-chat', input: 'streamed', conversation: conv.id, stream: true });
  let done;
  for await (const ev of stream) if (ev.type === 'response.completed') done = ev.response;
  assert.equal(done.conversation.id, conv.id);
  const n = (await openai.conversations.items.list(conv.id, { limit: 100 })).data.length;
  assert.equal(n, 7);
});

test('concurrent turns on one conversation are appended whole, never interleaved', async () => {
  const openai = client();
  const conv = await openai.conversations.create({});
  const turns = await Promise.all(Array.from({ length: 8 }, (_, i) => client(i % 2 ? cfg.frontendB : cfg.frontendA)
    .responses.create({ model: 'emu-chat', conversation: conv.id,
      input: [{ role: 'user', content: `turn ${i} a` }, { role: 'user', content: `turn ${i} b` }] })));
  const items = [];
  for await (const it of openai.conversations.items.list(conv.id, { order: 'asc', limit: 100 })) items.push(it);
  assert.equal(items.length, 8 * 3);
  for (let k = 0; k < items.length; k += 3) {
    const m = items[k].content[0].text.match(/^turn (\d+) a$/);
    assert.ok(m, `item ${k} opens a turn: ${JSON.stringify(items[k])}`);
    assert.equal(items[k + 1].content[0].text, `turn ${m[1]} b`);
    assert.equal(items[k + 2].id, turns[Number(m[1])].output[0].id);
  }
});

test('a background response on a conversation appends its turn when it is finalized', async () => {
  const openai = client();
  const conv = await openai.conversations.create({});
  const bg = await openai.responses.create({ model: 'emu-chat', input: 'in the background', conversation: conv.id, background: true });
  assert.equal(bg.status, 'queued');
  let body;
  for (let i = 0; i < 200; i++) {
    body = await openai.responses.retrieve(bg.id);
    if (body.status === 'completed') break;
    await sleep(50);
  }
  assert.equal(body.status, 'completed');
  const items = (await openai.conversations.items.list(conv.id, { order: 'asc' })).data;
  assert.equal(items.length, 2);
  assert.equal(items[0].content[0].text, 'in the background');
  assert.equal(items[1].id, body.output[0].id);
});

test('another account gets 404 for every conversation endpoint; a deleted conversation cannot be used', async () => {
  const openai = client();
  const conv = await openai.conversations.create({ items: [{ type: 'message', role: 'user', content: 'mine' }] });
  const item = (await openai.conversations.items.list(conv.id)).data[0];
  const other = newAccountKey();
  const calls = [
    ['GET', `/v1/conversations/${conv.id}`], ['POST', `/v1/conversations/${conv.id}`, { metadata: {} }],
    ['DELETE', `/v1/conversations/${conv.id}`], ['GET', `/v1/conversations/${conv.id}/items`],
    ['POST', `/v1/conversations/${conv.id}/items`, { items: [{ type: 'message', role: 'user', content: 'x' }] }],
    ['GET', `/v1/conversations/${conv.id}/items/${item.id}`], ['DELETE', `/v1/conversations/${conv.id}/items/${item.id}`],
  ];
  for (const [method, path, body] of calls) {
    const r = await http(method, path, { key: other.key, body });
    assert.equal(r.status, 404, `${method} ${path}: ${r.text}`);
  }
  const r = await http('POST', '/v1/responses', { key: other.key, body: { model: 'emu-chat', input: 'x', conversation: conv.id } });
  assert.equal(r.status, 404, r.text);
  assert.equal(r.json.error.param, 'conversation');
  // Still whole for its owner.
  assert.equal((await openai.conversations.items.list(conv.id)).data.length, 1);
  await openai.conversations.delete(conv.id);
  const after = await http('POST', '/v1/responses', { body: { model: 'emu-chat', input: 'x', conversation: conv.id } });
  assert.equal(after.status, 404, after.text);
});

test('a conversation works with every upstream kind', async () => {
  const openai = client();
  for (const model of ['emu-chat', 'emu-responses', 'emu-claude', 'emu-gemini']) {
    const m = unique('kind');
    const conv = await openai.conversations.create({ items: [{ type: 'message', role: 'user', content: `the word is ${m}` }] });
    const r1 = await openai.responses.create({ model, input: 'say something', conversation: conv.id });
    assert.equal(r1.status, 'completed', model);
    const up = JSON.stringify((await upstreamRequestContaining(`the word is ${m}`)).body);
    assert.ok(up.includes('say something'), `${model}: the context and the input reach the upstream`);
    const r2 = await openai.responses.create({ model, input: 'and again', conversation: conv.id });
    assert.equal(r2.status, 'completed', model);
    const items = (await openai.conversations.items.list(conv.id, { order: 'asc' })).data;
    assert.equal(items.length, 5, model);
    assert.equal(items[2].id, r1.output.at(-1).id, model);
    assert.equal(items[4].id, r2.output.at(-1).id, model);
  }
});
