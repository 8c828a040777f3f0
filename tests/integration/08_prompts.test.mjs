// Prompt templates (Responses `prompt: {id, version, variables}`), managed
// with `sbctl prompt`: substitution into instructions and input items,
// versions, errors, owner scoping, part-valued variables.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { client, http, newAccountKey, sbctl, unique, upstreamRequestContaining, assertOpenAIError } from './harness.mjs';

const DEV = 'dev'; // the account that owns cfg.key

function createPrompt(body, account = DEV) {
  const args = ['prompt', 'create', '--account', account, '--name', unique('pr')];
  if (typeof body === 'string') args.push('--instructions', body);
  else args.push('--body', JSON.stringify(body));
  const id = sbctl(...args);
  assert.match(id, /^pmpt_[A-Za-z0-9]+$/, `sbctl prompt create printed ${id}`);
  return id;
}

// The text of an upstream chat message (string content or its text parts).
function textOf(m) {
  if (typeof m.content === 'string') return m.content;
  if (Array.isArray(m.content)) return m.content.filter((p) => p.type === 'text').map((p) => p.text).join('');
  return '';
}

test('instructions with {{var}} are substituted, sent upstream first, and prompt is echoed', async () => {
  const marker = unique('pv');
  const id = createPrompt('You are {{persona}}. Answer about {{ topic }} only.');
  const variables = { persona: `a pirate ${marker}`, topic: 'ships' };
  const r = await client().responses.create({
    model: 'emu-chat', input: `question ${marker}`, prompt: { id, variables },
  });
  assert.equal(r.status, 'completed');
  assert.equal(r.output_text, `You said: question ${marker}`);
  assert.deepEqual(r.prompt, { id, version: '1', variables });
  const up = await upstreamRequestContaining(`question ${marker}`);
  assert.ok(up, 'the upstream got the request');
  const first = up.body.messages[0];
  assert.ok(['system', 'developer'].includes(first.role), `first role ${first.role}`);
  assert.equal(textOf(first), `You are a pirate ${marker}. Answer about ships only.`);
  assert.ok(!JSON.stringify(up.body).includes('{{'), 'no placeholder left upstream');
  assert.deepEqual(up.body.messages.map((m) => m.role).slice(1), ['user']);
});

test('template input items come before the request\'s own input, with variables filled', async () => {
  const marker = unique('pi');
  const id = createPrompt({
    instructions: 'Be helpful.',
    input: [
      { role: 'user', content: 'Context: {{ctx}}' },
      { role: 'assistant', content: 'Noted.' },
    ],
  });
  const r = await client().responses.create({
    model: 'emu-chat',
    input: [{ role: 'user', content: `own question ${marker}` }],
    prompt: { id, variables: { ctx: `ctx-${marker}` } },
  });
  assert.equal(r.output_text, `You said: own question ${marker}`);
  const up = await upstreamRequestContaining(`own question ${marker}`);
  const msgs = up.body.messages;
  assert.deepEqual(msgs.map((m) => m.role), ['system', 'user', 'assistant', 'user']);
  assert.equal(textOf(msgs[0]), 'Be helpful.');
  assert.equal(textOf(msgs[1]), `Context: ctx-${marker}`);
  assert.equal(textOf(msgs[2]), 'Noted.');
  assert.equal(textOf(msgs[3]), `own question ${marker}`);
});

test('a new version becomes current and is used by default; older versions stay selectable', async () => {
  const marker = unique('ver');
  const id = createPrompt(`V1 ${marker} {{x}}`);
  assert.equal(sbctl('prompt', 'version', id, '--instructions', `V2 ${marker} {{x}}`), '2');
  const show = JSON.parse(sbctl('prompt', 'show', id));
  assert.equal(show.instructions, `V2 ${marker} {{x}}`);
  const list = sbctl('prompt', 'list', '--account', DEV);
  assert.ok(list.includes(id), 'sbctl prompt list shows the prompt');

  const c = client();
  const byDefault = await c.responses.create({ model: 'emu-chat', input: `d ${marker}`, prompt: { id, variables: { x: 'one' } } });
  assert.equal(byDefault.prompt.version, '2');
  let up = await upstreamRequestContaining(`d ${marker}`);
  assert.equal(textOf(up.body.messages[0]), `V2 ${marker} one`);

  const v1 = await c.responses.create({ model: 'emu-chat', input: `e ${marker}`, prompt: { id, version: '1', variables: { x: 'two' } } });
  assert.equal(v1.prompt.version, '1');
  up = await upstreamRequestContaining(`e ${marker}`);
  assert.equal(textOf(up.body.messages[0]), `V1 ${marker} two`);

  // --no-set-current adds a version without using it by default; set-current switches.
  assert.equal(sbctl('prompt', 'version', id, '--instructions', `V3 ${marker} {{x}}`, '--no-set-current'), '3');
  const still2 = await c.responses.create({ model: 'emu-chat', input: `f ${marker}`, prompt: { id, variables: { x: 'y' } } });
  assert.equal(still2.prompt.version, '2');
  assert.equal(textOf((await upstreamRequestContaining(`f ${marker}`)).body.messages[0]), `V2 ${marker} y`);
  sbctl('prompt', 'set-current', id, '3');
  const now3 = await c.responses.create({ model: 'emu-chat', input: `g ${marker}`, prompt: { id, variables: { x: 'z' } } });
  assert.equal(now3.prompt.version, '3');
  assert.equal(textOf((await upstreamRequestContaining(`g ${marker}`)).body.messages[0]), `V3 ${marker} z`);
  assert.equal(JSON.parse(sbctl('prompt', 'show', id, '--version', '1')).instructions, `V1 ${marker} {{x}}`);
});

