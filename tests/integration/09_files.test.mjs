// The Files API (upload, retrieve, content, list, delete, owner scoping,
// limits and validation) and files used in generation (input_file,
// input_image and chat "file" parts), checked against what the upstream got.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { toFile } from 'openai';
import {
  cfg, client, ensureModel, http, newAccountKey, unique, upstreamRequestContaining, assertOpenAIError,
} from './harness.mjs';

const MAX_FILE_BYTES = 1048576; // frontends run with --max-file-bytes 1048576

// A valid 1x1 PNG.
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');

async function upload(c, bytes, filename, purpose = 'user_data') {
  return c.files.create({ file: await toFile(bytes, filename), purpose });
}

// Raw multipart upload, for the error cases the SDK would not send.
async function rawUpload(form, { key = cfg.key } = {}) {
  const res = await fetch(`${cfg.frontendA}/v1/files`, {
    method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form,
  });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, headers: res.headers, text, json };
}

// Every text an upstream chat request carries (string contents and text parts).
function upstreamTexts(body) {
  const out = [];
  for (const m of body.messages) {
    if (typeof m.content === 'string') out.push(m.content);
    else if (Array.isArray(m.content)) for (const p of m.content) if (p.type === 'text') out.push(p.text);
  }
  return out;
}

function upstreamParts(body, type) {
  const out = [];
  for (const m of body.messages) if (Array.isArray(m.content)) for (const p of m.content) if (p.type === type) out.push(p);
  return out;
}

test('upload returns a file object; retrieve and content return it byte for byte', async () => {
  const c = client();
  const text = `notes ${unique('f')}\nline two\n`;
  const f = await upload(c, Buffer.from(text), 'notes.txt');
  assert.match(f.id, /^file-/);
  assert.equal(f.object, 'file');
  assert.equal(f.bytes, Buffer.byteLength(text));
  assert.equal(typeof f.created_at, 'number');
  assert.ok(Math.abs(f.created_at - Date.now() / 1000) < 300, `created_at ${f.created_at} is in seconds, now`);
  assert.equal(f.filename, 'notes.txt');
  assert.equal(f.purpose, 'user_data');
  assert.ok(['uploaded', 'processed'].includes(f.status), `status ${f.status}`);

  const got = await client(cfg.frontendB).files.retrieve(f.id);
  assert.equal(got.id, f.id);
  assert.equal(got.bytes, f.bytes);
  assert.equal(got.filename, 'notes.txt');
  assert.equal(got.purpose, 'user_data');
  assert.equal(got.created_at, f.created_at);

  const content = await c.files.content(f.id);
  assert.equal(Buffer.from(await content.arrayBuffer()).toString('utf8'), text);
});

test('binary content with NUL bytes round-trips exactly', async () => {
  const c = client();
  const bytes = Buffer.alloc(4096);
  for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 7 + (i >> 8)) & 0xff;
  bytes[0] = 0; bytes[1] = 0; bytes[100] = 0; bytes[4095] = 0;
  const f = await upload(c, bytes, 'blob.bin');
  assert.equal(f.bytes, bytes.length);
  const content = await c.files.content(f.id);
  const back = Buffer.from(await content.arrayBuffer());
  assert.equal(back.length, bytes.length);
  assert.ok(back.equals(bytes), 'downloaded bytes equal the upload');
});

test('list contains uploads and honours limit, after and order', async () => {
  const other = newAccountKey(); // a fresh account: its list holds only these files
  const c = client(cfg.frontendA, other.key);
  const ids = [];
  for (let i = 0; i < 3; i++) ids.push((await upload(c, Buffer.from(`file ${i}`), `f${i}.txt`)).id);

  const all = await http('GET', '/v1/files', { key: other.key });
  assert.equal(all.status, 200, all.text);
  assert.equal(all.json.object, 'list');
  assert.deepEqual(all.json.data.map((f) => f.id).sort(), [...ids].sort());
  for (const f of all.json.data) assert.equal(f.object, 'file');

  const asc = await http('GET', '/v1/files?limit=2&order=asc', { key: other.key });
  assert.equal(asc.status, 200, asc.text);
  assert.deepEqual(asc.json.data.map((f) => f.id), ids.slice(0, 2));
  assert.equal(asc.json.has_more, true);
  const next = await http('GET', `/v1/files?limit=2&order=asc&after=${ids[1]}`, { key: other.key });
  assert.deepEqual(next.json.data.map((f) => f.id), [ids[2]]);
  assert.equal(next.json.has_more, false);

  const desc = await http('GET', '/v1/files?order=desc', { key: other.key });
  assert.deepEqual(desc.json.data.map((f) => f.id), [...ids].reverse());
  const desc1 = await http('GET', '/v1/files?order=desc&limit=1', { key: other.key });
  assert.deepEqual(desc1.json.data.map((f) => f.id), [ids[2]]);

  // The SDK's list sees them too (auto-paginating).
  const seen = [];
  for await (const f of c.files.list()) seen.push(f.id);
  assert.deepEqual(seen.sort(), [...ids].sort());
  // And the dev account's list contains a fresh upload of its own.
  const mine = await upload(client(), Buffer.from('mine'), 'mine.txt');
  const devList = await http('GET', '/v1/files?limit=100&order=desc');
  assert.ok(devList.json.data.some((f) => f.id === mine.id));
  assert.ok(!devList.json.data.some((f) => ids.includes(f.id)), 'other account files not listed');
});

