// Real MCP servers for the tool-loop tests, written with the official SDK
// (@modelcontextprotocol/sdk: McpServer / Server + StreamableHTTPServerTransport
// on node's own http module), started in-process on 127.0.0.1 free ports:
//
//   stateless  a new server and transport per request (no session id; SSE answers):
//              add {a,b} -> "5" for 2+3, echo {text}, roll_dice {sides?} -> "4",
//              weather.lookup {city} (a name the model cannot take as is), and
//              a tool whose name is 60 characters long
//   stateful   sessions (Mcp-Session-Id; JSON answers): counter -> the number of
//              counter calls in this session ("1", "2", ...); expireSessions()
//              forgets every session, so the next request in one gets a 404
//   bearer     401 unless Authorization: Bearer <token> and X-Tenant: t1; whoami
//   slow       sleep {ms?} sleeps ms (default slowMs); /slow-list/mcp answers
//              tools/list after slowMs
//   erroring   fail -> isError:true "the tool failed"; throw -> JSON-RPC error
//              -32001 "tool exploded"
//   oversized  big -> 2 MB of text
//   malformed  a raw http server that answers initialize and the initialized
//              notification correctly, then breaks tools/list at
//              /<mode>/mcp, or lists one tool "broken" and breaks tools/call at
//              /call-<mode>/mcp; modes: broken-json (cut JSON), wrong-id (a
//              response to another id), cut-sse (an event cut off, stream ended),
//              reset-sse (an event cut off, connection reset)
//
// Every HTTP request any of them gets is pushed on `records` (server, path,
// HTTP method, JSON-RPC method, id, tool name, session id, the request's
// headers lowercased, the status answered), so a test can check e.g. that
// tools/list ran once per chain or that the bearer header arrived.
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  McpError,
  isInitializeRequest,
} from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod/v4';

export const LONG_TOOL_NAME = 'a_tool_with_a_name_long_enough_to_need_the_short_form_mapping';
export const BIG_OUTPUT_BYTES = 2 * 1024 * 1024;
export const MALFORMED_MODES = ['broken-json', 'wrong-id', 'cut-sse', 'reset-sse'];

