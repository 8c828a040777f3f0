// The checks of k8s.test.mjs shown to fail when they should. First a broken
// overlay rendered by kustomize (overlays/dev with one break in each of
// several objects): every break must be reported, by the check meant for it.
// Then single breaks made on a copy of the rendered dev objects, one at a
// time: each must be reported, and the unbroken objects report nothing.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { build, renderer, stageTree } from './lib/render.mjs';
import { schemaProblems } from './lib/schema.mjs';
import { checkWiring } from './lib/wiring.mjs';
import { binaries, drainDefaults, exportedMetrics } from './lib/source.mjs';

const staged = stageTree();
after(() => staged.cleanup());
const r = renderer();
const src = { binaries: binaries(), metrics: exportedMetrics(), drain: drainDefaults() };

// kustomize patches: [target, [JSON patch ops]]
const FE = { kind: 'Deployment', name: 'sb-frontend' };
const BROKER = { kind: 'Deployment', name: 'sb-broker' };
const CHAT = { kind: 'Deployment', name: 'sb-worker-chat' };
const CLAUDE = { kind: 'Deployment', name: 'sb-worker-claude' };
const JOB = { kind: 'Job', name: 'sb-migrate' };
const C0 = '/spec/template/spec/containers/0';
const BREAKS = [
  {
    what: 'a readiness probe on a port the frontend does not declare',
    target: FE,
    ops: [{ op: 'replace', path: `${C0}/readinessProbe/httpGet/port`, value: 9999 }],
    expect: ['probes', /sb-frontend container frontend: readinessProbe port 9999 is not a port the container declares/],
  },
  {
    what: 'the broker health listener moved off the probed port',
    target: BROKER,
    ops: [
      { op: 'test', path: `${C0}/args/2`, value: '--admin-listen=0.0.0.0:9090' },
      { op: 'replace', path: `${C0}/args/2`, value: '--admin-listen=0.0.0.0:9191' },
    ],
    expect: [
      'probes',
      /sb-broker container broker: livenessProbe on port 9090, but --admin-listen \(health\) is on 9191/,
    ],
  },
  {
    what: 'a worker reading a Secret no overlay makes',
    target: CLAUDE,
    ops: [{ op: 'replace', path: `${C0}/envFrom/1/secretRef/name`, value: 'sb-upstream-gemini' }],
    expect: [
      'refs',
      /sb-worker-claude container worker: envFrom names Secret sb-upstream-gemini, which is not in the output/,
    ],
  },
  {
    what: 'the migrations Job reading a key its Secret lacks',
    target: JOB,
    ops: [
      { op: 'test', path: `${C0}/env/0/name`, value: 'SB_PG_DSN' },
      { op: 'replace', path: `${C0}/env/0/valueFrom/secretKeyRef/key`, value: 'url' },
    ],
    expect: [
      'refs',
      /Job\/sb-migrate container migrate: env SB_PG_DSN names key "url" of Secret sb-database-\w+, which has dsn/,
    ],
  },
  {
    what: 'a KEDA query on a metric the broker does not export',
    target: { group: 'keda.sh', kind: 'ScaledObject', name: 'sb-worker-chat' },
    ops: [
      {
        op: 'replace',
        path: '/spec/triggers/0/metadata/query',
        value: 'sum(sb_broker_queue_length{namespace="switchboard-dev",model=~"gpt-4o|gpt-4o-mini"})',
      },
    ],
    expect: ['keda', /sb-worker-chat trigger queue-depth: sb_broker_queue_length is not a metric the gateway exports/],
  },
  {
    what: 'a worker group serving a model its ScaledObject does not count',
    target: CHAT,
    ops: [
      { op: 'test', path: `${C0}/env/0/name`, value: 'SB_WORKER_MODELS' },
      { op: 'replace', path: `${C0}/env/0/value`, value: 'gpt-4o,gpt-4o-mini,o3' },
    ],
    expect: ['keda', /model=~"gpt-4o\|gpt-4o-mini" misses o3, which sb-worker-chat serves/],
  },
  {
    what: "frontends pointed at the brokers' worker port",
    target: FE,
    ops: [
      { op: 'test', path: `${C0}/args/2`, value: '--broker=dns://sb-broker:5555' },
      { op: 'replace', path: `${C0}/args/2`, value: '--broker=dns://sb-broker:5556' },
    ],
    expect: [
      'broker',
      /sb-frontend container frontend: --broker dns:\/\/sb-broker:5556, but Deployment\/sb-broker listens for frontends on 5555/,
    ],
  },
  {
    what: 'a Service targeting a port no pod declares',
    target: { kind: 'Service', name: 'sb-frontend-admin' },
    ops: [{ op: 'replace', path: '/spec/ports/0/targetPort', value: 'metrics' }],
    expect: [
      'services',
      /Service\/sb-frontend-admin port admin: targetPort metrics is not declared by Deployment\/sb-frontend/,
    ],
  },
  {
    what: 'the migrations Job allowed to run as root',
    target: JOB,
    ops: [{ op: 'replace', path: '/spec/template/spec/securityContext/runAsNonRoot', value: false }],
    expect: ['security', /Job\/sb-migrate container migrate: runAsNonRoot is not true/],
  },
  {
    what: 'a ScaledObject scaling a Deployment that does not exist',
    target: { group: 'keda.sh', kind: 'ScaledObject', name: 'sb-worker-claude' },
    ops: [{ op: 'replace', path: '/spec/scaleTargetRef/name', value: 'sb-worker-gemini' }],
    expect: [
      'keda',
      /ScaledObject\/sb-worker-claude: scaleTargetRef apps\/v1 Deployment sb-worker-gemini is not in the output/,
    ],
  },
  {
    what: 'an option the frontend does not have',
    target: FE,
    ops: [{ op: 'add', path: `${C0}/args/-`, value: '--admin-port=9090' }],
    expect: ['flags', /sb-frontend container frontend: sb-frontend has no option --admin-port/],
  },
  {
    what: 'brokers without a preStop',
    target: BROKER,
    ops: [{ op: 'remove', path: `${C0}/lifecycle` }],
    expect: ['shutdown', /sb-broker container broker: no preStop/],
  },
];

