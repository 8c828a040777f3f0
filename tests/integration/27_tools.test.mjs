// Built-in tools the gateway runs (issue 15, docs/tools.md): remote MCP through
// real MCP servers written with @modelcontextprotocol/sdk, for every upstream
// kind, streamed and not, through the official OpenAI SDK. The emulator plays
// the model: "CALL sb__mcp0__add {...}" makes it call the reserved function
// the gateway offered for the first MCP server's tool "add".
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { cfg, client, http, psql, sse, unique } from './harness.mjs';
import { validateEvent } from './openresponses.mjs';
import { startMcpServers } from './mcp/servers.mjs';

const oai = client();
const MODELS = { 'openai-chat': 'emu-chat', 'openai-responses': 'emu-responses', anthropic: 'emu-claude', gemini: 'emu-gemini' };
let mcp;

before(async () => { mcp = await startMcpServers({ slowMs: 6000 }); });
after(async () => { await mcp?.close?.(); });

const calc = (extra = {}) => ({ type: 'mcp', server_label: 'calc', server_url: mcp.urls.stateless, require_approval: 'never', ...extra });
const types = (r) => r.output.map((i) => i.type);
// The text of a response's messages (the SDK's output_text, for objects it did not make).
const textOf = (r) => r.output.filter((i) => i.type === 'message')
  .flatMap((i) => i.content.filter((c) => c.type === 'output_text').map((c) => c.text)).join('');

// The events OpenAI defines for the built-in items, and the fields each carries
// (openai-python's response_mcp_*_event.py, response_web_search_call_*_event.py).
const TOOL_EVENTS = new Set([
  'response.mcp_list_tools.in_progress', 'response.mcp_list_tools.completed', 'response.mcp_list_tools.failed',
  'response.mcp_call.in_progress', 'response.mcp_call.completed', 'response.mcp_call.failed',
  'response.web_search_call.in_progress', 'response.web_search_call.searching', 'response.web_search_call.completed',
]);
const TOOL_ITEMS = new Set(['mcp_list_tools', 'mcp_call', 'mcp_approval_request', 'web_search_call']);

function checkStream(r) {
  assert.equal(r.status, 200, r.raw);
  const lifecycles = r.events.filter((e) => e.event === 'response.created').length;
  assert.equal(lifecycles, 1, 'one response lifecycle');
  r.events.forEach((e, i) => {
    assert.equal(e.event, e.data.type);
    assert.equal(e.data.sequence_number, i);
    const item = e.data.item;
    if (TOOL_EVENTS.has(e.event)) {
      assert.deepEqual(Object.keys(e.data).sort(), ['item_id', 'output_index', 'sequence_number', 'type']);
    } else if (e.event === 'response.mcp_call_arguments.delta') {
      assert.equal(typeof e.data.delta, 'string');
      assert.equal(typeof e.data.item_id, 'string');
    } else if (e.event === 'response.mcp_call_arguments.done') {
      assert.equal(typeof e.data.arguments, 'string');
    } else if (item && TOOL_ITEMS.has(item.type)) {
      assert.equal(typeof item.id, 'string'); // the Open Responses document has no such items: OpenAI's shapes
    } else if (!['response.completed', 'response.created', 'response.in_progress'].includes(e.event)) {
      assert.ok(validateEvent(e.data), `${e.event}: ${JSON.stringify(validateEvent.errors?.slice(0, 3))}`);
    }
  });
  assert.equal(r.events.at(-1).event, 'response.completed', r.raw.slice(-400));
  return r.events.at(-1).data.response;
}

