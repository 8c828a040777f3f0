// The Vector Stores API (docs/vector_stores.md) through the official SDK's
// client.vectorStores.*, .files.*, .fileBatches.* and .search: create,
// retrieve, modify, list with pagination, delete; owner scoping (another
// account gets 404, also for its files); bad inputs answered with OpenAI's
// error body; files attached, ingested on the workers (the emulator's
// deterministic embeddings) and polled until completed, their parsed
// content, search finding the attached file's chunk, attribute filters,
// batches and their cancel, and deletion taking the file's results away.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { toFile } from 'openai';
import { cfg, client, http, newAccountKey, psql, unique, assertOpenAIError } from './harness.mjs';

const POLL = { pollIntervalMs: 100 };

function assertStore(vs, { name, metadata = {}, days = null } = {}) {
  assert.match(vs.id, /^vs_[0-9a-f]{32}$/);
  assert.equal(vs.object, 'vector_store');
  if (name !== undefined) assert.equal(vs.name, name);
  assert.deepEqual(vs.metadata, metadata);
  assert.equal(typeof vs.created_at, 'number');
  assert.ok(Math.abs(vs.created_at - Date.now() / 1000) < 300, `created_at ${vs.created_at} is in seconds, now`);
  assert.ok(vs.last_active_at >= vs.created_at);
  assert.ok(['in_progress', 'completed', 'expired'].includes(vs.status));
  assert.equal(typeof vs.usage_bytes, 'number');
  for (const k of ['in_progress', 'completed', 'failed', 'cancelled', 'total']) {
    assert.equal(typeof vs.file_counts[k], 'number', k);
  }
  if (days === null) {
    assert.equal(vs.expires_after, null);
    assert.equal(vs.expires_at, null);
  } else {
    assert.deepEqual(vs.expires_after, { anchor: 'last_active_at', days });
    assert.equal(vs.expires_at, vs.last_active_at + days * 86400);
  }
}

function assertStoreFile(f, { fileId, storeId, status, attributes = {} }) {
  assert.equal(f.id, fileId);
  assert.equal(f.object, 'vector_store.file');
  assert.equal(f.vector_store_id, storeId);
  if (status) assert.equal(f.status, status);
  assert.deepEqual(f.attributes, attributes);
  assert.equal(typeof f.created_at, 'number');
  assert.equal(typeof f.usage_bytes, 'number');
  assert.equal(f.chunking_strategy.type, 'static');
}

async function upload(c, text, name = 'notes.txt') {
  return c.files.create({ file: await toFile(Buffer.from(text), name), purpose: 'assistants' });
}

// Polls a vector store file until it leaves in_progress (the SDK's poll
// helper, bounded so a missing worker fails the test instead of hanging).
async function settled(c, storeId, fileId, timeout = 30000) {
  return Promise.race([
    c.vectorStores.files.poll(storeId, fileId, POLL),
    new Promise((_, reject) => setTimeout(() => reject(new Error(`${fileId} still in progress after ${timeout} ms`)),
      timeout).unref()),
  ]);
}

async function settledBatch(c, storeId, batchId, timeout = 30000) {
  return Promise.race([
    c.vectorStores.fileBatches.poll(storeId, batchId, POLL),
    new Promise((_, reject) => setTimeout(() => reject(new Error(`${batchId} still in progress after ${timeout} ms`)),
      timeout).unref()),
  ]);
}

// A text whose every chunk holds the marker word, with filler in between.
function document(marker, topic) {
  const lines = [];
  for (let i = 0; i < 12; i += 1) lines.push(`${topic} paragraph ${i}: the ${marker} note says ${topic} matters.`);
  return lines.join('\n\n');
}

