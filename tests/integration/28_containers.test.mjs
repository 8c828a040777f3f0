// The Containers API (docs/containers.md) through the official SDK's
// client.containers.* and client.containers.files.*: create/retrieve/list/
// delete with pagination and the name filter, files by multipart upload and
// by /v1/files id (at create and one by one), content byte for byte, a
// same-path upload replacing the old file, owner scoping (another account
// gets 404), idle expiry (last_active_at moved back with SQL), the limits,
// and bad inputs answered with OpenAI's error body.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { toFile } from 'openai';
import { cfg, client, http, newAccountKey, psql, unique, assertOpenAIError } from './harness.mjs';

const MAX_FILE_BYTES = 1048576; // frontends run with --max-file-bytes 1048576

// Every byte value, then some pseudo-random ones: content must round-trip exactly.
function binaryBytes(n = 4096) {
  const b = Buffer.alloc(n);
  let x = 12345;
  for (let i = 0; i < n; i += 1) {
    x = (x * 1103515245 + 12345) >>> 0;
    b[i] = i < 256 ? i : x >>> 24;
  }
  return b;
}

async function contentOf(c, containerId, fileId) {
  const res = await c.containers.files.content.retrieve(fileId, { container_id: containerId });
  return { type: res.headers.get('content-type'), bytes: Buffer.from(await res.arrayBuffer()) };
}

// A raw multipart upload to a container, for what the SDK would not send.
async function rawUpload(containerId, form, { key = cfg.key } = {}) {
  const res = await fetch(`${cfg.frontendA}/v1/containers/${containerId}/files`, {
    method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form,
  });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, headers: res.headers, text, json };
}

function assertContainer(ct, { name, minutes = 20, memory = '1g', status = 'running' } = {}) {
  assert.match(ct.id, /^cntr_[0-9a-f]{48}$/);
  assert.equal(ct.object, 'container');
  if (name !== undefined) assert.equal(ct.name, name);
  assert.equal(ct.status, status);
  assert.equal(typeof ct.created_at, 'number');
  assert.ok(Math.abs(ct.created_at - Date.now() / 1000) < 300, `created_at ${ct.created_at} is in seconds, now`);
  assert.equal(typeof ct.last_active_at, 'number');
  assert.ok(ct.last_active_at >= ct.created_at);
  assert.deepEqual(ct.expires_after, { anchor: 'last_active_at', minutes });
  assert.equal(ct.memory_limit, memory);
  assert.deepEqual(ct.network_policy, { type: 'disabled' });
}

function assertContainerFile(f, { containerId, path, bytes, source = 'user' }) {
  assert.match(f.id, /^cfile_[0-9a-f]{32}$/);
  assert.equal(f.object, 'container.file');
  assert.equal(f.container_id, containerId);
  assert.equal(f.path, path);
  assert.equal(f.bytes, bytes);
  assert.equal(f.source, source);
  assert.equal(typeof f.created_at, 'number');
  assert.ok(Math.abs(f.created_at - Date.now() / 1000) < 300);
}

test('create, retrieve and delete a container; then it is 404', async () => {
  const c = client();
  const name = unique('box');
  const ct = await c.containers.create({ name });
  assertContainer(ct, { name });
  const again = await c.containers.retrieve(ct.id);
  assert.ok(again.last_active_at >= ct.last_active_at);
  assert.deepEqual({ ...again, last_active_at: ct.last_active_at }, ct);

  const full = await c.containers.create({
    name: `${name}-full`, expires_after: { anchor: 'last_active_at', minutes: 5 }, memory_limit: '4g',
    network_policy: { type: 'disabled' }, skills: [],
  });
  assertContainer(full, { name: `${name}-full`, minutes: 5, memory: '4g' });

  // The SDK's delete returns nothing; the body is OpenAI's deleted object.
  const del = await http('DELETE', `/v1/containers/${ct.id}`);
  assert.equal(del.status, 200);
  assert.deepEqual(del.json, { id: ct.id, object: 'container.deleted', deleted: true });
  const gone = await http('GET', `/v1/containers/${ct.id}`);
  assertOpenAIError(gone, 404, { type: 'invalid_request_error' });
  assert.equal(gone.json.error.message, `Container with id '${ct.id}' not found.`);
  assertOpenAIError(await http('DELETE', `/v1/containers/${ct.id}`), 404);
  assertOpenAIError(await http('GET', `/v1/containers/${ct.id}/files`), 404);
  await c.containers.delete(full.id);
  await assert.rejects(c.containers.retrieve(full.id), (e) => e.status === 404);
});