for (const [kind, model] of Object.entries(MODELS)) {
  test(`MCP ← ${kind}: listed, called by the gateway, its result back to the model; streamed the same`, async () => {
    const m = unique('mcp');
    const body = { model, store: false, input: `CALL sb__mcp0__add {"a":2,"b":3}\n${m}`, tools: [calc()] };
    const res = await oai.responses.create(body);
    assert.deepEqual(types(res), ['mcp_list_tools', 'mcp_call', 'message']);
    const [list, call, msg] = res.output;
    assert.equal(list.server_label, 'calc');
    assert.ok(list.tools.some((t) => t.name === 'add' && t.input_schema.type === 'object'));
    assert.equal(call.name, 'add');
    assert.deepEqual(JSON.parse(call.arguments), { a: 2, b: 3 });
    assert.equal(call.output, '5');
    assert.equal(call.error, null);
    assert.equal(res.output_text, 'Tool result: 5');
    assert.ok(res.usage.input_tokens > 0);
    assert.ok(msg.id);

    const r = await sse('/v1/responses', { body: { ...body, stream: true } });
    const final = checkStream(r);
    const names = r.events.map((e) => e.event);
    const order = ['response.mcp_list_tools.in_progress', 'response.mcp_list_tools.completed', 'response.mcp_call.in_progress',
      'response.mcp_call_arguments.done', 'response.mcp_call.completed', 'response.output_text.delta'];
    let at = -1;
    for (const n of order) {
      const i = names.indexOf(n, at + 1);
      assert.ok(i > at, `${n} after the events before it: ${names.join(' ')}`);
      at = i;
    }
    assert.deepEqual(types(final), types(res));
    assert.equal(final.output[1].output, '5');

    // The SDK's own stream helper accumulates the same response.
    const acc = await oai.responses.stream(body).finalResponse();
    assert.deepEqual(types(acc), types(res));
    assert.equal(textOf(acc), res.output_text);
  });
}

test('MCP: approval required by default; approved and denied through previous_response_id, and with store:false', async () => {
  for (const model of ['emu-claude', 'emu-chat']) {
    const m = unique('appr');
    const tools = [calc({ require_approval: undefined })];
    const first = await oai.responses.create({ model, input: `CALL sb__mcp0__add {"a":2,"b":3}\n${m}`, tools });
    assert.deepEqual(types(first), ['mcp_list_tools', 'mcp_approval_request']);
    const req = first.output[1];
    assert.equal(req.name, 'add');
    assert.ok(req.id.startsWith('mcpr_'));
    const calls = mcp.recordsOf('stateless', 'tools/call').length;

    const yes = await oai.responses.create({ model, previous_response_id: first.id, tools,
      input: [{ type: 'mcp_approval_response', approval_request_id: req.id, approve: true }] });
    assert.deepEqual(types(yes), ['mcp_call', 'message'], 'listed once per chain; the approved call ran');
    assert.equal(yes.output[0].approval_request_id, req.id);
    assert.equal(yes.output[0].output, '5');
    assert.equal(mcp.recordsOf('stateless', 'tools/call').length, calls + 1);

    // A third turn on the chain does not run the approved call again.
    const third = await oai.responses.create({ model, previous_response_id: yes.id, tools, input: `thanks ${m}` });
    assert.deepEqual(types(third), ['message']);
    assert.equal(mcp.recordsOf('stateless', 'tools/call').length, calls + 1);

    const no = await oai.responses.create({ model, previous_response_id: first.id, tools,
      input: [{ type: 'mcp_approval_response', approval_request_id: req.id, approve: false, reason: 'not today' }] });
    assert.deepEqual(types(no), ['message']);
    assert.match(no.output_text, /denied/);
    assert.equal(mcp.recordsOf('stateless', 'tools/call').length, calls + 1);

    // store:false: the client sends the items back itself.
    const replay = await oai.responses.create({ model, store: false, tools,
      input: [{ role: 'user', content: `CALL sb__mcp0__add {"a":2,"b":3}\n${m}` }, ...first.output,
        { type: 'mcp_approval_response', approval_request_id: req.id, approve: true }] });
    assert.deepEqual(types(replay), ['mcp_call', 'message']);
    assert.equal(replay.output[0].output, '5');
  }
});

