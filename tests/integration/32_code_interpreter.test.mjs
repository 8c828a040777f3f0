// The code interpreter run by the gateway (issue 16, docs/tools.md): the model
// (the emulator, driven by "CALL sb__python {...}" directives and scenarios)
// calls the reserved function sb__python; the worker runs the code in its
// bubblewrap sandbox and shows OpenAI's code_interpreter_call item and events,
// for every upstream kind, streamed and not, through the official OpenAI SDK.
// Containers: "auto" makes one only when the model calls the tool; files the
// code writes become the container's files and are cited.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cfg, client, ensureModel, newAccountKey, psql, sse, unique, waitFor } from './harness.mjs';

const oai = client();
const MODELS = { 'openai-chat': 'emu-chat', 'openai-responses': 'emu-responses', anthropic: 'emu-claude', gemini: 'emu-gemini' };
const CI = { type: 'code_interpreter', container: { type: 'auto' } };
const types = (r) => r.output.map((i) => i.type);
const call = (code) => `CALL sb__python ${JSON.stringify({ code })}`;

async function setScenario(upstream, scenario) {
  const res = await fetch(`${cfg.emu}/_emu/scenarios/${upstream}`, { method: 'PUT', body: JSON.stringify(scenario) });
  assert.equal(res.status, 200, await res.text());
}

for (const [kind, model] of Object.entries(MODELS)) {
  test(`code interpreter ← ${kind}: the gateway runs the code; item, outputs with include, the model reads the output; streamed the same`, async () => {
    const m = unique('ci');
    const body = { model, store: false, input: `${call('print(6*7)')}\n${m}`, tools: [CI], include: ['code_interpreter_call.outputs'] };
    const res = await oai.responses.create(body);
    assert.deepEqual(types(res), ['code_interpreter_call', 'message']);
    const [ci] = res.output;
    assert.match(ci.id, /^ci_/);
    assert.equal(ci.status, 'completed');
    assert.equal(ci.code, 'print(6*7)');
    assert.match(ci.container_id, /^cntr_/);
    assert.deepEqual(ci.outputs, [{ type: 'logs', logs: '42\n' }]);
    assert.match(res.output_text, /^Tool result: 42/);
    assert.equal(JSON.stringify(res).includes('sb_'), false, 'no private field reaches the client');

    const r = await sse('/v1/responses', { body: { ...body, stream: true } });
    assert.equal(r.status, 200, r.raw);
    const names = r.events.map((e) => e.event);
    r.events.forEach((e, i) => assert.equal(e.data.sequence_number, i));
    const want = ['response.output_item.added', 'response.code_interpreter_call.in_progress',
      'response.code_interpreter_call_code.delta', 'response.code_interpreter_call_code.done',
      'response.code_interpreter_call.interpreting', 'response.code_interpreter_call.completed', 'response.output_item.done'];
    let at = -1;
    for (const w of want) {
      const k = names.indexOf(w, at + 1);
      assert.ok(k > at, `${w} after ${names[at]}: ${names.join(',')}`);
      at = k;
    }
    const code = r.events.filter((e) => e.event === 'response.code_interpreter_call_code.delta').map((e) => e.data.delta).join('');
    assert.equal(code, 'print(6*7)');
    const done = r.events.find((e) => e.event === 'response.code_interpreter_call_code.done');
    assert.equal(done.data.code, 'print(6*7)');
    const final = r.events.at(-1);
    assert.equal(final.event, 'response.completed');
    assert.deepEqual(final.data.response.output[0].outputs, [{ type: 'logs', logs: '42\n' }]);
  });
}

test('code interpreter: outputs are null without include; an exception is output, not a failure', async () => {
  const res = await oai.responses.create({ model: 'emu-chat', store: false, tools: [CI],
    input: `${call('1/0')}\n${unique('ci')}` });
  const [ci] = res.output;
  assert.equal(ci.type, 'code_interpreter_call');
  assert.equal(ci.status, 'completed');
  assert.equal(ci.outputs, null);
  assert.match(res.output_text, /ZeroDivisionError/);
});

test('code interpreter: variables persist between the calls of one response', async () => {
  const up = unique('ciup');
  const model = ensureModel(unique('cim'), { upstream: up });
  await setScenario(up, { tool: '^sb__python$', arguments: { code: 'n = globals().get("n", 0) + 1\nprint(n)' },
    repeat: 2, after_result: 'counted' });
  const res = await oai.responses.create({ model, store: false, input: 'count', tools: [CI],
    include: ['code_interpreter_call.outputs'] });
  const calls = res.output.filter((i) => i.type === 'code_interpreter_call');
  assert.equal(calls.length, 3);
  assert.deepEqual(calls.map((c) => c.outputs[0].logs), ['1\n', '2\n', '3\n']);
  assert.equal(new Set(calls.map((c) => c.container_id)).size, 1);
  assert.equal(res.output_text, 'counted');
});

test('code interpreter: container auto is made only when the model calls the tool', async () => {
  const m = unique('nocall');
  const before = Number(psql('SELECT count(*) FROM containers')[0]);
  const res = await oai.responses.create({ model: 'emu-chat', store: false, input: `just talk ${m}`, tools: [CI] });
  assert.deepEqual(types(res), ['message']);
  assert.equal(Number(psql('SELECT count(*) FROM containers')[0]), before);

  const used = await oai.responses.create({ model: 'emu-chat', store: false, tools: [CI],
    input: `${call('print(1)')}\n${unique('call')}` });
  const id = used.output[0].container_id;
  assert.deepEqual(psql(`SELECT count(*) FROM containers WHERE id = :'v1'`, id), ['1']);
});

