// tools_mcpseq.mjs: the MCP server's own time for what one gateway tool
// round trip asks of it, for tests/bench/tools: the four requests the worker
// sends (initialize, notifications/initialized, tools/list, tools/call),
// back to back on one keep-alive connection, timed as one sequence.
//
//   node tests/bench/tools_mcpseq.mjs --url http://127.0.0.1:P/PATH
//        (--concurrency 1 | --rate R [--connections N])
//        [--duration S] [--warmup S] [--timeout S]
//
// --concurrency 1  sequences one after the other (closed loop)
// --rate R         open loop: a sequence starts every 1/R s on an idle
//                  connection (a new one, up to --connections, default 64,
//                  when none is idle); latency counts from the moment the
//                  sequence is started (node's timers fire up to a
//                  millisecond late: that is not the server's), a wait for a
//                  free connection included
// A raw TCP client (precomputed requests, only Content-Length or chunked
// framing parsed) so that the client costs little next to a fast server;
// it does count in the figures. Prints one JSON line:
//   {"mode","count","errors","p50_us","p90_us","p99_us","max_us","mean_us"}
// count = sequences started in the measured window that completed; errors =
// those that failed (a status other than 200/202, a reset, a timeout).
import net from 'node:net';

const argv = process.argv.slice(2);
const o = { concurrency: 0, rate: 0, connections: 64, duration: 10, warmup: 0, timeout: 10 };
for (let i = 0; i < argv.length; i += 2) {
  const a = argv[i];
  const v = argv[i + 1];
  if (a === '--url') o.url = v;
  else if (a === '--concurrency') o.concurrency = Number(v);
  else if (a === '--rate') o.rate = Number(v);
  else if (a === '--connections') o.connections = Number(v);
  else if (a === '--duration') o.duration = Number(v);
  else if (a === '--warmup') o.warmup = Number(v);
  else if (a === '--timeout') o.timeout = Number(v);
  else {
    process.stderr.write(`tools_mcpseq: unknown option ${a}\n`);
    process.exit(2);
  }
}
if (!o.url || (o.concurrency !== 1) === !(o.rate > 0) || !(o.duration > 0) || !(o.connections >= 1)) {
  process.stderr.write('tools_mcpseq: need --url and either --concurrency 1 or --rate R > 0\n');
  process.exit(2);
}
const u = new URL(o.url);
if (u.protocol !== 'http:') {
  process.stderr.write('tools_mcpseq: http:// only\n');
  process.exit(2);
}
const port = Number(u.port || 80);

// The worker's requests (worker/tools/wtool_mcp.c), as HTTP/1.1 bytes.
function request(body, after) {
  const h = [
    `POST ${u.pathname}${u.search} HTTP/1.1`,
    `Host: ${u.host}`,
    'Content-Type: application/json',
    'Accept: application/json, text/event-stream',
    ...(after ? ['MCP-Protocol-Version: 2025-06-18'] : []),
    `Content-Length: ${Buffer.byteLength(body)}`,
    '',
    '',
  ];
  return Buffer.from(h.join('\r\n') + body);
}
const SEQ = [
  request(
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},' +
      '"clientInfo":{"name":"switchboard","version":"1"}}}',
    false,
  ),
  request('{"jsonrpc":"2.0","method":"notifications/initialized"}', true),
  request('{"jsonrpc":"2.0","id":2,"method":"tools/list"}', true),
  request('{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}}}', true),
];

// One keep-alive connection: send(buf) resolves with the status once the
// whole response (Content-Length or chunked) is in.
class Conn {
  constructor() {
    this.buf = Buffer.alloc(0);
    this.waiter = null;
    this.dead = false;
    this.sock = net.connect({ host: u.hostname, port });
    this.sock.setNoDelay(true);
    this.ready = new Promise((resolve, reject) => {
      this.sock.once('connect', resolve);
      this.sock.once('error', reject);
    });
    this.sock.on('data', (d) => {
      this.buf = this.buf.length ? Buffer.concat([this.buf, d]) : d;
      this.parse();
    });
    const fail = (e) => {
      this.dead = true;
      if (this.waiter) {
        const w = this.waiter;
        this.waiter = null;
        w.reject(e || new Error('connection closed'));
      }
    };
    this.sock.on('error', fail);
    this.sock.on('close', () => fail());
  }

  send(b) {
    return new Promise((resolve, reject) => {
      if (this.dead) {
        reject(new Error('connection closed'));
        return;
      }
      this.waiter = { resolve, reject };
      this.sock.write(b);
    });
  }