test('MCP: allowed_tools filters what is listed and offered; a tool outside it is not run', async () => {
  const m = unique('allow');
  const res = await oai.responses.create({ model: 'emu-chat', store: false, tools: [calc({ allowed_tools: ['echo'] })],
    input: `CALL sb__mcp0__echo {"text":"hi ${m}"}\n${m}` });
  assert.deepEqual(res.output[0].tools.map((t) => t.name), ['echo']);
  assert.equal(res.output[1].output, `hi ${m}`);
  const req = await http('POST', '/v1/responses', { body: { model: 'emu-chat', store: false, tools: [calc({ allowed_tools: ['echo'] })],
    input: `CALL sb__mcp0__add {"a":1,"b":1}\n${m}` } });
  // The emulator refuses to call a function it was not offered, as a model would not call it.
  assert.ok(req.status === 200 || req.status === 400, req.text);
  if (req.status === 200) assert.ok(!req.json.output.some((i) => i.type === 'mcp_call'));
});

test('MCP: headers and authorization reach the server and are never echoed, stored or logged', async () => {
  const m = unique('sec');
  const tool = { type: 'mcp', server_label: 'who', server_url: mcp.urls.bearer, require_approval: 'never',
    authorization: mcp.token, headers: { 'X-Tenant': mcp.tenant } };
  const res = await oai.responses.create({ model: 'emu-gemini', input: `CALL sb__mcp0__whoami {}\n${m}`, tools: [tool] });
  assert.deepEqual(types(res), ['mcp_list_tools', 'mcp_call', 'message']);
  assert.equal(res.output[1].error, null, JSON.stringify(res.output[1]));
  const seen = mcp.recordsOf('bearer').at(-1);
  assert.equal(seen.headers.authorization, `Bearer ${mcp.token}`);
  assert.equal(seen.headers['x-tenant'], mcp.tenant);
  const echoed = res.tools.find((t) => t.type === 'mcp');
  assert.equal(echoed.authorization, undefined);
  assert.equal(JSON.stringify(echoed).includes(mcp.token), false);
  const got = await http('GET', `/v1/responses/${res.id}`);
  assert.equal(got.text.includes(mcp.token), false);
  assert.equal(got.json.tools.find((t) => t.type === 'mcp').headers, undefined);
  // Nothing stored holds them: the response, its items, the request log, the tool log.
  for (const secret of [mcp.token]) {
    const leaks = psql(`SELECT (SELECT count(*) FROM responses WHERE body::text LIKE '%' || :'v1' || '%')
      + (SELECT count(*) FROM response_items WHERE item::text LIKE '%' || :'v1' || '%')
      + (SELECT count(*) FROM request_log WHERE row_to_json(request_log)::text LIKE '%' || :'v1' || '%')
      + (SELECT count(*) FROM tool_calls WHERE row_to_json(tool_calls)::text LIKE '%' || :'v1' || '%')`, secret);
    assert.deepEqual(leaks, ['0'], secret);
  }
  // Without them the server refuses, and the model goes on.
  const bare = await oai.responses.create({ model: 'emu-gemini', store: false, input: `hi ${m}`,
    tools: [{ ...tool, authorization: undefined, headers: undefined }] });
  assert.equal(bare.output[0].type, 'mcp_list_tools');
  assert.match(bare.output[0].error, /401/);
  assert.equal(bare.status, 'completed');
});

test('MCP: failing servers give an item with an error and the model goes on; never a 5xx', async () => {
  const cases = [
    [mcp.urls.erroring, 'fail', {}, /the tool failed/],
    [mcp.urls.erroring, 'throw', {}, /MCP error -32001: tool exploded/],
    [mcp.urls.slow, 'sleep', {}, /time/i],
  ];
  for (const [url, tool, args, want] of cases) {
    const m = unique('bad');
    const res = await oai.responses.create({ model: 'emu-claude', store: false,
      tools: [{ type: 'mcp', server_label: 'bad', server_url: url, require_approval: 'never' }],
      input: `CALL sb__mcp0__${tool} ${JSON.stringify(args)}\n${m}` });
    assert.equal(res.status, 'completed');
    const call = res.output.find((i) => i.type === 'mcp_call');
    assert.ok(call, JSON.stringify(res.output));
    assert.match(call.error ?? '', want);
    assert.equal(call.status, 'failed');
    assert.match(res.output_text, /Tool result: Error/);
  }
  for (const mode of ['broken-json', 'wrong-id', 'cut-sse', 'reset-sse']) {
    const res = await oai.responses.create({ model: 'emu-chat', store: false, input: 'hi',
      tools: [{ type: 'mcp', server_label: 'mal', server_url: mcp.urls[`malformed-${mode}`], require_approval: 'never' }] });
    assert.equal(res.status, 'completed', mode);
    assert.equal(res.output[0].type, 'mcp_list_tools');
    assert.ok(res.output[0].error, `${mode}: the listing failed`);
    const call = await oai.responses.create({ model: 'emu-chat', store: false, input: 'CALL sb__mcp0__broken {}\nhi',
      tools: [{ type: 'mcp', server_label: 'mal', server_url: mcp.urls[`malformed-call-${mode}`], require_approval: 'never' }] });
    assert.equal(call.output[1].type, 'mcp_call', mode);
    assert.ok(call.output[1].error, `${mode}: the call failed`);
  }
});

