// Starts the test MCP servers (servers.mjs) by themselves, for manual use
// and for C-side checks: prints their URLs (and the bearer server's token
// and tenant) as one line of JSON, then serves until SIGINT/SIGTERM or
// until stdin closes when started with --stdin (a parent that dies takes
// them with it).
//   node tests/integration/mcp/run-servers.mjs [--slow-ms N] [--stdin]
import { startMcpServers } from './servers.mjs';

const args = process.argv.slice(2);
const opt = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const slowMs = opt('--slow-ms') !== undefined ? Number(opt('--slow-ms')) : undefined;
if (slowMs !== undefined && !(slowMs >= 0)) {
  process.stderr.write('run-servers: --slow-ms takes a number of milliseconds\n');
  process.exit(2);
}

const s = await startMcpServers(slowMs !== undefined ? { slowMs } : {});
process.stdout.write(`${JSON.stringify({ urls: s.urls, token: s.token, tenant: s.tenant, slowMs: s.slowMs })}\n`);

let closing = false;
async function stop() {
  if (closing) return;
  closing = true;
  await s.close();
  process.exit(0);
}
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
if (args.includes('--stdin')) {
  process.stdin.on('end', stop);
  process.stdin.resume();
}