  parse() {
    if (!this.waiter) return;
    const he = this.buf.indexOf('\r\n\r\n');
    if (he < 0) return;
    const head = this.buf.subarray(0, he).toString('latin1');
    const status = Number(head.slice(9, 12));
    let end = -1;
    const cl = /\r\ncontent-length:\s*(\d+)/i.exec(head);
    if (cl) {
      if (this.buf.length >= he + 4 + Number(cl[1])) end = he + 4 + Number(cl[1]);
    } else if (/\r\ntransfer-encoding:\s*chunked/i.test(head)) {
      let p = he + 4;
      for (;;) {
        const le = this.buf.indexOf('\r\n', p);
        if (le < 0) break;
        const n = parseInt(this.buf.subarray(p, le).toString('latin1'), 16);
        if (Number.isNaN(n)) {
          this.sock.destroy(new Error('bad chunk'));
          return;
        }
        if (this.buf.length < le + 2 + n + 2) break;
        p = le + 2 + n + 2;
        if (n === 0) {
          end = p;
          break;
        }
      }
    } else {
      this.sock.destroy(new Error('no framing the client knows'));
      return;
    }
    if (end < 0) return;
    this.buf = this.buf.subarray(end);
    const w = this.waiter;
    this.waiter = null;
    w.resolve(status);
  }
}

async function sequence(c) {
  for (const b of SEQ) {
    const st = await c.send(b);
    if (st !== 200 && st !== 202) throw new Error(`HTTP ${st}`);
  }
}

const lat = [];
let errors = 0;
const now = () => Number(process.hrtime.bigint() / 1000n);
const t0 = now();
const winStart = t0 + o.warmup * 1e6;
const winEnd = winStart + o.duration * 1e6;
const timeoutUs = o.timeout * 1e6;

function withTimeout(p) {
  let t;
  return Promise.race([
    p,
    new Promise((_, rej) => {
      t = setTimeout(() => rej(new Error('timeout')), o.timeout * 1000);
    }),
  ]).finally(() => clearTimeout(t));
}

if (o.concurrency === 1) {
  let c = new Conn();
  await c.ready;
  for (;;) {
    const s = now();
    if (s >= winEnd) break;
    try {
      await withTimeout(sequence(c));
      if (s >= winStart) lat.push(now() - s);
    } catch {
      if (s >= winStart) errors++;
      c.sock.destroy();
      c = new Conn();
      await c.ready.catch(() => {});
    }
  }
  process.exitCode = 0;
} else {
  const idle = [];
  let open = 0;
  const inflight = new Set();
  const interval = 1e6 / o.rate;
  let k = 0;
  const runOne = async (sched) => {
    const start = now();
    let c = idle.pop();
    if (!c && open < o.connections) {
      open++;
      c = new Conn();
    }
    if (!c) {
      // Every connection busy: wait for one (the wait counts).
      await new Promise((r) => waiters.push(r));
      c = idle.pop();
    }
    try {
      await c.ready;
      await withTimeout(sequence(c));
      if (sched >= winStart) lat.push(now() - start);
      idle.push(c);
    } catch {
      if (sched >= winStart) errors++;
      c.sock.destroy();
      open--;
    }
    const w = waiters.shift();
    if (w) w();
  };
  const waiters = [];
  await new Promise((resolve) => {
    const tick = () => {
      const t = now();
      while (t0 + k * interval <= t) {
        const sched = t0 + k * interval;
        k++;
        if (sched >= winEnd) {
          resolve();
          return;
        }
        const p = runOne(sched);
        inflight.add(p);
        p.finally(() => inflight.delete(p));
      }
      setTimeout(tick, Math.max(0, Math.min(1, (t0 + k * interval - now()) / 1000)));
    };
    tick();
  });
  const deadline = now() + timeoutUs;
  while (inflight.size && now() < deadline) await Promise.race([...inflight, new Promise((r) => setTimeout(r, 50))]);
  for (const c of idle) c.sock.destroy();
}

lat.sort((a, b) => a - b);
const pct = (p) => (lat.length ? lat[Math.min(lat.length - 1, Math.ceil((p / 100) * lat.length) - 1)] : 0);
const mean = lat.length ? lat.reduce((a, b) => a + b, 0) / lat.length : 0;
process.stdout.write(
  `${JSON.stringify({
    mode: o.concurrency === 1 ? 'closed' : 'open',
    count: lat.length,
    errors,
    p50_us: pct(50),
    p90_us: pct(90),
    p99_us: pct(99),
    max_us: lat.length ? lat[lat.length - 1] : 0,
    mean_us: Math.round(mean),
  })}\n`,
);
process.exit(0);