test('MCP: an answer over the size limit is an error; an output over the output cap is cut, and says so', async () => {
  const res = await oai.responses.create({ model: 'emu-responses', store: false, input: 'CALL sb__mcp0__big {}\nhi',
    tools: [{ type: 'mcp', server_label: 'big', server_url: mcp.urls.oversized, require_approval: 'never' }] });
  const call = res.output.find((i) => i.type === 'mcp_call');
  assert.equal(call.output, null);
  assert.match(call.error, /MCP answer over 1048576 bytes/);
  assert.equal(res.status, 'completed');
  const long = 'y'.repeat(100000);
  const cut = await oai.responses.create({ model: 'emu-chat', store: false, input: `CALL sb__mcp0__echo {"text":"${long}"}\nhi`,
    tools: [calc()] });
  const echo = cut.output.find((i) => i.type === 'mcp_call');
  assert.equal(echo.output, `${'y'.repeat(65536)}\n[output truncated: 65536 of 100000 bytes shown]`);
});

test('MCP: max_tool_calls is hit exactly; the rest are not run', async () => {
  const m = unique('max');
  const before = mcp.recordsOf('stateless', 'tools/call').length;
  const res = await oai.responses.create({ model: 'emu-chat', store: false, max_tool_calls: 2, tools: [calc()],
    input: `CALL sb__mcp0__echo {"text":"1"}\nCALL sb__mcp0__echo {"text":"2"}\nCALL sb__mcp0__echo {"text":"3"}\n${m}` });
  assert.equal(res.output.filter((i) => i.type === 'mcp_call').length, 2);
  assert.equal(mcp.recordsOf('stateless', 'tools/call').length, before + 2);
  assert.equal(res.status, 'completed');
});

test('MCP: server URLs the outbound guard refuses are never fetched', async () => {
  // A server that is down: its listing fails, the model goes on.
  const down = await oai.responses.create({ model: 'emu-claude', store: false, input: 'hi',
    tools: [{ type: 'mcp', server_label: 'down', server_url: 'http://127.0.0.1:1/mcp', require_approval: 'never' }] });
  assert.equal(down.status, 'completed');
  assert.ok(down.output[0].error, JSON.stringify(down.output[0]));
  for (const url of ['http://169.254.169.254/mcp', 'http://10.0.0.1/mcp', 'http://[::ffff:192.168.0.1]/mcp',
    'http://0xa9fea9fe/mcp', 'http://[fd00:ec2::254]/mcp', 'http://100.64.0.1/mcp', 'http://localhost./mcp']) {
    const res = await oai.responses.create({ model: 'emu-chat', store: false, input: 'hi',
      tools: [{ type: 'mcp', server_label: 'x', server_url: url, require_approval: 'never' }] });
    assert.equal(res.status, 'completed', url);
    assert.equal(res.output[0].type, 'mcp_list_tools');
    assert.ok(res.output[0].error, url);
  }
});

