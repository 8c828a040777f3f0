// The code interpreter in the Messages and Generate Content styles (issue 16,
// docs/tools.md "Other styles"): Anthropic's code_execution_20250522 tool and
// Gemini's codeExecution tool run on the gateway's sandbox for every upstream
// kind, streamed and not, through the official @anthropic-ai/sdk and
// @google/genai. The emulator plays the model: "CALL sb__python {...}" makes it
// call the function the gateway offers for the code interpreter; the code
// really runs, so "42" below is Python's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import { cfg, http, unique, upstreamRequestContaining } from './harness.mjs';

const MODELS = { 'openai-chat': 'emu-chat', 'openai-responses': 'emu-responses', anthropic: 'emu-claude', gemini: 'emu-gemini' };
const anthropic = new Anthropic({ apiKey: cfg.key, baseURL: cfg.frontendA, maxRetries: 0, timeout: 60000 });
const anthropicB = new Anthropic({ apiKey: cfg.key, baseURL: cfg.frontendB, maxRetries: 0, timeout: 60000 });
const genai = new GoogleGenAI({ apiKey: cfg.key, httpOptions: { baseUrl: cfg.frontendA } });
const CODE_TOOL = { type: 'code_execution_20250522', name: 'code_execution' };
const call = (code) => `CALL sb__python ${JSON.stringify({ code })}`;

// A Messages request that makes the model run code, streamed (the SDK's
// accumulated message) or not.
async function messages(body, stream, client = anthropic) {
  const params = { max_tokens: 300, tools: [CODE_TOOL], ...body };
  return stream ? client.messages.stream(params).finalMessage() : client.messages.create(params);
}

function checkRun(msg, code, stdout, returnCode = 0) {
  const types = msg.content.map((b) => b.type);
  assert.deepEqual(types.slice(0, 2), ['server_tool_use', 'code_execution_tool_result'], JSON.stringify(msg.content));
  const [use, result] = msg.content;
  assert.match(use.id, /^srvtoolu_/);
  assert.equal(use.name, 'code_execution');
  assert.deepEqual(use.input, { code });
  assert.equal(result.tool_use_id, use.id);
  assert.equal(result.content.type, 'code_execution_result', JSON.stringify(result));
  assert.equal(result.content.return_code, returnCode);
  assert.equal(result.content.stderr, '');
  assert.deepEqual(result.content.content, []);
  if (stdout instanceof RegExp) assert.match(result.content.stdout, stdout);
  else assert.equal(result.content.stdout, stdout);
  assert.equal(types.at(-1), 'text');
  assert.match(msg.container?.id ?? '', /^cntr_/, JSON.stringify(msg.container));
  assert.ok(Date.parse(msg.container.expires_at) > Date.now(), msg.container.expires_at);
  // No reserved name, no private field reaches the client.
  const raw = JSON.stringify(msg);
  assert.equal(raw.includes('sb__'), false, raw);
  assert.equal(raw.includes('sb_output'), false, raw);
}

for (const [kind, model] of Object.entries(MODELS)) {
  for (const stream of [false, true]) {
    test(`Messages code_execution ← ${kind}${stream ? ', streamed' : ''}: run by the gateway's sandbox, shown as Anthropic's blocks`, async () => {
      const m = unique('ci');
      const msg = await messages({ model, messages: [{ role: 'user', content: `${call('print(6*7)')}\n${m}` }] }, stream);
      checkRun(msg, 'print(6*7)', '42\n');
      assert.equal(msg.stop_reason, 'end_turn');
      assert.match(msg.content.at(-1).text, /42/); // the model was given the output
      assert.equal(msg.usage.server_tool_use ?? null, null); // Anthropic counts no code runs
    });
  }
}

test('Messages code_execution: an exception is a run with return_code 1 and its traceback, not an error', async () => {
  for (const stream of [false, true]) {
    const msg = await messages({ model: 'emu-chat', messages: [{ role: 'user', content: `${call('1/0')}\nhi` }] }, stream);
    checkRun(msg, '1/0', /ZeroDivisionError: division by zero/, 1);
    assert.match(msg.content[1].content.stdout, /Traceback \(most recent call last\)/);
  }
});