// Objects the schemas refuse, added as resources of the broken overlay.
const BAD_OBJECTS = [
  {
    object: { apiVersion: 'v1', kind: 'Service', metadata: { name: 'bad-port' }, spec: { ports: [{ port: 'http' }] } },
    expect: /Service\/bad-port \(v1\): data\/spec\/ports\/0\/port must be integer/,
  },
  {
    object: { apiVersion: 'keda.sh/v1alpha9', kind: 'ScaledObject', metadata: { name: 'bad-version' }, spec: {} },
    expect: /ScaledObject\/bad-version: unknown apiVersion\/kind keda.sh\/v1alpha9\/ScaledObject/,
  },
  {
    object: {
      apiVersion: 'keda.sh/v1alpha1',
      kind: 'ScaledObject',
      metadata: { name: 'bad-threshold' },
      spec: { scaleTargetRef: { name: 'sb-frontend' }, triggers: [{ type: 'prometheus', metadata: { threshold: 5 } }] },
    },
    expect:
      /ScaledObject\/bad-threshold \(keda.sh\/v1alpha1\): data\/spec\/triggers\/0\/metadata\/threshold must be string/,
  },
];

function writeBrokenOverlay() {
  const dir = join(staged.root, 'overlays/broken');
  mkdirSync(dir);
  const resources = ['../dev'];
  BAD_OBJECTS.forEach((b, i) => {
    writeFileSync(join(dir, `bad-${i}.yaml`), stringify(b.object));
    resources.push(`bad-${i}.yaml`);
  });
  const kustomization = {
    apiVersion: 'kustomize.config.k8s.io/v1beta1',
    kind: 'Kustomization',
    resources,
    patches: BREAKS.map((b) => ({ target: b.target, patch: stringify(b.ops) })),
  };
  writeFileSync(join(dir, 'kustomization.yaml'), stringify(kustomization));
  return dir;
}

const pendingBroken = build(writeBrokenOverlay(), r);
const pendingDev = build(join(staged.root, 'overlays/dev'), r);
pendingBroken.catch(() => {});
pendingDev.catch(() => {});

let broken;
test('the broken overlay renders', async () => {
  broken = (await pendingBroken).objects;
  assert.ok(broken.length > 20);
});

test('the broken overlay: every break is reported by its check', async (t) => {
  const problems = checkWiring(broken, src);
  for (const b of BREAKS)
    await t.test(b.what, () => {
      const [check, re] = b.expect;
      const hit = problems.filter((p) => p.check === check && re.test(p.msg));
      assert.ok(
        hit.length,
        `no ${check} problem matching ${re}; ${check} said:\n  ${
          problems
            .filter((p) => p.check === check)
            .map((p) => p.msg)
            .join('\n  ') || '(nothing)'
        }`,
      );
    });
});

