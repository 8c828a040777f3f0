#!/usr/bin/env node
// The client matrix: real coding-agent clients, in their default
// configuration (base URL, key, model; telemetry and auto-update off), run
// against the gateway on every upstream kind, as a new user would run them.
//
//   clients    codex (Codex CLI, Responses), claude (Claude Code, Messages),
//              gemini (Gemini CLI, Generate Content), agents (OpenAI Agents
//              SDK, agents.mjs: Responses)
//   upstreams  chat (openai-chat), responses (openai-responses),
//              claude (anthropic), gemini (gemini): all the emulator
//   checks     one-turn  a prompt; exit 0 and the model's text printed
//              tool      the model calls the client's own tool (shell or
//                        function) to create a file; the client runs it,
//                        sends the result back and prints the model's final
//                        text; the file exists
//              resume    a second turn of the same session (the client's own
//                        resume); the emulator's journal shows that the
//                        second turn's upstream request carries the first
//                        turn's marker
//              web-search  the client's own web search, run by the gateway
//                        (docs/tools.md): the model calls the reserved
//                        sb__web_search with a query about a page of the
//                        emulator's web (zorblax), then answers citing it;
//                        exit 0 and that answer printed; the client received
//                        the built-in item its style defines (Responses:
//                        web_search_call + url_citation; Messages:
//                        server_tool_use + web_search_tool_result + a
//                        web_search_result_location citation; Generate
//                        Content: groundingMetadata with the page among its
//                        chunks and a grounding support); nothing the client
//                        sent or got names sb__*; the emulator's journal
//                        shows the gateway's search for this check's query.
//                        Codex: the web_search tool it sends on every request
//                        (external_web_access:false). Claude Code: its
//                        WebSearch tool, deferred behind ToolSearch with a
//                        custom base URL, so the model first calls ToolSearch
//                        (select:WebSearch), then WebSearch, which Claude Code
//                        runs as a side request to the same model with the
//                        web_search_20250305 server tool. Gemini CLI: its
//                        google_web_search tool, a side request with
//                        googleSearch to the "web-search" model alias, which
//                        the settings point at the pair's gateway model (the
//                        alias names gemini-3-flash-preview). Agents SDK: its
//                        hosted webSearchTool() (agents.mjs --web-search).
//                        Codex and the Agents SDK keep the web_search_call in
//                        their session: a second turn (resume) sends it back,
//                        and the model's request must carry the search. (Claude
//                        Code's and Gemini CLI's sessions hold only their own
//                        tool's call and result, no built-in item; and Gemini
//                        CLI 0.61.0 resumes a session holding any tool call with
//                        each function response twice, which the Gemini API
//                        refuses: a bug of the client, not of the gateway.)
//                        Needs a default searxng search backend on the
//                        emulator (deploy/local and tests/run seed one).
//
// The emulator plays the model through its scenario API (PUT
// /_emu/scenarios/{upstream model}): each (client, upstream) pair gets its
// own gateway model (cx-chat, cc-claude, ...) routed to the emulator with its
// own upstream model name (cx-chat-up, ...), so pairs running at the same
// time never share a scenario. Every client talks to the gateway through a
// small capture proxy in this process, so a failing check's log holds each
// request the client sent and each answer it got, next to the emulator's
// journal of what reached the upstream and the client's stdout/stderr.
//
// Environment (tests/run and tests/clients/against-dev export it):
//   SB_FRONTEND_URLS (first URL used) or SB_TEST_FRONTEND_A, SB_EMU_URL,
//   SBCTL (+ SB_PG_DSN for it), SB_TEST_KEY or SB_VAR/dev-key.
// Options: --clients a,b --upstreams a,b --checks a,b (subsets),
//   --timeout S (per check, default 120), --concurrency N (pairs at once,
//   default 2), --log-dir DIR (default $SB_VAR/log/clients/<time>), --keep
//   (keep the clients' temp homes and work dirs), --log-all (write the logs of
//   passing checks too).
// Prints the table and "client matrix: N passed, M failed"; exits 1 when a
// check fails, 2 when the matrix could not be set up.
import { spawn, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync, readFileSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { randomBytes } from 'node:crypto';
import { startCaptureProxy } from './capture-proxy.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const bin = (name) => join(here, 'node_modules', '.bin', name);

// ---- configuration -------------------------------------------------------------

const { values: opt } = parseArgs({
  options: {
    clients: { type: 'string', default: 'codex,claude,gemini,agents' },
    upstreams: { type: 'string', default: 'chat,responses,claude,gemini' },
    checks: { type: 'string', default: 'one-turn,tool,resume,web-search' },
    timeout: { type: 'string', default: '120' },
    concurrency: { type: 'string', default: '2' },
    'log-dir': { type: 'string' },
    keep: { type: 'boolean', default: false },
    'log-all': { type: 'boolean', default: false },
  },
});

function need(v, what) {
  if (!v) {
    console.error(`client matrix: ${what} is not set (run through tests/clients/against-dev or tests/run)`);
    process.exit(2);
  }
  return v;
}
const env = process.env;
const gateway = need((env.SB_FRONTEND_URLS || '').split(/\s+/).filter(Boolean)[0] || env.SB_TEST_FRONTEND_A, 'SB_FRONTEND_URLS');
const emu = need(env.SB_EMU_URL, 'SB_EMU_URL');
const sbctlPath = need(env.SBCTL, 'SBCTL');
const key = need(env.SB_TEST_KEY || (env.SB_VAR && existsSync(join(env.SB_VAR, 'dev-key')) ? readFileSync(join(env.SB_VAR, 'dev-key'), 'utf8').trim() : ''), 'SB_TEST_KEY');
const checkTimeoutMs = Math.max(10, Number(opt.timeout) || 120) * 1000;
const concurrency = Math.max(1, Number(opt.concurrency) || 2);

// Upstream kinds: the provider and the emulator base URL, as deploy/local seeds them.
const UPSTREAMS = {
  chat: { provider: 'openai-chat', base: `${emu}/v1` },
  responses: { provider: 'openai-responses', base: `${emu}/v1` },
  claude: { provider: 'anthropic', base: emu },
  gemini: { provider: 'gemini', base: `${emu}/v1beta` },
};
const CHECKS = ['one-turn', 'tool', 'resume', 'web-search'];

// What no client may do: reach anything but loopback. The proxy variables point
// to the pair's capture proxy, which refuses (403) and records every request
// for another host (CONNECT or an absolute URI), so an attempt to go out fails
// at once and shows in the check's result; loopback is exempt.
function offlineEnv(proxyOrigin) {
  const p = proxyOrigin;
  return {
    HTTP_PROXY: p, HTTPS_PROXY: p, ALL_PROXY: p, http_proxy: p, https_proxy: p, all_proxy: p,
    NO_PROXY: '127.0.0.1,localhost,::1', no_proxy: '127.0.0.1,localhost,::1',
  };
}

// ---- the clients -----------------------------------------------------------------
//
// Each client: prefix (of its gateway models), tool (regex on the tool name the
// scenario makes the model call), toolArgs(file, content) (the call's arguments:
// create file in the work dir with content), webSearch (the web-search check:
// style, the Responses, Messages or Generate Content shapes the client gets; tool,
// regex on the tools the model calls with {query}; pre, a step the model takes
// first while pre.until(request body) is false; replay, the client keeps the
// built-in item in its session and sends it back on the next turn, which the
// check then runs too), prepare(home, model) (its isolated config) and
// command({home, work, base, model, prompt, resume, check}) -> {cmd, args, env}.
// base is the capture proxy's origin.
const CLIENTS = {
  codex: {
    prefix: 'cx',
    tool: '^exec_command$',
    toolArgs: (file, content) => ({ cmd: `printf '%s\\n' '${content}' > ${file}` }),
    // Codex sends {"type":"web_search","external_web_access":false} on every request.
    webSearch: { style: 'responses', tool: '^sb__web_search$', replay: true },
    prepare(home) {
      mkdirSync(join(home, '.codex'), { recursive: true });
      // Telemetry and the update check are config keys, not env vars, in Codex.
      writeFileSync(join(home, '.codex', 'config.toml'),
        'check_for_update_on_startup = false\n\n[analytics]\nenabled = false\n\n[feedback]\nenabled = false\n');
    },
    command({ home, base, model, prompt, resume }) {
      const args = ['exec'];
      if (resume) args.push('resume', '--last');
      args.push('--skip-git-repo-check', '-c', `openai_base_url="${base}/v1"`, '-m', model);
      // Its default exec sandbox is read-only: a shell tool that creates a file
      // needs write access to the work dir. Codex's own command sandbox is
      // bwrap plus its codex-linux-sandbox helper once a system bwrap is on
      // PATH (this machine has Debian's, for the code interpreter), and that
      // helper cannot start in this test container ("bwrap: execvp
      // codex-linux-sandbox"); so the commands run unsandboxed, in the
      // throwaway work dir: what is tested is the gateway, not Codex's
      // sandbox.
      if (!resume) args.push('-s', 'danger-full-access');
      else args.push('-c', 'sandbox_mode="danger-full-access"');
      args.push(prompt);
      return { cmd: bin('codex'), args, env: { HOME: home, CODEX_HOME: join(home, '.codex'), CODEX_API_KEY: key } };
    },
  },
  claude: {
    prefix: 'cc',
    tool: '^Bash$',
    toolArgs: (file, content) => ({ command: `printf '%s\\n' '${content}' > ${file}`, description: 'Create the file' }),
    webSearch: {
      style: 'messages',
      // WebSearch on the main turn; sb__web_search in the side request WebSearch
      // makes (the gateway's form of its web_search_20250305 server tool).
      tool: '^(WebSearch|sb__web_search)$',
      // With a custom base URL WebSearch is a deferred tool, named in the system
      // prompt but not in tools until ToolSearch loads it (the gateway refuses the
      // tool_reference blocks of that result, and Claude Code then declares every
      // deferred tool in full). Either way WebSearch, or the side request's server
      // tool, is in tools once the model may search.
      pre: {
        tool: '^ToolSearch$',
        arguments: { query: 'select:WebSearch', max_results: 5 },
        until: (body) => (body?.tools ?? []).some((t) => t.name === 'WebSearch' || /^web_search_/.test(t.type ?? '')),
      },
    },
    prepare(home) {
      mkdirSync(join(home, '.claude'), { recursive: true });
    },
    command({ home, base, model, prompt, resume, check }) {
      // -p runs only the tools it is allowed: WebSearch asks for permission.
      const tools = check === 'web-search' ? 'Bash,WebSearch' : 'Bash';
      const args = ['-p', prompt, '--model', model, '--allowedTools', tools];
      if (resume) args.push('--continue');
      return {
        cmd: bin('claude'),
        args,
        env: {
          HOME: home, CLAUDE_CONFIG_DIR: join(home, '.claude'), ANTHROPIC_BASE_URL: base, ANTHROPIC_API_KEY: key,
          DISABLE_TELEMETRY: '1', DISABLE_AUTOUPDATER: '1', DISABLE_ERROR_REPORTING: '1',
          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
        },
      };
    },
  },
  gemini: {
    prefix: 'gm',
    tool: '^run_shell_command$',
    toolArgs: (file, content) => ({ command: `printf '%s\\n' '${content}' > ${file}`, description: 'Create the file' }),
    // google_web_search on the main turn; sb__web_search in its side request (googleSearch).
    webSearch: { style: 'gemini', tool: '^(google_web_search|sb__web_search)$' },
    prepare(home, model) {
      mkdirSync(join(home, '.gemini'), { recursive: true });
      // With GOOGLE_GEMINI_BASE_URL set, the CLI derives the auth type "gateway" from the
      // environment, which its own headless check refuses ("Invalid auth method
      // selected."); the documented API-key type in the user settings takes precedence
      // and still honours the base URL. google_web_search asks the model alias
      // "web-search" (gemini-3-flash-preview with googleSearch): an override (the
      // CLI's documented modelConfigs) sends it to the pair's gateway model instead,
      // as a gateway user whose models have other names would.
      writeFileSync(join(home, '.gemini', 'settings.json'), JSON.stringify({
        security: { auth: { selectedType: 'gemini-api-key' } },
        modelConfigs: { overrides: [{ match: { model: 'web-search' }, modelConfig: { model } }] },
        general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
        privacy: { usageStatisticsEnabled: false },
        telemetry: { enabled: false },
      }, null, 2));
    },
    command({ home, base, model, prompt, resume }) {
      const args = ['-p', prompt, '-m', model, '--approval-mode', 'yolo'];
      if (resume) args.push('--resume', 'latest');
      return {
        cmd: bin('gemini'),
        args,
        env: { HOME: home, GEMINI_API_KEY: key, GOOGLE_GEMINI_BASE_URL: base, GEMINI_CLI_TRUST_WORKSPACE: 'true' },
      };
    },
  },
  agents: {
    prefix: 'ag',
    tool: '^create_file$',
    toolArgs: (file, content) => ({ path: file, content: `${content}\n` }),
    webSearch: { style: 'responses', tool: '^sb__web_search$', replay: true },
    prepare() {},
    command({ home, work, base, model, prompt, check }) {
      return {
        cmd: process.execPath,
        args: [join(here, 'agents.mjs'), '--base', `${base}/v1`, '--model', model, '--workdir', work,
          '--session', join(home, 'session.json'), ...(check === 'web-search' ? ['--web-search'] : []), prompt],
        env: { HOME: home, OPENAI_API_KEY: key, OPENAI_AGENTS_DISABLE_TRACING: '1' },
      };
    },
  },
};

// ---- helpers -----------------------------------------------------------------------

function sbctl(...args) {
  return execFileSync(sbctlPath, args, { encoding: 'utf8', env, stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

async function emuFetch(method, path, body) {
  const res = await fetch(emu + path, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok && !(method === 'DELETE' && res.status === 404)) {
    throw new Error(`emulator ${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
  }
  return text ? JSON.parse(text) : null;
}

const setScenario = (upModel, scenario) => emuFetch('PUT', `/_emu/scenarios/${encodeURIComponent(upModel)}`, scenario);
const clearScenario = (upModel) => emuFetch('DELETE', `/_emu/scenarios/${encodeURIComponent(upModel)}`);

// The journal's newest sequence number, so a check can later read only its own entries.
async function journalSeq() {
  const j = await emuFetch('GET', '/_emu/requests?limit=1');
  return j.requests.length ? j.requests[j.requests.length - 1].seq : 0;
}

// The upstream requests for upModel (null: all requests) since seq, oldest first. The
// journal is read in growing windows until it reaches seq (it is a ring: entries this
// old may be gone).
async function journalSince(seq, upModel) {
  let limit = 100;
  for (;;) {
    const j = await emuFetch('GET', `/_emu/requests?limit=${limit}`);
    const reqs = j.requests;
    if (reqs.length < limit || reqs[0].seq <= seq + 1 || limit >= 1000) {
      return reqs.filter((r) => r.seq > seq && (upModel === null || r.model === upModel));
    }
    limit *= 3;
  }
}

// Runs one client invocation in its own process group, killed (group and all) at the
// deadline. Resolves {code, signal, stdout, stderr, timedOut, ms, argv}.
function runClient(spec, cwd, deadline, proxyOrigin) {
  return new Promise((resolveRun) => {
    const t0 = Date.now();
    const childEnv = {
      PATH: env.PATH, LANG: 'C.UTF-8', TERM: 'dumb', NO_COLOR: '1', TMPDIR: spec.env.HOME,
      ...offlineEnv(proxyOrigin), ...spec.env,
    };
    const child = spawn(spec.cmd, spec.args, { cwd, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const out = [];
    const err = [];
    child.stdout.on('data', (c) => out.push(c));
    child.stderr.on('data', (c) => err.push(c));
    let timedOut = false;
    const kill = (sig) => { try { process.kill(-child.pid, sig); } catch { /* gone */ } };
    const timer = setTimeout(() => {
      timedOut = true;
      kill('SIGTERM');
      setTimeout(() => kill('SIGKILL'), 3000).unref();
    }, Math.max(1000, deadline - Date.now()));
    const done = (code, signal) => {
      clearTimeout(timer);
      // Whatever the client left behind (shells, PTYs) goes with it.
      kill('SIGKILL');
      resolveRun({
        code, signal, timedOut, ms: Date.now() - t0,
        stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString(),
        argv: [spec.cmd, ...spec.args],
      });
    };
    let finished = false;
    const once = (code, signal) => { if (!finished) { finished = true; done(code, signal); } };
    child.on('error', (e) => { err.push(Buffer.from(String(e))); once(-1, null); });
    // 'close' comes when stdout and stderr are closed; a helper the client left running
    // (a shell, a daemon) could hold them open, so shortly after the client exits its
    // group is killed, which closes them.
    child.on('exit', () => setTimeout(() => kill('SIGKILL'), 2000).unref());
    child.on('close', once);
  });
}

const marker = (what) => `${what}${randomBytes(5).toString('hex').toUpperCase()}`;

function exitedOk(run) {
  if (run.timedOut) return `timed out after ${run.ms} ms`;
  if (run.code !== 0) return `exit ${run.code ?? run.signal}`;
  return null;
}

// ---- the checks ----------------------------------------------------------------------
//
// Each returns {ok, why, runs: [run...]}; ctx = {client, model, upModel, work, deadline, seq
// (the journal's last sequence number before the check), invoke({prompt, resume})}.

async function checkOneTurn(ctx) {
  const answer = marker('Hello-from-the-model-');
  await setScenario(ctx.upModel, { answer });
  const run = await ctx.invoke({ prompt: `Say hello. (${marker('q')})` });
  const why = exitedOk(run) || (run.stdout.includes(answer) ? null : `the model's text "${answer}" is not in stdout`);
  return { ok: !why, why, runs: [run] };
}

async function checkTool(ctx) {
  const file = 'matrix-made.txt';
  const content = marker('content-');
  const done = marker('All-done-');
  await setScenario(ctx.upModel, {
    tool: ctx.client.tool,
    arguments: ctx.client.toolArgs(file, content),
    after_result: `${done} (result: {{result}})`,
    answer: `No tool was offered (${marker('x')})`,
  });
  const run = await ctx.invoke({ prompt: `Create the file ${file} containing ${content}.` });
  const path = join(ctx.work, file);
  let why = exitedOk(run);
  if (!why && !existsSync(path)) why = `${file} was not created in the work dir (the tool did not run)`;
  if (!why && !readFileSync(path, 'utf8').includes(content)) why = `${file} does not hold ${content}`;
  if (!why && !run.stdout.includes(done)) why = `the model's final text "${done}" is not in stdout (the tool result did not come back?)`;
  return { ok: !why, why, runs: [run] };
}

async function checkResume(ctx) {
  const first = marker('Remember-');
  const second = marker('Again-');
  const answer1 = marker('First-answer-');
  const answer2 = marker('Second-answer-');
  await setScenario(ctx.upModel, { answer: answer1 });
  const run1 = await ctx.invoke({ prompt: `Remember this word: ${first}` });
  let why = exitedOk(run1);
  if (why) return { ok: false, why: `first turn: ${why}`, runs: [run1] };
  if (!run1.stdout.includes(answer1)) return { ok: false, why: `first turn: "${answer1}" not in stdout`, runs: [run1] };
  await setScenario(ctx.upModel, { answer: answer2 });
  const run2 = await ctx.invoke({ prompt: `Which word did I ask you to remember? ${second}`, resume: true });
  why = exitedOk(run2);
  if (why) return { ok: false, why: `second turn: ${why}`, runs: [run1, run2] };
  if (!run2.stdout.includes(answer2)) return { ok: false, why: `second turn: "${answer2}" not in stdout`, runs: [run1, run2] };
  const reqs = (await journalSince(ctx.seq, ctx.upModel)).filter((r) => JSON.stringify(r.body ?? null).includes(second));
  if (reqs.length === 0) return { ok: false, why: `no upstream request carries the second turn's marker ${second}`, runs: [run1, run2] };
  if (!reqs.some((r) => JSON.stringify(r.body).includes(first))) {
    return { ok: false, why: `the second turn's upstream request does not carry the first turn's marker ${first}`, runs: [run1, run2] };
  }
  return { ok: true, why: null, runs: [run1, run2] };
}

// The page the web-search check's model cites: the emulator's zorblax page, as the
// gateway's search backend finds it (its URL names the Host the backend was reached
// on). Set up by findWebPage: {url, title} or {error}.
let webPage = { error: 'not looked up' };

async function findWebPage() {
  try {
    const rows = sbctl('search-backend', 'list').split('\n').slice(1).map((l) => l.trim().split(/\s+/));
    // id name kind base_url credential default enabled created
    const def = rows.find((r) => r[5] === 'true' && r[6] === 'true');
    if (!def) return { error: 'no enabled default search backend (sbctl search-backend add ... --default)' };
    if (def[2] !== 'searxng') return { error: `the default search backend ${def[1]} is ${def[2]}: the check needs the emulator's searxng one` };
    const res = await fetch(`${def[3]}/search?q=zorblax&format=json`);
    const body = res.ok ? await res.json() : null;
    const hit = body?.results?.find((r) => /\/_pages\/zorblax\.html$/.test(r.url));
    if (!hit) return { error: `the default search backend ${def[1]} (${def[3]}) is not the emulator's: no zorblax page` };
    return { url: hit.url, title: hit.title };
  } catch (e) {
    return { error: `looking up the search backend: ${e.stderr || e.message || e}` };
  }
}

// Every JSON object of a recorded answer: an SSE stream's data lines, a JSON body (a
// streamed Generate Content array too), and everything nested in them.
function answerObjects(entry) {
  const tops = [];
  const b = entry.response_body;
  if (typeof b === 'string') {
    for (const line of b.split('\n')) {
      if (!line.startsWith('data:')) continue;
      try { tops.push(JSON.parse(line.slice(5))); } catch { /* [DONE], a cut record */ }
    }
  } else if (b && typeof b === 'object') tops.push(b);
  const out = [];
  const walk = (v) => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') {
      out.push(v);
      Object.values(v).forEach(walk);
    }
  };
  walk(tops);
  return out;
}

// What a client must have received, per style: the built-in item (or blocks, or
// metadata) of the search and a citation of the page. Returns the reason it is
// missing, or null.
const WEB_EVIDENCE = {
  responses(objs, page, query) {
    const call = objs.some((o) => o.type === 'web_search_call' && o.status === 'completed' &&
      o.action?.type === 'search' && String(o.action.query ?? '').includes(query));
    if (!call) return `no completed web_search_call searching "${query}"`;
    if (!objs.some((o) => o.type === 'url_citation' && o.url === page.url)) return `no url_citation of ${page.url}`;
    return null;
  },
  messages(objs, page) {
    if (!objs.some((o) => o.type === 'server_tool_use' && o.name === 'web_search')) return 'no server_tool_use block (web_search)';
    if (!objs.some((o) => o.type === 'web_search_tool_result' && Array.isArray(o.content) && o.content.some((r) => r.url === page.url))) {
      return `no web_search_tool_result block holding ${page.url}`;
    }
    if (!objs.some((o) => o.type === 'web_search_result_location' && o.url === page.url)) return `no web_search_result_location citation of ${page.url}`;
    return null;
  },
  gemini(objs, page, query) {
    const gm = objs.filter((o) => o.groundingMetadata).map((o) => o.groundingMetadata);
    if (!gm.length) return 'no groundingMetadata';
    const m = gm.find((g) => (g.groundingChunks ?? []).some((c) => c.web?.uri === page.url));
    if (!m) return `no groundingMetadata with ${page.url} among its groundingChunks`;
    if (!(m.webSearchQueries ?? []).some((q) => String(q).includes(query))) return `groundingMetadata.webSearchQueries lacks "${query}"`;
    if (!(m.groundingSupports ?? []).length) return 'groundingMetadata has no groundingSupports (the answer cites nothing)';
    return null;
  },
};

// The reserved names (sb__*) are the gateway's: a client must never see one, nor send
// one back. The first exchange naming one, with where, or null.
function reservedNameLeak(log) {
  for (const e of log) {
    const text = `${JSON.stringify(e.request_body ?? '')}${JSON.stringify(e.response_body ?? '')}`;
    const at = text.indexOf('sb__');
    if (at >= 0) return `exchange ${e.id} (${e.method} ${e.url}) names sb__*: …${text.slice(Math.max(0, at - 120), at + 80)}…`;
  }
  return null;
}

async function checkWebSearch(ctx) {
  if (webPage.error) return { ok: false, why: webPage.error, runs: [] };
  const spec = ctx.client.webSearch;
  // Lower case: the query goes through the model, the gateway and the backend's URL.
  const query = `zorblax ${marker('zq').toLowerCase()}`;
  const done = marker('Searched-');
  const search = {
    tool: spec.tool,
    arguments: { query },
    after_result: `${done} The [${webPage.title}](${webPage.url}) is a blue-skinned fruit.`,
    answer: `No web search was offered (${marker('x')})`,
  };
  if (spec.pre) {
    const pre = {
      tool: spec.pre.tool,
      arguments: spec.pre.arguments,
      after_result: `The model could not search (${marker('x')}): {{result}}`,
      answer: `No ${spec.pre.tool} was offered (${marker('x')})`,
    };
    // The scenario follows the requests: the first step until the client's request
    // shows that it is done. Set before the request goes on, so never late.
    let current = pre;
    await setScenario(ctx.upModel, pre);
    ctx.setHook(async (entry) => {
      const b = entry.request_body;
      if (!b || typeof b !== 'object' || b.model !== ctx.model) return;
      const want = spec.pre.until(b) ? search : pre;
      if (want !== current) {
        current = want;
        await setScenario(ctx.upModel, want);
      }
    });
  } else {
    await setScenario(ctx.upModel, search);
  }
  const run = await ctx.invoke({ prompt: 'Search the web for zorblax and tell me what it is, with a link.' });
  ctx.setHook(null);
  const log = ctx.proxyLog();
  let why = exitedOk(run);
  if (!why && !run.stdout.includes(done)) why = `the model's final text "${done}" is not in stdout`;
  if (!why) {
    const objs = log.filter((e) => !e.external && !e.upgrade).flatMap(answerObjects);
    why = WEB_EVIDENCE[spec.style](objs, webPage, query);
    if (why) why = `the client never got it: ${why}`;
  }
  if (!why) why = reservedNameLeak(log);
  if (!why) {
    const searched = (await journalSince(ctx.seq, null)).some((r) => r.protocol === 'searxng' &&
      new URLSearchParams(r.query ?? '').get('q')?.includes(query));
    if (!searched) why = `the emulator's journal shows no search for "${query}" (the gateway did not search)`;
  }
  if (why || !spec.replay) return { ok: !why, why, runs: [run] };
  // A next turn of the session: the client sends its history back with the
  // web_search_call item in it, and the model's next request carries the search.
  const again = marker('Next-turn-');
  const answer2 = marker('Second-answer-');
  await setScenario(ctx.upModel, { answer: answer2 });
  const seq2 = await journalSeq();
  const run2 = await ctx.invoke({ prompt: `Thanks. ${again}`, resume: true });
  const runs = [run, run2];
  why = exitedOk(run2);
  if (!why && !run2.stdout.includes(answer2)) why = `"${answer2}" not in stdout`;
  if (!why) {
    const reqs = (await journalSince(seq2, ctx.upModel)).filter((r) => JSON.stringify(r.body ?? null).includes(again));
    if (!reqs.length) why = `no upstream request carries the marker ${again}`;
    else if (!reqs.some((r) => JSON.stringify(r.body).includes(query))) why = `the upstream request does not carry the first turn's search for "${query}"`;
  }
  if (!why) why = reservedNameLeak(ctx.proxyLog());
  return { ok: !why, why: why && `second turn: ${why}`, runs };
}

const CHECK_FNS = { 'one-turn': checkOneTurn, tool: checkTool, resume: checkResume, 'web-search': checkWebSearch };

// ---- running -----------------------------------------------------------------------------

function pick(list, known, what) {
  const items = list.split(',').map((s) => s.trim()).filter(Boolean);
  for (const i of items) {
    if (!known.includes(i)) {
      console.error(`client matrix: unknown ${what} '${i}' (known: ${known.join(', ')})`);
      process.exit(2);
    }
  }
  return items;
}
const clients = pick(opt.clients, Object.keys(CLIENTS), 'client');
const upstreams = pick(opt.upstreams, Object.keys(UPSTREAMS), 'upstream');
const checks = pick(opt.checks, CHECKS, 'check');

for (const c of clients) {
  const b = c === 'agents' ? join(here, 'node_modules', '@openai', 'agents') : bin(c);
  if (!existsSync(b)) {
    console.error(`client matrix: ${b} is missing: run "npm ci" in ${here}`);
    process.exit(2);
  }
}

const stamp = new Date().toISOString().replace(/[:.]/g, '-');
const logDir = opt['log-dir'] || (env.SB_VAR ? join(env.SB_VAR, 'log', 'clients', stamp) : mkdtempSync(join(tmpdir(), 'sb-clients-log-')));
mkdirSync(logDir, { recursive: true });
const tmpRoot = mkdtempSync(join(tmpdir(), 'sb-clients-'));
const outside = []; // "client: host" of every refused attempt to leave loopback
const failures = []; // the FAIL lines (and first refusal) again, just above the table

// One gateway model per pair, routed to the emulator under its own upstream model name.
function ensureModels() {
  for (const c of clients) {
    for (const u of upstreams) {
      const id = `${CLIENTS[c].prefix}-${u}`;
      const { provider, base } = UPSTREAMS[u];
      // Default capabilities: built-in tools (web search) run by the gateway.
      const common = ['--provider', provider, '--base-url', base, '--upstream-model', `${id}-up`,
        '--credential-ref', 'SB_EMU_UPSTREAM_KEY', '--max-output-tokens', '65536', '--capabilities', '{}'];
      sbctl('model', 'add', id, '--if-not-exists', ...common);
      sbctl('model', 'set', id, ...common);
      sbctl('model', 'enable', id);
    }
  }
}

function writeCheckLog(name, res, proxyLog, journal) {
  const dir = join(logDir, name);
  mkdirSync(dir, { recursive: true });
  const lines = [`check: ${name}`, `why: ${res.why}`, ''];
  res.runs.forEach((r, i) => {
    lines.push(`run ${i + 1}: ${r.argv.map((a) => (/[\s'"]/.test(a) ? JSON.stringify(a) : a)).join(' ')}`);
    lines.push(`  exit ${r.code} signal ${r.signal} timed out ${r.timedOut} in ${r.ms} ms`);
    writeFileSync(join(dir, `run${i + 1}.stdout`), r.stdout);
    writeFileSync(join(dir, `run${i + 1}.stderr`), r.stderr);
  });
  writeFileSync(join(dir, 'summary.txt'), `${lines.join('\n')}\n`);
  writeFileSync(join(dir, 'proxy.jsonl'), proxyLog.map((e) => JSON.stringify(e)).join('\n') + (proxyLog.length ? '\n' : ''));
  writeFileSync(join(dir, 'upstream-journal.json'), JSON.stringify(journal, null, 1));
}

async function runPair(c, u) {
  const client = CLIENTS[c];
  const model = `${client.prefix}-${u}`;
  const upModel = `${model}-up`;
  const proxy = await startCaptureProxy(gateway);
  const results = {};
  try {
    for (const check of checks) {
      const name = `${c}-${u}-${check}`;
      const home = join(tmpRoot, name, 'home');
      const work = join(tmpRoot, name, 'work');
      mkdirSync(home, { recursive: true });
      mkdirSync(work, { recursive: true });
      client.prepare(home, model);
      const deadline = Date.now() + checkTimeoutMs;
      // The exchanges of this check so far (kept for its log too).
      const seen = [];
      const ctx = {
        client, model, upModel, work, deadline, seq: await journalSeq(),
        invoke: ({ prompt, resume = false }) =>
          runClient(client.command({ home, work, base: proxy.origin, model, prompt, resume, check }), work, deadline, proxy.origin),
        setHook: (fn) => proxy.setHook(fn),
        proxyLog: () => {
          seen.push(...proxy.take());
          return seen;
        },
      };
      proxy.take();
      const t0 = Date.now();
      let res;
      try {
        res = await CHECK_FNS[check](ctx);
      } catch (e) {
        res = { ok: false, why: `harness error: ${e.stack || e}`, runs: [] };
      }
      proxy.setHook(null);
      try { await clearScenario(upModel); } catch { /* reported by the next PUT */ }
      const ms = Date.now() - t0;
      results[check] = { ...res, ms };
      const log = ctx.proxyLog();
      if (!res.ok || opt['log-all']) {
        let journal = [];
        try { journal = await journalSince(ctx.seq, upModel); } catch (e) { journal = [{ error: String(e) }]; }
        writeCheckLog(name, res, log, journal);
      }
      const line = `${res.ok ? 'pass' : 'FAIL'} ${name} (${(ms / 1000).toFixed(1)} s)${res.ok ? '' : `: ${res.why}`}`;
      console.log(line);
      // The first refusal the client got, inline, so a CI log shows the cause without the files.
      const refused = res.ok ? null : log.find((e) => e.status >= 400 && !e.upgrade && !e.external);
      let cause = null;
      if (refused) {
        const body = typeof refused.response_body === 'string' ? refused.response_body : JSON.stringify(refused.response_body);
        cause = `     ${refused.method} ${refused.url} -> ${refused.status} ${String(body).slice(0, 400)}`;
        console.log(cause);
      }
      if (!res.ok) failures.push(cause ? `${line}\n${cause}` : line);
      // Not a failure of the gateway, but not the offline default configuration either: say so.
      const external = [...new Set(log.filter((e) => e.external).map((e) => e.url))];
      if (external.length) {
        console.log(`     note: the client tried to leave loopback (refused): ${external.join(', ')}`);
        outside.push(...external.map((u) => `${c}: ${u}`));
      }
    }
  } finally {
    await proxy.close();
  }
  return results;
}

async function main() {
  try {
    ensureModels();
    const h = await fetch(`${emu}/_emu/health`);
    if (!h.ok) throw new Error(`emulator health: ${h.status}`);
    // The checks need the emulator's scenario API (an emulator older than it answers 404).
    await setScenario('matrix-probe', { answer: 'probe' });
    await clearScenario('matrix-probe');
    // A missing search backend fails the web-search checks (with the reason), not the setup.
    if (checks.includes('web-search')) webPage = await findWebPage();
  } catch (e) {
    console.error(`client matrix: setup failed: ${e.stderr || e.message || e}`);
    process.exit(2);
  }
  const t0 = Date.now();
  const pairs = [];
  for (const c of clients) for (const u of upstreams) pairs.push([c, u]);
  const table = {};
  let next = 0;
  async function lane() {
    while (next < pairs.length) {
      const [c, u] = pairs[next++];
      table[`${c}/${u}`] = await runPair(c, u);
    }
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, pairs.length) }, lane));

  let passed = 0;
  let failed = 0;
  // Repeated here, so the end of the output (what a CI log shows) has the failures with the table.
  if (failures.length) console.log(`\nfailed checks:\n${failures.join('\n')}`);
  const w = [8, 18, ...checks.map((c) => Math.max(c.length, 6))];
  const row = (cells) => cells.map((s, i) => String(s).padEnd(w[i])).join('  ').trimEnd();
  console.log('');
  console.log(row(['client', 'upstream', ...checks]));
  for (const [c, u] of pairs) {
    const r = table[`${c}/${u}`];
    console.log(row([c, UPSTREAMS[u].provider, ...checks.map((k) => (r[k].ok ? 'pass' : 'FAIL'))]));
    for (const k of checks) (r[k].ok ? passed++ : failed++);
  }
  console.log('');
  if (outside.length) console.log(`attempts to leave loopback (refused): ${[...new Set(outside)].join(', ')}`);
  console.log(`client matrix: ${passed} passed, ${failed} failed in ${((Date.now() - t0) / 1000).toFixed(0)} s` +
    (failed ? ` (logs: ${logDir})` : ''));
  if (!opt.keep) rmSync(tmpRoot, { recursive: true, force: true });
  else console.log(`client homes and work dirs kept in ${tmpRoot}`);
  process.exit(failed ? 1 : 0);
}

await main();
