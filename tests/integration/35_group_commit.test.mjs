// Stored answers are written by a group-commit writer (issue 17,
// frontend/store/fe_storebatch.c): the rows of answers finishing together go
// out in one statement and one commit. What must hold whatever the batching:
// every stored answer is committed before its client sees it (readable at
// once, from the other frontend too), each row is its own (no answer gets
// another's body or items), and a row the database refuses fails only its
// own request — the rest of its batch is stored and answered.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { cfg, http, newAccountKey, psql, unique } from './harness.mjs';

const N = 24;

test('concurrent stored answers: each is committed before its reply, whole and its own, on both frontends', async () => {
  const m = unique('gc');
  const sends = [];
  for (let i = 0; i < N; i++) {
    const base = i % 2 ? cfg.frontendB : cfg.frontendA;
    if (i % 3 === 0) {
      sends.push(http('POST', '/v1/chat/completions', {
        base, body: { model: 'emu-chat', metadata: { n: String(i) }, messages: [{ role: 'user', content: `chat ${m} ${i}` }] },
      }).then((res) => ({ i, kind: 'chat', base, res })));
    } else {
      sends.push(http('POST', '/v1/responses', {
        base, body: { model: 'emu-chat', input: `resp ${m} ${i}`, metadata: { n: String(i) } },
      }).then((res) => ({ i, kind: 'responses', base, res })));
    }
  }
  const done = await Promise.all(sends);
  for (const { i, kind, base, res } of done) {
    assert.equal(res.status, 200, `${kind} ${i}: ${res.text}`);
    // Read back at once from the other frontend: the commit came first.
    const other = base === cfg.frontendA ? cfg.frontendB : cfg.frontendA;
    if (kind === 'chat') {
      const got = await http('GET', `/v1/chat/completions/${res.json.id}`, { base: other });
      assert.equal(got.status, 200, got.text);
      assert.deepEqual(got.json.choices, res.json.choices);
      assert.equal(got.json.metadata.n, String(i));
      const msgs = await http('GET', `/v1/chat/completions/${res.json.id}/messages`, { base: other });
      assert.equal(msgs.status, 200, msgs.text);
      assert.equal(msgs.json.data.length, 1);
      assert.equal(msgs.json.data[0].content, `chat ${m} ${i}`);
    } else {
      const got = await http('GET', `/v1/responses/${res.json.id}`, { base: other });
      assert.equal(got.status, 200, got.text);
      assert.deepEqual(got.json.output, res.json.output);
      assert.equal(got.json.metadata.n, String(i));
      const items = await http('GET', `/v1/responses/${res.json.id}/input_items`, { base: other });
      assert.equal(items.status, 200, items.text);
      assert.equal(items.json.data.length, 1);
      assert.equal(items.json.data[0].content[0].text, `resp ${m} ${i}`);
    }
  }
  // Chains work from the batch's rows, on the other frontend.
  const first = done.find((d) => d.kind === 'responses');
  const next = await http('POST', '/v1/responses', {
    base: first.base === cfg.frontendA ? cfg.frontendB : cfg.frontendA,
    body: { model: 'emu-chat', input: 'and then?', previous_response_id: first.res.json.id, store: false },
  });
  assert.equal(next.status, 200, next.text);
});

// A row trigger that refuses the rows marked in their metadata: what a
// database constraint does to one bad row of a batch.
const marker = 'sb_test_refuse_store';
after(() => {
  psql(`DROP TRIGGER IF EXISTS sb_test_refuse_store ON chat_completions;
        DROP TRIGGER IF EXISTS sb_test_refuse_store ON responses;
        DROP FUNCTION IF EXISTS sb_test_refuse_chat_completions();
        DROP FUNCTION IF EXISTS sb_test_refuse_responses();`);
});