test('MCP: each tool step is a tool_calls row, without arguments or results', async () => {
  const m = unique('rows');
  const res = await oai.responses.create({ model: 'emu-chat', input: `CALL sb__mcp0__echo {"text":"secret-${m}"}\n${m}`, tools: [calc()] });
  const rid = res.output[1].id;
  const rows = await (async () => {
    for (let i = 0; i < 50; i++) {
      const r = psql(`SELECT kind, server, name, outcome FROM tool_calls WHERE response_id = :'v1' ORDER BY id`, res.id);
      if (r.length >= 2) return r;
      await new Promise((ok) => setTimeout(ok, 100));
    }
    return [];
  })();
  assert.deepEqual(rows, ['mcp_list_tools|calc||ok', 'mcp_call|calc|echo|ok']);
  assert.deepEqual(psql(`SELECT count(*) FROM tool_calls WHERE item_id = :'v1'`, rid), ['1']);
  assert.deepEqual(psql(`SELECT count(*) FROM tool_calls WHERE coalesce(error,'') LIKE '%' || :'v1' || '%'`, `secret-${m}`), ['0']);
});

test('Responses: a client function under the reserved prefix is a 400', async () => {
  const res = await http('POST', '/v1/responses', { body: { model: 'emu-chat', input: 'x',
    tools: [{ type: 'function', name: 'sb__web_search', parameters: { type: 'object', properties: {} } }] } });
  assert.equal(res.status, 400, res.text);
  assert.equal(res.json.error.type, 'invalid_request_error');
});

test('the reserved calls never reach the client as function calls, streamed or not', async () => {
  const r = await sse('/v1/responses', { body: { model: 'emu-responses', stream: true, store: false, tools: [calc()],
    input: 'CALL sb__mcp0__add {"a":2,"b":3}\nhi' } });
  checkStream(r);
  assert.equal(r.raw.includes('sb__mcp0__add'), false);
  assert.equal(r.raw.includes('function_call'), false);
});

// ---- Web search, run by the gateway against the emulator's SearXNG-compatible backend ----------------

import Anthropic from '@anthropic-ai/sdk';
import { sbctl } from './harness.mjs';

const PAGE = () => `${cfg.emu}/_pages/zorblax.html`;
let searchReady = false;
async function searchBackend() {
  if (searchReady) return;
  sbctl('search-backend', 'add', 'emu-search', '--kind', 'searxng', '--base-url', `${cfg.emu}/_search`, '--default', '--if-not-exists');
  // Frontends learn it through NOTIFY sb_config: wait until a request takes the tool.
  for (let i = 0; i < 100; i++) {
    const r = await http('POST', '/v1/responses', { body: { model: 'emu-chat', store: false, input: 'x', tools: [{ type: 'web_search' }] } });
    const r2 = await http('POST', '/v1/responses', { base: cfg.frontendB, body: { model: 'emu-chat', store: false, input: 'x', tools: [{ type: 'web_search' }] } });
    if (r.status === 200 && r2.status === 200) { searchReady = true; return; }
    await new Promise((ok) => setTimeout(ok, 100));
  }
  throw new Error('web search never became available');
}

// Every url_citation's span is the cited URL (or its markdown link) in the text.
function checkCitations(msg, sources) {
  const part = msg.content[0];
  assert.ok(part.annotations.length > 0, JSON.stringify(part));
  for (const a of part.annotations) {
    assert.equal(a.type, 'url_citation');
    assert.ok(sources.some((s) => s.url === a.url), a.url);
    const span = [...part.text].slice(a.start_index, a.end_index).join('');
    assert.ok(span === a.url || span.endsWith(`(${a.url})`), `span ${JSON.stringify(span)} cites ${a.url}`);
  }
}

for (const [kind, model] of Object.entries(MODELS)) {
  test(`web search ← ${kind}: searched by the gateway, cited; streamed the same`, async () => {
    await searchBackend();
    const m = unique('ws');
    const body = { model, store: false, include: ['web_search_call.action.sources'], tools: [{ type: 'web_search' }],
      input: `CALL sb__web_search {"query":"zorblax fruit"}\n${m}` };
    const res = await oai.responses.create(body);
    assert.deepEqual(types(res), ['web_search_call', 'message']);
    const call = res.output[0];
    assert.equal(call.status, 'completed');
    assert.deepEqual(call.action.type, 'search');
    assert.equal(call.action.query, 'zorblax fruit');
    assert.ok(call.action.sources.some((s) => s.url === PAGE()), JSON.stringify(call.action));
    assert.equal('sb_output' in call, false);
    assert.match(res.output_text, /blue-skinned fruit/);
    checkCitations(res.output[1], call.action.sources);

    // Without the include, no sources on the item.
    const plain = await oai.responses.create({ ...body, include: undefined });
    assert.equal(plain.output[0].action.sources, undefined);

    const r = await sse('/v1/responses', { body: { ...body, stream: true } });
    const final = checkStream(r);
    const names = r.events.map((e) => e.event);
    for (const n of ['response.web_search_call.in_progress', 'response.web_search_call.searching',
      'response.web_search_call.completed', 'response.output_text.annotation.added']) assert.ok(names.includes(n), n);
    assert.ok(names.indexOf('response.web_search_call.completed') < names.indexOf('response.output_text.delta'));
    assert.deepEqual(types(final), types(res));
    assert.deepEqual(final.output[1].content[0].annotations, res.output[1].content[0].annotations);
  });
}