test('create, retrieve, modify and delete a vector store; then it is 404', async () => {
  const c = client();
  const name = unique('kb');
  const vs = await c.vectorStores.create({ name, metadata: { team: 'search' }, description: 'a test store' });
  assertStore(vs, { name, metadata: { team: 'search' } });
  assert.equal(vs.status, 'completed');
  assert.deepEqual(vs.file_counts, { in_progress: 0, completed: 0, failed: 0, cancelled: 0, total: 0 });
  assert.equal(vs.usage_bytes, 0);
  const again = await c.vectorStores.retrieve(vs.id);
  assert.deepEqual({ ...again, last_active_at: vs.last_active_at }, vs);

  const renamed = await c.vectorStores.update(vs.id, {
    name: `${name}-2`, metadata: { team: 'ranking', tier: 'gold' }, expires_after: { anchor: 'last_active_at', days: 7 },
  });
  assertStore(renamed, { name: `${name}-2`, metadata: { team: 'ranking', tier: 'gold' }, days: 7 });
  // A field not given is kept; null clears the expiry policy.
  const cleared = await c.vectorStores.update(vs.id, { expires_after: null });
  assertStore(cleared, { name: `${name}-2`, metadata: { team: 'ranking', tier: 'gold' } });

  const withExpiry = await c.vectorStores.create({ expires_after: { anchor: 'last_active_at', days: 3 } });
  assertStore(withExpiry, { days: 3 });
  assert.equal(withExpiry.name, null);

  const del = await http('DELETE', `/v1/vector_stores/${vs.id}`);
  assert.equal(del.status, 200);
  assert.deepEqual(del.json, { id: vs.id, object: 'vector_store.deleted', deleted: true });
  const gone = await http('GET', `/v1/vector_stores/${vs.id}`);
  assertOpenAIError(gone, 404, { type: 'invalid_request_error' });
  assert.equal(gone.json.error.message, `No vector store found with id '${vs.id}'.`);
  assertOpenAIError(await http('DELETE', `/v1/vector_stores/${vs.id}`), 404);
  assertOpenAIError(await http('POST', `/v1/vector_stores/${vs.id}`, { body: { name: 'x' } }), 404);
  assertOpenAIError(await http('GET', `/v1/vector_stores/${vs.id}/files`), 404);
  const sdkDel = await c.vectorStores.delete(withExpiry.id);
  assert.deepEqual(sdkDel, { id: withExpiry.id, object: 'vector_store.deleted', deleted: true });
  await assert.rejects(c.vectorStores.retrieve(withExpiry.id), (e) => e.status === 404);
});

test('an expired store shows status expired and refuses attaching and searching', async () => {
  const c = client();
  const vs = await c.vectorStores.create({ expires_after: { anchor: 'last_active_at', days: 1 } });
  psql("UPDATE vector_stores SET last_active_at = now() - interval '2 days' WHERE id = :'v1'", vs.id);
  const got = await c.vectorStores.retrieve(vs.id);
  assert.equal(got.status, 'expired');
  assert.ok(got.expires_at < Date.now() / 1000);
  const f = await upload(c, 'too late');
  assertOpenAIError(await http('POST', `/v1/vector_stores/${vs.id}/files`, { body: { file_id: f.id } }), 400,
    { code: 'vector_store_expired' });
  assertOpenAIError(await http('POST', `/v1/vector_stores/${vs.id}/search`, { body: { query: 'x' } }), 400,
    { code: 'vector_store_expired' });
  // Using an expired store does not revive it.
  assert.equal((await c.vectorStores.retrieve(vs.id)).status, 'expired');
});