test('the broken overlay: the schemas refuse the bad objects', async (t) => {
  const problems = [];
  for (const o of broken) problems.push(...(await schemaProblems(o)));
  for (const b of BAD_OBJECTS)
    await t.test(`${b.object.kind}/${b.object.metadata.name}`, () => {
      assert.ok(
        problems.some((p) => b.expect.test(p)),
        `not refused; schema problems:\n  ${problems.join('\n  ')}`,
      );
    });
});

// ---- single breaks on a copy of the rendered dev objects

let dev;
const fresh = () => structuredClone(dev);
const get = (objs, kind, name) => objs.find((o) => o.kind === kind && o.metadata.name.startsWith(name));
const c0 = (o) => o.spec.template.spec.containers[0];
const setArg = (c, flag, value) => {
  const i = c.args.findIndex((a) => a.startsWith(`--${flag}=`));
  assert.ok(i >= 0, `no --${flag}`);
  c.args[i] = `--${flag}=${value}`;
};
const trigger = (objs, so, name) => get(objs, 'ScaledObject', so).spec.triggers.find((t) => t.name === name);

const SINGLE = [
  [
    'a matcher on a label the metric lacks',
    'keda',
    /sb_broker_queue_depth has no label modle \(it has model\)/,
    (o) => {
      const t = trigger(o, 'sb-worker-chat', 'queue-depth');
      t.metadata.query = t.metadata.query.replace('model=~', 'modle=~');
    },
  ],
  [
    "a model regex matching another group's model too",
    'keda',
    /model=~"\.\*" also matches claude-sonnet-4-5, which sb-worker-claude serves/,
    (o) => {
      const t = trigger(o, 'sb-worker-chat', 'queue-depth');
      t.metadata.query = t.metadata.query.replace(/model=~"[^"]*"/, 'model=~".*"');
    },
  ],
  [
    'a query counting every namespace',
    'keda',
    /sb_requests_total is not limited to namespace="switchboard-dev"/,
    (o) => {
      const t = trigger(o, 'sb-worker-claude', 'keep-alive');
      t.metadata.query = t.metadata.query.replace(/namespace="[^"]*",/, '');
    },
  ],
  [
    'a regex dot written "\\." in the PromQL string',
    'keda',
    /unknown escape sequence \\\./,
    (o) => {
      const t = trigger(o, 'sb-worker-claude', 'queue-depth');
      t.metadata.query = t.metadata.query.replace('claude-sonnet-4-5', 'claude-sonnet-4\\.5');
    },
  ],
  [
    "an in-flight threshold above the worker's credits",
    'keda',
    /threshold 100 credits in use per replica is above --concurrency 64/,
    (o) => {
      trigger(o, 'sb-worker-chat', 'in-flight').metadata.threshold = '100';
    },
  ],
  [
    'a queue-depth trigger on a worker metric',
    'keda',
    /sb_worker_jobs_in_flight comes from worker/,
    (o) => {
      const t = trigger(o, 'sb-worker-chat', 'queue-depth');
      t.metadata.query = 'sum(sb_worker_jobs_in_flight{namespace="switchboard-dev"})';
    },
  ],
  [
    "a grace period shorter than the frontend's drain",
    'shutdown',
    /terminationGracePeriodSeconds 30 < preStop 10 s \+ drain 300 s/,
    (o) => {
      get(o, 'Deployment', 'sb-frontend').spec.template.spec.terminationGracePeriodSeconds = 30;
    },
  ],
  [
    'a worker without a memory limit',
    'resources',
    /sb-worker-claude container worker: no limits\.memory/,
    (o) => {
      delete c0(get(o, 'Deployment', 'sb-worker-claude')).resources.limits.memory;
    },
  ],
  [
    'a NetworkPolicy keeping workers from the brokers',
    'netpol',
    /no NetworkPolicy rule lets Deployment\/sb-worker-chat reach port 5556/,
    (o) => {
      get(o, 'NetworkPolicy', 'sb-broker').spec.ingress[1].from[0].podSelector.matchLabels[
        'app.kubernetes.io/component'
      ] = 'frontend';
    },
  ],
  [
    'a PodDisruptionBudget selecting nothing',
    'pdb',
    /PodDisruptionBudget\/sb-broker: its selector matches no pod template/,
    (o) => {
      get(o, 'PodDisruptionBudget', 'sb-broker').spec.selector.matchLabels['app.kubernetes.io/component'] = 'brokers';
    },
  ],
  [
    'replicas set on a Deployment an HPA scales',
    'autoscale',
    /Deployment\/sb-frontend: sets replicas under HorizontalPodAutoscaler\/sb-frontend/,
    (o) => {
      get(o, 'Deployment', 'sb-frontend').spec.replicas = 3;
    },
  ],
  [
    'a broker Service that is not headless',
    'broker',
    /Service sb-broker is not headless/,
    (o) => {
      delete get(o, 'Service', 'sb-broker').spec.clusterIP;
    },
  ],
  [
    'a broker at a fixed address',
    'broker',
    /--broker entry tcp:\/\/10\.0\.0\.1:5556 is not dns:\/\/SERVICE:PORT/,
    (o) => {
      setArg(c0(get(o, 'Deployment', 'sb-worker-chat')), 'broker', 'tcp://10.0.0.1:5556');
    },
  ],
  [
    'one broker',
    'broker',
    /Deployment\/sb-broker: 1 broker, active-active needs at least 2/,
    (o) => {
      get(o, 'Deployment', 'sb-broker').spec.replicas = 1;
    },
  ],
  [
    'a variable the binary never reads',
    'env',
    /sets SB_PG_DNS, which sb-frontend never reads/,
    (o) => {
      c0(get(o, 'Deployment', 'sb-frontend')).env.find((e) => e.name === 'SB_PG_DSN').name = 'SB_PG_DNS';
    },
  ],
  [
    'a setting in the ConfigMap no process reads',
    'env',
    /ConfigMap sb-settings-\w+ sets SB_LOG_COLOUR, which sb-broker never reads/,
    (o) => {
      get(o, 'ConfigMap', 'sb-settings').data.SB_LOG_COLOUR = 'always';
    },
  ],
  [
    'the reasoning key file outside its Secret volume',
    'refs',
    /--reasoning-key-file \/etc\/reasoning-key is not in a mounted Secret/,
    (o) => {
      setArg(c0(get(o, 'Deployment', 'sb-frontend')), 'reasoning-key-file', '/etc/reasoning-key');
    },
  ],
  [
    'a worker group without a ScaledObject',
    'keda',
    /Deployment\/sb-worker-claude: a worker group without a ScaledObject/,
    (o) => {
      o.splice(o.indexOf(get(o, 'ScaledObject', 'sb-worker-claude')), 1);
    },
  ],
  [
    'a model served by two groups',
    'keda',
    /model gpt-4o is served by two worker groups/,
    (o) => {
      c0(get(o, 'Deployment', 'sb-worker-claude')).env.find((e) => e.name === 'SB_WORKER_MODELS').value =
        'claude-sonnet-4-5,gpt-4o';
    },
  ],
  [
    'an init container migrating another database than its pod uses',
    'env',
    /SB_PG_DSN comes from different Secrets/,
    (o) => {
      const init = get(o, 'Deployment', 'sb-worker-chat').spec.template.spec.initContainers[0];
      init.env.find((e) => e.name === 'SB_PG_DSN').valueFrom.secretKeyRef = {
        name: get(o, 'Secret', 'sb-reasoning-key').metadata.name,
        key: 'key',
      };
    },
  ],
  [
    'no migrations Job',
    'migrate',
    /no Job runs sbctl migrate/,
    (o) => {
      o.splice(o.indexOf(get(o, 'Job', 'sb-migrate')), 1);
    },
  ],
  [
    'a writable root filesystem',
    'security',
    /sb-broker container broker: root filesystem is writable/,
    (o) => {
      c0(get(o, 'Deployment', 'sb-broker')).securityContext.readOnlyRootFilesystem = false;
    },
  ],
  [
    "an object outside the overlay's namespace",
    'namespace',
    /Service\/sb-broker is in namespace default, not switchboard-dev/,
    (o) => {
      get(o, 'Service', 'sb-broker').metadata.namespace = 'default';
    },
  ],
  [
    'an image that is not the binary it runs',
    'image',
    /image localhost\/switchboard\/sb-broker:dev does not hold sb-worker/,
    (o) => {
      c0(get(o, 'Deployment', 'sb-worker-chat')).image = 'localhost/switchboard/sb-broker:dev';
    },
  ],
];

test('single breaks of the dev overlay', async (t) => {
  dev = (await pendingDev).objects;
  assert.deepEqual(checkWiring(dev, src), [], 'the unbroken dev overlay');
  for (const [what, check, re, mutate] of SINGLE)
    await t.test(what, () => {
      const objs = fresh();
      mutate(objs);
      const problems = checkWiring(objs, src);
      assert.ok(
        problems.some((p) => p.check === check && re.test(p.msg)),
        `no ${check} problem matching ${re}; got:\n  ${problems.map((p) => `${p.check}: ${p.msg}`).join('\n  ') || '(nothing)'}`,
      );
    });
});
