// deploy/k8s (issue 20): every overlay renders with kustomize, every object
// it renders is a kind Kubernetes, KEDA or CloudNativePG knows and is valid
// against that schema, and the objects are wired to each other and to the
// gateway's code (lib/wiring.mjs lists the checks). Then what each overlay
// promises: dev small and allowed to scale workers to zero, production pinned
// and spread. Needs no cluster and no running gateway.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parse } from 'yaml';
import { K8S, OVERLAYS, build, kubectl, renderer, stageTree } from './lib/render.mjs';
import { schemaProblems } from './lib/schema.mjs';
import { CHECKS, checkWiring } from './lib/wiring.mjs';
import { binaries, drainDefaults, exportedMetrics } from './lib/source.mjs';

const staged = stageTree();
after(() => staged.cleanup());
const r = renderer();
const src = { binaries: binaries(), metrics: exportedMetrics(), drain: drainDefaults() };
// Every render starts now, in parallel; the tests wait for theirs.
const pending = new Map(OVERLAYS.map((ov) => [ov, build(join(staged.root, ov), r)]));
const KUBECTL = kubectl() ? { cmd: 'kubectl', args: ['kustomize'], name: 'kubectl kustomize' } : null;
const pendingV5 = KUBECTL && new Map(OVERLAYS.map((ov) => [ov, build(join(staged.root, ov), KUBECTL)]));
for (const p of [...pending.values(), ...(pendingV5?.values() ?? [])]) p.catch(() => {}); // reported by the tests
const rendered = new Map();
for (const ov of OVERLAYS)
  test(`${ov}: kustomize renders it`, async () => rendered.set(ov, (await pending.get(ov)).objects));

function objectsOf(ov) {
  const objs = rendered.get(ov);
  assert.ok(objs, `${ov} did not render`);
  return objs;
}
const named = (objs, kind, name) => objs.find((o) => o.kind === kind && o.metadata.name === name);
const ofKind = (objs, kind) => objs.filter((o) => o.kind === kind);
const workers = (objs) =>
  ofKind(objs, 'Deployment').filter((d) => d.spec.template.metadata.labels['app.kubernetes.io/component'] === 'worker');

test(`the renderer: ${r.name}`, () => {
  assert.ok(r.cmd);
});

for (const ov of OVERLAYS) {
  test(`${ov}: the kinds it must have`, () => {
    const objs = objectsOf(ov);
    for (const kind of [
      'Deployment',
      'Service',
      'HorizontalPodAutoscaler',
      'PodDisruptionBudget',
      'ScaledObject',
      'Job',
      'Secret',
      'ConfigMap',
    ])
      assert.ok(ofKind(objs, kind).length, `no ${kind}`);
  });

  test(`${ov}: every object is a known apiVersion/kind and valid against its schema`, async () => {
    const problems = [];
    for (const o of objectsOf(ov)) problems.push(...(await schemaProblems(o)));
    assert.deepEqual(problems, []);
  });

  test(`${ov}: wiring`, async (t) => {
    const problems = checkWiring(objectsOf(ov), src);
    for (const check of CHECKS)
      await t.test(check, () => {
        assert.deepEqual(
          problems.filter((p) => p.check === check).map((p) => p.msg),
          [],
        );
      });
  });

  test(`${ov}: the pieces issue 20 asks for`, () => {
    const objs = objectsOf(ov);
    const fe = named(objs, 'Deployment', 'sb-frontend');
    const hpa = ofKind(objs, 'HorizontalPodAutoscaler').find((h) => h.spec.scaleTargetRef.name === 'sb-frontend');
    assert.ok(fe && hpa, 'frontend Deployment and its HPA');
    assert.equal(hpa.apiVersion, 'autoscaling/v2');
    assert.ok(
      hpa.spec.metrics.some((m) => m.type === 'Resource' && m.resource.name === 'cpu'),
      'HPA on CPU',
    );
    const svc = named(objs, 'Service', 'sb-broker');
    assert.equal(svc?.spec.clusterIP, 'None', 'headless broker Service');
    const pdbFor = (d) =>
      ofKind(objs, 'PodDisruptionBudget').some((p) =>
        Object.entries(p.spec.selector.matchLabels).every(([k, v]) => d.spec.template.metadata.labels[k] === v),
      );
    for (const d of [fe, named(objs, 'Deployment', 'sb-broker'), ...workers(objs)])
      assert.ok(pdbFor(d), `a PDB for ${d.metadata.name}`);
    assert.ok(workers(objs).length >= 2, 'at least two worker groups');
    for (const so of ofKind(objs, 'ScaledObject')) {
      const tr = so.spec.triggers;
      assert.ok(
        tr.some((x) => /sb_broker_queue_depth/.test(x.metadata.query)),
        `${so.metadata.name}: queue depth`,
      );
      assert.ok(
        tr.some((x) => />\s*bool\s+0\s*$/.test(x.metadata.query)),
        `${so.metadata.name}: a keep-alive trigger`,
      );
    }
    const job = ofKind(objs, 'Job').find((j) => j.spec.template.spec.containers[0].args?.[0] === 'migrate');
    assert.ok(job, 'a migrations Job');
    for (const d of [fe, ...workers(objs)])
      assert.ok(
        (d.spec.template.spec.initContainers ?? []).some((c) => c.args?.[0] === 'migrate'),
        `${d.metadata.name}: schema first`,
      );
  });
}