test('list: pages by after/limit in both orders and auto-paginates, per account', async () => {
  const { key } = newAccountKey();
  const c = client(cfg.frontendA, key);
  const made = [];
  for (let i = 0; i < 5; i += 1) made.push(await c.vectorStores.create({ name: `s${i}` }));
  const ids = made.map((x) => x.id);

  const asc = await c.vectorStores.list({ order: 'asc', limit: 100 });
  assert.deepEqual(asc.data.map((x) => x.id), ids);
  const desc = await c.vectorStores.list(); // desc is the default
  assert.deepEqual(desc.data.map((x) => x.id), [...ids].reverse());

  const page = await http('GET', '/v1/vector_stores?order=asc&limit=2', { key });
  assert.equal(page.status, 200);
  assert.equal(page.json.object, 'list');
  assert.deepEqual(page.json.data.map((x) => x.id), ids.slice(0, 2));
  assert.equal(page.json.first_id, ids[0]);
  assert.equal(page.json.last_id, ids[1]);
  assert.equal(page.json.has_more, true);
  const next = await http('GET', `/v1/vector_stores?order=asc&limit=2&after=${ids[1]}`, { key });
  assert.deepEqual(next.json.data.map((x) => x.id), ids.slice(2, 4));
  const last = await http('GET', `/v1/vector_stores?order=asc&limit=2&after=${ids[3]}`, { key });
  assert.deepEqual(last.json.data.map((x) => x.id), ids.slice(4));
  assert.equal(last.json.has_more, false);
  const back = await http('GET', `/v1/vector_stores?limit=2&after=${ids[2]}`, { key });
  assert.deepEqual(back.json.data.map((x) => x.id), [ids[1], ids[0]]);

  const seen = [];
  for await (const vs of c.vectorStores.list({ order: 'asc', limit: 2 })) seen.push(vs.id);
  assert.deepEqual(seen, ids);

  // The dev account's stores are not in this account's list.
  const mine = await client().vectorStores.create({ name: unique('other') });
  assert.ok(!(await c.vectorStores.list({ limit: 100 })).data.some((x) => x.id === mine.id));
  assertOpenAIError(await http('GET', '/v1/vector_stores?limit=101'), 400, { code: 'invalid_value' });
  assertOpenAIError(await http('GET', '/v1/vector_stores?limit=0'), 400, { code: 'invalid_value' });
  assertOpenAIError(await http('GET', '/v1/vector_stores?order=sideways'), 400, { code: 'invalid_value' });
});

test('owner scoping: another account gets 404 for the store, its files, batches and search', async () => {
  const c = client();
  const f = await upload(c, document(unique('scoped'), 'privacy'));
  const vs = await c.vectorStores.create({ name: unique('mine') });
  const { key } = newAccountKey();
  const other = client(cfg.frontendA, key);
  for (const [method, path, body] of [
    ['GET', `/v1/vector_stores/${vs.id}`],
    ['POST', `/v1/vector_stores/${vs.id}`, { name: 'stolen' }],
    ['DELETE', `/v1/vector_stores/${vs.id}`],
    ['GET', `/v1/vector_stores/${vs.id}/files`],
    ['POST', `/v1/vector_stores/${vs.id}/files`, { file_id: f.id }],
    ['GET', `/v1/vector_stores/${vs.id}/files/${f.id}`],
    ['DELETE', `/v1/vector_stores/${vs.id}/files/${f.id}`],
    ['GET', `/v1/vector_stores/${vs.id}/files/${f.id}/content`],
    ['POST', `/v1/vector_stores/${vs.id}/file_batches`, { file_ids: [f.id] }],
    ['POST', `/v1/vector_stores/${vs.id}/search`, { query: 'privacy' }],
  ]) {
    const res = await http(method, path, { key, body });
    assertOpenAIError(res, 404, { type: 'invalid_request_error' });
  }
  await assert.rejects(other.vectorStores.retrieve(vs.id), (e) => e.status === 404);
  assert.equal((await c.vectorStores.retrieve(vs.id)).name, vs.name, 'nothing changed');

  // Another account's /v1/files file cannot be attached, at create or later.
  const theirs = await upload(other, 'their secret');
  const refused = await http('POST', `/v1/vector_stores/${vs.id}/files`, { body: { file_id: theirs.id } });
  assertOpenAIError(refused, 404);
  assert.equal(refused.json.error.message, `No file found with id '${theirs.id}'.`);
  const atCreate = await http('POST', '/v1/vector_stores', { body: { file_ids: [f.id, theirs.id] } });
  assertOpenAIError(atCreate, 404);
  assert.equal(atCreate.json.error.param, 'file_ids');
  assertOpenAIError(await http('POST', `/v1/vector_stores/${vs.id}/file_batches`,
    { body: { file_ids: [f.id, theirs.id] } }), 404);
  // Nothing was written by the refused requests.
  assert.equal((await c.vectorStores.retrieve(vs.id)).file_counts.total, 0);
});

