// The request log survives a frontend death during a PostgreSQL outage
// (issue 13): while the database is away each row is appended to the
// frontend's spool (--spool-dir, deploy/local passes $SB_VAR/spool); a
// frontend SIGKILLed then and restarted after PostgreSQL is back replays it,
// the survivor replays its own when the database answers, and every request
// has exactly one request_log row. Stops PostgreSQL, kills and restarts fe1.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, existsSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { cfg, http, pgCtl, pidOf, psql, unique, waitFor } from './harness.mjs';

const lib = fileURLToPath(new URL('../../deploy/local/lib.sh', import.meta.url));

function bash(script, ...args) {
  return execFileSync('bash', ['-c', script, lib, ...args], {
    env: { ...process.env, SB_VAR: cfg.varDir }, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8',
  });
}
const alive = (pid) => { try { process.kill(pid, 0); return true; } catch { return false; } };

let pgDown = false;
let fe1Argv = null;
after(() => {
  if (pgDown) pgCtl('start');
  // Leave the stack as it was: fe1 running with its own arguments.
  if (fe1Argv && !alive(pidOf('frontend1'))) bash('source "$0" && sb_spawn frontend1 "$@"', ...fe1Argv);
});

const bodies = (m, i) => [
  ['/v1/responses', { model: 'emu-chat', input: `spool ${m} ${i}`, store: false }, {}],
  ['/v1/chat/completions', { model: 'emu-chat', store: false, messages: [{ role: 'user', content: `spool ${m} ${i}` }] }, {}],
  ['/v1/messages', { model: 'emu-chat', max_tokens: 20, messages: [{ role: 'user', content: `spool ${m} ${i}` }] },
    { 'anthropic-version': '2023-06-01' }],
  ['/v1/responses', { model: 'emu-chat', input: `stored ${m} ${i}` }, {}], // refused 503, logged all the same
];

test('PostgreSQL down, fe1 SIGKILLed: after both come back every request has exactly one request_log row', async () => {
  const fe1 = pidOf('frontend1');
  fe1Argv = readFileSync(`/proc/${fe1}/cmdline`, 'utf8').split('\0').filter((a) => a.length > 0);
  assert.ok(fe1Argv.includes('--spool-dir'), `fe1 runs with a spool: ${fe1Argv.join(' ')}`);
  const spoolDir = fe1Argv[fe1Argv.indexOf('--spool-dir') + 1];
  const spool1 = `${spoolDir}/reqlog-fe1.spool`;

  // The requests below need the frontends' caches warm (a key lookup cannot
  // reach the stopped database). 24 restarted PostgreSQL just before, and a
  // frontend's LISTEN connection that reconnects (every second while down)
  // drops its caches, having maybe missed notifications: wait past that, then
  // warm both frontends.
  await new Promise((ok) => setTimeout(ok, 1500));
  for (const base of [cfg.frontendA, cfg.frontendB]) {
    for (const [path, body, headers] of bodies(unique('warm'), 0)) await http('POST', path, { base, body, headers });
  }
  pgCtl('stop');
  pgDown = true;
  const m = unique('spool');
  const ids = [];
  const statuses = {};
  for (let i = 0; i < 10; i++) {
    for (const base of [cfg.frontendA, cfg.frontendB]) {
      for (const [path, body, headers] of bodies(m, i)) {
        const res = await http('POST', path, { base, body, headers });
        const id = res.headers.get('x-request-id');
        assert.ok(id, `${path}: a request id`);
        ids.push(id);
        statuses[id] = res.status;
      }
    }
  }
  // Rows of a refused or failed request count as much as the others.
  assert.ok(Object.values(statuses).some((s) => s === 200) && Object.values(statuses).some((s) => s === 503),
    JSON.stringify(Object.values(statuses)));
  // The rows are on disk as the requests end (write(2), no wait for a tick).
  assert.ok(existsSync(spool1) && statSync(spool1).size > 0, 'fe1 spooled its rows');
  const spooled = readFileSync(spool1, 'utf8').split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l).request_id);
  const mine = ids.filter((id) => spooled.includes(id));
  assert.equal(mine.length, ids.length / 2, 'each of fe1\'s requests is in its spool once');

  process.kill(fe1, 'SIGKILL');
  await waitFor(() => !alive(fe1), { timeout: 5000 });
  assert.equal(alive(fe1), false);

  pgCtl('start');
  pgDown = false;
  bash('source "$0" && sb_spawn frontend1 "$@"', ...fe1Argv);
  const up = await waitFor(async () => {
    try { return (await http('GET', '/v1/models')).status === 200; } catch { return false; }
  }, { timeout: 20000, interval: 200 });
  assert.ok(up, 'fe1 restarted');

  const rows = await waitFor(() => {
    const got = psql("SELECT request_id || ' ' || count(*) || ' ' || min(status) FROM request_log "
      + "WHERE request_id = ANY(string_to_array(:'v1', ',')) GROUP BY request_id", ids.join(','));
    return got.length === ids.length ? got : null;
  }, { timeout: 15000, interval: 250 });
  assert.ok(rows, `every request has its row (${ids.length} requests)`);
  for (const r of rows) {
    const [id, n, status] = r.split(' ');
    assert.equal(n, '1', `${id} logged once`);
    assert.equal(Number(status), statuses[id], `${id} logged with the status its client saw`);
  }
  // Replayed spools are removed; a replay run again (restart) adds nothing.
  await waitFor(() => !existsSync(`${spoolDir}/reqlog-fe1.replay`) && statSync(spool1).size === 0, { timeout: 5000 });
  assert.equal(existsSync(`${spoolDir}/reqlog-fe1.replay`), false);
  assert.equal(statSync(spool1).size, 0);
  assert.equal(statSync(`${spoolDir}/reqlog-fe2.spool`).size, 0, 'fe2 replayed its spool when the database came back');
});