test('overlays/dev: one frontend, two brokers, small, workers may scale to zero', () => {
  const objs = objectsOf('overlays/dev');
  const hpa = named(objs, 'HorizontalPodAutoscaler', 'sb-frontend');
  assert.equal(hpa.spec.minReplicas, 1);
  assert.equal(named(objs, 'Deployment', 'sb-broker').spec.replicas, 2);
  for (const so of ofKind(objs, 'ScaledObject')) assert.equal(so.spec.minReplicaCount, 0, so.metadata.name);
  for (const d of ofKind(objs, 'Deployment'))
    for (const c of d.spec.template.spec.containers)
      assert.ok(
        /^[0-9]+Mi$/.test(c.resources.limits.memory) && parseInt(c.resources.limits.memory) <= 512,
        `${d.metadata.name}: small`,
      );
});

test('overlays/production: pinned images, three brokers on three nodes, workers never at zero', () => {
  for (const ov of ['overlays/production', 'examples/cloudnative-pg']) {
    const objs = objectsOf(ov);
    for (const d of [...ofKind(objs, 'Deployment'), ...ofKind(objs, 'Job')])
      for (const c of d.spec.template.spec.containers) {
        const pinned = /@sha256:[0-9a-f]{64}$/.test(c.image) || /:[^/:]+$/.test(c.image);
        assert.ok(
          pinned && !/:(dev|latest)$/.test(c.image),
          `${ov} ${d.metadata.name}: image ${c.image} is not pinned`,
        );
      }
    const broker = named(objs, 'Deployment', 'sb-broker');
    assert.ok(broker.spec.replicas >= 3);
    const anti =
      broker.spec.template.spec.affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution ?? [];
    assert.ok(
      anti.some(
        (a) =>
          a.topologyKey === 'kubernetes.io/hostname' &&
          a.labelSelector.matchLabels['app.kubernetes.io/component'] === 'broker',
      ),
      'brokers on distinct nodes',
    );
    assert.ok(named(objs, 'HorizontalPodAutoscaler', 'sb-frontend').spec.minReplicas >= 2);
    for (const so of ofKind(objs, 'ScaledObject')) {
      assert.ok(so.spec.minReplicaCount >= 1, so.metadata.name);
      assert.ok(so.spec.fallback?.replicas >= 1, `${so.metadata.name}: a fallback when Prometheus cannot be read`);
    }
  }
});

test('examples/cloudnative-pg: every process reads the operator-made DSN, none the dropped Secret', () => {
  const objs = objectsOf('examples/cloudnative-pg');
  const cluster = ofKind(objs, 'Cluster')[0];
  assert.ok(cluster, 'a CloudNativePG Cluster');
  assert.ok(!ofKind(objs, 'Secret').some((s) => s.metadata.name.startsWith('sb-database')), 'sb-database dropped');
  let n = 0;
  for (const d of [...ofKind(objs, 'Deployment'), ...ofKind(objs, 'Job')])
    for (const c of d.spec.template.spec.containers) {
      const e = (c.env ?? []).find((x) => x.name === 'SB_PG_DSN');
      if (!e) continue;
      n++;
      assert.deepEqual(e.valueFrom.secretKeyRef, { name: `${cluster.metadata.name}-app`, key: 'uri' }, d.metadata.name);
    }
  assert.ok(n >= 4, 'frontend, both worker groups and the migrations Job');
});