test('bad inputs get 400 with OpenAI\'s error body', async () => {
  const vs = await client().vectorStores.create({});
  const cases = [
    ['POST', '/v1/vector_stores', { nme: 'typo' }, 'nme', 'unknown_parameter'],
    ['POST', '/v1/vector_stores', { name: 7 }, 'name', 'invalid_type'],
    ['POST', '/v1/vector_stores', { file_ids: 'file-1' }, 'file_ids', 'invalid_type'],
    ['POST', '/v1/vector_stores', { expires_after: { anchor: 'created_at', days: 1 } }, 'expires_after.anchor',
      'invalid_value'],
    ['POST', '/v1/vector_stores', { expires_after: { anchor: 'last_active_at', days: 0 } }, 'expires_after.days',
      'integer_below_min_value'],
    ['POST', '/v1/vector_stores', { metadata: Object.fromEntries([...Array(17).keys()].map((i) => [`k${i}`, 'v'])) },
      'metadata', 'invalid_value'],
    ['POST', '/v1/vector_stores', { chunking_strategy: { type: 'static', static: { max_chunk_size_tokens: 99,
      chunk_overlap_tokens: 0 } } }, 'chunking_strategy.static.max_chunk_size_tokens', 'integer_below_min_value'],
    ['POST', '/v1/vector_stores', { chunking_strategy: { type: 'static', static: { max_chunk_size_tokens: 800,
      chunk_overlap_tokens: 401 } } }, 'chunking_strategy.static.chunk_overlap_tokens', 'invalid_value'],
    ['POST', '/v1/vector_stores', { chunking_strategy: { type: 'semantic' } }, 'chunking_strategy.type',
      'invalid_value'],
    ['POST', `/v1/vector_stores/${vs.id}`, { description: 'not modifiable' }, 'description', 'unknown_parameter'],
    ['POST', `/v1/vector_stores/${vs.id}/files`, {}, 'file_id', 'missing_required_parameter'],
    ['POST', `/v1/vector_stores/${vs.id}/files`, { file_id: 'file-1', attributes: { k: { nested: 1 } } },
      'attributes', 'invalid_value'],
    ['POST', `/v1/vector_stores/${vs.id}/file_batches`, {}, 'file_ids', 'missing_required_parameter'],
    ['POST', `/v1/vector_stores/${vs.id}/file_batches`, { file_ids: ['a'], files: [{ file_id: 'b' }] }, 'files',
      'invalid_value'],
    ['POST', `/v1/vector_stores/${vs.id}/file_batches`, { files: [{ file_id: 'a', chunking_strategy:
      { type: 'static' } }] }, 'files[0].chunking_strategy.static', 'missing_required_parameter'],
    ['POST', `/v1/vector_stores/${vs.id}/search`, {}, 'query', 'missing_required_parameter'],
    ['POST', `/v1/vector_stores/${vs.id}/search`, { query: 'x', max_num_results: 51 }, 'max_num_results',
      'integer_above_max_value'],
    ['POST', `/v1/vector_stores/${vs.id}/search`, { query: 'x', max_num_results: 0 }, 'max_num_results',
      'integer_below_min_value'],
    ['POST', `/v1/vector_stores/${vs.id}/search`, { query: 'x', filters: { type: 'like', key: 'k', value: 1 } },
      'filters.type', 'invalid_value'],
    ['POST', `/v1/vector_stores/${vs.id}/search`, { query: 'x', filters: { type: 'in', key: 'k', value: 'a' } },
      'filters.value', 'invalid_type'],
    ['POST', `/v1/vector_stores/${vs.id}/search`, { query: 'x', ranking_options: { score_threshold: 2 } },
      'ranking_options.score_threshold', 'invalid_value'],
  ];
  for (const [method, path, body, param, code] of cases) {
    const res = await http(method, path, { body });
    assertOpenAIError(res, 400, { type: 'invalid_request_error', code });
    assert.equal(res.json.error.param, param, `${path} ${JSON.stringify(body)}: ${res.text}`);
  }
  assertOpenAIError(await http('GET', `/v1/vector_stores/${vs.id}/files?filter=done`), 400, { code: 'invalid_value' });
  assertOpenAIError(await http('POST', '/v1/vector_stores', { raw: '{"name":' }), 400);
  // Nothing was created by the refused creates.
  const none = await http('POST', `/v1/vector_stores/${vs.id}/files`, { body: { file_id: 'file-nope' } });
  assertOpenAIError(none, 404);
  assert.equal(none.json.error.param, 'file_id');
});

