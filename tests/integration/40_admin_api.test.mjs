// The admin API (issue 19) on the frontends' admin listener: admin keys only
// (a generation key gets 403, an admin key gets 403 on the public port),
// every resource through the same rules as sbctl, an audit row for every
// change (secrets excluded), a created key shown once and working on every
// frontend at once, changes reaching every frontend within 1 s, and the
// request log, usage and audit searchable.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { cfg, http, psql, sbctl, unique, upstreamRequestsContaining, waitFor } from './harness.mjs';

const ADMIN = (process.env.SB_FRONTEND_ADMIN_URLS ?? '').split(' ').filter(Boolean);
const adminKey = sbctl('admin-key', 'create', '--name', unique('ops'));
const adminId = psql(`SELECT id FROM admin_keys ORDER BY id DESC LIMIT 1`)[0];

async function admin(method, path, { body, key = adminKey, base = ADMIN[0] } = {}) {
  const headers = {};
  if (key !== null) headers.authorization = `Bearer ${key}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${base}/admin/v1/${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, json, text, headers: res.headers };
}

const auditSince = () => Number(psql('SELECT COALESCE(max(id), 0) FROM admin_audit')[0]);
const auditRows = (after) => psql(`SELECT actor, action, resource, resource_id, COALESCE(before::text, ''), COALESCE(after::text, '')
  FROM admin_audit WHERE id > ${Number(after)} ORDER BY id`).map((l) => l.split('|'));

test('only admin keys administer; admin keys never generate', async () => {
  assert.match(adminKey, /^sk-sbadmin-[0-9A-Za-z]{48}$/);
  const none = await admin('GET', 'accounts', { key: null });
  assert.equal(none.status, 401);
  assert.equal(none.json.error.type, 'authentication_error');
  const gen = await admin('GET', 'accounts', { key: cfg.key });
  assert.equal(gen.status, 403);
  assert.equal(gen.json.error.code, 'generation_key');
  const forged = await admin('GET', 'accounts', { key: `sk-sbadmin-${'A'.repeat(48)}` });
  assert.equal(forged.status, 401);
  // Disabled: refused at once.
  const spare = sbctl('admin-key', 'create');
  const spareId = psql(`SELECT id FROM admin_keys ORDER BY id DESC LIMIT 1`)[0];
  assert.equal((await admin('GET', 'whoami', { key: spare })).status, 200);
  sbctl('admin-key', 'disable', spareId);
  assert.equal((await admin('GET', 'whoami', { key: spare })).status, 401);
  // The admin key on the public port: 403 in each style's body.
  const pub = await http('POST', '/v1/chat/completions', { key: adminKey, body: { model: 'emu-chat', messages: [{ role: 'user', content: 'x' }] } });
  assert.equal(pub.status, 403);
  assert.equal(pub.json.error.code, 'admin_key');
  const msg = await http('POST', '/v1/messages', { key: null, headers: { 'x-api-key': adminKey, 'anthropic-version': '2023-06-01' },
    body: { model: 'emu-chat', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] } });
  assert.equal(msg.status, 403);
  assert.equal(msg.json.type, 'error');
  assert.equal(msg.json.error.type, 'permission_error');
  // The admin API is not on the public port at all.
  assert.equal((await fetch(`${cfg.frontendA}/admin/v1/whoami`, { headers: { authorization: `Bearer ${adminKey}` } })).status, 404);
  // Unknown endpoint and wrong method.
  assert.equal((await admin('GET', 'nope')).status, 404);
  assert.equal((await admin('DELETE', 'accounts')).status, 405);
});

test('accounts, groups, models, keys and limits through the API; each change audited once with its actor', async () => {
  const t = unique('adm');
  const mark = auditSince();
  const acct = await admin('POST', 'accounts', { body: { name: `acct-${t}` } });
  assert.equal(acct.status, 201, acct.text);
  assert.equal((await admin('POST', 'accounts', { body: { name: `acct-${t}` } })).status, 409);
  assert.equal((await admin('POST', 'accounts', { body: { name: 'bad name!' } })).status, 400);
  const grp = await admin('POST', 'groups', { body: { name: `grp-${t}` } });
  assert.equal(grp.status, 201, grp.text);
  const model = await admin('PUT', `models/${encodeURIComponent(`m/${t}`)}`, {
    body: { provider: 'openai-chat', base_url: `${cfg.emu}/v1`, upstream_model: 'emu-model', credential_ref: 'SB_EMU_UPSTREAM_KEY',
      timeout_ms: 30000 } });
  assert.equal(model.status, 201, model.text);
  assert.equal(model.json.id, `m/${t}`);
  const fb = await admin('PUT', `models/${encodeURIComponent(`m/${t}`)}`, { body: { fallbacks: [`m/${t}`] } });
  assert.equal(fb.status, 400);
  assert.match(fb.json.error.message, /own fallback/);
  const allow = await admin('POST', `groups/grp-${t}/models`, { body: { model: `m/${t}` } });
  assert.equal(allow.status, 200, allow.text);
  assert.deepEqual(allow.json.models, [`m/${t}`]);
  const key = await admin('POST', 'keys', { body: { account: `acct-${t}`, group: `grp-${t}`, name: 'console' } });
  assert.equal(key.status, 201, key.text);
  assert.match(key.json.key, /^sk-sb-[0-9A-Za-z]{48}$/);
  assert.ok(!('hash' in key.json));
  // The key works on both frontends at once, for the model its group allows only.
  for (const base of [cfg.frontendA, cfg.frontendB]) {
    const ok = await http('POST', '/v1/chat/completions', { base, key: key.json.key,
      body: { model: `m/${t}`, messages: [{ role: 'user', content: `admin ${t}` }] } });
    assert.equal(ok.status, 200, ok.text);
    const denied = await http('POST', '/v1/chat/completions', { base, key: key.json.key,
      body: { model: 'emu-chat', messages: [{ role: 'user', content: 'x' }] } });
    assert.equal(denied.status, 403, denied.text);
  }
  // After creation the secret is never shown again.
  const list = await admin('GET', `keys?account=acct-${t}`);
  assert.equal(list.json.data.length, 1);
  assert.ok(!list.text.includes(key.json.key));
  assert.match(list.json.data[0].display_prefix, /^sk-sb-.{6}…/);
  // Limits.
  const lim = await admin('PUT', `limits/keys/${key.json.id}`, { body: { rpm: 1 } });
  assert.equal(lim.status, 200, lim.text);
  assert.deepEqual(lim.json, { rpm: 1, tpm: null, concurrency: null });
  assert.equal((await admin('PUT', `limits/keys/${key.json.id}`, { body: { rpm: 0 } })).status, 400);
  assert.equal((await admin('PUT', 'limits/keys/999999999', { body: { rpm: 3 } })).status, 404);
  const quota = await admin('PUT', `limits/accounts/acct-${t}`, { body: { quota_tokens: 5000 } });
  assert.equal(quota.status, 200, quota.text);
  assert.equal(quota.json.quota_tokens, 5000);
  const reset = await admin('POST', `limits/accounts/acct-${t}/reset_usage`);
  assert.equal(reset.status, 200, reset.text);
  assert.equal(reset.json.tokens_used, 0);
  assert.equal((await admin('POST', 'limits/accounts/no-such-account/reset_usage')).status, 404);

  // The audit: one row per row changed, in order, with this admin key as the actor.
  const rows = auditRows(mark);
  const seen = rows.map((r) => `${r[1]} ${r[2]}`);
  assert.deepEqual(seen, ['insert accounts', 'insert token_groups', 'insert models', 'update models',
    'insert group_models', 'insert api_keys', 'update api_keys', 'update accounts', 'update account_usage']);
  for (const r of rows) assert.equal(r[0], `admin-key:${adminId}`);
  const keyRow = rows.find((r) => r[2] === 'api_keys' && r[1] === 'insert');
  assert.equal(keyRow[3], String(key.json.id));
  for (const r of rows) {
    assert.ok(!r[4].includes('key_hash') && !r[5].includes('key_hash'), 'no key hash in the audit');
    assert.ok(!r[5].includes(key.json.key), 'no secret in the audit');
  }
  // Neither secret reaches a log.
  const logs = readdirSync(`${cfg.varDir}/log`).filter((f) => f.endsWith('.log'))
    .map((f) => readFileSync(`${cfg.varDir}/log/${f}`, 'utf8')).join('\n');
  assert.ok(!logs.includes(key.json.key) && !logs.includes(adminKey), 'a secret in a log');
  // The API shows the same rows.
  const audit = await admin('GET', 'audit?resource=api_keys&limit=5');
  assert.ok(audit.json.data.some((a) => a.resource_id === String(key.json.id) && a.action === 'update'
    && a.before.rpm_limit === null && a.after.rpm_limit === 1));
});

test('sbctl and the API share the rules and the audit', async () => {
  const t = unique('both');
  const mark = auditSince();
  sbctl('group', 'create', `g-${t}`);
  const again = await admin('POST', 'groups', { body: { name: `g-${t}` } });
  assert.equal(again.status, 409, 'the API sees the group sbctl made');
  const deny = await admin('DELETE', `groups/g-${t}/models/${encodeURIComponent('*')}`);
  assert.equal(deny.status, 404, 'a model the group does not list');
  assert.match(deny.json.error.message, /does not list/);
  const rows = auditRows(mark);
  assert.equal(rows.length, 1);
  assert.match(rows[0][0], /^sbctl:/);
  assert.deepEqual(rows[0].slice(1, 3), ['insert', 'token_groups']);
});

test('a key disabled through one frontend\'s admin API is refused by the other within 1 s', async () => {
  const t = unique('dis');
  await admin('POST', 'accounts', { body: { name: `a-${t}` } });
  const key = await admin('POST', 'keys', { body: { account: `a-${t}`, group: 'default' } });
  assert.equal(key.status, 201, key.text);
  const ok = await http('POST', '/v1/chat/completions', { base: cfg.frontendB, key: key.json.key,
    body: { model: 'emu-chat', messages: [{ role: 'user', content: 'before' }] } });
  assert.equal(ok.status, 200);
  const t0 = Date.now();
  assert.equal((await admin('POST', `keys/${key.json.id}/disable`)).status, 200);
  const refused = await waitFor(async () => (await http('POST', '/v1/chat/completions', { base: cfg.frontendB, key: key.json.key,
    body: { model: 'emu-chat', messages: [{ role: 'user', content: 'after' }] } })).status === 401, { timeout: 1000, interval: 50 });
  assert.ok(refused, `still accepted ${Date.now() - t0} ms after the disable`);
});

test('live: the broker\'s queues, credits and circuits, asked now', async () => {
  const slow = http('POST', '/v1/chat/completions', { body: { model: 'emu-chat', stream: true,
    messages: [{ role: 'user', content: '[[emu:chunk_delay=150]] a b c d e f' }] } });
  const seen = await waitFor(async () => {
    const r = await admin('GET', 'live');
    return r.status === 200 && r.json.broker.jobs_in_flight === 1
      && r.json.broker.models.some((m) => m.credits_used === 1 && m.workers === 2) ? r.json : false;
  }, { timeout: 3000, interval: 30 });
  assert.ok(seen, 'the running job shows in the live view');
  assert.equal(seen.broker.workers, 2);
  for (const m of seen.broker.models) assert.ok(['closed', 'open', 'half-open', 'probing'].includes(m.circuit), m.circuit);
  assert.equal((await slow).status, 200);
  const idle = await admin('GET', 'live');
  assert.equal(idle.json.broker.jobs_in_flight, 0);
});

test('search backends and prompts through the API, used by the gateway at once', async () => {
  const t = unique('tools');
  const mark = auditSince();
  const sb = await admin('POST', 'search_backends', { body: { name: `sb-${t}`, kind: 'searxng', base_url: `${cfg.emu}/_search` } });
  assert.equal(sb.status, 201, sb.text);
  assert.equal(sb.json.default, false);
  assert.equal((await admin('POST', 'search_backends', { body: { name: `sb-${t}`, kind: 'searxng', base_url: 'x' } })).status, 409);
  assert.equal((await admin('POST', 'search_backends', { body: { name: `sb2-${t}`, kind: 'bing', base_url: 'x' } })).status, 400);
  assert.equal((await admin('POST', `search_backends/sb-${t}/disable`)).status, 200);
  const list = await admin('GET', 'search_backends');
  assert.ok(list.json.data.some((b) => b.name === `sb-${t}` && b.enabled === false));
  assert.equal((await admin('DELETE', `search_backends/sb-${t}`)).status, 200);
  assert.equal((await admin('DELETE', `search_backends/sb-${t}`)).status, 404);

  const bad = await admin('POST', 'prompts', { body: { account: 'dev', name: `p-${t}`, body: { instructions: 5 } } });
  assert.equal(bad.status, 400);
  assert.match(bad.json.error.message, /"instructions" must be a string/);
  const p = await admin('POST', 'prompts', { body: { account: 'dev', name: `p-${t}`, body: { instructions: `Always say ${t}.` } } });
  assert.equal(p.status, 201, p.text);
  assert.match(p.json.id, /^pmpt_[0-9a-f]{32}$/);
  assert.equal((await admin('POST', 'prompts', { body: { account: 'dev', name: `p-${t}`, body: { instructions: 'x' } } })).status, 409);
  const v2 = await admin('POST', `prompts/${p.json.id}/versions`, { body: { body: { instructions: `Version two ${t}.` }, set_current: false } });
  assert.equal(v2.status, 201, v2.text);
  assert.deepEqual([v2.json.version, v2.json.current_version], [2, 1]);
  // The gateway uses the current version (1) of the prompt the API made.
  const res = await http('POST', '/v1/responses', { body: { model: 'emu-chat', prompt: { id: p.json.id }, input: `use ${t}` } });
  assert.equal(res.status, 200, res.text);
  const [up] = await upstreamRequestsContaining(`use ${t}`);
  assert.match(JSON.stringify(up.body), new RegExp(`Always say ${t}`));
  assert.equal((await admin('POST', `prompts/${p.json.id}/current`, { body: { version: 2 } })).status, 200);
  assert.equal((await admin('POST', `prompts/${p.json.id}/current`, { body: { version: 3 } })).status, 404);
  const got = await admin('GET', `prompts/${p.json.id}`);
  assert.equal(got.json.version, 2);
  assert.equal(got.json.body.instructions, `Version two ${t}.`);
  // Each change audited once, under this admin key.
  const rows = auditRows(mark).map((r) => `${r[0]} ${r[1]} ${r[2]}`);
  assert.deepEqual(rows, [`admin-key:${adminId} insert search_backends`, `admin-key:${adminId} update search_backends`,
    `admin-key:${adminId} delete search_backends`, `admin-key:${adminId} insert prompts`,
    `admin-key:${adminId} insert prompt_versions`, `admin-key:${adminId} insert prompt_versions`,
    `admin-key:${adminId} update prompts`]);
});

test('request log search, usage and tool calls', async () => {
  const t = unique('srch');
  const bad = await http('POST', '/v1/chat/completions', { body: { model: `nope-${t}`, messages: [{ role: 'user', content: 'x' }] } });
  assert.equal(bad.status, 404);
  const good = await http('POST', '/v1/chat/completions', { body: { model: 'emu-chat', messages: [{ role: 'user', content: t }] } });
  assert.equal(good.status, 200);
  const rid = good.headers.get('x-request-id');
  await waitFor(() => Number(psql(`SELECT count(*) FROM request_log WHERE request_id = :'v1'`, rid)[0]) === 1);
  const byText = await admin('GET', `request_log?q=${encodeURIComponent(`nope-${t}`)}`);
  assert.equal(byText.status, 200);
  assert.equal(byText.json.data.length, 1, byText.text);
  assert.equal(byText.json.data[0].status, 404);
  const errs = await admin('GET', 'request_log?status=error&style=chat&limit=5');
  assert.ok(errs.json.data.every((r) => r.status >= 400 && r.path.startsWith('/v1/chat/')));
  const byModel = await admin('GET', 'request_log?model=emu-chat&status=200&limit=3');
  assert.ok(byModel.json.data.some((r) => r.request_id === rid));
  const since = new Date(Date.now() - 3600e3).toISOString();
  const future = await admin('GET', `request_log?since=${encodeURIComponent(new Date(Date.now() + 3600e3).toISOString())}`);
  assert.deepEqual(future.json.data, []);
  assert.equal((await admin('GET', 'request_log?since=yesterday-ish')).status, 400);
  const usage = await admin('GET', `usage?bucket=hour&since=${encodeURIComponent(since)}&model=emu-chat`);
  assert.equal(usage.status, 200);
  const row = usage.json.data.find((u) => u.model === 'emu-chat' && u.key_id === 1);
  assert.ok(row && row.requests >= 1 && row.tokens_in > 0, usage.text.slice(0, 300));
  assert.equal((await admin('GET', 'tool_calls?limit=2')).status, 200);
  // No secret anywhere in what the API shows.
  for (const p of ['accounts', 'groups', 'keys', 'models', 'limits', 'audit?limit=50', 'admin_keys', 'request_log?limit=50']) {
    const r = await admin('GET', p);
    assert.equal(r.status, 200, p);
    assert.ok(!r.text.includes(cfg.key) && !r.text.includes(adminKey), `a secret in ${p}`);
    assert.ok(!/[0-9a-f]{64}/.test(r.text), `a key hash in ${p}`);
  }
});
