// A self-check of the test MCP servers (servers.mjs) with the SDK's own
// client (Client + StreamableHTTPClientTransport): each server does what
// the tool-loop tests will rely on. Run by hand after changing servers.mjs:
//   node tests/integration/mcp/check-servers.mjs
// Prints one line per check and exits non-zero on the first failure.
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { BIG_OUTPUT_BYTES, LONG_TOOL_NAME, MALFORMED_MODES, startMcpServers } from './servers.mjs';

const s = await startMcpServers({ slowMs: 600 });

async function connect(url, headers) {
  const client = new Client({ name: 'check-servers', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(url), headers ? { requestInit: { headers } } : {});
  await client.connect(transport);
  return { client, transport };
}

async function check(name, fn) {
  await fn();
  process.stdout.write(`ok - ${name}\n`);
}

const textOf = (r) => r.content.map((c) => c.text).join('\n');

try {
  await check('stateless: tools and answers', async () => {
    const { client } = await connect(s.urls.stateless);
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), ['add', 'echo', LONG_TOOL_NAME, 'roll_dice', 'weather.lookup'].sort());
    assert.equal(textOf(await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } })), '5');
    assert.equal(textOf(await client.callTool({ name: 'echo', arguments: { text: 'héllo' } })), 'héllo');
    assert.equal(textOf(await client.callTool({ name: 'roll_dice', arguments: {} })), '4');
    assert.equal(textOf(await client.callTool({ name: 'weather.lookup', arguments: { city: 'Paris' } })), 'sunny in Paris');
    await client.close();
    const recs = s.recordsOf('stateless');
    assert.ok(recs.every((r) => r.sessionId === null));
    assert.deepEqual(
      recs.filter((r) => r.httpMethod === 'POST').map((r) => r.rpcMethod).slice(0, 3),
      ['initialize', 'notifications/initialized', 'tools/list'],
    );
    assert.equal(s.recordsOf('stateless', 'tools/call').find((r) => r.toolName === 'add').status, 200);
  });

  await check('stateful: a counter per session, expiry answers 404', async () => {
    const a = await connect(s.urls.stateful);
    const b = await connect(s.urls.stateful);
    assert.ok(a.transport.sessionId && b.transport.sessionId && a.transport.sessionId !== b.transport.sessionId);
    assert.equal(textOf(await a.client.callTool({ name: 'counter', arguments: {} })), '1');
    assert.equal(textOf(await a.client.callTool({ name: 'counter', arguments: {} })), '2');
    assert.equal(textOf(await b.client.callTool({ name: 'counter', arguments: {} })), '1');
    assert.equal(s.sessionCount(), 2);
    const calls = s.recordsOf('stateful', 'tools/call');
    assert.ok(calls.every((r) => r.sessionId && r.headers['mcp-protocol-version']));
    s.expireSessions();
    await assert.rejects(a.client.callTool({ name: 'counter', arguments: {} }));
    assert.equal(s.recordsOf('stateful', 'tools/call').at(-1).status, 404);
    await a.client.close();
    await b.client.close();
  });

  await check('bearer: 401 without the token or the tenant, tools with both', async () => {
    await assert.rejects(connect(s.urls.bearer));
    await assert.rejects(connect(s.urls.bearer, { authorization: `Bearer ${s.token}` }));
    assert.ok(s.recordsOf('bearer').every((r) => r.status === 401));
    const { client } = await connect(s.urls.bearer, { authorization: `Bearer ${s.token}`, 'x-tenant': s.tenant });
    assert.equal(textOf(await client.callTool({ name: 'whoami', arguments: {} })), 'tenant t1');
    await client.close();
    const ok = s.recordsOf('bearer', 'tools/call');
    assert.equal(ok.at(-1).headers.authorization, `Bearer ${s.token}`);
  });

  await check('slow: the tool and the slow list take slowMs', async () => {
    const { client } = await connect(s.urls.slow);
    let t0 = Date.now();
    assert.equal(textOf(await client.callTool({ name: 'sleep', arguments: {} })), 'slept');
    assert.ok(Date.now() - t0 >= 550);
    await assert.rejects(client.callTool({ name: 'sleep', arguments: { ms: 2000 } }, undefined, { timeout: 200 }));
    await client.close();
    const l = await connect(s.urls.slowList);
    t0 = Date.now();
    await l.client.listTools();
    assert.ok(Date.now() - t0 >= 550);
    await l.client.close();
  });

  await check('erroring: isError and a JSON-RPC error', async () => {
    const { client } = await connect(s.urls.erroring);
    const r = await client.callTool({ name: 'fail', arguments: {} });
    assert.equal(r.isError, true);
    assert.equal(textOf(r), 'the tool failed');
    await assert.rejects(client.callTool({ name: 'throw', arguments: {} }), (e) => e.code === -32001 && /tool exploded/.test(e.message));
    await client.close();
  });

  await check('oversized: 2 MB of text', async () => {
    const { client } = await connect(s.urls.oversized);
    const r = await client.callTool({ name: 'big', arguments: {} });
    assert.equal(textOf(r).length, BIG_OUTPUT_BYTES);
    await client.close();
  });

  for (const mode of MALFORMED_MODES) {
    await check(`malformed ${mode}: initialize works, tools/list does not`, async () => {
      const { client } = await connect(s.urls[`malformed-${mode}`]);
      await assert.rejects(client.listTools({}, { timeout: 1000 }));
      await client.close().catch(() => {});
    });
    await check(`malformed call-${mode}: tools/list works, tools/call does not`, async () => {
      const { client } = await connect(s.urls[`malformed-call-${mode}`]);
      assert.deepEqual((await client.listTools()).tools.map((t) => t.name), ['broken']);
      await assert.rejects(client.callTool({ name: 'broken', arguments: {} }, undefined, { timeout: 1000 }));
      await client.close().catch(() => {});
    });
  }
} finally {
  await s.close();
}
process.stdout.write('check-servers: all ok\n');
