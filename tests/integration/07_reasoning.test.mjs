// Reasoning: effort passed upstream and reasoning items, sealed reasoning
// (encrypted_content) passed back across requests and bound to its account,
// zero-data-retention accounts, and the capability rules per model.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  client, http, psql, sbctl, unique, newAccountKey, ensureModel, upstreamRequestContaining, upstreamRequestsContaining,
  assertOpenAIError,
} from './harness.mjs';

const postResp = (body, opts = {}) => http('POST', '/v1/responses', { body, ...opts });
const weatherTool = {
  type: 'function', name: 'get_weather', description: 'Weather',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
};

function msgText(r) {
  const msg = r.output.find((o) => o.type === 'message');
  assert.ok(msg, JSON.stringify(r.output));
  return msg.content.filter((p) => p.type === 'output_text').map((p) => p.text).join('');
}

// Changes one character in the middle of s (to another base64/base64url character).
function flipOne(s) {
  const i = Math.floor(s.length / 2);
  const ch = s[i] === 'A' ? 'B' : 'A';
  return s.slice(0, i) + ch + s.slice(i + 1);
}

test('reasoning.effort low: upstream reasoning_effort, a reasoning item before the message, reasoning tokens', async () => {
  const m = unique('rlow');
  const res = await postResp({ model: 'emu-chat', input: `think ${m}`, reasoning: { effort: 'low' } });
  assert.equal(res.status, 200, res.text);
  const r = res.json;
  const up = await upstreamRequestContaining(`think ${m}`);
  assert.equal(up.body.reasoning_effort, 'low');
  assert.deepEqual(r.output.map((o) => o.type), ['reasoning', 'message']);
  const rs = r.output[0];
  assert.ok(typeof rs.id === 'string' && rs.id.length > 0);
  assert.ok(Array.isArray(rs.summary));
  assert.deepEqual(rs.content, [{ type: 'reasoning_text', text: `Reasoning (low) about: think ${m}` }]);
  assert.equal(msgText(r), `You said: think ${m}`);
  assert.ok(r.usage.output_tokens_details.reasoning_tokens > 0);
  assert.ok(r.usage.output_tokens >= r.usage.output_tokens_details.reasoning_tokens);
  assert.equal(r.reasoning.effort, 'low');

  // Without reasoning, nothing is asked upstream and no reasoning item comes back.
  const m2 = unique('rnone');
  const plain = await postResp({ model: 'emu-chat', input: `plain ${m2}` });
  assert.equal(plain.status, 200);
  assert.deepEqual(plain.json.output.map((o) => o.type), ['message']);
  assert.equal((await upstreamRequestContaining(`plain ${m2}`)).body.reasoning_effort, undefined);

  for (const effort of ['extreme', 'LOW', '', 3]) {
    assertOpenAIError(await postResp({ model: 'emu-chat', input: 'x', reasoning: { effort } }), 400);
  }
  assertOpenAIError(await postResp({ model: 'emu-chat', input: 'x', reasoning: 'low' }), 400);
});

test('include reasoning.encrypted_content with store:false seals the reasoning, and it can be passed back', async () => {
  const m = unique('seal');
  const res = await postResp({
    model: 'emu-chat', input: `secret thoughts ${m}`, reasoning: { effort: 'low' }, store: false, include: ['reasoning.encrypted_content'],
  });
  assert.equal(res.status, 200, res.text);
  const rs = res.json.output.find((o) => o.type === 'reasoning');
  assert.ok(rs, res.text);
  assert.equal(typeof rs.encrypted_content, 'string');
  assert.ok(rs.encrypted_content.length > 20);
  assert.ok(rs.content === undefined || rs.content === null, `sealed reasoning carries no content: ${JSON.stringify(rs)}`);
  assert.ok(!rs.encrypted_content.includes(m), 'the reasoning text is not readable in encrypted_content');
  assert.ok(!res.text.includes(`Reasoning (low) about: secret thoughts ${m}`), 'no plaintext reasoning anywhere');
  assert.equal(res.json.store, false);

  // Passed back as ordinary input items (client-side chaining, store:false).
  const m2 = unique('next');
  const next = await postResp({
    model: 'emu-chat', store: false, reasoning: { effort: 'low' }, include: ['reasoning.encrypted_content'],
    input: [{ role: 'user', content: `secret thoughts ${m}` }, ...res.json.output, { role: 'user', content: `follow up ${m2}` }],
  });
  assert.equal(next.status, 200, next.text);
  assert.equal(msgText(next.json), `You said: follow up ${m2}`);
  const up = await upstreamRequestContaining(`follow up ${m2}`);
  assert.deepEqual(up.body.messages.filter((x) => x.role === 'user').length, 2);
  // The upstream never sees the sealed blob itself.
  assert.ok(!JSON.stringify(up.body).includes(rs.encrypted_content));

  // One character changed: refused.
  const tampered = { ...rs, encrypted_content: flipOne(rs.encrypted_content) };
  assert.notEqual(tampered.encrypted_content, rs.encrypted_content);
  const bad = await postResp({
    model: 'emu-chat', store: false,
    input: [{ role: 'user', content: `secret thoughts ${m}` }, tampered, { role: 'user', content: `tampered ${m2}` }],
  });
  assertOpenAIError(bad, 400, { code: 'invalid_encrypted_content' });
  assert.equal((await upstreamRequestsContaining(`tampered ${m2}`)).length, 0);

  // Truncated: refused as well.
  const truncated = { ...rs, encrypted_content: rs.encrypted_content.slice(0, -4) };
  assertOpenAIError(await postResp({
    model: 'emu-chat', store: false, input: [truncated, { role: 'user', content: 'x' }],
  }), 400, { code: 'invalid_encrypted_content' });
});