test('Messages code_execution: the stream shows the code in input_json_delta pieces, the block closed before the result', async () => {
  const events = [];
  const s = anthropic.messages.stream({ model: 'emu-claude', max_tokens: 300, tools: [CODE_TOOL],
    messages: [{ role: 'user', content: `${call('x = 6\nprint(x*7)')}\nhi` }] });
  s.on('streamEvent', (e) => events.push(e));
  const final = await s.finalMessage();
  const starts = events.filter((e) => e.type === 'content_block_start');
  assert.deepEqual(starts.slice(0, 2).map((e) => e.content_block.type), ['server_tool_use', 'code_execution_tool_result']);
  assert.deepEqual(starts[0].content_block.input, {});
  const pieces = events.filter((e) => e.type === 'content_block_delta' && e.index === 0).map((e) => e.delta.partial_json);
  assert.deepEqual(JSON.parse(pieces.join('')), { code: 'x = 6\nprint(x*7)' });
  const stop0 = events.findIndex((e) => e.type === 'content_block_stop' && e.index === 0);
  const start1 = events.findIndex((e) => e.type === 'content_block_start' && e.index === 1);
  assert.ok(stop0 > 0 && stop0 < start1);
  const delta = events.find((e) => e.type === 'message_delta');
  assert.equal(delta.delta.container.id, final.container.id);
  checkRun(final, 'x = 6\nprint(x*7)', '42\n');
});

test('Messages code_execution: a later turn sends the blocks back; the container param reuses the container and its files', async () => {
  const first = await messages({ model: 'emu-chat', messages: [{ role: 'user',
    content: `${call("open('/mnt/data/note.txt', 'w').write('kept'); print('saved')")}\nhi` }] }, false);
  checkRun(first, "open('/mnt/data/note.txt', 'w').write('kept'); print('saved')", 'saved\n');
  // The assistant turn as the SDK returned it, then a new question on the other
  // frontend, in the same container: the file written is there.
  const second = await messages({ model: 'emu-gemini', container: first.container.id, messages: [
    { role: 'user', content: 'hi' },
    { role: 'assistant', content: first.content },
    { role: 'user', content: `${call("print(open('/mnt/data/note.txt').read())")}\nagain` },
  ] }, true, anthropicB);
  checkRun(second, "print(open('/mnt/data/note.txt').read())", 'kept\n');
  assert.equal(second.container.id, first.container.id);
});

test('code stopped at its time limit: execution_time_exceeded in Messages, OUTCOME_DEADLINE_EXCEEDED in Generate Content', async () => {
  const loop = 'while True: pass';
  const msg = await messages({ model: 'emu-chat', messages: [{ role: 'user', content: `${call(loop)}\nhi` }] }, false);
  assert.deepEqual(msg.content[0].input, { code: loop });
  assert.deepEqual(msg.content[1].content, { type: 'code_execution_tool_result_error', error_code: 'execution_time_exceeded' });
  const r = await generate('emu-gemini', `${call(loop)}\nhi`, false);
  assert.equal(codeParts(r)[1].codeExecutionResult.outcome, 'OUTCOME_DEADLINE_EXCEEDED');
});

test('Messages: code_execution_20250825 (bash and file editing) is refused with Anthropic\'s error body', async () => {
  const r = await http('POST', '/v1/messages', { key: null, headers: { 'x-api-key': cfg.key, 'anthropic-version': '2023-06-01' },
    body: { model: 'emu-chat', max_tokens: 10, tools: [{ type: 'code_execution_20250825', name: 'code_execution' }],
      messages: [{ role: 'user', content: 'hi' }] } });
  assert.equal(r.status, 400, r.text);
  assert.equal(r.json.type, 'error');
  assert.equal(r.json.error.type, 'invalid_request_error');
  assert.match(r.json.error.message, /code_execution_20250825.*use 'code_execution_20250522'/);
});

// ---- Generate Content -------------------------------------------------------------------------

const codeParts = (r) => r.candidates[0].content.parts.filter((p) => p.executableCode || p.codeExecutionResult || p.inlineData);

async function generate(model, contents, stream) {
  const params = { model, contents, config: { tools: [{ codeExecution: {} }] } };
  if (!stream) return genai.models.generateContent(params);
  const parts = [];
  let last;
  for await (const chunk of await genai.models.generateContentStream(params)) {
    parts.push(...(chunk.candidates?.[0]?.content?.parts ?? []));
    last = chunk;
  }
  // The stream's parts joined, as one response.
  return { candidates: [{ ...last.candidates[0], content: { role: 'model', parts: parts.filter((p) => p.text !== '' || p.thoughtSignature) } }] };
}

