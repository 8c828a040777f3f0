// tools_mcp.mjs: the minimal, fast MCP server of tests/bench/tools (no SDK).
//
// The SDK's stateless server builds a new server and transport for every
// request and answers in SSE; that costs milliseconds, which would hide the
// gateway's own cost of a tool round trip. This one answers the four
// requests a tool round trip makes (initialize, notifications/initialized,
// tools/list, tools/call) with fixed JSON over Streamable HTTP (JSON answers,
// no session id: a stateless server), on node's own http module.
//
//   node tests/bench/tools_mcp.mjs [--port P] [--hold-max-ms MS]
//
// Tools:
//   add  {a, b}  -> text a+b, at once
//   hold {}      -> text "held", once the bench POSTs /_release (or after
//                   --hold-max-ms, default 25000: a bench that dies never
//                   leaves a call open for long; counted in timed_out)
// Control (for the bench, same port):
//   GET  /_stats    {"holding", "timed_out", "counts": {JSON-RPC method: n},
//                    "calls": {tool: n}, "bad": n, "connections": TCP
//                    connections accepted (the control ones included)}
//   POST /_release  answers every held call now: {"released": n}
// Prints one JSON line {"url", "control"} when listening on 127.0.0.1;
// exits on SIGINT/SIGTERM or when stdin closes (the bench holds it open, so
// a bench that dies takes the server with it).
import http from 'node:http';

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : dflt;
};
const port = opt('--port', 0);
const holdMaxMs = opt('--hold-max-ms', 25000);
if (!(port >= 0 && port < 65536) || !(holdMaxMs >= 0)) {
  process.stderr.write('tools_mcp: --port takes 0..65535, --hold-max-ms a number of ms\n');
  process.exit(2);
}

const MAX_BODY = 1024 * 1024;
const VERSIONS = ['2025-06-18', '2025-03-26', '2024-11-05'];
const TOOLS = [
  {
    name: 'add',
    description: 'Adds two numbers',
    inputSchema: {
      type: 'object',
      properties: { a: { type: 'number' }, b: { type: 'number' } },
      required: ['a', 'b'],
    },
  },
  {
    name: 'hold',
    description: 'Answers once the benchmark releases it',
    inputSchema: { type: 'object', properties: {} },
  },
];

const counts = {};
const calls = {};
let bad = 0;
let timedOut = 0;
let connections = 0;
const held = new Set(); // {res, id, timer}

function send(res, status, text) {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
const result = (id, r) => JSON.stringify({ jsonrpc: '2.0', id, result: r });
const rpcError = (id, code, message) => JSON.stringify({ jsonrpc: '2.0', id, error: { code, message } });
const textResult = (id, t) => result(id, { content: [{ type: 'text', text: String(t) }], isError: false });

function answerHold(h, byTimer) {
  if (!held.delete(h)) return;
  clearTimeout(h.timer);
  if (byTimer) timedOut++;
  if (!h.res.destroyed) send(h.res, 200, textResult(h.id, 'held'));
}

function rpc(req, res, body) {
  let msg;
  try {
    msg = JSON.parse(body);
  } catch {
    bad++;
    send(res, 400, rpcError(null, -32700, 'parse error'));
    return;
  }
  const method = msg && typeof msg.method === 'string' ? msg.method : '';
  counts[method] = (counts[method] || 0) + 1;
  const id = msg.id;
  if (id === undefined) {
    // A notification (notifications/initialized): accepted, no body.
    res.writeHead(202, { 'content-length': 0 });
    res.end();
    return;
  }
  switch (method) {
    case 'initialize': {
      const asked = msg.params && msg.params.protocolVersion;
      send(
        res,
        200,
        result(id, {
          protocolVersion: VERSIONS.includes(asked) ? asked : VERSIONS[0],
          capabilities: { tools: { listChanged: false } },
          serverInfo: { name: 'sb-bench-fast', version: '1' },
        }),
      );
      return;
    }
    case 'tools/list':
      send(res, 200, result(id, { tools: TOOLS }));
      return;
    case 'tools/call': {
      const p = msg.params || {};
      calls[p.name] = (calls[p.name] || 0) + 1;
      const a = p.arguments || {};
      if (p.name === 'add') {
        send(res, 200, textResult(id, Number(a.a) + Number(a.b)));
      } else if (p.name === 'hold') {
        const h = { res, id, timer: null };
        h.timer = setTimeout(() => answerHold(h, true), holdMaxMs);
        held.add(h);
        res.on('close', () => {
          if (held.delete(h)) clearTimeout(h.timer);
        });
      } else {
        send(res, 200, rpcError(id, -32602, `unknown tool ${String(p.name).slice(0, 64)}`));
      }
      return;
    }
    default:
      send(res, 200, rpcError(id, -32601, 'method not found'));
  }
}

const server = http.createServer((req, res) => {
  if (req.url === '/_stats' && req.method === 'GET') {
    send(res, 200, JSON.stringify({ holding: held.size, timed_out: timedOut, counts, calls, bad, connections }));
    return;
  }
  if (req.url === '/_release' && req.method === 'POST') {
    const all = [...held];
    for (const h of all) answerHold(h, false);
    send(res, 200, JSON.stringify({ released: all.length }));
    req.resume();
    return;
  }
  if (req.url !== '/mcp' || req.method !== 'POST') {
    req.resume();
    send(res, req.url === '/mcp' ? 405 : 404, rpcError(null, -32000, 'POST /mcp only'));
    return;
  }
  const chunks = [];
  let n = 0;
  req.on('data', (c) => {
    n += c.length;
    if (n > MAX_BODY) {
      bad++;
      req.destroy();
      return;
    }
    chunks.push(c);
  });
  req.on('end', () => rpc(req, res, Buffer.concat(chunks).toString('utf8')));
  req.on('error', () => {});
});
// The worker keeps its connections to the server in libcurl's cache between
// jobs: keep them open longer than a run's pauses.
server.keepAliveTimeout = 120000;
server.headersTimeout = 125000;
server.requestTimeout = 0;
server.on('clientError', (err, sock) => sock.destroy());
server.on('connection', () => connections++);

server.listen(port, '127.0.0.1', () => {
  const p = server.address().port;
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${p}/mcp`, control: `http://127.0.0.1:${p}` })}\n`);
});

function stop() {
  for (const h of [...held]) answerHold(h, false);
  server.close();
  server.closeAllConnections();
  process.exit(0);
}
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
process.stdin.on('end', stop);
process.stdin.on('error', stop);
process.stdin.resume();