test('a sealed reasoning item only opens for the account it was sealed for', async () => {
  const m = unique('acct');
  const res = await postResp({
    model: 'emu-chat', input: `mine ${m}`, reasoning: { effort: 'low' }, store: false, include: ['reasoning.encrypted_content'],
  });
  assert.equal(res.status, 200, res.text);
  const rs = res.json.output.find((o) => o.type === 'reasoning');
  assert.equal(typeof rs.encrypted_content, 'string');
  const other = newAccountKey();
  const theirs = await postResp({
    model: 'emu-chat', store: false, input: [{ role: 'user', content: `mine ${m}` }, rs, { role: 'user', content: `stolen ${m}` }],
  }, { key: other.key });
  assertOpenAIError(theirs, 400, { code: 'invalid_encrypted_content' });
  assert.equal((await upstreamRequestsContaining(`stolen ${m}`)).length, 0);
  // Still fine for its own account.
  const mine = await postResp({
    model: 'emu-chat', store: false, input: [{ role: 'user', content: `mine ${m}` }, rs, { role: 'user', content: `again ${m}` }],
  });
  assert.equal(mine.status, 200, mine.text);
});

test('include with an unknown value is 400', async () => {
  assertOpenAIError(await postResp({ model: 'emu-chat', input: 'x', include: ['reasoning.plaintext'] }), 400);
  assertOpenAIError(await postResp({ model: 'emu-chat', input: 'x', include: 'reasoning.encrypted_content' }), 400);
  const ok = await postResp({ model: 'emu-chat', input: 'x', store: false, include: ['reasoning.encrypted_content'] });
  assert.equal(ok.status, 200, ok.text);
});

test('a zero-data-retention account: store forced false, nothing stored, reasoning always sealed', async () => {
  const account = unique('zdr');
  const group = unique('zgrp');
  sbctl('account', 'create', account, '--zdr');
  sbctl('group', 'create', group);
  sbctl('group', 'allow', group, '*');
  const key = sbctl('key', 'create', '--account', account, '--group', group);
  const m = unique('zdrin');

  const res = await postResp({ model: 'emu-chat', input: `zdr ${m}`, reasoning: { effort: 'low' } }, { key });
  assert.equal(res.status, 200, res.text);
  assert.equal(res.json.store, false);
  const rs = res.json.output.find((o) => o.type === 'reasoning');
  assert.ok(rs, res.text);
  assert.equal(typeof rs.encrypted_content, 'string', 'reasoning is sealed without include');
  assert.ok(rs.content === undefined || rs.content === null, JSON.stringify(rs));
  assert.ok(!res.text.includes(`Reasoning (low) about: zdr ${m}`));

  // Asking to store explicitly changes nothing.
  const res2 = await postResp({ model: 'emu-chat', input: `zdr2 ${m}`, store: true }, { key });
  assert.equal(res2.status, 200, res2.text);
  assert.equal(res2.json.store, false);

  assertOpenAIError(await http('GET', `/v1/responses/${res.json.id}`, { key }), 404);
  assertOpenAIError(await http('GET', `/v1/responses/${res2.json.id}`, { key }), 404);
  assertOpenAIError(await postResp({ model: 'emu-chat', input: 'x', previous_response_id: res.json.id }, { key }), 404);
  const rows = psql(
    "SELECT count(*) FROM responses r JOIN accounts a ON a.id = r.account_id WHERE a.name = :'v1' OR r.id IN (:'v2', :'v3')",
    account, res.json.id, res2.json.id,
  );
  assert.deepEqual(rows, ['0']);

  // The sealed item works as input for the next turn (decrypted in memory only).
  const next = await postResp({
    model: 'emu-chat', reasoning: { effort: 'low' },
    input: [{ role: 'user', content: `zdr ${m}` }, ...res.json.output, { role: 'user', content: `zdr next ${m}` }],
  }, { key });
  assert.equal(next.status, 200, next.text);
  assert.equal(msgText(next.json), `You said: zdr next ${m}`);
  assert.equal(typeof next.json.output.find((o) => o.type === 'reasoning').encrypted_content, 'string');
});

