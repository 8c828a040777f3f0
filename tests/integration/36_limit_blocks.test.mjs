// Capacity blocks (issue 17, schema/008_limit_blocks.sql,
// frontend/policy/fe_limits_block.c): a frontend admits a busy limited
// key's requests from a block of its capacity charged in PostgreSQL in
// advance, with no round trip per request. What must hold whatever the
// blocks: the limits' bounds of docs/limits.md across both frontends, every
// request drawn from the quota exactly once, and every block given back once
// the key is idle (no lease left behind).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cfg, psql, psqlAsync, sbctl, newAccountKey, waitFor } from './harness.mjs';
import { STYLES, send, assert429, keyId, settledUsage } from './limits_harness.mjs';

// Requests sent `width` at a time, alternating frontends and styles, until
// `count` are sent or stop(res) says so; returns them in order, with the
// time taken.
async function drive(key, count, width, { text = 'hello there', maxTokens = 16, stop = () => false } = {}) {
  const out = [];
  let next = 0;
  let stopped = false;
  const t0 = Date.now();
  async function lane() {
    while (!stopped && next < count) {
      const i = next++;
      const r = await send(STYLES[i % 4], key, { base: i % 2 ? cfg.frontendB : cfg.frontendA, text, maxTokens });
      out[i] = { i, style: STYLES[i % 4], r };
      if (stop(r)) stopped = true;
    }
  }
  await Promise.all(Array.from({ length: width }, lane));
  return { res: out.filter(Boolean), seconds: (Date.now() - t0) / 1000 };
}

function fromBlocks(account) {
  return Number(psql(`SELECT count(*) FROM request_log l JOIN accounts a ON a.id = l.account_id
                      WHERE a.name = :'v1' AND l.limit_block IS NOT NULL`, account)[0]);
}

test('a busy limited key is admitted from blocks; usage is drawn once and the blocks go back when idle', async () => {
  const { account, key } = newAccountKey();
  sbctl('limits', 'set', '--key', keyId(account), '--rpm', '100000', '--tpm', '100000000', '--concurrency', '1000');
  sbctl('limits', 'set', '--account', account, '--quota-tokens', '100000000');
  for (let i = 0; i < 40; i++) {
    const r = await send('chat', key, { maxTokens: 16 });
    assert.equal(r.status, 200, r.text);
  }
  const { used, logged, leases } = await settledUsage(account, 40);
  assert.equal(used, logged, 'account_usage equals the request_log total');
  assert.equal(leases, 0, 'the block (its slots and reserved tokens) went back');
  const blocks = fromBlocks(account);
  assert.ok(blocks >= 30, `most requests came from a block: ${blocks} of 40`);
});

test('requests per minute across both frontends with blocks: never over the bucket', async () => {
  const { account, key } = newAccountKey();
  const rpm = 240;
  sbctl('limits', 'set', '--key', keyId(account), '--rpm', String(rpm));
  const { res, seconds } = await drive(key, 600, 24);
  const ok = res.filter((x) => x.r.status === 200).length;
  for (const x of res.filter((y) => y.r.status !== 200)) assert429(x.style, x.r, 'rate');
  // The bucket holds one minute (rpm) and refills rpm/60 a second; a block's
  // cells are spent within 250 ms of their charge (one more at most).
  const bound = rpm + Math.ceil((rpm / 60) * seconds) + 1;
  assert.ok(ok <= bound, `${ok} admitted in ${seconds} s, bound ${bound}`);
  assert.ok(ok >= rpm - rpm / 8, `${ok} admitted: blocks held elsewhere refuse no more than an eighth`);
  await settledUsage(account, res.length);
  assert.ok(fromBlocks(account) > 0, 'blocks were used');
});