test('a missing variable is a 400 that names it, and nothing goes upstream', async () => {
  const marker = unique('miss');
  const id = createPrompt('Hello {{name}}, about {{subject_line}}.');
  const res = await http('POST', '/v1/responses', {
    body: { model: 'emu-chat', input: `x ${marker}`, prompt: { id, variables: { name: 'Ann' } } },
  });
  assertOpenAIError(res, 400, { type: 'invalid_request_error' });
  assert.match(res.json.error.message, /subject_line/);
  assert.equal(await upstreamRequestContaining(marker), undefined, 'no upstream call for a bad prompt');
  // No variables at all: both are named.
  const none = await http('POST', '/v1/responses', { body: { model: 'emu-chat', input: 'x', prompt: { id } } });
  assertOpenAIError(none, 400);
  assert.match(none.json.error.message, /name/);
  assert.match(none.json.error.message, /subject_line/);
});

test('unknown prompt id and unknown version are 404', async () => {
  const unknown = await http('POST', '/v1/responses', {
    body: { model: 'emu-chat', input: 'x', prompt: { id: 'pmpt_' + '0'.repeat(32) } },
  });
  assertOpenAIError(unknown, 404);
  const id = createPrompt('Only one version.');
  const badVersion = await http('POST', '/v1/responses', {
    body: { model: 'emu-chat', input: 'x', prompt: { id, version: '7' } },
  });
  assertOpenAIError(badVersion, 404);
  // The SDK surfaces it as NotFoundError.
  await assert.rejects(client().responses.create({ model: 'emu-chat', input: 'x', prompt: { id, version: '99' } }),
    (e) => e.status === 404);
});

test('another account\'s prompt id is a 404, both ways', async () => {
  const other = newAccountKey();
  const theirs = createPrompt('Theirs {{v}}', other.account);
  const mine = createPrompt('Mine {{v}}');
  assertOpenAIError(await http('POST', '/v1/responses', {
    body: { model: 'emu-chat', input: 'x', prompt: { id: theirs, variables: { v: '1' } } },
  }), 404);
  assertOpenAIError(await http('POST', '/v1/responses', {
    key: other.key, body: { model: 'emu-chat', input: 'x', prompt: { id: mine, variables: { v: '1' } } },
  }), 404);
  // Each owner can use its own.
  const ok = await http('POST', '/v1/responses', {
    key: other.key, body: { model: 'emu-chat', input: 'x', prompt: { id: theirs, variables: { v: '1' } } },
  });
  assert.equal(ok.status, 200, ok.text);
});

test('an input_image variable placed in a template text reaches the upstream as an image_url part', async () => {
  const marker = unique('img');
  const url = `https://example.com/${marker}.png`;
  const id = createPrompt({
    input: [{ role: 'user', content: [{ type: 'input_text', text: `Describe {{picture}} for ${marker}` }] }],
  });
  const r = await client().responses.create({
    model: 'emu-chat',
    prompt: { id, variables: { picture: { type: 'input_image', image_url: url } } },
  });
  assert.equal(r.status, 'completed');
  assert.ok(r.output_text.includes(`[image: ${url}]`), r.output_text);
  const up = await upstreamRequestContaining(marker);
  const user = up.body.messages.find((m) => m.role === 'user');
  assert.ok(Array.isArray(user.content), JSON.stringify(user));
  const img = user.content.find((p) => p.type === 'image_url');
  assert.ok(img, JSON.stringify(user.content));
  assert.equal(img.image_url.url, url);
  const texts = user.content.filter((p) => p.type === 'text').map((p) => p.text).join('|');
  assert.ok(texts.includes('Describe') && texts.includes(`for ${marker}`), texts);
  assert.ok(!texts.includes('{{'), texts);
  // The image sits between the two halves of the text.
  const iImg = user.content.indexOf(img);
  assert.ok(user.content.slice(0, iImg).some((p) => p.type === 'text' && p.text.includes('Describe')));
  assert.ok(user.content.slice(iImg + 1).some((p) => p.type === 'text' && p.text.includes(marker)));
});

