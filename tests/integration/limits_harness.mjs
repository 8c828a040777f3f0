// Helpers of the limits tests (19_limits, 36_limit_blocks): a request in
// each style, its 429 body, a key's id, and the usage once it has settled.
import assert from 'node:assert/strict';
import { cfg, http, psql, waitFor } from './harness.mjs';

export const STYLES = ['responses', 'chat', 'messages', 'gemini'];

function request(style, model, text, { maxTokens } = {}) {
  switch (style) {
    case 'responses':
      return { path: '/v1/responses', body: { model, input: text, store: false, ...(maxTokens ? { max_output_tokens: maxTokens } : {}) } };
    case 'chat':
      return { path: '/v1/chat/completions', body: { model, messages: [{ role: 'user', content: text }], store: false, ...(maxTokens ? { max_tokens: maxTokens } : {}) } };
    case 'messages':
      return { path: '/v1/messages', body: { model, max_tokens: maxTokens ?? 256, messages: [{ role: 'user', content: text }] } };
    default:
      return {
        path: `/v1beta/models/${model}:generateContent`,
        body: { contents: [{ role: 'user', parts: [{ text }] }], ...(maxTokens ? { generationConfig: { maxOutputTokens: maxTokens } } : {}) },
      };
  }
}

function headersFor(style, key) {
  if (style === 'messages') return { 'x-api-key': key, 'anthropic-version': '2023-06-01' };
  if (style === 'gemini') return { 'x-goog-api-key': key };
  return { authorization: `Bearer ${key}` };
}

export function send(style, key, { base = cfg.frontendA, model = 'emu-chat', text = 'hello there', maxTokens } = {}) {
  const { path, body } = request(style, model, text, { maxTokens });
  return http('POST', path, { base, key: null, headers: headersFor(style, key), body });
}

// The style's own 429 body; kind 'rate' or 'quota'.
export function assert429(style, res, kind) {
  assert.equal(res.status, 429, `${style}: status ${res.status} ${res.text}`);
  const j = res.json;
  if (style === 'responses' || style === 'chat') {
    assert.equal(j.error.code, kind === 'quota' ? 'insufficient_quota' : 'rate_limit_exceeded', res.text);
    assert.equal(j.error.type, kind === 'quota' ? 'insufficient_quota' : 'rate_limit_error');
    assert.ok('param' in j.error && 'message' in j.error);
  } else if (style === 'messages') {
    assert.equal(j.type, 'error');
    assert.equal(j.error.type, 'rate_limit_error', res.text);
    assert.match(j.request_id, /^req_/);
  } else {
    assert.equal(j.error.code, 429);
    assert.equal(j.error.status, 'RESOURCE_EXHAUSTED', res.text);
  }
  if (kind === 'quota') {
    assert.match(j.error.message, /quota/);
    assert.equal(res.headers.get('x-should-retry'), 'false');
    assert.equal(res.headers.get('retry-after'), null);
  } else {
    assert.match(j.error.message, /[Rr]ate limit/);
    const ra = Number(res.headers.get('retry-after'));
    assert.ok(Number.isInteger(ra) && ra >= 1 && ra <= 60, `Retry-After ${res.headers.get('retry-after')}`);
    assert.equal(res.headers.get('x-should-retry'), null);
  }
}

export function keyId(account) {
  return psql("SELECT k.id FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE a.name = :'v1' ORDER BY k.id", account)[0];
}

// Waits until the account's admitted requests have all landed in request_log
// (it is written in batches every 100 ms; a lease lives until its row does),
// and at least expectRows rows are there; returns the drawn usage, the
// request_log total and the leases left.
export async function settledUsage(account, expectRows = 0) {
  const q = `SELECT (SELECT count(*) FROM request_log l WHERE l.account_id = a.id),
                    COALESCE((SELECT tokens_used FROM account_usage u WHERE u.account_id = a.id), 0),
                    (SELECT COALESCE(sum(tokens_in + tokens_out), 0) FROM request_log l WHERE l.account_id = a.id),
                    (SELECT count(*) FROM limit_leases l WHERE l.account_id = a.id)
             FROM accounts a WHERE a.name = :'v1'`;
  const read = () => psql(q, account)[0].split('|').map(Number);
  let row = await waitFor(() => {
    const x = read();
    return x[0] >= expectRows && x[3] === 0 ? x : null;
  }, { timeout: 10000 });
  assert.ok(row, `request_log rows and leases settle: ${read().join(' ')}`);
  await new Promise((r) => setTimeout(r, 300)); // rows of refused requests (no lease) land too
  row = read();
  return { rows: row[0], used: row[1], logged: row[2], leases: row[3] };
}