test('attach a text file: in_progress, then completed; its content, counts and listing', async () => {
  const c = client();
  const marker = unique('quokka').toLowerCase();
  const text = document(marker, 'marsupials');
  const f = await upload(c, text, 'animals.txt');
  const vs = await c.vectorStores.create({ name: unique('kb') });
  const attached = await c.vectorStores.files.create(vs.id, { file_id: f.id, attributes: { kind: 'notes', n: 3 } });
  assertStoreFile(attached, { fileId: f.id, storeId: vs.id, attributes: { kind: 'notes', n: 3 } });
  assert.ok(['in_progress', 'completed'].includes(attached.status));
  assert.deepEqual(attached.chunking_strategy,
    { type: 'static', static: { max_chunk_size_tokens: 800, chunk_overlap_tokens: 400 } });

  const done = await settled(c, vs.id, f.id);
  assertStoreFile(done, { fileId: f.id, storeId: vs.id, status: 'completed', attributes: { kind: 'notes', n: 3 } });
  assert.equal(done.last_error, null);
  assert.ok(done.usage_bytes > 0);

  const store = await c.vectorStores.retrieve(vs.id);
  assert.equal(store.status, 'completed');
  assert.deepEqual(store.file_counts, { in_progress: 0, completed: 1, failed: 0, cancelled: 0, total: 1 });
  assert.equal(store.usage_bytes, done.usage_bytes);

  // The parsed content, as OpenAI pages it: the chunks' texts hold the file's words.
  const content = await http('GET', `/v1/vector_stores/${vs.id}/files/${f.id}/content`);
  assert.equal(content.status, 200);
  assert.equal(content.json.object, 'vector_store.file_content.page');
  assert.equal(content.json.has_more, false);
  assert.equal(content.json.next_page, null);
  assert.ok(content.json.data.length >= 1);
  for (const part of content.json.data) assert.equal(part.type, 'text');
  assert.ok(content.json.data.map((p) => p.text).join(' ').includes(marker));
  const sdkContent = await c.vectorStores.files.content(f.id, { vector_store_id: vs.id });
  assert.deepEqual(sdkContent.data, content.json.data);

  // Listing, with the status filter.
  assert.deepEqual((await c.vectorStores.files.list(vs.id)).data.map((x) => x.id), [f.id]);
  assert.deepEqual((await c.vectorStores.files.list(vs.id, { filter: 'completed' })).data.map((x) => x.id), [f.id]);
  assert.deepEqual((await c.vectorStores.files.list(vs.id, { filter: 'failed' })).data, []);
  assert.deepEqual(await c.vectorStores.files.retrieve(f.id, { vector_store_id: vs.id }), done);
});

