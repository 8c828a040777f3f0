// Raw HTTP/1.1 over node:net for the tests that need what fetch hides: the
// status line and every header as sent, connections that are not reused,
// bytes written in pieces or trickled, malformed requests, and the client's
// own source address (all of 127/8 is loopback on Linux, so 127.0.0.2 and
// 127.0.0.3 are distinct peers to a frontend). Also: starting an extra
// frontend with arguments of its own (same database and broker as the stack
// under test), logging to $SB_VAR/log/<name>.log, and checking that log.
import assert from 'node:assert/strict';
import net from 'node:net';
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, statSync } from 'node:fs';
import { cfg, waitFor } from './harness.mjs';

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// One complete response at the start of buf, or null: {status, headers, text,
// json, size, head}. A response without Content-Length (a 1xx) has no body.
export function parseResponse(buf) {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const headText = buf.subarray(0, end).toString('latin1');
  const lines = headText.split('\r\n');
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0]);
  if (!m) return { status: -1, headers: {}, text: buf.toString('latin1'), json: null, size: buf.length, head: headText };
  const headers = {};
  for (const l of lines.slice(1)) {
    const i = l.indexOf(':');
    headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  const len = Number(headers['content-length'] ?? 0);
  if (buf.length < end + 4 + len) return null;
  const text = buf.subarray(end + 4, end + 4 + len).toString('utf8');
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: Number(m[1]), headers, text, json, size: end + 4 + len, head: headText };
}

// Every complete response in buf, in order.
export function parseAll(buf) {
  const out = [];
  for (let r = parseResponse(buf); r; r = parseResponse(buf)) {
    out.push(r);
    if (r.status < 0) break;
    buf = buf.subarray(r.size);
  }
  return out;
}

// Connects to port and plays steps (a string or Buffer is written, a number
// waits that many ms), stopping as soon as the exchange is over. Resolves with
// {res, responses, raw, closed, ms, resMs, error, written}: the first response
// (or null) and all of them, the bytes received, whether the server closed the
// connection, the time from connecting until the end and until the first
// response was complete, a socket error code if one happened, the bytes
// written. untilClose: wait for the server to close after the response too.
// localAddress: the client's source address (e.g. '127.0.0.2').
export function exchange(port, steps, { timeout = 10000, untilClose = false, localAddress } = {}) {
  return new Promise((resolve) => {
    const out = { res: null, responses: [], raw: null, closed: false, ms: 0, resMs: null, error: null, written: 0 };
    const t0 = Date.now();
    const sock = net.connect({ port, host: '127.0.0.1', ...(localAddress ? { localAddress } : {}) });
    sock.setNoDelay(true);
    let buf = Buffer.alloc(0);
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      out.res = parseResponse(buf);
      out.responses = parseAll(buf);
      out.raw = buf;
      out.ms = Date.now() - t0;
      sock.destroy();
      resolve(out);
    };
    const timer = setTimeout(finish, timeout);
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      const r = parseResponse(buf);
      if (r && out.resMs === null) out.resMs = Date.now() - t0;
      if (!untilClose && r) finish();
    });
    sock.on('end', () => { out.closed = true; finish(); });
    sock.on('close', () => { out.closed = true; finish(); });
    sock.on('error', (e) => { out.error = e.code ?? String(e); });
    const write = (b) => new Promise((r) => {
      if (sock.write(b)) r();
      else { sock.once('drain', r); sock.once('close', r); }
    });
    sock.on('connect', async () => {
      for (const s of steps) {
        if (done || !sock.writable) break;
        if (typeof s === 'number') {
          await sleep(s);
        } else {
          const b = Buffer.isBuffer(s) ? s : Buffer.from(s);
          out.written += b.length;
          await write(b);
        }
      }
    });
  });
}

// A request head ending in the blank line.
export function head(method, path, headers = {}) {
  let h = `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n`;
  for (const [k, v] of Object.entries(headers)) h += `${k}: ${v}\r\n`;
  return `${h}\r\n`;
}

// A complete POST of a JSON body (an object, or text as is) in the style's
// way; style is {path, auth(key)}.
export function post(style, body, { key = cfg.key, headers = {} } = {}) {
  const b = Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
  return Buffer.concat([
    Buffer.from(head('POST', style.path, {
      ...style.auth(key), 'content-type': 'application/json', 'content-length': b.length, connection: 'close', ...headers,
    })),
    b,
  ]);
}

// Trickles bytes: [byte, delay, byte, delay, ...].
export function trickle(bytes, everyMs) {
  const steps = [];
  for (const c of Buffer.from(bytes)) steps.push(Buffer.from([c]), everyMs);
  return steps;
}