test('delete returns deleted:true, then get, content and delete are 404', async () => {
  const c = client();
  const f = await upload(c, Buffer.from('to delete'), 'del.txt');
  const del = await c.files.delete(f.id);
  assert.equal(del.id, f.id);
  assert.equal(del.deleted, true);
  const again = await http('DELETE', `/v1/files/${f.id}`);
  assertOpenAIError(again, 404);
  assertOpenAIError(await http('GET', `/v1/files/${f.id}`, { base: cfg.frontendB }), 404);
  assertOpenAIError(await http('GET', `/v1/files/${f.id}/content`), 404);
  await assert.rejects(c.files.retrieve(f.id), (e) => e.status === 404);
});

test('another account gets 404 for get, content and delete, and does not list the file', async () => {
  const f = await upload(client(), Buffer.from('private'), 'private.txt');
  const other = newAccountKey();
  assertOpenAIError(await http('GET', `/v1/files/${f.id}`, { key: other.key }), 404);
  assertOpenAIError(await http('GET', `/v1/files/${f.id}/content`, { key: other.key }), 404);
  assertOpenAIError(await http('DELETE', `/v1/files/${f.id}`, { key: other.key }), 404);
  const list = await http('GET', '/v1/files?limit=100', { key: other.key });
  assert.equal(list.status, 200);
  assert.ok(!list.json.data.some((x) => x.id === f.id));
  // Still there for its owner.
  assert.equal((await http('GET', `/v1/files/${f.id}`)).status, 200);
  assert.equal((await http('GET', `/v1/files/${f.id}/content`)).text, 'private');
});

test('an upload over the size limit is 413 with an OpenAI error body', async () => {
  for (const size of [MAX_FILE_BYTES + 1, 2 * MAX_FILE_BYTES]) {
    const form = new FormData();
    form.append('purpose', 'user_data');
    form.append('file', new Blob([Buffer.alloc(size, 0x61)]), 'big.txt');
    const res = await rawUpload(form);
    assertOpenAIError(res, 413);
  }
  // Exactly at the limit is fine.
  const form = new FormData();
  form.append('purpose', 'user_data');
  form.append('file', new Blob([Buffer.alloc(MAX_FILE_BYTES, 0x62)]), 'limit.txt');
  const ok = await rawUpload(form);
  assert.equal(ok.status, 200, ok.text);
  assert.equal(ok.json.bytes, MAX_FILE_BYTES);
  // The SDK surfaces the 413 as an APIError.
  await assert.rejects(upload(client(), Buffer.alloc(MAX_FILE_BYTES + 10), 'big2.txt'), (e) => e.status === 413);
});

test('missing purpose, bad purpose, missing file and a non-multipart body are 400', async () => {
  const noPurpose = new FormData();
  noPurpose.append('file', new Blob(['x']), 'a.txt');
  const r1 = await rawUpload(noPurpose);
  assertOpenAIError(r1, 400);
  assert.equal(r1.json.error.param, 'purpose');

  const badPurpose = new FormData();
  badPurpose.append('purpose', 'nonsense');
  badPurpose.append('file', new Blob(['x']), 'a.txt');
  const r2 = await rawUpload(badPurpose);
  assertOpenAIError(r2, 400);
  assert.equal(r2.json.error.param, 'purpose');

  const noFile = new FormData();
  noFile.append('purpose', 'user_data');
  assertOpenAIError(await rawUpload(noFile), 400);

  assertOpenAIError(await http('POST', '/v1/files', { body: { purpose: 'user_data', file: 'aGVsbG8=' } }), 400);
  assertOpenAIError(await http('POST', '/v1/files', {
    raw: 'just text', headers: { 'content-type': 'text/plain' },
  }), 400);
  assertOpenAIError(await http('POST', '/v1/files', {
    raw: 'garbage without boundaries', headers: { 'content-type': 'multipart/form-data; boundary=XyZ' },
  }), 400);
});

