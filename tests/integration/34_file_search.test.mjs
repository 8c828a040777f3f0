// File search run by the gateway (issue 16, docs/tools.md): files uploaded and
// ingested into a vector store (chunked, embedded through the deployment's
// embeddings route: the emulator's deterministic embeddings), then the model
// (the emulator, driven by "CALL sb__file_search {...}" and scenarios) searches
// them: OpenAI's file_search_call item (results with include), its events, and
// file_citation annotations where the answer cites a file, for every upstream
// kind; another account's store is not searched.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { toFile } from 'openai';
import { cfg, client, ensureModel, newAccountKey, sse, unique } from './harness.mjs';

const oai = client();
const MODELS = { 'openai-chat': 'emu-chat', 'openai-responses': 'emu-responses', anthropic: 'emu-claude', gemini: 'emu-gemini' };
const POLL = { pollIntervalMs: 100 };
const call = (args) => `CALL sb__file_search ${JSON.stringify(args)}`;
let store, marker, fileId;

async function storeWith(c, docs) {
  const vs = await c.vectorStores.create({ name: unique('fs') });
  const ids = [];
  for (const [name, text, attributes] of docs) {
    const f = await c.files.create({ file: await toFile(Buffer.from(text), name), purpose: 'assistants' });
    const done = await c.vectorStores.files.createAndPoll(vs.id, { file_id: f.id, attributes }, POLL);
    assert.equal(done.status, 'completed', JSON.stringify(done.last_error));
    ids.push(f.id);
  }
  return { vs, ids };
}

before(async () => {
  marker = unique('wombat').toLowerCase();
  const made = await storeWith(oai, [
    ['wombats.txt', `The ${marker} digs burrows with strong claws. Wombats produce cube-shaped droppings.`, { topic: 'animals', year: 2024 }],
    ['volcanoes.txt', 'Volcanoes erupt molten rock called lava. Magma chambers lie beneath them.', { topic: 'geology', year: 2020 }],
  ]);
  store = made.vs;
  fileId = made.ids[0];
});

for (const [kind, model] of Object.entries(MODELS)) {
  test(`file search ← ${kind}: the gateway searches the store; results with include; streamed with its events`, async () => {
    const tool = { type: 'file_search', vector_store_ids: [store.id] };
    const body = { model, store: false, tools: [tool], include: ['file_search_call.results'],
      input: `${call({ queries: [`${marker} burrows`] })}\n${unique('q')}` };
    const res = await oai.responses.create(body);
    assert.deepEqual(res.output.map((i) => i.type), ['file_search_call', 'message']);
    const [fs] = res.output;
    assert.match(fs.id, /^fs_/);
    assert.equal(fs.status, 'completed');
    assert.deepEqual(fs.queries, [`${marker} burrows`]);
    assert.ok(fs.results.length >= 1);
    assert.equal(fs.results[0].file_id, fileId);
    assert.equal(fs.results[0].filename, 'wombats.txt');
    assert.match(fs.results[0].text, new RegExp(marker));
    assert.ok(fs.results[0].score > 0 && fs.results[0].score <= 1);
    assert.deepEqual(fs.results[0].attributes, { topic: 'animals', year: 2024 });
    assert.match(res.output_text, new RegExp(marker), 'the model read the passage');

    const r = await sse('/v1/responses', { body: { ...body, stream: true } });
    const names = r.events.map((e) => e.event);
    let at = -1;
    for (const w of ['response.output_item.added', 'response.file_search_call.in_progress', 'response.file_search_call.searching',
      'response.file_search_call.completed', 'response.output_item.done']) {
      const k = names.indexOf(w, at + 1);
      assert.ok(k > at, `${w}: ${names.join(',')}`);
      at = k;
    }
  });
}

test('file search: results are null without include; filters and max_num_results apply', async () => {
  const plain = await oai.responses.create({ model: 'emu-chat', store: false,
    tools: [{ type: 'file_search', vector_store_ids: [store.id] }], input: `${call({ queries: ['lava'] })}\n${unique('q')}` });
  assert.equal(plain.output[0].results, null);

  const filtered = await oai.responses.create({ model: 'emu-chat', store: false, include: ['file_search_call.results'],
    tools: [{ type: 'file_search', vector_store_ids: [store.id], max_num_results: 1,
      filters: { type: 'eq', key: 'topic', value: 'geology' } }],
    input: `${call({ queries: [`${marker} lava`] })}\n${unique('q')}` });
  const results = filtered.output[0].results;
  assert.equal(results.length, 1);
  assert.equal(results[0].filename, 'volcanoes.txt');
});

test('file search: the answer cites the file where it uses it (file_citation at the cited text)', async () => {
  const up = unique('fsup');
  const model = ensureModel(unique('fsm'), { upstream: up });
  await fetch(`${cfg.emu}/_emu/scenarios/${up}`, { method: 'PUT', body: JSON.stringify({
    tool: '^sb__file_search$', arguments: { queries: [`${marker} claws`] },
    after_result: 'Wombats dig burrows [wombats.txt]. That is all.' }) });
  const res = await oai.responses.create({ model, store: false, input: 'tell me',
    tools: [{ type: 'file_search', vector_store_ids: [store.id] }] });
  const msg = res.output.find((i) => i.type === 'message');
  const ann = msg.content[0].annotations;
  assert.deepEqual(ann, [{ type: 'file_citation', file_id: fileId, filename: 'wombats.txt', index: 20 }]);
});

test('file search: another account\'s vector store is not searched', async () => {
  const other = client(cfg.frontendA, newAccountKey().key);
  const res = await other.responses.create({ model: 'emu-chat', store: false, include: ['file_search_call.results'],
    tools: [{ type: 'file_search', vector_store_ids: [store.id] }], input: `${call({ queries: [marker] })}\n${unique('q')}` });
  assert.equal(res.output[0].type, 'file_search_call');
  assert.equal(res.output[0].status, 'failed');
  assert.doesNotMatch(JSON.stringify(res), new RegExp(`${marker} digs`));
});