test('web search: filters.allowed_domains keeps only those domains; open_page reads a page through the guard', async () => {
  await searchBackend();
  const res = await oai.responses.create({ model: 'emu-claude', store: false, include: ['web_search_call.action.sources'],
    tools: [{ type: 'web_search', filters: { allowed_domains: ['example.org'] } }],
    input: 'CALL sb__web_search {"query":"zorblax"}\nhi' });
  const sources = res.output[0].action.sources;
  assert.ok(sources.length > 0);
  assert.ok(sources.every((s) => new URL(s.url).hostname.endsWith('example.org')), JSON.stringify(sources));
  const page = await oai.responses.create({ model: 'emu-gemini', store: false, tools: [{ type: 'web_search' }],
    input: `CALL sb__open_page {"url":"${PAGE()}"}\nhi` });
  assert.equal(page.output[0].type, 'web_search_call');
  assert.deepEqual(page.output[0].action, { type: 'open_page', url: PAGE() });
  assert.match(page.output_text, /Zorblax fruit/);
  assert.equal(page.output_text.includes('<script'), false);
  const find = await oai.responses.create({ model: 'emu-responses', store: false, tools: [{ type: 'web_search' }],
    input: `CALL sb__find_in_page {"url":"${PAGE()}","pattern":"CINNAMON"}\nhi` });
  assert.deepEqual(find.output[0].action, { type: 'find_in_page', url: PAGE(), pattern: 'CINNAMON' });
  assert.match(find.output_text, /pear and cinnamon/);
  assert.equal(find.output_text.includes('Mount Terrel'), true);
  // A page at a refused address is never fetched: the model is told.
  const bad = await oai.responses.create({ model: 'emu-gemini', store: false, tools: [{ type: 'web_search' }],
    input: 'CALL sb__open_page {"url":"http://169.254.169.254/latest/meta-data/"}\nhi' });
  assert.equal(bad.output[0].status, 'failed');
  assert.match(bad.output_text, /Error/);
});

test('web search: a stored chain sends the search back to the model, and the next turn answers from it', async () => {
  await searchBackend();
  const first = await oai.responses.create({ model: 'emu-claude', tools: [{ type: 'web_search' }],
    input: 'CALL sb__web_search {"query":"quintar river"}\nhi' });
  assert.equal(first.output[0].type, 'web_search_call');
  const next = await oai.responses.create({ model: 'emu-chat', previous_response_id: first.id, input: 'and now?',
    tools: [{ type: 'web_search' }] });
  assert.equal(next.status, 'completed');
  assert.deepEqual(types(next), ['message']);
});