test('code interpreter: a file the code writes becomes a container file; the answer cites it', async () => {
  const up = unique('cifile');
  const model = ensureModel(unique('cif'), { upstream: up });
  await setScenario(up, { tool: '^sb__python$', arguments: { code: 'open("out.csv","w").write("a,b\\n1,2\\n")' },
    after_result: 'Here it is: [out.csv](sandbox:/mnt/data/out.csv)' });
  const res = await oai.responses.create({ model, store: false, input: 'write', tools: [CI] });
  const ci = res.output.find((i) => i.type === 'code_interpreter_call');
  const msg = res.output.find((i) => i.type === 'message');
  const ann = msg.content[0].annotations;
  assert.equal(ann.length, 1);
  assert.equal(ann[0].type, 'container_file_citation');
  assert.equal(ann[0].container_id, ci.container_id);
  assert.equal(ann[0].filename, 'out.csv');
  assert.match(ann[0].file_id, /^cfile_/);
  const text = msg.content[0].text;
  assert.equal([...text].slice(ann[0].start_index, ann[0].end_index).join(''), '[out.csv](sandbox:/mnt/data/out.csv)');
  const stored = psql(`SELECT encode(content, 'escape') FROM container_files WHERE id = :'v1'`, ann[0].file_id);
  assert.deepEqual(stored, ['a,b', '1,2']);
});

test('code interpreter: a named container gives the code its files; another account cannot use it', async () => {
  const cid = `cntr_${unique('t').toLowerCase()}`;
  // The dev key's account (the first key made: the seed's).
  psql(`INSERT INTO containers (id, account_id, name) SELECT :'v1', account_id, 'test' FROM api_keys ORDER BY id LIMIT 1`, cid);
  psql(`INSERT INTO container_files (id, container_id, path, source, bytes, content)
        VALUES (:'v1', :'v2', '/mnt/data/in.txt', 'user', 5, 'hello')`, `cfile_${unique('f').toLowerCase()}`, cid);
  const tool = { type: 'code_interpreter', container: cid };
  const res = await oai.responses.create({ model: 'emu-chat', store: false, tools: [tool],
    input: `${call('print(open("in.txt").read().upper())')}\n${unique('named')}`, include: ['code_interpreter_call.outputs'] });
  assert.equal(res.output[0].container_id, cid);
  assert.deepEqual(res.output[0].outputs, [{ type: 'logs', logs: 'HELLO\n' }]);

  const other = client(cfg.frontendA, newAccountKey().key);
  const theirs = await other.responses.create({ model: 'emu-chat', store: false, tools: [tool],
    input: `${call('print(open("in.txt").read())')}\n${unique('other')}` });
  assert.equal(theirs.output[0].status, 'failed');
  assert.doesNotMatch(JSON.stringify(theirs), /hello/i);
});

test('code interpreter: the sandbox holds — no network, no worker environment, nothing outside /mnt/data', async () => {
  const code = [
    'import os, socket',
    's = socket.socket(); s.settimeout(1)',
    'try:\n    s.connect(("127.0.0.1", 5432)); print("net: open")\nexcept OSError as e:\n    print("net: blocked")',
    'print("env:", sorted(k for k in os.environ if "PG" in k or "KEY" in k or k.startswith("SB_")))',
    'try:\n    open("/work/main/README.md"); print("read: open")\nexcept OSError:\n    print("read: blocked")',
    'try:\n    open("/usr/evil", "w"); print("write: open")\nexcept OSError:\n    print("write: blocked")',
  ].join('\n');
  const res = await oai.responses.create({ model: 'emu-chat', store: false, tools: [CI],
    input: `${call(code)}\n${unique('escape')}`, include: ['code_interpreter_call.outputs'] });
  assert.equal(res.output[0].outputs[0].logs, 'net: blocked\nenv: []\nread: blocked\nwrite: blocked\n');
});

test('code interpreter: an endless loop is stopped at the tool time limit and reported, the response completes', async () => {
  const res = await oai.responses.create({ model: 'emu-chat', store: false, tools: [CI],
    input: `${call('while True: pass')}\n${unique('loop')}` });
  assert.equal(res.status, 'completed');
  assert.equal(res.output[0].type, 'code_interpreter_call');
  assert.match(res.output_text, /ran out of time/);
  const row = await waitFor(() => {
    const r = psql(`SELECT kind, server, outcome FROM tool_calls WHERE item_id = :'v1'`, res.output[0].id);
    return r.length ? r : null;
  });
  assert.deepEqual(row, ['code_interpreter|sandbox|error']);
});

test('code interpreter: a stored chain replays the call for the next turn, on another frontend', async () => {
  const m = unique('chain');
  const first = await oai.responses.create({ model: 'emu-chat', tools: [CI], input: `${call('print(7*6)')}\n${m}` });
  const other = client(cfg.frontendB);
  const second = await other.responses.create({ model: 'emu-chat', tools: [CI], previous_response_id: first.id,
    input: `again ${m}` });
  assert.equal(second.status, 'completed');
  const up = (await (await fetch(`${cfg.emu}/_emu/requests?limit=50`)).json()).requests
    .filter((r) => JSON.stringify(r.body).includes(`again ${m}`)).at(-1);
  const text = JSON.stringify(up.body);
  assert.match(text, /sb__python/);
  assert.match(text, /42/);
});