test('an uploaded text file as input_file reaches the upstream as "<filename>:\\n<content>"', async () => {
  const marker = unique('tf');
  const content = `Line one ${marker}\nLine two`;
  const f = await upload(client(), Buffer.from(content), 'notes.txt');
  const r = await client().responses.create({
    model: 'emu-chat',
    input: [{ role: 'user', content: [
      { type: 'input_text', text: `summarise ${marker}` },
      { type: 'input_file', file_id: f.id },
    ] }],
  });
  assert.equal(r.status, 'completed');
  assert.ok(r.output_text.startsWith(`You said: summarise ${marker}`), r.output_text);
  const up = await upstreamRequestContaining(`summarise ${marker}`);
  const texts = upstreamTexts(up.body);
  assert.ok(texts.some((t) => t.includes(`notes.txt:\n${content}`)), JSON.stringify(texts));
  assert.ok(!JSON.stringify(up.body).includes(f.id), 'the file id is resolved, not sent upstream');
});

test('an uploaded PDF reaches the upstream as a file part with the same base64 data', async () => {
  const marker = unique('pdf');
  const bytes = Buffer.concat([Buffer.from('%PDF-1.4\n'), Buffer.from([0, 1, 2, 250, 251, 252]), Buffer.from(marker)]);
  const f = await upload(client(), bytes, 'x.pdf');
  const r = await client().responses.create({
    model: 'emu-chat',
    input: [{ role: 'user', content: [
      { type: 'input_text', text: `read ${marker}` },
      { type: 'input_file', file_id: f.id },
    ] }],
  });
  assert.ok(r.output_text.includes(`[file: x.pdf, application/pdf, ${bytes.length} bytes]`), r.output_text);
  const up = await upstreamRequestContaining(`read ${marker}`);
  const parts = upstreamParts(up.body, 'file');
  assert.equal(parts.length, 1, JSON.stringify(up.body.messages));
  assert.equal(parts[0].file.file_data, `data:application/pdf;base64,${bytes.toString('base64')}`);
  assert.equal(parts[0].file.filename, 'x.pdf');
});

test('an input_file with another account\'s file id is 404, and nothing goes upstream', async () => {
  const other = newAccountKey();
  const theirs = await upload(client(cfg.frontendA, other.key), Buffer.from('theirs'), 'theirs.txt');
  const marker = unique('xf');
  const res = await http('POST', '/v1/responses', {
    body: { model: 'emu-chat', input: [{ role: 'user', content: [
      { type: 'input_text', text: `steal ${marker}` }, { type: 'input_file', file_id: theirs.id },
    ] }] },
  });
  assertOpenAIError(res, 404);
  assertOpenAIError(await http('POST', '/v1/responses', {
    body: { model: 'emu-chat', input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'file-doesnotexist000' }] }] },
  }), 404);
  assert.equal(await upstreamRequestContaining(`steal ${marker}`), undefined);
});

test('an inline input_file (file_data data URL + filename) works without upload', async () => {
  const marker = unique('inl');
  const content = `inline body ${marker}`;
  const r = await client().responses.create({
    model: 'emu-chat',
    input: [{ role: 'user', content: [
      { type: 'input_text', text: `look ${marker}` },
      { type: 'input_file', filename: 'inline.txt', file_data: `data:text/plain;base64,${Buffer.from(content).toString('base64')}` },
    ] }],
  });
  assert.equal(r.status, 'completed');
  const up = await upstreamRequestContaining(`look ${marker}`);
  assert.ok(upstreamTexts(up.body).some((t) => t.includes(`inline.txt:\n${content}`)), JSON.stringify(up.body.messages));

  const pdf = Buffer.from(`%PDF-1.4 inline ${marker}`);
  const r2 = await client().responses.create({
    model: 'emu-chat',
    input: [{ role: 'user', content: [
      { type: 'input_text', text: `pdf ${marker}` },
      { type: 'input_file', filename: 'in.pdf', file_data: `data:application/pdf;base64,${pdf.toString('base64')}` },
    ] }],
  });
  assert.ok(r2.output_text.includes(`[file: in.pdf, application/pdf, ${pdf.length} bytes]`), r2.output_text);
});

