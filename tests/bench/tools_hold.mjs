// tools_hold.mjs: the memory step of tests/bench/tools. Holds N gateway
// jobs in the tool step at once and reads the processes' RSS there.
//
//   node tests/bench/tools_hold.mjs --url URL --body-file F [-H 'N: v']...
//        --n N --control URL [--open-rate R] [--reach-timeout S]
//        [--drain-timeout S] [--rss name=PID]...
//
// Sends N copies of the body (a request whose model calls the `hold` tool
// of tools_mcp.mjs) at --open-rate per second (default 500), one connection
// each; polls the MCP server's /_stats until it holds N tools/call at once
// (every job is then in its tool step: listed, called, waiting) or
// --reach-timeout s pass (default 30); reads VmRSS of every --rss process
// from /proc there; POSTs /_release; waits for every answer (--drain-timeout
// s, default 30) and checks each is a 200 whose output has an mcp_call with
// output "held" and no error. RSS is also sampled every 100 ms over the
// whole step (max reported). Prints one JSON line:
//   {"n","held","reached","reach_s","ok","failed","errors","pending","first_bad",
//    "rss_<name>_kib","rss_<name>_max_kib",...,"total_s"}
// Exit 0 when the step ran (the JSON says how it went), 1 on a setup error.
// Only the URLs given are contacted (the bench passes 127.0.0.1 ones).
import fs from 'node:fs';
import http from 'node:http';

const argv = process.argv.slice(2);
const o = { headers: {}, rss: [], openRate: 500, reachTimeout: 30, drainTimeout: 30 };
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  const v = argv[i + 1];
  i++;
  if (a === '--url') o.url = v;
  else if (a === '--body-file') o.body = fs.readFileSync(v);
  else if (a === '-H') {
    const c = v.indexOf(':');
    if (c > 0) o.headers[v.slice(0, c).trim()] = v.slice(c + 1).trim();
  } else if (a === '--n') o.n = Number(v);
  else if (a === '--control') o.control = v;
  else if (a === '--open-rate') o.openRate = Number(v);
  else if (a === '--reach-timeout') o.reachTimeout = Number(v);
  else if (a === '--drain-timeout') o.drainTimeout = Number(v);
  else if (a === '--rss') {
    const e = v.indexOf('=');
    o.rss.push({ name: v.slice(0, e), pid: Number(v.slice(e + 1)) });
  } else {
    process.stderr.write(`tools_hold: unknown option ${a}\n`);
    process.exit(1);
  }
}
if (!o.url || !o.body || !o.control || !(o.n >= 1) || !(o.openRate > 0)) {
  process.stderr.write('tools_hold: need --url, --body-file, --control, --n >= 1 and --open-rate > 0\n');
  process.exit(1);
}

function rssKib(pid) {
  try {
    const m = /^VmRSS:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : -1;
  } catch {
    return -1;
  }
}

const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
function control(path, method) {
  return new Promise((resolve, reject) => {
    const req = http.request(`${o.control}${path}`, { method, agent, timeout: 5000 }, (res) => {
      let s = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (s += c));
      res.on('end', () => {
        try {
          resolve(JSON.parse(s));
        } catch (e) {
          reject(e);
        }
      });
    });
    req.on('timeout', () => req.destroy(new Error('control request timed out')));
    req.on('error', reject);
    req.end();
  });
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const out = { n: o.n, held: 0, reached: false, reach_s: null, ok: 0, failed: 0, errors: 0, pending: 0, first_bad: null };
const maxRss = {};
const sampler = setInterval(() => {
  for (const p of o.rss) maxRss[p.name] = Math.max(maxRss[p.name] || -1, rssKib(p.pid));
}, 100);

const t0 = Date.now();
let done = 0;
let allDone;
const allDoneP = new Promise((r) => (allDone = r));
function finish(kind, detail) {
  out[kind]++;
  if (kind !== 'ok' && !out.first_bad) out.first_bad = String(detail).slice(0, 300);
  if (++done === o.n) allDone();
}
function check(status, text) {
  if (status !== 200) return `HTTP ${status}: ${text}`;
  let r;
  try {
    r = JSON.parse(text);
  } catch {
    return `not JSON: ${text}`;
  }
  const call = (r.output || []).find((it) => it.type === 'mcp_call');
  if (!call) return `no mcp_call item: ${text}`;
  if (call.error || call.output !== 'held') return `mcp_call failed: ${JSON.stringify(call)}`;
  return null;
}
function one() {
  const req = http.request(
    o.url,
    {
      method: 'POST',
      agent,
      headers: { 'content-type': 'application/json', 'content-length': o.body.length, ...o.headers },
    },
    (res) => {
      let s = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (s += c));
      res.on('end', () => {
        const bad = check(res.statusCode, s);
        if (bad) finish('failed', bad);
        else finish('ok');
      });
      res.on('error', (e) => finish('errors', e.message));
    },
  );
  req.on('error', (e) => finish('errors', e.message));
  req.end(o.body);
}

// Open at the given rate, in 10 ms batches.
let sent = 0;
const opener = setInterval(() => {
  const due = Math.min(o.n, Math.ceil(((Date.now() - t0) / 1000) * o.openRate));
  while (sent < due) {
    sent++;
    one();
  }
  if (sent >= o.n) clearInterval(opener);
}, 10);

// Wait until the MCP server holds N calls (or the time is up, or every job
// already ended: something failed).
const reachDeadline = t0 + o.reachTimeout * 1000;
for (;;) {
  let st;
  try {
    st = await control('/_stats', 'GET');
  } catch (e) {
    process.stderr.write(`tools_hold: /_stats: ${e.message}\n`);
    process.exit(1);
  }
  out.held = Math.max(out.held, st.holding);
  if (st.holding >= o.n) {
    out.reached = true;
    out.reach_s = (Date.now() - t0) / 1000;
    break;
  }
  if (Date.now() >= reachDeadline || done === o.n) break;
  await sleep(50);
}
for (const p of o.rss) out[`rss_${p.name}_kib`] = rssKib(p.pid);
clearInterval(opener);
try {
  await control('/_release', 'POST');
} catch (e) {
  process.stderr.write(`tools_hold: /_release: ${e.message}\n`);
}
// Requests the opener never sent (the step stopped early) count as pending.
const drained = await Promise.race([
  sent === o.n ? allDoneP.then(() => true) : Promise.resolve(false),
  sleep(o.drainTimeout * 1000).then(() => false),
]);
if (!drained && sent === o.n) {
  // A late release or a job stuck elsewhere: one more release, a short wait.
  await control('/_release', 'POST').catch(() => {});
  await Promise.race([allDoneP, sleep(2000)]);
}
clearInterval(sampler);
for (const p of o.rss) out[`rss_${p.name}_max_kib`] = Math.max(maxRss[p.name] || -1, rssKib(p.pid));
out.pending = o.n - done;
out.total_s = (Date.now() - t0) / 1000;
process.stdout.write(`${JSON.stringify(out)}\n`);
process.exit(0);