test('list: pages by after/limit in both orders, filters by name, auto-paginates', async () => {
  const c = client();
  const name = unique('many');
  const made = [];
  for (let i = 0; i < 5; i += 1) made.push(await c.containers.create({ name }));
  const ids = made.map((x) => x.id);

  const asc = await c.containers.list({ name, order: 'asc', limit: 100 });
  assert.deepEqual(asc.data.map((x) => x.id), ids);
  const desc = await c.containers.list({ name, limit: 100 }); // desc is the default
  assert.deepEqual(desc.data.map((x) => x.id), [...ids].reverse());

  const raw = await http('GET', `/v1/containers?name=${name}&order=asc&limit=2`);
  assert.equal(raw.status, 200);
  assert.equal(raw.json.object, 'list');
  assert.deepEqual(raw.json.data.map((x) => x.id), ids.slice(0, 2));
  assert.equal(raw.json.first_id, ids[0]);
  assert.equal(raw.json.last_id, ids[1]);
  assert.equal(raw.json.has_more, true);
  const next = await http('GET', `/v1/containers?name=${name}&order=asc&limit=2&after=${ids[1]}`);
  assert.deepEqual(next.json.data.map((x) => x.id), ids.slice(2, 4));
  const last = await http('GET', `/v1/containers?name=${name}&order=asc&limit=2&after=${ids[3]}`);
  assert.deepEqual(last.json.data.map((x) => x.id), ids.slice(4));
  assert.equal(last.json.has_more, false);

  const seen = [];
  for await (const ct of c.containers.list({ name, order: 'asc', limit: 2 })) seen.push(ct.id);
  assert.deepEqual(seen, ids);

  // Without the filter the account's other containers are there too.
  const all = [];
  for await (const ct of c.containers.list({ limit: 100 })) all.push(ct.id);
  for (const id of ids) assert.ok(all.includes(id));
  assert.equal((await c.containers.list({ name: unique('none') })).data.length, 0);
  assertOpenAIError(await http('GET', '/v1/containers?limit=101'), 400, { code: 'invalid_value' });
  assertOpenAIError(await http('GET', '/v1/containers?order=up'), 400, { code: 'invalid_value' });
});