const MAX_BODY = 4 * 1024 * 1024;

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let n = 0;
    req.on('data', (c) => {
      n += c.length;
      if (n > MAX_BODY) {
        reject(new Error('body too large'));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function sendJson(res, status, obj, headers = {}) {
  const body = JSON.stringify(obj);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers });
  res.end(body);
}

function rpcError(res, status, code, message, id = null) {
  sendJson(res, status, { jsonrpc: '2.0', error: { code, message }, id });
}

const text = (t) => ({ content: [{ type: 'text', text: String(t) }] });

// The tools of the stateless server (also what the bearer server offers besides whoami).
function statelessServer() {
  const s = new McpServer({ name: 'sb-test-stateless', version: '1.0.0' });
  s.registerTool(
    'add',
    { description: 'Adds two numbers', inputSchema: { a: z.number(), b: z.number() } },
    async ({ a, b }) => text(a + b),
  );
  s.registerTool(
    'echo',
    { description: 'Echoes the text back', inputSchema: { text: z.string() } },
    async ({ text: t }) => text(t),
  );
  s.registerTool(
    'roll_dice',
    {
      description: 'Rolls a die (chosen by fair dice roll, guaranteed to be random)',
      inputSchema: { sides: z.number().int().min(1).optional() },
      annotations: { readOnlyHint: true },
    },
    async () => text(4),
  );
  s.registerTool(
    'weather.lookup',
    { description: 'The weather in a city', inputSchema: { city: z.string() } },
    async ({ city }) => text(`sunny in ${city}`),
  );
  s.registerTool(LONG_TOOL_NAME, { description: 'A tool with a long name', inputSchema: {} }, async () =>
    text('long name reached'),
  );
  return s;
}

// What every server shares: a listener on a free loopback port, the request
// record, the body read and parsed once (handed to the SDK as parsedBody).
async function listen(name, records, handler) {
  const sockets = new Set();
  const server = http.createServer(async (req, res) => {
    const rec = {
      server: name,
      path: req.url,
      httpMethod: req.method,
      rpcMethod: null,
      rpcId: null,
      toolName: null,
      sessionId: req.headers['mcp-session-id'] ?? null,
      headers: { ...req.headers },
      status: null,
      messages: [],
    };
    records.push(rec);
    res.on('finish', () => {
      rec.status = res.statusCode;
    });
    res.on('close', () => {
      if (rec.status === null) rec.status = res.headersSent ? res.statusCode : 0;
    });
    let body;
    if (req.method === 'POST') {
      let raw;
      try {
        raw = await readBody(req);
      } catch {
        return;
      }
      try {
        body = JSON.parse(raw);
      } catch {
        rpcError(res, 400, -32700, 'Parse error');
        return;
      }
      const msgs = Array.isArray(body) ? body : [body];
      rec.messages = msgs.map((m) => ({ method: m?.method ?? null, id: m?.id ?? null, name: m?.params?.name ?? null }));
      rec.rpcMethod = rec.messages[0]?.method ?? null;
      rec.rpcId = rec.messages[0]?.id ?? null;
      rec.toolName = rec.rpcMethod === 'tools/call' ? rec.messages[0].name : null;
    }
    try {
      await handler(req, res, body, rec);
    } catch (err) {
      if (!res.headersSent) rpcError(res, 500, -32603, `Internal error: ${err.message}`);
      else res.destroy();
    }
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    base: `http://127.0.0.1:${port}`,
    url: `http://127.0.0.1:${port}/mcp`,
    close: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

// One SDK server and transport for this request only (stateless mode).
async function serveStateless(makeServer, req, res, body, opts = {}) {
  if (req.method !== 'POST') {
    rpcError(res, 405, -32000, 'Method not allowed.');
    return;
  }
  const server = makeServer();
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, ...opts });
  res.on('close', () => {
    transport.close();
    server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, body);
}

export async function startMcpServers({ token = 'mcp-test-token-0123456789', tenant = 't1', slowMs = 3000 } = {}) {
  const records = [];
  const timers = new Set();
  const sleep = (ms) =>
    new Promise((resolve) => {
      const t = setTimeout(() => {
        timers.delete(t);
        resolve();
      }, ms);
      timers.add(t);
    });
  const servers = {};

  // (a) stateless
  servers.stateless = await listen('stateless', records, (req, res, body) =>
    serveStateless(statelessServer, req, res, body),
  );

  // (b) stateful: sessions kept by id; JSON answers
  const sessions = new Map(); // id -> { transport, server, calls }
  servers.stateful = await listen('stateful', records, async (req, res, body) => {
    const sid = req.headers['mcp-session-id'];
    if (sid) {
      const s = sessions.get(sid);
      if (!s) {
        rpcError(res, 404, -32001, 'Session not found');
        return;
      }
      await s.transport.handleRequest(req, res, body);
      return;
    }
    if (req.method !== 'POST' || !isInitializeRequest(body)) {
      rpcError(res, 400, -32000, 'Bad Request: No valid session ID provided');
      return;
    }
    const state = { calls: 0 };
    const server = new McpServer({ name: 'sb-test-stateful', version: '1.0.0' });
    server.registerTool('counter', { description: 'Counts its calls in this session', inputSchema: {} }, async () => {
      state.calls += 1;
      return text(state.calls);
    });
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: true,
      onsessioninitialized: (id) => {
        sessions.set(id, { transport, server, state });
      },
      onsessionclosed: (id) => {
        sessions.delete(id);
      },
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  });

  // (c) bearer-protected
  servers.bearer = await listen('bearer', records, async (req, res, body) => {
    if (req.headers.authorization !== `Bearer ${token}` || req.headers['x-tenant'] !== tenant) {
      res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' });
      res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Unauthorized' }, id: null }));
      return;
    }
    await serveStateless(
      () => {
        const s = new McpServer({ name: 'sb-test-bearer', version: '1.0.0' });
        s.registerTool('whoami', { description: 'Says which tenant called', inputSchema: {} }, async () =>
          text(`tenant ${req.headers['x-tenant']}`),
        );
        s.registerTool(
          'add',
          { description: 'Adds two numbers', inputSchema: { a: z.number(), b: z.number() } },
          async ({ a, b }) => text(a + b),
        );
        return s;
      },
      req,
      res,
      body,
    );
  });

  // (d) hostile: slow
  servers.slow = await listen('slow', records, async (req, res, body) => {
    if (req.url.startsWith('/slow-list/') && body?.method === 'tools/list') await sleep(slowMs);
    await serveStateless(
      () => {
        const s = new McpServer({ name: 'sb-test-slow', version: '1.0.0' });
        s.registerTool(
          'sleep',
          { description: 'Sleeps, then says so', inputSchema: { ms: z.number().optional() } },
          async ({ ms }) => {
            await sleep(ms ?? slowMs);
            return text('slept');
          },
        );
        s.registerTool('ping', { description: 'Answers at once', inputSchema: {} }, async () => text('pong'));
        return s;
      },
      req,
      res,
      body,
    );
  });

  // erroring: the low-level Server, so a thrown error is a JSON-RPC error
  // (McpServer would turn it into an isError result)
  servers.erroring = await listen('erroring', records, (req, res, body) =>
    serveStateless(
      () => {
        const s = new Server({ name: 'sb-test-erroring', version: '1.0.0' }, { capabilities: { tools: {} } });
        s.setRequestHandler(ListToolsRequestSchema, async () => ({
          tools: [
            { name: 'fail', description: 'Fails as a tool', inputSchema: { type: 'object', properties: {} } },
            { name: 'throw', description: 'Fails as a protocol error', inputSchema: { type: 'object', properties: {} } },
          ],
        }));
        s.setRequestHandler(CallToolRequestSchema, async (request) => {
          if (request.params.name === 'fail') return { ...text('the tool failed'), isError: true };
          throw new McpError(-32001, 'tool exploded');
        });
        return s;
      },
      req,
      res,
      body,
    ),
  );

  // oversized output
  const big = 'x'.repeat(BIG_OUTPUT_BYTES);
  servers.oversized = await listen('oversized', records, (req, res, body) =>
    serveStateless(
      () => {
        const s = new McpServer({ name: 'sb-test-oversized', version: '1.0.0' });
        s.registerTool('big', { description: 'Returns 2 MB of text', inputSchema: {} }, async () => text(big));
        return s;
      },
      req,
      res,
      body,
    ),
  );

  // malformed: no SDK on purpose (the SDK cannot send broken frames)
  servers.malformed = await listen('malformed', records, async (req, res, body) => {
    const m = /^\/(call-)?([a-z-]+)\/mcp$/.exec(req.url.split('?')[0]);
    if (req.method !== 'POST' || !m || !MALFORMED_MODES.includes(m[2])) {
      rpcError(res, req.method === 'POST' ? 404 : 405, -32000, 'Not found');
      return;
    }
    const onCall = Boolean(m[1]);
    const mode = m[2];
    if (body?.method === 'initialize') {
      sendJson(res, 200, {
        jsonrpc: '2.0',
        id: body.id,
        result: {
          protocolVersion: '2025-06-18',
          capabilities: { tools: {} },
          serverInfo: { name: 'sb-test-malformed', version: '1.0.0' },
        },
      });
      return;
    }
    if (body?.id === undefined) {
      res.writeHead(202).end();
      return;
    }
    if (onCall && body.method === 'tools/list') {
      sendJson(res, 200, {
        jsonrpc: '2.0',
        id: body.id,
        result: { tools: [{ name: 'broken', description: 'Answers broken frames', inputSchema: { type: 'object' } }] },
      });
      return;
    }
    if (body.method !== (onCall ? 'tools/call' : 'tools/list')) {
      rpcError(res, 200, -32601, 'Method not found', body.id);
      return;
    }
    const answer = JSON.stringify({
      jsonrpc: '2.0',
      id: body.id,
      result: onCall ? text('never seen') : { tools: [{ name: 'never', inputSchema: { type: 'object' } }] },
    });
    if (mode === 'broken-json') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(answer.slice(0, Math.floor(answer.length / 2)));
    } else if (mode === 'wrong-id') {
      sendJson(res, 200, { jsonrpc: '2.0', id: body.id + 1000, result: JSON.parse(answer).result });
    } else {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.write(`event: message\ndata: ${answer.slice(0, Math.floor(answer.length / 2))}`);
      if (mode === 'cut-sse') res.end();
      else setTimeout(() => res.socket?.destroy(), 20);
    }
  });

  const urls = {
    stateless: servers.stateless.url,
    stateful: servers.stateful.url,
    bearer: servers.bearer.url,
    slow: servers.slow.url,
    slowList: `${servers.slow.base}/slow-list/mcp`,
    erroring: servers.erroring.url,
    oversized: servers.oversized.url,
  };
  for (const mode of MALFORMED_MODES) {
    urls[`malformed-${mode}`] = `${servers.malformed.base}/${mode}/mcp`;
    urls[`malformed-call-${mode}`] = `${servers.malformed.base}/call-${mode}/mcp`;
  }

  return {
    urls,
    records,
    token,
    tenant,
    slowMs,
    // The records of one server (and, optionally, one JSON-RPC method).
    recordsOf(server, rpcMethod) {
      return records.filter((r) => r.server === server && (rpcMethod === undefined || r.rpcMethod === rpcMethod));
    },
    // Forgets every stateful session: requests in them get 404 from now on.
    expireSessions() {
      for (const { transport } of sessions.values()) transport.close().catch(() => {});
      sessions.clear();
    },
    sessionCount: () => sessions.size,
    async close() {
      for (const t of timers) clearTimeout(t);
      timers.clear();
      for (const { transport } of sessions.values()) await transport.close().catch(() => {});
      sessions.clear();
      await Promise.all(Object.values(servers).map((s) => s.close()));
    },
  };
}