test('a row the database refuses fails only its own request; the others of its batch are stored', async () => {
  for (const [table, meta] of [['chat_completions', 'NEW.metadata'], ['responses', "NEW.body->'metadata'"]]) {
    psql(`CREATE OR REPLACE FUNCTION sb_test_refuse_${table}() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN
            IF ${meta} ? '${marker}' THEN
              RAISE EXCEPTION 'test: this row is refused';
            END IF;
            RETURN NEW;
          END $$;
          DROP TRIGGER IF EXISTS sb_test_refuse_store ON ${table};
          CREATE TRIGGER sb_test_refuse_store BEFORE INSERT ON ${table}
            FOR EACH ROW EXECUTE FUNCTION sb_test_refuse_${table}();`);
  }
  const m = unique('gcbad');
  const bad = new Set([5, 6]);
  const sends = [];
  for (let i = 0; i < N; i++) {
    const metadata = bad.has(i) ? { [marker]: '1' } : { n: String(i) };
    if (i % 2 === 0) {
      sends.push(http('POST', '/v1/chat/completions', {
        body: { model: 'emu-chat', metadata, messages: [{ role: 'user', content: `chat ${m} ${i}` }] },
      }).then((res) => ({ i, kind: 'chat', res })));
    } else {
      sends.push(http('POST', '/v1/responses', {
        body: { model: 'emu-chat', metadata, input: `resp ${m} ${i}` },
      }).then((res) => ({ i, kind: 'responses', res })));
    }
  }
  const done = await Promise.all(sends);
  for (const { i, kind, res } of done) {
    if (bad.has(i)) {
      assert.equal(res.status, 500, `${kind} ${i}: ${res.text}`);
      assert.equal(res.json.error.code, 'store_failed');
      continue;
    }
    assert.equal(res.status, 200, `${kind} ${i}: ${res.text}`);
    const path = kind === 'chat' ? `/v1/chat/completions/${res.json.id}` : `/v1/responses/${res.json.id}`;
    const got = await http('GET', path, { base: cfg.frontendB });
    assert.equal(got.status, 200, `${kind} ${i} read back: ${got.text}`);
    assert.equal(got.json.metadata.n, String(i));
  }
  // Nothing of the refused requests was stored.
  const [chats] = psql(`SELECT count(*) FROM chat_completions WHERE metadata ? '${marker}'`);
  assert.equal(chats, '0');
  const [resps] = psql(`SELECT count(*) FROM responses WHERE body->'metadata' ? '${marker}'`);
  assert.equal(resps, '0');
});

// The owner of a stored answer is guarded where it costs nothing per request
// (schema/009_store_owner_guard.sql): an account or key that still owns
// stored chat completions or responses cannot be deleted; one that owns none
// can. Ids of stored answers and request_log rows sort by creation time
// (sb_id_new_ordered), so their indexes grow at the right edge.
test('an owner of stored answers cannot be deleted; ids sort by creation time', async () => {
  const owner = newAccountKey();
  const chat = await http('POST', '/v1/chat/completions', {
    key: owner.key, body: { model: 'emu-chat', messages: [{ role: 'user', content: 'keep me' }] },
  });
  assert.equal(chat.status, 200, chat.text);
  await new Promise((r) => setTimeout(r, 3));
  const resp = await http('POST', '/v1/responses', { key: owner.key, body: { model: 'emu-chat', input: 'keep me too' } });
  assert.equal(resp.status, 200, resp.text);
  const [acct, kid] = psql(`SELECT account_id, key_id FROM chat_completions WHERE id = :'v1'`, chat.json.id)[0].split('|');
  for (const sql of [`DELETE FROM accounts WHERE id = :'v1'`, `DELETE FROM api_keys WHERE id = :'v1'`]) {
    const id = sql.includes('accounts') ? acct : kid;
    assert.throws(() => psql(sql, id), /still owns stored chat completions or responses/);
  }
  assert.deepEqual(psql(`SELECT count(*) FROM chat_completions WHERE id = :'v1'`, chat.json.id), ['1']);
  // Its answers gone, the key and then the account can go.
  psql(`DELETE FROM chat_completions WHERE account_id = :'v1'; DELETE FROM responses WHERE account_id = :'v1'`, acct);
  psql(`DELETE FROM api_keys WHERE id = :'v1'`, kid);
  assert.deepEqual(psql(`SELECT count(*) FROM api_keys WHERE id = :'v1'`, kid), ['0']);
  psql(`DELETE FROM accounts WHERE id = :'v1'`, acct);
  assert.deepEqual(psql(`SELECT count(*) FROM accounts WHERE id = :'v1'`, acct), ['0']);
  // Ordered ids: prefix, 12 hex digits of the creation time in ms, then 48
  // random hex digits; the later answer sorts after the earlier one.
  const ms = (id, prefix) => {
    assert.match(id, new RegExp(`^${prefix}[0-9a-f]{12}[0-9a-f]{48}$`));
    return parseInt(id.slice(prefix.length, prefix.length + 12), 16);
  };
  const tc = ms(chat.json.id, 'chatcmpl-');
  const tr = ms(resp.json.id, 'resp_');
  assert.ok(Math.abs(tc - chat.json.created * 1000) < 2000, `chat id time ${tc} vs created ${chat.json.created}`);
  assert.ok(tr > tc, `resp ${tr} after chat ${tc}`);
  const reqId = chat.headers.get('x-request-id');
  assert.match(reqId, /^req_[0-9a-f]{12}[0-9a-f]{32}$/);
  assert.ok(parseInt(reqId.slice(4, 16), 16) <= tc + 1000);
});