test('files: multipart upload and content byte for byte; list, retrieve, delete', async () => {
  const c = client();
  const ct = await c.containers.create({ name: unique('files') });
  const bytes = binaryBytes();
  const f = await c.containers.files.create(ct.id, { file: await toFile(bytes, 'blob.bin') });
  assertContainerFile(f, { containerId: ct.id, path: '/mnt/data/blob.bin', bytes: bytes.length });
  const got = await contentOf(c, ct.id, f.id);
  assert.ok(got.bytes.equals(bytes), 'content round-trips exactly');
  assert.equal(got.type, 'application/octet-stream');

  const csv = await c.containers.files.create(ct.id, { file: await toFile(Buffer.from('a,b\n1,2\n'), 'data.csv') });
  assert.equal((await contentOf(c, ct.id, csv.id)).type, 'text/csv');
  assert.deepEqual(await c.containers.files.retrieve(csv.id, { container_id: ct.id }), csv);

  // Directories in a filename are dropped: every file is directly in /mnt/data.
  const nested = await c.containers.files.create(ct.id, { file: await toFile(Buffer.from('x'), '../../etc/passwd') });
  assert.equal(nested.path, '/mnt/data/passwd');

  const list = await c.containers.files.list(ct.id, { order: 'asc' });
  assert.deepEqual(list.data.map((x) => x.id), [f.id, csv.id, nested.id]);
  const page = await http('GET', `/v1/containers/${ct.id}/files?order=asc&limit=2`);
  assert.equal(page.json.object, 'list');
  assert.equal(page.json.has_more, true);
  assert.equal(page.json.last_id, csv.id);
  const rest = await http('GET', `/v1/containers/${ct.id}/files?order=asc&limit=2&after=${csv.id}`);
  assert.deepEqual(rest.json.data.map((x) => x.id), [nested.id]);
  assert.equal(rest.json.has_more, false);

  const del = await http('DELETE', `/v1/containers/${ct.id}/files/${csv.id}`);
  assert.equal(del.status, 200);
  assert.deepEqual(del.json, { id: csv.id, object: 'container.file.deleted', deleted: true });
  const gone = await http('GET', `/v1/containers/${ct.id}/files/${csv.id}`);
  assertOpenAIError(gone, 404, { type: 'invalid_request_error' });
  assert.equal(gone.json.error.message, `File ${csv.id} not found on container ${ct.id}.`);
  assertOpenAIError(await http('GET', `/v1/containers/${ct.id}/files/${csv.id}/content`), 404);
  assertOpenAIError(await http('DELETE', `/v1/containers/${ct.id}/files/${csv.id}`), 404);
  await c.containers.files.delete(f.id, { container_id: ct.id });
  assert.deepEqual((await c.containers.files.list(ct.id)).data.map((x) => x.id), [nested.id]);

  // Deleting the container takes its files with it.
  await c.containers.delete(ct.id);
  assert.deepEqual(psql("SELECT count(*) FROM container_files WHERE container_id = :'v1'", ct.id), ['0']);
});

test('files: a same-path upload replaces the old file with a new id', async () => {
  const c = client();
  const ct = await c.containers.create({ name: unique('replace') });
  const a = await c.containers.files.create(ct.id, { file: await toFile(Buffer.from('first'), 'notes.txt') });
  const b = await c.containers.files.create(ct.id, { file: await toFile(Buffer.from('second!'), 'notes.txt') });
  assert.notEqual(a.id, b.id);
  assert.equal(b.path, '/mnt/data/notes.txt');
  assert.equal(b.bytes, 7);
  const list = await c.containers.files.list(ct.id);
  assert.deepEqual(list.data.map((x) => x.id), [b.id]);
  assertOpenAIError(await http('GET', `/v1/containers/${ct.id}/files/${a.id}`), 404);
  assert.equal((await contentOf(c, ct.id, b.id)).bytes.toString(), 'second!');
});

test('files by /v1/files id: at create (file_ids) and one by one (file_id)', async () => {
  const c = client();
  const bytes = binaryBytes(2000);
  const f1 = await c.files.create({ file: await toFile(bytes, 'table.bin'), purpose: 'user_data' });
  const f2 = await c.files.create({ file: await toFile(Buffer.from('# readme\n'), 'README.md'), purpose: 'assistants' });

  const ct = await c.containers.create({ name: unique('ids'), file_ids: [f1.id, f2.id] });
  assertContainer(ct);
  const list = await c.containers.files.list(ct.id, { order: 'asc' });
  assert.deepEqual(list.data.map((x) => x.path).sort(), ['/mnt/data/README.md', '/mnt/data/table.bin']);
  for (const x of list.data) assertContainerFile(x, { containerId: ct.id, path: x.path, bytes: x.path.endsWith('.bin') ? 2000 : 9 });
  const bin = list.data.find((x) => x.path.endsWith('table.bin'));
  assert.ok((await contentOf(c, ct.id, bin.id)).bytes.equals(bytes));
  const md = list.data.find((x) => x.path.endsWith('README.md'));
  assert.equal((await contentOf(c, ct.id, md.id)).type, 'text/markdown');

  // One by one: a JSON body {file_id}. The copy does not follow the original.
  const ct2 = await c.containers.create({ name: unique('ids2') });
  const cf = await c.containers.files.create(ct2.id, { file_id: f1.id });
  assertContainerFile(cf, { containerId: ct2.id, path: '/mnt/data/table.bin', bytes: 2000 });
  await c.files.delete(f1.id);
  assert.ok((await contentOf(c, ct2.id, cf.id)).bytes.equals(bytes));

  // A deleted or unknown /v1/files id is a 404.
  const missing = await http('POST', `/v1/containers/${ct2.id}/files`, { body: { file_id: f1.id } });
  assertOpenAIError(missing, 404);
  assert.match(missing.json.error.message, new RegExp(f1.id));
  assertOpenAIError(await http('POST', '/v1/containers', { body: { name: 'x', file_ids: [f2.id, 'file-nope'] } }), 404);
});