test('a file given at create is ingested; a file that is not text fails with last_error', async () => {
  const c = client();
  const marker = unique('wombat').toLowerCase();
  const good = await upload(c, document(marker, 'burrows'), 'burrows.md');
  const vs = await c.vectorStores.create({ // named twice, attached (and ingested) once
    file_ids: [good.id, good.id], chunking_strategy: { type: 'static', static: { max_chunk_size_tokens: 200, chunk_overlap_tokens: 50 } },
  });
  assert.equal(vs.file_counts.total, 1);
  const done = await settled(c, vs.id, good.id);
  assert.equal(done.status, 'completed');
  assert.deepEqual(done.chunking_strategy,
    { type: 'static', static: { max_chunk_size_tokens: 200, chunk_overlap_tokens: 50 } });
  // 200-token chunks of a 12-paragraph text: more than one.
  const content = await c.vectorStores.files.content(good.id, { vector_store_id: vs.id });
  assert.ok(content.data.length > 1, `${content.data.length} chunks`);

  const png = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489', 'hex');
  const bad = await c.files.create({ file: await toFile(png, 'pixel.png'), purpose: 'assistants' });
  await c.vectorStores.files.create(vs.id, { file_id: bad.id });
  const failed = await settled(c, vs.id, bad.id);
  assert.equal(failed.status, 'failed');
  assert.ok(['unsupported_file', 'invalid_file'].includes(failed.last_error.code), JSON.stringify(failed.last_error));
  assert.equal(typeof failed.last_error.message, 'string');
  const store = await c.vectorStores.retrieve(vs.id);
  assert.deepEqual(store.file_counts, { in_progress: 0, completed: 1, failed: 1, cancelled: 0, total: 2 });
  assert.deepEqual((await c.vectorStores.files.list(vs.id, { filter: 'failed' })).data.map((x) => x.id), [bad.id]);
});