test('Messages: web_search_20250305 runs on the same engine, as server_tool_use + web_search_tool_result with citations', async () => {
  await searchBackend();
  const anthropic = new Anthropic({ apiKey: cfg.key, baseURL: cfg.frontendA, maxRetries: 0, timeout: 30000 });
  const msg = await anthropic.messages.create({ model: 'emu-chat', max_tokens: 300,
    tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 3 }],
    messages: [{ role: 'user', content: 'CALL sb__web_search {"query":"zorblax"}\nhi' }] });
  const blockTypes = msg.content.map((b) => b.type);
  assert.deepEqual(blockTypes.slice(0, 2), ['server_tool_use', 'web_search_tool_result'], JSON.stringify(blockTypes));
  assert.equal(msg.content[0].name, 'web_search');
  assert.deepEqual(msg.content[0].input, { query: 'zorblax' });
  assert.equal(msg.content[1].tool_use_id, msg.content[0].id);
  assert.ok(msg.content[1].content.some((r) => r.type === 'web_search_result' && r.url === PAGE()));
  assert.equal(msg.usage.server_tool_use?.web_search_requests, 1);
  // Streamed: the SDK's accumulator ends with the same blocks.
  const streamed = await anthropic.messages.stream({ model: 'emu-chat', max_tokens: 300,
    tools: [{ type: 'web_search_20250305', name: 'web_search' }],
    messages: [{ role: 'user', content: 'CALL sb__web_search {"query":"zorblax"}\nhi' }] }).finalMessage();
  assert.deepEqual(streamed.content.map((b) => b.type), blockTypes);
});

test('Messages: mcp_servers run on the same engine, as mcp_tool_use + mcp_tool_result', async () => {
  const anthropic = new Anthropic({ apiKey: cfg.key, baseURL: cfg.frontendA, maxRetries: 0, timeout: 30000,
    defaultHeaders: { 'anthropic-beta': 'mcp-client-2025-04-04' } });
  const msg = await anthropic.messages.create({ model: 'emu-gemini', max_tokens: 300,
    mcp_servers: [{ type: 'url', url: mcp.urls.stateless, name: 'calc' }],
    messages: [{ role: 'user', content: 'CALL sb__mcp0__add {"a":2,"b":3}\nhi' }] });
  const uses = msg.content.filter((b) => b.type === 'mcp_tool_use');
  const results = msg.content.filter((b) => b.type === 'mcp_tool_result');
  assert.equal(uses.length, 1, JSON.stringify(msg.content));
  assert.equal(uses[0].name, 'add');
  assert.equal(uses[0].server_name, 'calc');
  assert.equal(results[0].tool_use_id, uses[0].id);
  assert.equal(results[0].content[0].text, '5');
});

// ---- Every kind of MCP server × every upstream kind × streamed or not ---------------------------------

import { GoogleGenAI } from '@google/genai';
import { ensureModel } from './harness.mjs';

// The response a request makes, streamed (its response.completed) or not.
async function respond(body, stream) {
  if (!stream) {
    const r = await http('POST', '/v1/responses', { body });
    assert.equal(r.status, 200, r.text);
    return r.json;
  }
  return checkStream(await sse('/v1/responses', { body: { ...body, stream: true } }));
}

for (const [kind, model] of Object.entries(MODELS)) {
  for (const stream of [false, true]) {
    test(`MCP servers ← ${kind}${stream ? ', streamed' : ''}: stateless, stateful (one session per response), bearer, erroring`, async () => {
      const cases = [
        [{ server_url: mcp.urls.stateless }, 'CALL sb__mcp0__roll_dice {}', (c) => assert.equal(c.output, '4')],
        [{ server_url: mcp.urls.stateful }, 'CALL sb__mcp0__counter {}\nCALL sb__mcp0__counter {}',
          (c, all) => assert.deepEqual(all.map((x) => x.output).sort(), ['1', '2'])],
        [{ server_url: mcp.urls.bearer, authorization: mcp.token, headers: { 'X-Tenant': mcp.tenant } }, 'CALL sb__mcp0__whoami {}',
          (c) => { assert.equal(c.error, null); assert.match(c.output, /t1/); }],
        [{ server_url: mcp.urls.erroring }, 'CALL sb__mcp0__fail {}', (c) => assert.equal(c.error, 'the tool failed')],
      ];
      for (const [server, calls, check] of cases) {
        const m = unique('srv');
        const r = await respond({ model, store: false, input: `${calls}\n${m}`,
          tools: [{ type: 'mcp', server_label: 's', require_approval: 'never', ...server }] }, stream);
        assert.equal(r.status, 'completed');
        const mcpCalls = r.output.filter((i) => i.type === 'mcp_call');
        assert.ok(mcpCalls.length >= 1, JSON.stringify(r.output));
        check(mcpCalls[0], mcpCalls);
        assert.equal(r.output.at(-1).type, 'message');
      }
    });
  }
}

