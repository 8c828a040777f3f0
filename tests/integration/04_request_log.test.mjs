// Every request, failed ones included, leaves exactly one request_log row.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cfg, http, psql, unique, waitFor } from './harness.mjs';

test('exactly one request_log row per request, with status, path, model, key and tokens', async () => {
  const calls = [
    ['POST', '/v1/chat/completions', { body: { model: 'emu-chat', messages: [{ role: 'user', content: unique() }] } }, 200],
    ['POST', '/v1/responses', { body: { model: 'emu-chat', input: unique() }, base: cfg.frontendB }, 200],
    ['POST', '/v1/responses', { body: { model: 'emu-chat', input: unique() }, key: null }, 401],
    ['POST', '/v1/responses', { body: { model: 'nope', input: 'x' } }, 404],
    ['POST', '/v1/responses', { raw: '{' }, 400],
    ['GET', '/v1/nothing-here', {}, 404],
    ['POST', '/v1/chat/completions', { body: { model: 'emu-chat', messages: [{ role: 'user', content: `[[emu:status=503]] ${unique()}` }] } }, 503],
  ];
  const ids = [];
  for (const [method, path, opts, status] of calls) {
    const res = await http(method, path, opts);
    assert.equal(res.status, status, `${method} ${path}: ${res.text}`);
    const id = res.headers.get('x-request-id');
    assert.match(id, /^req_/);
    ids.push([id, status, path]);
  }
  const sql = "SELECT request_id, count(*), max(status), max(path), max(model), max(key_id), max(tokens_in), max(tokens_out) "
    + "FROM request_log WHERE request_id = ANY(string_to_array(:'v1', ',')) GROUP BY request_id";
  const rows = await waitFor(() => {
    const r = psql(sql, ids.map((x) => x[0]).join(','));
    return r.length === ids.length ? r : null;
  }, { timeout: 5000 });
  assert.ok(rows, 'all rows written within 5 s');
  const byId = new Map(rows.map((r) => { const f = r.split('|'); return [f[0], f]; }));
  for (const [id, status, path] of ids) {
    const f = byId.get(id);
    assert.equal(f[1], '1', `exactly one row for ${id}`);
    assert.equal(Number(f[2]), status);
    assert.equal(f[3], path);
  }
  const ok = byId.get(ids[0][0]);
  assert.equal(ok[4], 'emu-chat');
  assert.ok(Number(ok[5]) > 0, 'key id recorded');
  assert.ok(Number(ok[6]) > 0 && Number(ok[7]) > 0, 'tokens recorded');
  const anon = byId.get(ids[2][0]);
  assert.equal(anon[5], '', 'no key id for a request without a key');
  // The secret itself is never stored.
  assert.equal(psql("SELECT count(*) FROM request_log WHERE error LIKE '%' || :'v1' || '%'", cfg.key)[0], '0');
});
