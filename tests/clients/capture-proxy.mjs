// A capture proxy for the client matrix: sits between one client and the
// gateway on a loopback port of its own and records every exchange (method,
// path, request headers and body, status, response headers and body), so a
// failing check's log shows exactly what the client sent and what it was
// answered. Bodies stream through unchanged as they arrive (SSE stays
// SSE); only the recorded copy is cut at MAX_BODY. Credentials are recorded
// by header name only. A WebSocket upgrade (Codex tries the Responses API
// over one first) is passed through as raw bytes and recorded with the
// gateway's answer head. The clients also get it as their HTTP(S) proxy:
// a request for any other host (CONNECT host:port, or an absolute URI) is
// refused with 403 and recorded with external: true, so a client that tries
// to leave loopback is seen, and goes nowhere.
// A check may set a hook (setHook(fn)) that sees each request (the recorded
// entry, body parsed) before it is forwarded, and is awaited: the matrix uses
// it to change the emulator's scenario between two requests of one client
// run, for a model that must take steps the scenario API cannot chain (Claude
// Code's ToolSearch before WebSearch).
import http from 'node:http';
import net from 'node:net';

const MAX_BODY = 512 * 1024;
const SECRET_HEADERS = new Set(['authorization', 'x-api-key', 'x-goog-api-key', 'api-key', 'proxy-authorization']);

function redact(headers) {
  const out = {};
  for (const [k, v] of Object.entries(headers)) out[k] = SECRET_HEADERS.has(k.toLowerCase()) ? '[redacted]' : v;
  return out;
}

function clip(buf) {
  const s = buf.subarray(0, MAX_BODY).toString();
  return buf.length > MAX_BODY ? `${s}…[${buf.length - MAX_BODY} more bytes]` : s;
}

function bodyOf(text) {
  try { return JSON.parse(text); } catch { return text; }
}

// Starts the proxy for target (an http:// origin). Resolves {origin, take(), setHook(fn),
// close()}: take() returns the exchanges recorded since the last take() and forgets
// them; setHook(fn or null): fn(entry) is awaited before each request goes on (an
// error it throws is recorded in the entry, and the request still goes on).
export function startCaptureProxy(target) {
  const t = new URL(target);
  let log = [];
  let n = 0;
  let hook = null;
  const server = http.createServer((req, res) => {
    if (/^[a-z]+:\/\//i.test(req.url)) {
      log.push({ id: ++n, at: new Date().toISOString(), method: req.method, url: req.url, external: true, status: 403 });
      res.writeHead(403, { 'content-type': 'text/plain' });
      res.end('the client matrix allows loopback only\n');
      req.resume();
      return;
    }
    const id = ++n;
    const started = Date.now();
    const reqChunks = [];
    req.on('data', (c) => reqChunks.push(c));
    req.on('end', async () => {
      const body = Buffer.concat(reqChunks);
      const entry = {
        id, at: new Date(started).toISOString(), method: req.method, url: req.url,
        request_headers: redact(req.headers), request_body: bodyOf(clip(body)),
      };
      log.push(entry);
      if (hook) {
        try { await hook(entry); } catch (e) { entry.hook_error = String(e.stack || e); }
      }
      const up = http.request({ host: t.hostname, port: t.port, method: req.method, path: req.url, headers: req.headers }, (r) => {
        entry.status = r.statusCode;
        entry.response_headers = r.headers;
        res.writeHead(r.statusCode, r.rawHeaders);
        const respChunks = [];
        let size = 0;
        r.on('data', (c) => {
          if (size < MAX_BODY) respChunks.push(c);
          size += c.length;
          res.write(c);
        });
        r.on('end', () => {
          res.end();
          const b = Buffer.concat(respChunks);
          entry.response_body = bodyOf(size > MAX_BODY ? `${clip(b)}…[${size - MAX_BODY} more bytes]` : b.toString());
          entry.ms = Date.now() - started;
        });
        r.on('error', (e) => { entry.error = `gateway response: ${e.message}`; res.destroy(); });
      });
      up.on('error', (e) => {
        entry.error = `gateway: ${e.message}`;
        if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
        res.end(String(e));
      });
      // The client went away before the answer ended: so does the gateway request.
      res.on('close', () => { if (!res.writableFinished) { entry.client_closed = true; up.destroy(); } });
      up.end(body);
    });
  });

  server.on('upgrade', (req, socket, head) => {
    const entry = { id: ++n, at: new Date().toISOString(), method: req.method, url: req.url, upgrade: req.headers.upgrade,
      request_headers: redact(req.headers) };
    log.push(entry);
    const up = net.connect(Number(t.port), t.hostname, () => {
      const lines = [`${req.method} ${req.url} HTTP/${req.httpVersion}`];
      for (let i = 0; i < req.rawHeaders.length; i += 2) lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
      up.write(`${lines.join('\r\n')}\r\n\r\n`);
      if (head.length) up.write(head);
      let first = true;
      up.on('data', (c) => {
        if (first) {
          first = false;
          const s = c.toString('latin1');
          const end = s.indexOf('\r\n\r\n');
          entry.response_head = end >= 0 ? s.slice(0, end) : s.slice(0, 2000);
          entry.response_body = end >= 0 ? s.slice(end + 4, end + 4 + 2000) : undefined;
        }
      });
      up.pipe(socket);
      socket.pipe(up);
    });
    const end = () => { up.destroy(); socket.destroy(); };
    up.on('error', (e) => { entry.error = `gateway: ${e.message}`; end(); });
    socket.on('error', end);
    up.on('close', end);
    socket.on('close', end);
  });

  server.on('connect', (req, socket) => {
    log.push({ id: ++n, at: new Date().toISOString(), method: 'CONNECT', url: req.url, external: true, status: 403 });
    socket.on('error', () => {});
    socket.end('HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n');
  });

  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      resolve({
        origin: `http://127.0.0.1:${port}`,
        take() {
          const out = log;
          log = [];
          return out;
        },
        setHook(fn) {
          hook = fn || null;
        },
        close() {
          server.closeAllConnections?.();
          return new Promise((r) => server.close(() => r()));
        },
      });
    });
  });
}