// ---- The loop's limits, each hit exactly ---------------------------------------------------------------

async function setScenario(upstream, scenario) {
  const res = await fetch(`${cfg.emu}/_emu/scenarios/${upstream}`, { method: 'PUT', body: JSON.stringify(scenario) });
  assert.equal(res.status, 200, await res.text());
}

test('limits: a model that keeps calling is stopped by the iteration limit (16 model calls) and max_tool_calls, and answers', async () => {
  const up = unique('loopup');
  const model = ensureModel(unique('loop'), { upstream: up });
  await setScenario(up, { tool: '^sb__mcp0__echo$', arguments: { text: 'again' }, repeat: 1000, after_result: 'done looping' });
  const res = await oai.responses.create({ model, store: false, input: 'loop', tools: [calc()] });
  const reqs = (await (await fetch(`${cfg.emu}/_emu/requests?limit=1000`)).json()).requests.filter((r) => r.body?.model === up);
  // 16 model calls; the last is offered no built-in tool, so it answers.
  assert.equal(reqs.length, 16);
  assert.equal(res.output.filter((i) => i.type === 'mcp_call').length, 15);
  assert.equal(res.output.at(-1).type, 'message');
  assert.equal(res.output_text, 'done looping');
  assert.equal((reqs.at(-1).body.tools ?? []).some((t) => (t.function?.name ?? t.name ?? '').startsWith('sb__')), false);
  assert.ok(res.usage.input_tokens > 0);

  const capped = await oai.responses.create({ model, store: false, input: 'loop', tools: [calc()], max_tool_calls: 3 });
  assert.equal(capped.output.filter((i) => i.type === 'mcp_call').length, 3);
  assert.equal(capped.output_text, 'done looping');
});

test('limits: the response deadline ends a slow tool step and the response with a timeout, never a hang', async () => {
  const id = unique('deadline');
  sbctl('model', 'add', id, '--provider', 'openai-chat', '--base-url', `${cfg.emu}/v1`, '--upstream-model', 'emu-model',
    '--credential-ref', 'SB_EMU_UPSTREAM_KEY', '--timeout-ms', '1500');
  const t0 = Date.now();
  const r = await http('POST', '/v1/responses', { body: { model: id, store: false, input: 'CALL sb__mcp0__sleep {}\nhi',
    tools: [{ type: 'mcp', server_label: 'slow', server_url: mcp.urls.slow, require_approval: 'never' }] } });
  const took = Date.now() - t0;
  assert.ok(took < 5000, `${took} ms`);
  assert.equal(r.status, 504, r.text);
  assert.equal(r.json.error.type, 'timeout_error');
  assert.match(r.json.error.message, /deadline passed during its built-in tool calls/);
  // The tool step was cut to the deadline (1.5 s), not the tool timeout (3 s) or the server's 6 s.
  assert.ok(took >= 1400, `${took} ms`);
});

test('Generate Content: googleSearch runs on the same engine, with groundingMetadata', async () => {
  await searchBackend();
  const ai = new GoogleGenAI({ apiKey: cfg.key, httpOptions: { baseUrl: cfg.frontendA } });
  const r = await ai.models.generateContent({ model: 'emu-claude', contents: 'CALL sb__web_search {"query":"zorblax"}\nhi',
    config: { tools: [{ googleSearch: {} }] } });
  const g = r.candidates[0].groundingMetadata;
  assert.ok(g, JSON.stringify(r.candidates[0]));
  assert.deepEqual(g.webSearchQueries, ['zorblax']);
  assert.ok(g.groundingChunks.some((c) => c.web.uri === PAGE()));
  for (const s of g.groundingSupports ?? []) {
    const bytes = Buffer.from(r.text, 'utf8');
    const span = bytes.subarray(s.segment.startIndex ?? 0, s.segment.endIndex).toString('utf8');
    assert.equal(span, s.segment.text);
  }
  assert.ok((g.groundingSupports ?? []).length > 0);
  // No reserved function call shows.
  assert.equal((r.functionCalls ?? []).length, 0);
});