test('search returns the attached file\'s chunk; filters on attributes; deleting the file removes its results', async () => {
  const c = client();
  const marker = unique('okapi').toLowerCase();
  const a = await upload(c, document(marker, 'forests'), 'forests.txt');
  const b = await upload(c, document(marker, 'rivers'), 'rivers.txt');
  const unrelated = await upload(c, document(unique('zebra').toLowerCase(), 'savanna'), 'savanna.txt');
  const vs = await c.vectorStores.create({ name: unique('search') });
  await c.vectorStores.files.create(vs.id, { file_id: a.id, attributes: { team: 'green', year: 2024, public: true } });
  await c.vectorStores.files.create(vs.id, { file_id: b.id, attributes: { team: 'blue', year: 2025, public: false } });
  await c.vectorStores.files.create(vs.id, { file_id: unrelated.id });
  for (const id of [a.id, b.id, unrelated.id]) assert.equal((await settled(c, vs.id, id)).status, 'completed');

  const res = await http('POST', `/v1/vector_stores/${vs.id}/search`, { body: { query: `${marker} forests` } });
  assert.equal(res.status, 200, res.text);
  assert.equal(res.json.object, 'vector_store.search_results.page');
  assert.ok(Array.isArray(res.json.search_query) && res.json.search_query.length >= 1);
  assert.equal(res.json.has_more, false);
  assert.equal(res.json.next_page, null);
  assert.ok(res.json.data.length >= 1);
  const top = res.json.data[0];
  assert.equal(top.file_id, a.id);
  assert.equal(top.filename, 'forests.txt');
  assert.ok(typeof top.score === 'number' && top.score >= 0 && top.score <= 1, `score ${top.score}`);
  assert.deepEqual(top.attributes, { team: 'green', year: 2024, public: true });
  assert.equal(top.content[0].type, 'text');
  assert.ok(top.content[0].text.includes(marker));
  for (let i = 1; i < res.json.data.length; i += 1) assert.ok(res.json.data[i].score <= res.json.data[i - 1].score);

  // The SDK's page; max_num_results bounds the results.
  const page = await c.vectorStores.search(vs.id, { query: marker, max_num_results: 1 });
  assert.equal(page.data.length, 1);

  // Filters on attributes: comparison and compound.
  const eq = await c.vectorStores.search(vs.id, { query: marker, filters: { type: 'eq', key: 'team', value: 'blue' } });
  assert.ok(eq.data.length >= 1);
  assert.ok(eq.data.every((r) => r.file_id === b.id), JSON.stringify(eq.data.map((r) => r.file_id)));
  const gte = await c.vectorStores.search(vs.id, { query: marker, filters: { type: 'gte', key: 'year', value: 2025 } });
  assert.ok(gte.data.length >= 1 && gte.data.every((r) => r.file_id === b.id));
  const or = await c.vectorStores.search(vs.id, {
    query: marker,
    filters: { type: 'or', filters: [{ type: 'eq', key: 'public', value: true }, { type: 'in', key: 'team', value: ['blue'] }] },
  });
  assert.deepEqual([...new Set(or.data.map((r) => r.file_id))].sort(), [a.id, b.id].sort());
  const none = await c.vectorStores.search(vs.id, { query: marker, filters: { type: 'eq', key: 'team', value: 'red' } });
  assert.deepEqual(none.data, []);

  // Changing a file's attributes changes what its filter finds.
  const updated = await c.vectorStores.files.update(a.id, { vector_store_id: vs.id, attributes: { team: 'blue' } });
  assert.deepEqual(updated.attributes, { team: 'blue' });
  const blue = await c.vectorStores.search(vs.id, { query: marker, filters: { type: 'eq', key: 'team', value: 'blue' } });
  assert.deepEqual([...new Set(blue.data.map((r) => r.file_id))].sort(), [a.id, b.id].sort());

  // Deleting the file from the store removes its chunks and its results; the file stays in /v1/files.
  const del = await http('DELETE', `/v1/vector_stores/${vs.id}/files/${a.id}`);
  assert.equal(del.status, 200);
  assert.deepEqual(del.json, { id: a.id, object: 'vector_store.file.deleted', deleted: true });
  assert.deepEqual(psql("SELECT count(*) FROM vector_store_chunks WHERE vector_store_id = :'v1' AND file_id = :'v2'",
    vs.id, a.id), ['0']);
  const after = await c.vectorStores.search(vs.id, { query: `${marker} forests` });
  assert.ok(after.data.every((r) => r.file_id !== a.id));
  assertOpenAIError(await http('GET', `/v1/vector_stores/${vs.id}/files/${a.id}`), 404);
  assertOpenAIError(await http('GET', `/v1/vector_stores/${vs.id}/files/${a.id}/content`), 404);
  assert.equal((await c.files.retrieve(a.id)).id, a.id);

  // Deleting the store takes the rest of its chunks.
  await c.vectorStores.delete(vs.id);
  assert.deepEqual(psql("SELECT count(*) FROM vector_store_chunks WHERE vector_store_id = :'v1'", vs.id), ['0']);
});