for (const [kind, model] of Object.entries(MODELS)) {
  for (const stream of [false, true]) {
    test(`Generate Content codeExecution ← ${kind}${stream ? ', streamed' : ''}: executableCode + codeExecutionResult parts`, async () => {
      const m = unique('gci');
      const r = await generate(model, `${call('print(6*7)')}\n${m}`, stream);
      const parts = codeParts(r);
      assert.equal(parts.length, 2, JSON.stringify(r.candidates[0].content));
      assert.deepEqual(parts[0].executableCode, { language: 'PYTHON', code: 'print(6*7)' });
      assert.deepEqual(parts[1].codeExecutionResult, { outcome: 'OUTCOME_OK', output: '42\n' });
      const text = r.candidates[0].content.parts.filter((p) => typeof p.text === 'string').map((p) => p.text).join('');
      assert.match(text, /42/);
      assert.equal(r.candidates[0].finishReason, 'STOP');
      assert.equal(JSON.stringify(r).includes('sb__'), false);
    });
  }
}

test('Generate Content codeExecution: a raise is OUTCOME_FAILED with its traceback', async () => {
  for (const stream of [false, true]) {
    const [exec, result] = codeParts(await generate('emu-gemini', `${call('1/0')}\nhi`, stream));
    assert.deepEqual(exec.executableCode, { language: 'PYTHON', code: '1/0' });
    assert.equal(result.codeExecutionResult.outcome, 'OUTCOME_FAILED');
    assert.match(result.codeExecutionResult.output, /Traceback \(most recent call last\)[^]*ZeroDivisionError: division by zero/);
  }
});

test('Generate Content codeExecution: a figure comes back as an inlineData PNG after the result', async (t) => {
  // matplotlib's first import can take longer than the tests' tool timeout (3 s)
  // on a loaded machine: that run is then stopped, which must show as
  // OUTCOME_DEADLINE_EXCEEDED with no image; a run that finishes has the image.
  const plot = 'import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()';
  let shown = 0;
  for (let attempt = 0; attempt < 4 && shown < 2; attempt++) {
    const p = codeParts(await generate('emu-chat', `${call(plot)}\nhi`, attempt % 2 === 1));
    assert.deepEqual(p[0].executableCode, { language: 'PYTHON', code: plot });
    const outcome = p[1].codeExecutionResult.outcome;
    const img = p.slice(2);
    if (outcome === 'OUTCOME_DEADLINE_EXCEEDED') {
      assert.deepEqual(img, []);
      continue;
    }
    assert.equal(outcome, 'OUTCOME_OK', JSON.stringify(p[1]));
    assert.equal(img.length, 1, JSON.stringify(p).slice(0, 400));
    assert.equal(img[0].inlineData.mimeType, 'image/png');
    assert.equal(Buffer.from(img[0].inlineData.data, 'base64').subarray(1, 4).toString(), 'PNG');
    shown++;
  }
  if (shown === 0) t.diagnostic('every plot ran out of time: the image parts were not seen');
});

test('Generate Content codeExecution: the model turn sent back (code parts, signature) is the run the model is given again', async () => {
  const m = unique('gturn');
  const first = await generate('emu-claude', `${call(`print('${m}')`)}\nhi`, false);
  const model = first.candidates[0].content;
  assert.deepEqual(codeParts(first)[1].codeExecutionResult, { outcome: 'OUTCOME_OK', output: `${m}\n` });
  const next = await genai.models.generateContent({ model: 'emu-responses', config: { tools: [{ codeExecution: {} }] },
    contents: [{ role: 'user', parts: [{ text: 'hi' }] }, model, { role: 'user', parts: [{ text: `again ${m}` }] }] });
  assert.match(next.text, /again/);
  // The upstream got the earlier run as the reserved call and its output.
  const req = await upstreamRequestContaining(`again ${m}`);
  const body = JSON.stringify(req.body);
  assert.ok(body.includes('sb__python'), body.slice(0, 600));
  assert.ok(body.includes(`print('${m}')`) || body.includes(`print(\\'${m}\\')`), body.slice(0, 600));
  assert.equal(body.split(m).length - 1 >= 3, true, body.slice(0, 800)); // code, output, question
});