test('another account sees none of it: every endpoint is 404, and its files cannot be copied in', async () => {
  const c = client();
  const ct = await c.containers.create({ name: unique('mine') });
  const f = await c.containers.files.create(ct.id, { file: await toFile(Buffer.from('secret'), 's.txt') });
  const mine = await c.files.create({ file: await toFile(Buffer.from('mine'), 'mine.txt'), purpose: 'user_data' });

  const other = newAccountKey();
  const o = client(cfg.frontendB, other.key);
  await assert.rejects(o.containers.retrieve(ct.id), (e) => e.status === 404);
  await assert.rejects(o.containers.files.list(ct.id), (e) => e.status === 404);
  await assert.rejects(o.containers.files.retrieve(f.id, { container_id: ct.id }), (e) => e.status === 404);
  await assert.rejects(o.containers.files.content.retrieve(f.id, { container_id: ct.id }), (e) => e.status === 404);
  await assert.rejects(o.containers.files.create(ct.id, { file: await toFile(Buffer.from('x'), 'x.txt') }),
    (e) => e.status === 404);
  await assert.rejects(o.containers.files.delete(f.id, { container_id: ct.id }), (e) => e.status === 404);
  await assert.rejects(o.containers.delete(ct.id), (e) => e.status === 404);
  const theirs = await o.containers.list({ limit: 100 });
  assert.ok(!theirs.data.some((x) => x.id === ct.id));

  // Its own container cannot take my /v1/files file, either way.
  await assert.rejects(o.containers.create({ name: 'steal', file_ids: [mine.id] }), (e) => e.status === 404);
  const own = await o.containers.create({ name: unique('theirs') });
  await assert.rejects(o.containers.files.create(own.id, { file_id: mine.id }), (e) => e.status === 404);

  // All still there for the owner.
  assert.equal((await contentOf(c, ct.id, f.id)).bytes.toString(), 'secret');
});

test('expiry: an idle container is expired, stays so, and refuses use with OpenAI\'s 400', async () => {
  const c = client();
  const ct = await c.containers.create({ name: unique('idle'), expires_after: { anchor: 'last_active_at', minutes: 1 } });
  const f = await c.containers.files.create(ct.id, { file: await toFile(Buffer.from('data'), 'd.txt') });
  psql("UPDATE containers SET last_active_at = now() - interval '61 seconds' WHERE id = :'v1'", ct.id);

  const got = await c.containers.retrieve(ct.id);
  assert.equal(got.status, 'expired');
  const listed = (await c.containers.list({ name: ct.name })).data[0];
  assert.equal(listed.status, 'expired');

  for (const res of [
    await rawUpload(ct.id, (() => { const fd = new FormData(); fd.append('file', new Blob(['x']), 'x.txt'); return fd; })()),
    await http('GET', `/v1/containers/${ct.id}/files`),
    await http('GET', `/v1/containers/${ct.id}/files/${f.id}`),
    await http('GET', `/v1/containers/${ct.id}/files/${f.id}/content`),
    await http('DELETE', `/v1/containers/${ct.id}/files/${f.id}`),
  ]) {
    assertOpenAIError(res, 400, { type: 'invalid_request_error' });
    assert.equal(res.json.error.message, 'Container is expired.');
  }
  // Nothing above revived it.
  assert.equal((await c.containers.retrieve(ct.id)).status, 'expired');
  // It can still be deleted.
  await c.containers.delete(ct.id);
  await assert.rejects(c.containers.retrieve(ct.id), (e) => e.status === 404);
});