test('input may be omitted when prompt is given', async () => {
  const marker = unique('noin');
  const id = createPrompt({ input: [{ role: 'user', content: 'Tell me about {{topic}}' }] });
  const res = await http('POST', '/v1/responses', {
    body: { model: 'emu-chat', prompt: { id, variables: { topic: marker } } },
  });
  assert.equal(res.status, 200, res.text);
  const msg = res.json.output.find((o) => o.type === 'message');
  assert.equal(msg.content[0].text, `You said: Tell me about ${marker}`);
  assert.deepEqual(res.json.prompt, { id, version: '1', variables: { topic: marker } });
  // Without prompt, input is still required.
  assertOpenAIError(await http('POST', '/v1/responses', { body: { model: 'emu-chat' } }), 400);
});

test('request instructions override the template\'s', async () => {
  const marker = unique('ovr');
  const id = createPrompt(`TEMPLATE-INSTR ${marker} {{x}}`);
  const r = await client().responses.create({
    model: 'emu-chat', input: `q ${marker}`, instructions: `REQUEST-INSTR ${marker}`, prompt: { id, variables: { x: '1' } },
  });
  assert.equal(r.instructions, `REQUEST-INSTR ${marker}`);
  const up = await upstreamRequestContaining(`q ${marker}`);
  const s = JSON.stringify(up.body.messages);
  assert.ok(s.includes(`REQUEST-INSTR ${marker}`), s);
  assert.ok(!s.includes('TEMPLATE-INSTR'), s);
  assert.equal(textOf(up.body.messages[0]), `REQUEST-INSTR ${marker}`);
});

test('an input_file variable in a template text reaches the upstream; a part variable in the instructions is 400', async () => {
  const marker = unique('pfile');
  const content = `attached ${marker}`;
  const id = createPrompt({
    instructions: 'Read {{doc}}.',
    input: [{ role: 'user', content: [{ type: 'input_text', text: `Summarise {{doc}} now ${marker}` }] }],
  });
  const fileVar = { type: 'input_file', filename: 'var.txt', file_data: `data:text/plain;base64,${Buffer.from(content).toString('base64')}` };
  // In the instructions only text can go.
  const bad = await http('POST', '/v1/responses', { body: { model: 'emu-chat', prompt: { id, variables: { doc: fileVar } } } });
  assertOpenAIError(bad, 400);
  assert.match(bad.json.error.message, /doc/);

  const id2 = createPrompt({
    instructions: 'Read the file.',
    input: [{ role: 'user', content: [{ type: 'input_text', text: `Summarise {{doc}} now ${marker}` }] }],
  });
  const r = await client().responses.create({ model: 'emu-chat', prompt: { id: id2, variables: { doc: fileVar } } });
  assert.equal(r.status, 'completed');
  const up = await upstreamRequestContaining(`now ${marker}`);
  const userMsg = up.body.messages.find((m) => m.role === 'user');
  assert.ok(JSON.stringify(userMsg).includes(JSON.stringify(`var.txt:\n${content}`).slice(1, -1)), JSON.stringify(userMsg));
});

test('a stored response keeps the prompt reference', async () => {
  const marker = unique('pst');
  const id = createPrompt('Stored {{k}}');
  const r = await client().responses.create({ model: 'emu-chat', input: `s ${marker}`, prompt: { id, variables: { k: marker } } });
  const got = await http('GET', `/v1/responses/${r.id}`);
  assert.equal(got.status, 200, got.text);
  assert.deepEqual(got.json.prompt, { id, version: '1', variables: { k: marker } });
});

test('malformed prompt references are 400', async () => {
  const id = createPrompt('x');
  for (const prompt of [{ version: '1' }, { id, version: 'latest' }, { id, variables: { a: 5 } }, 'pmpt_x']) {
    assertOpenAIError(await http('POST', '/v1/responses', { body: { model: 'emu-chat', input: 'x', prompt } }), 400);
  }
});