test('input_image with the file_id of an uploaded PNG reaches the upstream as an image data URL', async () => {
  const marker = unique('png');
  const f = await upload(client(), PNG, 'dot.png', 'vision');
  assert.equal(f.purpose, 'vision');
  const r = await client().responses.create({
    model: 'emu-chat',
    input: [{ role: 'user', content: [
      { type: 'input_text', text: `see ${marker}` },
      { type: 'input_image', file_id: f.id },
    ] }],
  });
  assert.ok(r.output_text.includes(`[image: data:image/png, ${PNG.length} bytes]`), r.output_text);
  const up = await upstreamRequestContaining(`see ${marker}`);
  const imgs = upstreamParts(up.body, 'image_url');
  assert.equal(imgs.length, 1);
  assert.equal(imgs[0].image_url.url, `data:image/png;base64,${PNG.toString('base64')}`);
});

test('a Chat Completions file part with a file_id works too', async () => {
  const marker = unique('cf');
  const content = `chat file ${marker}`;
  const f = await upload(client(), Buffer.from(content), 'chat.txt');
  const c = await client().chat.completions.create({
    model: 'emu-chat',
    messages: [{ role: 'user', content: [
      { type: 'text', text: `check ${marker}` },
      { type: 'file', file: { file_id: f.id } },
    ] }],
  });
  assert.ok(c.choices[0].message.content.startsWith(`You said: check ${marker}`));
  const up = await upstreamRequestContaining(`check ${marker}`);
  assert.ok(upstreamTexts(up.body).some((t) => t.includes(`chat.txt:\n${content}`)), JSON.stringify(up.body.messages));
  assert.ok(!JSON.stringify(up.body).includes(f.id));
  // Another account's file id is a 404 in this style too.
  const other = newAccountKey();
  assertOpenAIError(await http('POST', '/v1/chat/completions', {
    key: other.key, body: { model: 'emu-chat', messages: [{ role: 'user', content: [{ type: 'file', file: { file_id: f.id } }] }] },
  }), 404);
});

test('a model with capabilities {"files": false} refuses file input with 400 unsupported_parameter', async () => {
  const model = ensureModel('it09-no-files', { capabilities: { files: false } });
  const marker = unique('nof');
  const f = await upload(client(), Buffer.from('nope'), 'nope.txt');
  const res = await http('POST', '/v1/responses', {
    body: { model, input: [{ role: 'user', content: [
      { type: 'input_text', text: `no ${marker}` }, { type: 'input_file', file_id: f.id },
    ] }] },
  });
  assertOpenAIError(res, 400, { code: 'unsupported_parameter' });
  const inline = await http('POST', '/v1/chat/completions', {
    body: { model, messages: [{ role: 'user', content: [
      { type: 'text', text: `no ${marker}` },
      { type: 'file', file: { filename: 'a.txt', file_data: 'data:text/plain;base64,aGk=' } },
    ] }] },
  });
  assertOpenAIError(inline, 400, { code: 'unsupported_parameter' });
  assert.equal(await upstreamRequestContaining(`no ${marker}`), undefined);
  // Plain text still works on that model.
  const ok = await http('POST', '/v1/responses', { body: { model, input: `fine ${marker}` } });
  assert.equal(ok.status, 200, ok.text);
});

test('a non-ASCII filename is kept, and list filters by purpose', async () => {
  const other = newAccountKey();
  const c = client(cfg.frontendA, other.key);
  const f = await upload(c, Buffer.from('héllo wörld'), 'résumé 2024.txt');
  assert.equal(f.filename, 'résumé 2024.txt');
  assert.equal(f.bytes, Buffer.byteLength('héllo wörld'));
  assert.equal((await c.files.retrieve(f.id)).filename, 'résumé 2024.txt');
  const img = await upload(c, PNG, 'dot.png', 'vision');
  const vision = await http('GET', '/v1/files?purpose=vision', { key: other.key });
  assert.equal(vision.status, 200, vision.text);
  assert.deepEqual(vision.json.data.map((x) => x.id), [img.id]);
  const userData = await http('GET', '/v1/files?purpose=user_data', { key: other.key });
  assert.deepEqual(userData.json.data.map((x) => x.id), [f.id]);
  assertOpenAIError(await http('GET', '/v1/files?limit=0', { key: other.key }), 400);
  assertOpenAIError(await http('GET', '/v1/files?order=sideways', { key: other.key }), 400);
});