test('use moves last_active_at: an upload, a retrieve, a file read', async () => {
  const c = client();
  const ct = await c.containers.create({ name: unique('active'), expires_after: { anchor: 'last_active_at', minutes: 1 } });
  const back = () => psql(
    "UPDATE containers SET last_active_at = now() - interval '50 seconds' WHERE id = :'v1' "
    + 'RETURNING extract(epoch FROM last_active_at)::bigint', ct.id)[0];
  let old = Number(back());
  const f = await c.containers.files.create(ct.id, { file: await toFile(Buffer.from('x'), 'x.txt') });
  let now = (await http('GET', `/v1/containers/${ct.id}`)).json.last_active_at;
  assert.ok(now >= old + 49, `upload moved last_active_at from ${old} to ${now}`);
  old = Number(back());
  const r = await c.containers.retrieve(ct.id);
  assert.ok(r.last_active_at >= old + 49, 'a retrieve is a use');
  assert.equal(r.status, 'running');
  old = Number(back());
  await c.containers.files.retrieve(f.id, { container_id: ct.id });
  now = Number(psql("SELECT extract(epoch FROM last_active_at)::bigint FROM containers WHERE id = :'v1'", ct.id)[0]);
  assert.ok(now >= old + 49, 'a file read is a use');
  // Listing containers is not a use of each.
  old = Number(back());
  await c.containers.list({ name: ct.name });
  now = Number(psql("SELECT extract(epoch FROM last_active_at)::bigint FROM containers WHERE id = :'v1'", ct.id)[0]);
  assert.equal(now, old);
});

test('limits: the file size cap, files per container, bytes per container, filenames', async () => {
  const c = client();
  const ct = await c.containers.create({ name: unique('limits') });

  const big = await rawUpload(ct.id, (() => {
    const fd = new FormData();
    fd.append('file', new Blob([Buffer.alloc(MAX_FILE_BYTES + 1, 0x61)]), 'big.txt');
    return fd;
  })());
  assertOpenAIError(big, 413, { code: 'file_too_large' });

  for (const bad of ['..', '.', 'dir/', 'n'.repeat(256)]) {
    const fd = new FormData();
    fd.append('file', new Blob(['x']), bad);
    const res = await rawUpload(ct.id, fd);
    assertOpenAIError(res, 400, { code: 'invalid_value' });
  }
  const ok255 = await c.containers.files.create(ct.id, { file: await toFile(Buffer.from('x'), 'n'.repeat(255)) });
  assert.equal(ok255.path, `/mnt/data/${'n'.repeat(255)}`);

  // 100 files (rows made by SQL, as 99 uploads would make them): the next is refused,
  // while replacing one at the same path is not an extra file.
  psql(`INSERT INTO container_files (id, container_id, path, source, bytes, content)
        SELECT 'cfile_fill' || g || :'v2', :'v1', '/mnt/data/fill' || g, 'user', 1, '\\x61'::bytea
        FROM generate_series(1, 99) g`, ct.id, unique(''));
  const over = await rawUpload(ct.id, (() => {
    const fd = new FormData(); fd.append('file', new Blob(['y']), 'one-more.txt'); return fd;
  })());
  assertOpenAIError(over, 400, { code: 'container_too_large' });
  const same = await c.containers.files.create(ct.id, { file: await toFile(Buffer.from('yy'), 'fill7') });
  assert.equal(same.path, '/mnt/data/fill7');
  assert.equal((await c.containers.files.list(ct.id, { limit: 100 })).data.length, 100);

  // Total bytes: a container whose files already hold 64 MiB minus 3 bytes (the
  // recorded sizes, set by SQL) takes 3 more bytes but not 4.
  const ct2 = await c.containers.create({ name: unique('bytes') });
  psql(`INSERT INTO container_files (id, container_id, path, source, bytes, content)
        VALUES ('cfile_heavy' || :'v2', :'v1', '/mnt/data/heavy', 'user', 67108861, '\\x61'::bytea)`, ct2.id, unique(''));
  const four = await rawUpload(ct2.id, (() => { const fd = new FormData(); fd.append('file', new Blob(['abcd']), 'four'); return fd; })());
  assertOpenAIError(four, 400, { code: 'container_too_large' });
  const three = await c.containers.files.create(ct2.id, { file: await toFile(Buffer.from('abc'), 'three') });
  assert.equal(three.bytes, 3);

  // file_ids beyond what a container holds.
  const many = Array.from({ length: 101 }, (_, i) => `file-${i}`);
  assertOpenAIError(await http('POST', '/v1/containers', { body: { name: 'x', file_ids: many } }), 400,
    { code: 'array_above_max_length' });
});