test('capabilities: reasoning, reasoning_family_version 5.4 with effort none + tools, tools, vision', async () => {
  const noReason = ensureModel('it07-no-reasoning', { capabilities: { reasoning: false } });
  const r1 = await postResp({ model: noReason, input: 'x', reasoning: { effort: 'low' } });
  assertOpenAIError(r1, 400, { code: 'unsupported_parameter' });
  assertOpenAIError(await http('POST', '/v1/chat/completions', {
    body: { model: noReason, messages: [{ role: 'user', content: 'x' }], reasoning_effort: 'low' },
  }), 400, { code: 'unsupported_parameter' });
  assert.equal((await postResp({ model: noReason, input: 'plain' })).status, 200);

  const v54 = ensureModel('it07-family-5-4', { capabilities: { reasoning_family_version: 5.4 } });
  const m = unique('fam');
  const noneTools = await postResp({ model: v54, input: `none+tools ${m}`, reasoning: { effort: 'none' }, tools: [weatherTool] });
  assertOpenAIError(noneTools, 400, { code: 'unsupported_parameter' });
  assertOpenAIError(await http('POST', '/v1/chat/completions', {
    body: {
      model: v54, messages: [{ role: 'user', content: 'x' }], reasoning_effort: 'none',
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: weatherTool.parameters } }],
    },
  }), 400, { code: 'unsupported_parameter' });
  const lowTools = await postResp({ model: v54, input: `CALL get_weather {"city":"Lima"}\n${m}`, reasoning: { effort: 'low' }, tools: [weatherTool] });
  assert.equal(lowTools.status, 200, lowTools.text);
  assert.equal(lowTools.json.output.find((o) => o.type === 'function_call').arguments, '{"city":"Lima"}');
  const noneNoTools = await postResp({ model: v54, input: `none alone ${m}`, reasoning: { effort: 'none' } });
  assert.equal(noneNoTools.status, 200, noneNoTools.text);
  assert.equal(msgText(noneNoTools.json), `You said: none alone ${m}`);
  assert.ok(!noneNoTools.json.output.some((o) => o.type === 'reasoning'));

  // An older family version still allows effort none with tools.
  const v53 = ensureModel('it07-family-5-3', { capabilities: { reasoning_family_version: 5.3 } });
  const old = await postResp({ model: v53, input: `old ${m}`, reasoning: { effort: 'none' }, tools: [weatherTool] });
  assert.equal(old.status, 200, old.text);

  const noTools = ensureModel('it07-no-tools', { capabilities: { tools: false } });
  assertOpenAIError(await postResp({ model: noTools, input: 'x', tools: [weatherTool] }), 400, { code: 'unsupported_parameter' });
  assertOpenAIError(await http('POST', '/v1/chat/completions', {
    body: { model: noTools, messages: [{ role: 'user', content: 'x' }], tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: {} } } }] },
  }), 400, { code: 'unsupported_parameter' });
  assert.equal((await postResp({ model: noTools, input: 'plain' })).status, 200);

  const noVision = ensureModel('it07-no-vision', { capabilities: { vision: false } });
  const img = await postResp({
    model: noVision,
    input: [{ role: 'user', content: [{ type: 'input_text', text: 'see' }, { type: 'input_image', image_url: 'https://example.com/a.png' }] }],
  });
  assertOpenAIError(img, 400, { code: 'unsupported_parameter' });
  assertOpenAIError(await http('POST', '/v1/chat/completions', {
    body: { model: noVision, messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://example.com/a.png' } }] }] },
  }), 400, { code: 'unsupported_parameter' });
  assert.equal((await postResp({ model: noVision, input: 'plain' })).status, 200);
});

test('Chat Completions reasoning_effort medium: reasoning_content and reasoning tokens', async () => {
  const m = unique('creason');
  const c = await client().chat.completions.create({
    model: 'emu-chat', messages: [{ role: 'user', content: `ponder ${m}` }], reasoning_effort: 'medium',
  });
  assert.equal(c.choices[0].message.content, `You said: ponder ${m}`);
  assert.equal(c.choices[0].message.reasoning_content, `Reasoning (medium) about: ponder ${m}`);
  assert.ok(c.usage.completion_tokens_details.reasoning_tokens > 0);
  assert.ok(c.usage.completion_tokens >= c.usage.completion_tokens_details.reasoning_tokens);
  const up = await upstreamRequestContaining(`ponder ${m}`);
  assert.equal(up.body.reasoning_effort, 'medium');
  assertOpenAIError(await http('POST', '/v1/chat/completions', {
    body: { model: 'emu-chat', messages: [{ role: 'user', content: 'x' }], reasoning_effort: 'extreme' },
  }), 400);
});