// A connection for several requests in a row (keep-alive, pipelining).
export class Conn {
  constructor(port, { localAddress } = {}) {
    this.sock = net.connect({ port, host: '127.0.0.1', ...(localAddress ? { localAddress } : {}) });
    this.sock.setNoDelay(true);
    this.buf = Buffer.alloc(0);
    this.closed = false;
    this.waiters = [];
    this.ready = new Promise((r) => this.sock.once('connect', r));
    this.sock.on('data', (d) => { this.buf = Buffer.concat([this.buf, d]); this.wake(); });
    this.sock.on('close', () => { this.closed = true; this.wake(); });
    this.sock.on('error', () => {});
  }
  wake() { for (const w of this.waiters.splice(0)) w(); }
  // The next complete response, or null when the connection closed or
  // timeout ms passed first.
  async response(timeout = 10000) {
    const t0 = Date.now();
    for (;;) {
      const r = parseResponse(this.buf);
      if (r) { this.buf = this.buf.subarray(r.size); return r; }
      if (this.closed || Date.now() - t0 > timeout) return null;
      await new Promise((w) => { this.waiters.push(w); setTimeout(w, 100); });
    }
  }
  async write(bytes) { await this.ready; this.sock.write(bytes); }
  async request(bytes, timeout) { await this.write(bytes); return this.response(timeout); }
  // Resolves true once the server has closed the connection (within timeout ms).
  async waitClosed(timeout = 5000) {
    const t0 = Date.now();
    while (!this.closed && Date.now() - t0 < timeout) await new Promise((w) => { this.waiters.push(w); setTimeout(w, 100); });
    return this.closed;
  }
  close() { this.sock.destroy(); }
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

// Starts a frontend of the test's own: the stack's database and broker, the
// given extra arguments, logging to $SB_VAR/log/<name>.log (so the ASan pass
// scans it). Resolves once it answers GET /v1/models with 200:
// {proc, pid, port, name, log, logStart, exit: Promise<{code, signal}>, exited}.
export async function startFrontend(name, args = []) {
  const bin = `${process.env.SB_BUILD_DIR ?? ''}/bin/sb-frontend`;
  const broker = process.env.SB_BROKER_FRONTEND_ENDPOINT;
  assert.ok(existsSync(bin), `${bin} missing: SB_BUILD_DIR must name the build (tests/run and against-dev set it)`);
  assert.ok(broker && process.env.SB_PG_DSN, 'SB_BROKER_FRONTEND_ENDPOINT and SB_PG_DSN must be set');
  const port = await freePort();
  const log = `${cfg.varDir}/log/${name}.log`;
  const logStart = existsSync(log) ? statSync(log).size : 0;
  const fd = openSync(log, 'a');
  const proc = spawn(bin, ['--listen', `127.0.0.1:${port}`, '--broker', broker, '--name', name, ...args],
    { env: process.env, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  const exit = new Promise((r) => proc.once('exit', (code, signal) => r({ code, signal })));
  const fe = { proc, pid: proc.pid, port, name, log, logStart, exit, exited: false };
  exit.then(() => { fe.exited = true; });
  const ready = await waitFor(async () => {
    if (fe.exited) return false;
    const { res } = await exchange(port, [head('GET', '/v1/models', { authorization: `Bearer ${cfg.key}`, connection: 'close' })], { timeout: 2000 });
    return res?.status === 200;
  }, { timeout: 20000, interval: 200 });
  assert.ok(ready, `the frontend ${name} did not come up on port ${port}; see ${log}`);
  return fe;
}

// Stops fe with SIGTERM and resolves with how it exited, or null when it
// was still running after timeout ms (then it is killed).
export async function stopFrontend(fe, timeout = 20000) {
  if (fe.exited) return fe.exit;
  fe.proc.kill('SIGTERM');
  let timer;
  const late = new Promise((r) => { timer = setTimeout(() => r(null), timeout); });
  const exit = await Promise.race([fe.exit, late]);
  clearTimeout(timer); // else the pending timer keeps node (and the test file) running for timeout ms
  if (!exit) { fe.proc.kill('SIGKILL'); await fe.exit; }
  return exit;
}

// Kills fe at once if it still runs (for after(): a test that failed
// midway must not leave it behind).
export async function killFrontend(fe) {
  if (fe && !fe.exited) {
    fe.proc.kill('SIGKILL');
    await fe.exit;
  }
}

// The lines fe logged since it started that name an error, a libevent
// complaint or a sanitizer report.
export function logProblems(fe) {
  const log = readFileSync(fe.log).subarray(fe.logStart).toString('utf8');
  return log.split('\n').filter((l) => / ERROR |"level":"error"|\[err\]|\[warn\]|AddressSanitizer|LeakSanitizer|runtime error:/.test(l));
}

// Asserts an error reply in the style's own body: status, JSON, and per
// style OpenAI's {error:{message,type,param,code}}, Anthropic's
// {type:"error",error,request_id} (with the request-id header), or Google's
// {error:{code,message,status}}. want: {code, openai, anthropic, google, message}.
export function assertStyleError(style, res, status, want) {
  assert.ok(res, `${style.name}: no response`);
  assert.equal(res.status, status, `${style.name}: status ${res.status}, body ${res.text}`);
  assert.match(res.headers['content-type'] ?? '', /^application\/json/, `${style.name}: content type`);
  const j = res.json;
  assert.ok(j, `${style.name}: a JSON body expected, got ${res.text}`);
  if (style.kind === 'openai') {
    assert.ok(j.error && 'message' in j.error && 'type' in j.error && 'param' in j.error && 'code' in j.error, res.text);
    assert.equal(j.error.code, want.code, res.text);
    assert.equal(j.error.type, want.openai, res.text);
    assert.match(j.error.message, want.message);
  } else if (style.kind === 'anthropic') {
    assert.equal(j.type, 'error', res.text);
    assert.equal(j.error?.type, want.anthropic, res.text);
    assert.match(j.error.message, want.message);
    assert.match(j.request_id, /^req_/);
    assert.equal(res.headers['request-id'], j.request_id);
  } else {
    assert.equal(j.error?.code, status, res.text);
    assert.equal(j.error.status, want.google, res.text);
    assert.match(j.error.message, want.message);
  }
}