test('bad inputs get 400 with OpenAI\'s error body', async () => {
  const cases = [
    [{}, 'missing_required_parameter', 'name'],
    [{ name: 5 }, 'invalid_type', 'name'],
    [{ name: '' }, 'empty_string', 'name'],
    [{ name: 'x', colour: 'red' }, 'unknown_parameter', 'colour'],
    [{ name: 'x', memory_limit: '2g' }, 'invalid_value', 'memory_limit'],
    [{ name: 'x', expires_after: { anchor: 'created_at', minutes: 5 } }, 'invalid_value', 'expires_after.anchor'],
    [{ name: 'x', expires_after: { anchor: 'last_active_at' } }, 'missing_required_parameter', 'expires_after.minutes'],
    [{ name: 'x', expires_after: { anchor: 'last_active_at', minutes: 0 } }, 'integer_below_min_value', 'expires_after.minutes'],
    [{ name: 'x', expires_after: { anchor: 'last_active_at', minutes: 10081 } }, 'integer_above_max_value', 'expires_after.minutes'],
    [{ name: 'x', file_ids: 'file-1' }, 'invalid_type', 'file_ids'],
    [{ name: 'x', network_policy: { type: 'allowlist', allowed_domains: ['example.com'] } }, 'unsupported_value', 'network_policy.type'],
    [{ name: 'x', skills: [{ type: 'skill_reference', skill_id: 'skill_1' }] }, 'unsupported_value', 'skills'],
  ];
  for (const [body, code, param] of cases) {
    const res = await http('POST', '/v1/containers', { body });
    assertOpenAIError(res, 400, { code, type: 'invalid_request_error' });
    assert.equal(res.json.error.param, param, JSON.stringify(body));
  }
  assertOpenAIError(await http('POST', '/v1/containers', { raw: '{"name":', headers: { 'content-type': 'application/json' } }), 400);
  // The SDK's typed errors for the same.
  await assert.rejects(client().containers.create({ name: 'x', memory_limit: '3g' }),
    (e) => e.status === 400 && e.code === 'invalid_value' && e.param === 'memory_limit');

  const ct = await client().containers.create({ name: unique('bad') });
  const cases2 = [
    [{}, 'missing_required_parameter'],
    [{ file_id: 7 }, 'invalid_value'],
    [{ file_id: 'file-x', other: 1 }, 'unknown_parameter'],
  ];
  for (const [body, code] of cases2) {
    assertOpenAIError(await http('POST', `/v1/containers/${ct.id}/files`, { body }), 400, { code });
  }
  const noFile = new FormData();
  noFile.append('purpose', 'user_data');
  assertOpenAIError(await rawUpload(ct.id, noFile), 400, { code: 'missing_required_parameter' });
  assertOpenAIError(await http('GET', `/v1/containers/${ct.id}/files?limit=0`), 400, { code: 'invalid_value' });
  assertOpenAIError(await http('PUT', `/v1/containers/${ct.id}`), 405);
  assertOpenAIError(await http('GET', '/v1/containers/cntr_nope'), 404);
  assertOpenAIError(await http('GET', '/v1/containers', { key: 'sk-wrong' }), 401);
});
