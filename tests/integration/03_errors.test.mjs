// Authentication, permission, routing and validation errors: each with the
// right status and OpenAI's error body; upstream errors keep their message.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { cfg, client, http, newAccountKey, psql, sbctl, unique, waitFor, assertOpenAIError } from './harness.mjs';

const chatBody = { model: 'emu-chat', messages: [{ role: 'user', content: 'hi' }] };

test('401: missing, wrong, truncated and foreign keys', async () => {
  for (const path of ['/v1/chat/completions', '/v1/responses']) {
    const body = path.includes('chat') ? chatBody : { model: 'emu-chat', input: 'hi' };
    const missing = await http('POST', path, { key: null, body });
    assertOpenAIError(missing, 401);
    assert.match(missing.json.error.message, /Invalid API Key/);
    assertOpenAIError(await http('POST', path, { key: 'sk-sb-' + 'x'.repeat(48), body }), 401, { code: 'invalid_api_key' });
    assertOpenAIError(await http('POST', path, { key: cfg.key.slice(0, -3), body }), 401, { code: 'invalid_api_key' });
    assertOpenAIError(await http('POST', path, { key: 'sk-proj-abcdefghijklmnop', body }), 401, { code: 'invalid_api_key' });
  }
  // The SDK surfaces it as AuthenticationError.
  await assert.rejects(client(cfg.frontendA, 'sk-sb-' + 'y'.repeat(48)).responses.create({ model: 'emu-chat', input: 'x' }),
    (e) => e instanceof OpenAI.AuthenticationError && e.status === 401);
});

test('a disabled key is refused on every frontend within 1 s, and works again when enabled', async () => {
  const { key } = newAccountKey();
  for (const base of [cfg.frontendA, cfg.frontendB]) // warm both caches
    assert.equal((await http('POST', '/v1/chat/completions', { base, key, body: chatBody })).status, 200);
  // Only the key's SHA-256 is stored; find its id by hashing it the same way.
  const [id] = psql("SELECT id FROM api_keys WHERE key_hash = encode(sha256(convert_to(:'v1', 'UTF8')), 'hex')", key);
  assert.ok(Number(id) > 0);
  const t0 = Date.now();
  sbctl('key', 'disable', String(id));
  for (const base of [cfg.frontendA, cfg.frontendB]) {
    const refused = await waitFor(async () => (await http('GET', '/v1/models', { base, key })).status === 401, { timeout: 1000, interval: 20 });
    assert.ok(refused, `key still accepted on ${base} 1 s after disable`);
  }
  assert.ok(Date.now() - t0 < 1500);
  sbctl('key', 'enable', String(id));
  const back = await waitFor(async () => (await http('GET', '/v1/models', { key })).status === 200, { timeout: 1000 });
  assert.ok(back);
});

test('403: the key\'s token group may not call the model', async () => {
  const { key } = newAccountKey({ models: ['some-other-model'] });
  const res = await http('POST', '/v1/chat/completions', { key, body: chatBody });
  assertOpenAIError(res, 403);
  assert.equal(res.json.error.param, 'model');
  await assert.rejects(client(cfg.frontendA, key).responses.create({ model: 'emu-chat', input: 'x' }),
    (e) => e instanceof OpenAI.PermissionDeniedError);
});

test('404: unknown model, disabled model, wrong path', async () => {
  const unknown = await http('POST', '/v1/responses', { body: { model: 'no-such-model', input: 'x' } });
  assertOpenAIError(unknown, 404, { code: 'model_not_found' });
  assert.match(unknown.json.error.message, /model not found/);
  const model = unique('m');
  sbctl('model', 'add', model, '--provider', 'openai-chat', '--base-url', `${cfg.emu}/v1`, '--upstream-model', 'emu-model');
  sbctl('model', 'disable', model);
  assertOpenAIError(await http('POST', '/v1/chat/completions', { body: { ...chatBody, model } }), 404, { code: 'model_not_found' });
  const doubled = await http('POST', '/v1/chat/completions/v1/chat/completions', { body: chatBody });
  assertOpenAIError(doubled, 404);
  assert.match(doubled.json.error.message, /Invalid URL/);
  assertOpenAIError(await http('GET', '/v2/whatever'), 404);
  // An SDK given a full endpoint path as base address gets a 404, not a silent success.
  const wrongBase = new OpenAI({ apiKey: cfg.key, baseURL: `${cfg.frontendA}/v1/chat/completions`, maxRetries: 0 });
  await assert.rejects(wrongBase.chat.completions.create(chatBody), (e) => e.status === 404);
});

test('400: a body of another style, bad JSON, missing and mistyped fields', async () => {
  const cases = [
    ['/v1/chat/completions', { model: 'emu-chat', input: 'hi' }, 'input'],
    ['/v1/chat/completions', { model: 'emu-chat', contents: [{ parts: [{ text: 'hi' }] }] }, 'contents'],
    ['/v1/responses', { model: 'emu-chat', messages: [{ role: 'user', content: 'hi' }] }, 'messages'],
    ['/v1/responses', { model: 'emu-chat', input: 'hi', n: 2 }, 'n'],
  ];
  for (const [path, body, param] of cases) {
    const res = await http('POST', path, { body });
    assertOpenAIError(res, 400, { type: 'invalid_request_error' });
    assert.equal(res.json.error.param, param, res.text);
  }
  assertOpenAIError(await http('POST', '/v1/responses', { raw: '{"model": "emu-chat", "input": ' }), 400, { code: 'invalid_json' });
  assertOpenAIError(await http('POST', '/v1/responses', { raw: '[1,2]' }), 400);
  const deep = '{"model":"emu-chat","input":' + '['.repeat(500) + ']'.repeat(500) + '}';
  assertOpenAIError(await http('POST', '/v1/responses', { raw: deep }), 400, { code: 'json_too_deep' });
  const noModel = await http('POST', '/v1/chat/completions', { body: { messages: [{ role: 'user', content: 'x' }] } });
  assertOpenAIError(noModel, 400, { code: 'missing_required_parameter' });
  assert.equal(noModel.json.error.param, 'model');
  assertOpenAIError(await http('POST', '/v1/chat/completions', { body: { model: 'emu-chat', messages: [] } }), 400);
  assertOpenAIError(await http('POST', '/v1/chat/completions', { body: { model: 'emu-chat', messages: [{ role: 'wizard', content: 'x' }] } }), 400);
  assertOpenAIError(await http('POST', '/v1/responses', { body: { model: 'emu-chat', input: 'x', temperature: 'hot' } }), 400);
  assertOpenAIError(await http('POST', '/v1/responses', { body: { model: 42, input: 'x' } }), 400);
});

test('upstream errors map to the spec statuses and keep the upstream message', async () => {
  for (const status of [400, 429, 500, 502, 503]) {
    const res = await http('POST', '/v1/chat/completions', {
      body: { model: 'emu-chat', messages: [{ role: 'user', content: `[[emu:status=${status}]] ${unique()}` }] },
    });
    assertOpenAIError(res, status);
    assert.match(res.json.error.message, new RegExp(`emulated upstream error ${status}`));
    if (status === 429) assert.equal(res.headers.get('retry-after'), '1');
    assert.ok(!res.text.includes(process.env.SB_EMU_UPSTREAM_KEY || 'never-matches'), 'upstream credential never leaks');
  }
  const malformed = await http('POST', '/v1/responses', { body: { model: 'emu-chat', input: `[[emu:malformed]] ${unique()}` } });
  assertOpenAIError(malformed, 502);
});
