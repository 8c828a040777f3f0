// The web console (issue 19) in a real browser: Debian's Chromium, headless,
// driven by playwright-core. Signs in with an admin key, creates a group, a
// model and an account, allows the model, creates a key (its secret shown
// once), sends a request with that key, and finds it in the request log and
// the usage charts. Screenshots of each step go to $SB_VAR/artifacts/console/.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, existsSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { cfg, http, psql, sbctl, unique, waitFor } from './harness.mjs';

const ADMIN = (process.env.SB_FRONTEND_ADMIN_URLS ?? '').split(' ').filter(Boolean)[0];
const CHROMIUM = process.env.SB_CHROMIUM ?? '/usr/bin/chromium';
const SHOTS = `${cfg.varDir}/artifacts/console`;

let browser;
after(async () => { await browser?.close(); });

test('the console: sign in, create a group, a model and a key, use it, see it in the log and the charts', async () => {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} missing: deploy/local/lib.sh installs Debian's chromium`);
  mkdirSync(SHOTS, { recursive: true });
  const adminKey = sbctl('admin-key', 'create', '--name', 'console-test');
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const problems = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
  page.on('pageerror', (e) => problems.push(e.message));
  const shot = (name) => page.screenshot({ path: `${SHOTS}/${name}.png`, fullPage: true });
  const t = unique('ui');

  // The root redirects to the console; a wrong key is refused.
  await page.goto(`${ADMIN}/`);
  assert.match(page.url(), /\/console\/$/);
  await page.fill('#login-key', cfg.key);
  await page.click('#login-form button[type=submit]');
  await page.waitForFunction(() => document.querySelector('#login-error').textContent.length > 0);
  assert.match(await page.textContent('#login-error'), /API keys cannot use the admin API/);
  await page.fill('#login-key', adminKey);
  await page.click('#login-form button[type=submit]');
  await page.waitForSelector('#nav:not([hidden])');
  problems.length = 0; // the refused key's 403 above was expected
  await shot('1-signed-in');

  // A group.
  await page.click('nav [data-view=groups]');
  await page.fill('#group-create [name=name]', `grp-${t}`);
  await page.click('#group-create button[type=submit]');
  await page.waitForSelector(`#groups-table td:text-is("grp-${t}")`);

  // A model routed to the emulator.
  await page.click('nav [data-view=models]');
  await page.fill('#model-put [name=id]', `cm-${t}`);
  await page.selectOption('#model-put [name=provider]', 'openai-chat');
  await page.fill('#model-put [name=base_url]', `${cfg.emu}/v1`);
  await page.fill('#model-put [name=upstream_model]', 'emu-model');
  await page.fill('#model-put [name=credential_ref]', 'SB_EMU_UPSTREAM_KEY');
  await page.click('#model-put button[type=submit]');
  await page.waitForSelector(`#models-table td:text-is("cm-${t}")`);
  await shot('2-model');

  // The group allows it.
  await page.click('nav [data-view=groups]');
  await page.selectOption('#group-allow [name=group]', `grp-${t}`);
  await page.fill('#group-allow [name=model]', `cm-${t}`);
  await page.click('#group-allow button[type=submit]');
  await page.waitForFunction((g) => [...document.querySelectorAll('#groups-table tr')]
    .some((tr) => tr.cells[0]?.textContent === g && tr.cells[1]?.textContent.includes('cm-')), `grp-${t}`);
  await shot('3-group');

  // An account, then a key in the group; the secret is shown once.
  await page.click('nav [data-view=accounts]');
  await page.fill('#account-create [name=name]', `acct-${t}`);
  await page.click('#account-create button[type=submit]');
  await page.waitForSelector(`#accounts-table td:text-is("acct-${t}")`);
  await page.click('nav [data-view=keys]');
  await page.selectOption('#key-create [name=account]', `acct-${t}`);
  await page.selectOption('#key-create [name=group]', `grp-${t}`);
  await page.fill('#key-create [name=name]', 'from the console');
  await page.click('#key-create button[type=submit]');
  await page.waitForSelector('#key-secret:not([hidden])');
  const secret = (await page.textContent('#key-secret-value')).trim();
  assert.match(secret, /^sk-sb-[0-9A-Za-z]{48}$/);
  await shot('4-key-created');
  await page.click('#key-secret-done');
  assert.equal(await page.textContent('#key-secret-value'), '');
  assert.ok(!(await page.content()).includes(secret), 'the secret is gone from the page');
  await page.waitForSelector('#keys-table td:text-is("from the console")');

  // The key works for the model its group allows.
  const res = await http('POST', '/v1/chat/completions', { key: secret,
    body: { model: `cm-${t}`, messages: [{ role: 'user', content: `console ${t}` }] } });
  assert.equal(res.status, 200, res.text);
  const rid = res.headers.get('x-request-id');
  await waitFor(() => Number(psql(`SELECT count(*) FROM request_log WHERE request_id = :'v1'`, rid)[0]) === 1);

  // It shows in the request log, filtered by its model...
  await page.click('nav [data-view=log]');
  await page.fill('#log-filter [name=model]', `cm-${t}`);
  await page.click('#log-filter button[type=submit]');
  await page.waitForFunction((id) => {
    const trs = document.querySelectorAll('#log-table tbody tr');
    return trs.length === 1 && trs[0].cells[1].textContent === id;
  }, rid);
  const row = await page.$$eval(`#log-table tbody tr`, (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
  assert.equal(row.length, 1);
  assert.equal(row[0][5], '200');
  await shot('5-request-log');

  // ... and in the charts: a line and a point for the model in requests,
  // tokens and added latency.
  await page.click('nav [data-view=overview]');
  await page.fill('#overview-filter [name=model]', `cm-${t}`);
  await page.click('#overview-filter button[type=submit]');
  for (const chart of ['requests', 'tokens', 'added']) {
    await page.waitForSelector(`#chart-${chart} circle[data-model="cm-${t}"]`);
    const v = Number(await page.getAttribute(`#chart-${chart} circle[data-model="cm-${t}"]`, 'data-value'));
    assert.ok(chart === 'requests' ? v === 1 : v > 0, `${chart}: ${v}`);
  }
  await shot('6-overview');

  // A prompt template, made in the Tools view.
  await page.click('nav [data-view=tools]');
  await page.selectOption('#prompt-create [name=account]', `acct-${t}`);
  await page.fill('#prompt-create [name=name]', `pr-${t}`);
  await page.fill('#prompt-create [name=instructions]', 'Be brief.');
  await page.click('#prompt-create button[type=submit]');
  await page.waitForSelector(`#prompts-table td:text-is("pr-${t}")`);
  await page.waitForSelector('#backends-table td:text-is("emu")');
  assert.equal(await page.locator('#toolcalls-table thead th').count(), 9, 'the tool call log is there');
  await shot('7-tools');

  // The audit shows the console's changes under its admin key.
  await page.click('nav [data-view=audit]');
  await page.waitForSelector('#audit-table td:text-is("api_keys")');
  const actors = await page.$$eval('#audit-table tbody tr', (trs) => trs.slice(0, 6).map((tr) => tr.cells[1].textContent));
  assert.ok(actors.every((a) => /^admin-key:\d+$/.test(a)), actors.join(', '));
  await shot('8-audit');
  assert.deepEqual(problems, [], 'no script errors or CSP violations');
});
