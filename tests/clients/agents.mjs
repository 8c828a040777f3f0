#!/usr/bin/env node
// The OpenAI Agents SDK as a client of the gateway, for the client matrix
// (run-matrix.mjs): one Agent with one function tool, run by a Runner with
// streaming, through an `openai` client whose baseURL is the gateway (the
// SDK's default transport: the Responses API over HTTP).
//
//   node agents.mjs --base http://127.0.0.1:8080/v1 --model M --workdir DIR
//                   [--session FILE] [--web-search] PROMPT
// The key comes from OPENAI_API_KEY. The tool, create_file, writes a file
// under --workdir and returns what it did, so a tool round trip leaves a
// file a test can look for. --session FILE keeps the conversation between
// two runs, as a CLI keeps its session: the history of the previous run is
// read from FILE (when it exists) and sent before PROMPT, and this run's
// history is written back. Prints the streamed text, then the final output
// on its own line; exits 0 when the run completed. --web-search also gives the
// agent the SDK's hosted web search tool (webSearchTool(): {"type":"web_search"}
// in the request, run by whoever serves the Responses API, here the gateway);
// each hosted call the run reports is written to stderr as "[hosted TYPE] ...".
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { dirname, join, resolve, relative, isAbsolute } from 'node:path';
import { parseArgs } from 'node:util';
import OpenAI from 'openai';
import {
  Agent, Runner, tool, user, webSearchTool, setDefaultOpenAIClient, setTracingDisabled, OpenAIProvider,
} from '@openai/agents';

const { values: opt, positionals } = parseArgs({
  options: {
    base: { type: 'string' },
    model: { type: 'string' },
    workdir: { type: 'string', default: process.cwd() },
    session: { type: 'string' },
    'web-search': { type: 'boolean', default: false },
  },
  allowPositionals: true,
});
const prompt = positionals.join(' ');
if (!opt.base || !opt.model || !prompt) {
  process.stderr.write('usage: agents.mjs --base URL --model M [--workdir DIR] [--session FILE] [--web-search] PROMPT\n');
  process.exit(2);
}
const workdir = resolve(opt.workdir);

// Tracing would upload spans to api.openai.com: the matrix allows loopback only.
setTracingDisabled(true);
const client = new OpenAI({ apiKey: process.env.OPENAI_API_KEY, baseURL: opt.base, maxRetries: 0, timeout: 60000 });
setDefaultOpenAIClient(client);

const createFile = tool({
  name: 'create_file',
  description: 'Create (or overwrite) a text file in the working directory.',
  parameters: {
    type: 'object',
    properties: {
      path: { type: 'string', description: 'file path, relative to the working directory' },
      content: { type: 'string', description: 'the file content' },
    },
    required: ['path', 'content'],
    additionalProperties: false,
  },
  strict: true,
  async execute({ path, content }) {
    const target = resolve(workdir, path);
    const rel = relative(workdir, target);
    if (rel.startsWith('..') || isAbsolute(rel)) return `refused: ${path} is outside the working directory`;
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, content);
    return `created ${rel} (${Buffer.byteLength(content)} bytes)`;
  },
});

const agent = new Agent({
  name: 'matrix',
  instructions: 'You are a helpful assistant. Use create_file when asked to create a file.',
  model: opt.model,
  tools: opt['web-search'] ? [createFile, webSearchTool()] : [createFile],
});

const history = opt.session && existsSync(opt.session) ? JSON.parse(readFileSync(opt.session, 'utf8')) : [];
const runner = new Runner({ modelProvider: new OpenAIProvider({ openAIClient: client }), tracingDisabled: true });
const result = await runner.run(agent, [...history, user(prompt)], { stream: true, maxTurns: 6 });
for await (const ev of result) {
  if (ev.type === 'raw_model_stream_event' && ev.data.type === 'output_text_delta') process.stdout.write(ev.data.delta);
  else if (ev.type === 'run_item_stream_event' && ev.name === 'tool_output') {
    process.stderr.write(`[tool ${ev.item.rawItem.name ?? ''}] ${JSON.stringify(ev.item.output)}\n`);
  } else if (ev.type === 'run_item_stream_event' && ev.item.rawItem?.type === 'hosted_tool_call') {
    const raw = ev.item.rawItem;
    process.stderr.write(`[hosted ${raw.providerData?.type ?? raw.name}] ${JSON.stringify(raw.providerData?.action ?? raw.arguments ?? null)}\n`);
  }
}
await result.completed;
if (result.error) throw result.error;
process.stdout.write(`\n${result.finalOutput ?? ''}\n`);
if (opt.session) writeFileSync(opt.session, JSON.stringify(result.history));
// Keep the work dir in the output, so a failing check's log says where the file should be.
process.stderr.write(`[workdir] ${join(workdir)}\n`);