test('concurrency across both frontends with blocks: never over the limit, every slot back after', async () => {
  const { account, key } = newAccountKey();
  const limit = 48;
  sbctl('limits', 'set', '--key', keyId(account), '--concurrency', String(limit));
  // Warm both frontends up so each holds a block of slots, then a wave of
  // slow requests, all in flight at once.
  await drive(key, 16, 4);
  const { res } = await drive(key, 120, 120, { text: 'slow one [[emu:latency=1500]]' });
  const ok = res.filter((x) => x.r.status === 200).length;
  for (const x of res.filter((y) => y.r.status !== 200)) assert429(x.style, x.r, 'rate');
  assert.ok(ok <= limit, `${ok} ran at once, limit ${limit}`);
  assert.ok(ok >= limit - limit / 4, `${ok} ran at once: free slots held by blocks refuse few`);
  const { leases } = await settledUsage(account, 136);
  assert.equal(leases, 0, 'every slot went back');
  // And the key is whole again: a full wave fits once more.
  const again = await drive(key, 24, 24, { text: 'slow two [[emu:latency=300]]' });
  assert.ok(again.res.every((x) => x.r.status === 200), 'slots are not lost');
  // A limit lowered under load binds within a second or so: the slots the
  // blocks hold (free, and busy ones as their requests end) go back.
  // Sampled without blocking the event loop, so the load keeps running.
  const kid = keyId(account);
  const active = async () => Number((await psqlAsync("SELECT count(*) FROM limit_leases WHERE key_id = :'v1' AND active",
    kid))[0]);
  let running = true;
  const statuses = {};
  const statusesBefore = {};
  const load = Promise.all(Array.from({ length: 8 }, async (_, lane) => {
    for (let i = 0; running; i++) {
      const r = await send(STYLES[i % 4], key, { base: lane % 2 ? cfg.frontendB : cfg.frontendA, text: 'steady [[emu:latency=150]]' });
      statuses[r.status] = (statuses[r.status] ?? 0) + 1;
    }
  }));
  let before, down;
  const samples = [];
  try {
    await new Promise((r) => setTimeout(r, 700));
    before = await active();
    Object.assign(statusesBefore, statuses);
    sbctl('limits', 'set', '--key', keyId(account), '--concurrency', '2');
    down = await waitFor(async () => (await active()) <= 2, { timeout: 4000, interval: 100 });
    for (let i = 0; down && i < 8; i++) {
      samples.push(await active());
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    running = false;
    await load;
  }
  assert.ok(before > 2, `the blocks held ${before} slots under load (${JSON.stringify(statusesBefore)})`);
  assert.ok(down, `held slots came down to the new limit under load (now ${await active()})`);
  assert.ok(samples.every((n) => n <= 2), `and stayed there: ${samples.join(' ')}`);
});

test('quota with blocks, two frontends draining one account: never overdrawn, drawn once, nothing held after', async () => {
  const { account, key } = newAccountKey();
  const quota = 6000;
  sbctl('limits', 'set', '--account', account, '--quota-tokens', String(quota));
  const text = 'please repeat these seven words back';
  const burst = await drive(key, 400, 16, { text, maxTokens: 32, stop: (r) => r.status === 429 });
  for (const x of burst.res.filter((y) => y.r.status !== 200)) assert429(x.style, x.r, 'quota');
  assert.ok(burst.res.some((x) => x.r.status === 429), 'the quota ran out');
  let sent = burst.res.length;
  // Blocks go back once the key is idle; then one at a time to the end.
  await settledUsage(account, sent);
  let last;
  for (let i = 0; i < 200; i++) {
    last = await send(STYLES[i % 4], key, { base: i % 2 ? cfg.frontendA : cfg.frontendB, text, maxTokens: 32 });
    sent++;
    if (last.status === 429) break;
    assert.equal(last.status, 200, last.text);
  }
  assert.equal(last.status, 429);
  const { used, logged, leases } = await settledUsage(account, sent);
  assert.equal(used, logged, 'drawn exactly once');
  assert.equal(leases, 0, 'no block or lease left');
  const [missed] = psql(`SELECT COALESCE(sum(greatest(tokens_in - tokens_estimated, 0)), 0) FROM request_log l
                         JOIN accounts a ON a.id = l.account_id WHERE a.name = :'v1' AND l.status = 200`, account).map(Number);
  assert.ok(used <= quota + missed, `used ${used} of ${quota} (estimate missed ${missed})`);
  const [remaining] = psql("SELECT tokens_remaining FROM quota_remaining WHERE account = :'v1'", account).map(Number);
  assert.ok(remaining < 32 + 30, `left ${remaining}`);
  assert.ok(fromBlocks(account) > 0, 'blocks were used');
});