test('the kustomizations use no field kustomize v5 deprecates (kubectl apply -k warns or fails)', () => {
  const deprecated = ['commonLabels', 'patchesStrategicMerge', 'patchesJson6902', 'bases', 'vars', 'imageTags'];
  const files = [];
  const walk = (dir) => {
    for (const n of readdirSync(dir)) {
      const p = join(dir, n);
      if (statSync(p).isDirectory()) walk(p);
      else if (n === 'kustomization.yaml') files.push(p);
    }
  };
  walk(K8S);
  assert.ok(files.length >= 7);
  for (const f of files) {
    const k = parse(readFileSync(f, 'utf8'));
    for (const d of deprecated) assert.ok(!(d in k), `${relative(K8S, f)}: ${d}`);
  }
});

test(
  'kubectl kustomize (kustomize v5) renders every overlay to the same objects',
  { skip: !KUBECTL && 'no kubectl with kustomize 5 on PATH' },
  async () => {
    for (const ov of OVERLAYS) assert.deepEqual((await pendingV5.get(ov)).objects, objectsOf(ov), ov);
  },
);

test('deploy/k8s/sbctl runs sbctl in a pod the schema and the checks accept', async () => {
  // A stand-in kubectl: answers the helper's questions about the Job as the
  // production overlay renders it, and records the "kubectl run" it is asked for.
  const job = objectsOf('overlays/production').find((o) => o.kind === 'Job' && o.metadata.name === 'sb-migrate');
  const c = job.spec.template.spec.containers[0];
  const ref = c.env.find((e) => e.name === 'SB_PG_DSN').valueFrom.secretKeyRef;
  const stub = join(staged.dir, 'kubectl');
  const record = join(staged.dir, 'kubectl-run.json');
  writeFileSync(
    stub,
    `#!/usr/bin/env bash
case "$*" in
  *"get job sb-migrate"*.image}*) printf %s ${JSON.stringify(c.image)} ;;
  *"get job sb-migrate"*.secretKeyRef.name}*) printf %s ${JSON.stringify(ref.name)} ;;
  *"get job sb-migrate"*.secretKeyRef.key}*) printf %s ${JSON.stringify(ref.key)} ;;
  *" run "*) node -e 'require("fs").writeFileSync(process.argv[1], JSON.stringify(process.argv.slice(2)))' ${JSON.stringify(record)} "$@" ;;
  *) echo "unexpected: $*" >&2; exit 1 ;;
esac
`,
  );
  chmodSync(stub, 0o755);
  const args = ['admin-key', 'create', '--name', 'ops "night" \\ team'];
  execFileSync(join(staged.root, 'sbctl'), ['-n', 'switchboard', ...args], { env: { ...process.env, KUBECTL: stub } });
  const argv = JSON.parse(readFileSync(record, 'utf8'));
  assert.deepEqual(argv.slice(0, 3), ['-n', 'switchboard', 'run']);
  assert.ok(argv.includes('--rm') && argv.includes('--restart=Never'));
  const overrides = JSON.parse(argv.find((a) => a.startsWith('--overrides=')).slice('--overrides='.length));
  const pod = {
    ...overrides,
    kind: 'Pod',
    metadata: { ...overrides.metadata, name: argv[3], namespace: 'switchboard' },
  };
  assert.deepEqual(await schemaProblems(pod), []);
  const pc = pod.spec.containers[0];
  assert.deepEqual([pc.image, pc.command, pc.args], [c.image, ['/usr/local/bin/sbctl'], args]);
  // The pod as a Job template, so the security and resource checks see it.
  const asJob = {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: 'sbctl-run', namespace: 'switchboard' },
    spec: { template: { metadata: { labels: pod.metadata.labels }, spec: pod.spec } },
  };
  const secret = objectsOf('overlays/production').find((o) => o.kind === 'Secret' && o.metadata.name === ref.name);
  const problems = checkWiring([asJob, secret], src).filter((p) =>
    ['security', 'resources', 'refs', 'flags', 'image'].includes(p.check),
  );
  assert.deepEqual(problems, []);
});