test('file batches: create with file_ids or files, poll, list its files; cancel marks in-progress files cancelled', async () => {
  const c = client();
  const marker = unique('tapir').toLowerCase();
  const files = [];
  for (let i = 0; i < 3; i += 1) files.push(await upload(c, document(marker, `topic${i}`), `t${i}.txt`));
  const vs = await c.vectorStores.create({ name: unique('batches') });

  const batch = await c.vectorStores.fileBatches.create(vs.id, {
    file_ids: [files[0].id, files[1].id], attributes: { source: 'batch' },
  });
  assert.match(batch.id, /^vsfb_[0-9a-f]{32}$/);
  assert.equal(batch.object, 'vector_store.files_batch');
  assert.equal(batch.vector_store_id, vs.id);
  assert.equal(batch.file_counts.total, 2);
  const done = await settledBatch(c, vs.id, batch.id);
  assert.equal(done.status, 'completed');
  assert.deepEqual(done.file_counts, { in_progress: 0, completed: 2, failed: 0, cancelled: 0, total: 2 });
  const listed = await c.vectorStores.fileBatches.listFiles(batch.id, { vector_store_id: vs.id, order: 'asc' });
  assert.deepEqual(listed.data.map((x) => x.id).sort(), [files[0].id, files[1].id].sort());
  for (const f of listed.data) assert.deepEqual(f.attributes, { source: 'batch' });

  // files[]: per-file attributes and strategy, the batch's for those giving none.
  const second = await c.vectorStores.fileBatches.create(vs.id, {
    files: [{ file_id: files[2].id, attributes: { own: 'yes' },
      chunking_strategy: { type: 'static', static: { max_chunk_size_tokens: 300, chunk_overlap_tokens: 100 } } }],
  });
  await settledBatch(c, vs.id, second.id);
  const own = await c.vectorStores.files.retrieve(files[2].id, { vector_store_id: vs.id });
  assert.deepEqual(own.attributes, { own: 'yes' });
  assert.equal(own.chunking_strategy.static.max_chunk_size_tokens, 300);
  const onlySecond = await c.vectorStores.fileBatches.listFiles(second.id, { vector_store_id: vs.id });
  assert.deepEqual(onlySecond.data.map((x) => x.id), [files[2].id]);

  // Cancel: the files still in progress become cancelled (made so here with SQL, as a
  // batch the workers have not reached yet), and a worker finishing one later leaves it so.
  psql("UPDATE vector_store_files SET status = 'in_progress' WHERE batch_id = :'v1'", batch.id);
  const cancelled = await c.vectorStores.fileBatches.cancel(batch.id, { vector_store_id: vs.id });
  assert.equal(cancelled.status, 'cancelled');
  assert.deepEqual(cancelled.file_counts, { in_progress: 0, completed: 0, failed: 0, cancelled: 2, total: 2 });
  assert.deepEqual(await c.vectorStores.fileBatches.retrieve(batch.id, { vector_store_id: vs.id }), cancelled);
  const inBatch = await c.vectorStores.fileBatches.listFiles(batch.id, { vector_store_id: vs.id, filter: 'cancelled' });
  assert.equal(inBatch.data.length, 2);
  // A batch with nothing in progress is left as it was.
  const again = await c.vectorStores.fileBatches.cancel(second.id, { vector_store_id: vs.id });
  assert.equal(again.status, 'completed');

  assertOpenAIError(await http('GET', `/v1/vector_stores/${vs.id}/file_batches/vsfb_nope`), 404);
  assertOpenAIError(await http('POST', `/v1/vector_stores/${vs.id}/file_batches/vsfb_nope/cancel`), 404);
  assertOpenAIError(await http('GET', `/v1/vector_stores/${vs.id}/file_batches/vsfb_nope/files`), 404);
});

test('attaching a file again starts it over: in progress, then completed with the new attributes', async () => {
  const c = client();
  const marker = unique('lemur').toLowerCase();
  const f = await upload(c, document(marker, 'islands'));
  const vs = await c.vectorStores.create({ file_ids: [f.id] });
  assert.equal((await settled(c, vs.id, f.id)).status, 'completed');
  const again = await c.vectorStores.files.create(vs.id, { file_id: f.id, attributes: { round: 2 } });
  assert.deepEqual(again.attributes, { round: 2 });
  const done = await settled(c, vs.id, f.id);
  assert.equal(done.status, 'completed');
  assert.equal((await c.vectorStores.retrieve(vs.id)).file_counts.total, 1);
  const hits = await c.vectorStores.search(vs.id, { query: marker });
  assert.ok(hits.data.length >= 1);
  assert.ok(hits.data.every((r) => r.file_id === f.id && r.attributes.round === 2));
});
