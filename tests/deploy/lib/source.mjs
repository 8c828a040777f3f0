// What the gateway's C sources say, read at test time so that the manifests
// are checked against the code as it is now, never against a copied list:
// the Prometheus metrics each process exports (name, type, labels), the long
// options each binary takes, the environment variables it reads, and sbctl's
// top-level commands.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { REPO } from './render.mjs';

// Every .c file under dir, recursively.
function cFiles(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...cFiles(p));
    else if (name.endsWith('.c')) out.push(p);
  }
  return out;
}

// C comments out, string literals kept.
function stripComments(text) {
  return text.replace(/\/\*[\s\S]*?\*\/|\/\/[^\n]*|("(?:[^"\\\n]|\\.)*")/g, (m, str) => str ?? ' ');
}

// The C string literals (adjacent ones joined) and other tokens of an
// argument list, starting just after its '('; stops at the matching ')'.
function cArgs(text, at) {
  const args = [];
  let cur = [];
  let depth = 0;
  for (let i = at; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      const m = /^"((?:[^"\\\n]|\\.)*)"/.exec(text.slice(i));
      cur.push({ str: m[1] });
      i += m[0].length - 1;
    } else if (c === '(') {
      depth++;
      cur.push({ tok: c });
    } else if (c === ')') {
      if (depth-- === 0) {
        args.push(cur);
        return args;
      }
      cur.push({ tok: c });
    } else if (c === ',' && depth === 0) {
      args.push(cur);
      cur = [];
    } else if (!/\s/.test(c)) {
      const m = /^[A-Za-z0-9_.]+/.exec(text.slice(i));
      if (m) {
        cur.push({ tok: m[0] });
        i += m[0].length - 1;
      } else cur.push({ tok: c });
    }
  }
  throw new Error('unterminated argument list');
}

// An argument that is only string literals, joined; null otherwise.
function literal(arg) {
  if (!arg.length || !arg.every((t) => 'str' in t)) return null;
  return arg.map((t) => t.str).join('');
}

const COMPONENT_DIRS = { broker: 'broker', frontend: 'frontend', worker: 'worker' };

// name -> { type, labels: [...], component, file } for every family made with
// sb_metric_counter/gauge/histogram("name", "help", "labels" | NULL, ...) in
// broker/, frontend/ and worker/. A histogram also exports name_bucket (with
// "le"), name_sum and name_count.
export function exportedMetrics() {
  const metrics = new Map();
  for (const [component, dir] of Object.entries(COMPONENT_DIRS)) {
    for (const file of cFiles(join(REPO, dir))) {
      const text = stripComments(readFileSync(file, 'utf8'));
      for (const m of text.matchAll(/\bsb_metric_(counter|gauge|histogram)\s*\(/g)) {
        const args = cArgs(text, m.index + m[0].length);
        const name = literal(args[0] ?? []);
        if (name === null) continue; // not a definition with a literal name
        const help = literal(args[1] ?? []);
        const labelArg = args[2] ?? [];
        const labels = labelArg.length === 1 && labelArg[0].tok === 'NULL' ? [] : literal(labelArg)?.split(',');
        if (help === null || !labels) throw new Error(`${relative(REPO, file)}: cannot read the definition of ${name}`);
        const add = (n, extra = []) => {
          const prev = metrics.get(n);
          const entry = prev ?? { type: m[1], labels: [...labels, ...extra], components: new Set(), files: new Set() };
          entry.components.add(component);
          entry.files.add(relative(REPO, file));
          metrics.set(n, entry);
        };
        add(name);
        if (m[1] === 'histogram') {
          add(`${name}_bucket`, ['le']);
          add(`${name}_sum`);
          add(`${name}_count`);
        }
      }
    }
  }
  return metrics;
}

// The long options of a binary's main.c: name -> 'required' | 'none' | 'optional'.
export function longOptions(mainC) {
  const text = stripComments(readFileSync(join(REPO, mainC), 'utf8'));
  const opts = new Map();
  for (const m of text.matchAll(/\{\s*"([a-z0-9-]+)"\s*,\s*(required_argument|no_argument|optional_argument)\s*,/g))
    opts.set(m[1], m[2].replace('_argument', '').replace('no', 'none'));
  if (!opts.size) throw new Error(`${mainC}: no long options found`);
  return opts;
}

// The environment variables read with getenv("NAME") under the given dirs.
export function envRead(...dirs) {
  const names = new Set();
  for (const dir of dirs)
    for (const file of cFiles(join(REPO, dir)))
      for (const m of stripComments(readFileSync(file, 'utf8')).matchAll(/\bgetenv\s*\(\s*"([A-Za-z0-9_]+)"\s*\)/g))
        names.add(m[1]);
  return names;
}

// sbctl's commands, from its command table: first word -> the verbs that may
// follow it ("migrate" -> none; "key" -> create, list, disable, ...).
export function sbctlCommands() {
  const text = stripComments(readFileSync(join(REPO, 'sbctl/sb_cli.c'), 'utf8'));
  const out = new Map();
  for (const m of text.matchAll(/\{\s*SB_CLI_[A-Z_]+\s*,\s*(NULL|"([a-z-]+)")\s*,\s*"([a-z-]+)"/g)) {
    const first = m[2] ?? m[3];
    if (!out.has(first)) out.set(first, new Set());
    if (m[2]) out.get(first).add(m[3]);
  }
  if (!out.has('migrate')) throw new Error('sbctl/sb_cli.c: no migrate command found');
  return out;
}

// Everything the wiring check needs about the binaries, by component.
export function binaries() {
  return {
    'sb-frontend': {
      component: 'frontend',
      options: longOptions('frontend/main.c'),
      env: envRead('frontend', 'common'),
    },
    'sb-broker': { component: 'broker', options: longOptions('broker/main.c'), env: envRead('broker', 'common') },
    'sb-worker': { component: 'worker', options: longOptions('worker/main.c'), env: envRead('worker', 'common') },
    sbctl: { component: 'sbctl', commands: sbctlCommands(), env: envRead('sbctl', 'common') },
  };
}

// How long each process drains after SIGTERM by default, in seconds: the
// frontend's --drain-seconds default, the worker's fixed drain period.
export function drainDefaults() {
  const fe = /static int drain_seconds = (\d+);/.exec(readFileSync(join(REPO, 'frontend/main.c'), 'utf8'));
  const wk = /#define SB_WORKER_DEFAULT_DRAIN_MS (\d+)/.exec(readFileSync(join(REPO, 'worker/worker.c'), 'utf8'));
  if (!fe || !wk) throw new Error('cannot read the drain defaults from frontend/main.c and worker/worker.c');
  return { frontend: Number(fe[1]), worker: Number(wk[1]) / 1000, broker: 0 };
}
