// The wiring of a rendered overlay: whether the objects fit each other and the
// gateway's code, beyond what a schema can say. checkWiring(objects, src)
// returns every problem found as { check, msg }; [] is a pass. src is what the
// C sources say (source.mjs): options, environment, metrics, drain periods.
//
// Checks (the tag of each problem):
//   image      the image and the command are one of the gateway's binaries
//   flags      every --flag is one the binary takes; sbctl runs a known command
//   ports      every declared containerPort is listened on (--listen,
//              --admin-listen, the broker's endpoints) and every listener declared
//   probes     liveness/readiness (startup) on a declared port that --admin-listen
//              serves, /healthz and /readyz
//   refs       every Secret and ConfigMap (and key) referenced exists in the
//              output, or is made by an operator object in it
//   env        every variable set is read by the binary or used as $(VAR); $(VAR)
//              are defined; SB_PG_DSN comes from one place for every process
//   services   every Service selects pods and targets ports they declare
//   broker     frontends and workers reach every broker through dns:// on a
//              headless Service port that the broker listens on for them
//   keda       ScaledObjects: target Deployment, Prometheus queries naming only
//              exported metrics and their labels, this namespace, the group's models
//   autoscale  HPAs target existing Deployments; no Deployment is scaled twice or
//              sets replicas under an autoscaler
//   pdb        every PodDisruptionBudget selects pods
//   netpol     NetworkPolicies select pods, name declared ports, and let
//              frontends and workers reach the brokers and Prometheus the admin ports
//   security   non-root, no privilege escalation, no capabilities, seccomp,
//              read-only root filesystem, no service account token
//   resources  requests and limits for CPU and memory, requests <= limits
//   shutdown   preStop on frontends, brokers and workers; a grace period longer
//              than the preStop sleep plus the process's drain
//   namespace  every namespaced object is in the overlay's Namespace
//   migrate    a Job runs sbctl migrate
import { parseQuery, promRegex } from './promql.mjs';

const NAMESPACED_EXCEPT = new Set([
  'Namespace',
  'ClusterRole',
  'ClusterRoleBinding',
  'CustomResourceDefinition',
  'PriorityClass',
  'StorageClass',
  'PersistentVolume',
  'ClusterTriggerAuthentication',
]);

// Labels Prometheus adds to every scraped series (the usual Kubernetes scrape
// configurations and the Prometheus operator's): allowed in matchers.
const TARGET_LABELS = new Set(['namespace']);

// Keys of the Secret CloudNativePG makes for a Cluster's application user.
const CNPG_APP_KEYS = [
  'username',
  'password',
  'host',
  'port',
  'dbname',
  'uri',
  'jdbc-uri',
  'pgpass',
  'fqdn-uri',
  'fqdn-jdbc-uri',
  'user',
];

// Which listener flag serves which role, per binary.
const LISTENERS = {
  'sb-frontend': { listen: 'http', 'admin-listen': 'admin' },
  'sb-broker': { 'frontend-endpoint': 'frontends', 'worker-endpoint': 'workers', 'admin-listen': 'admin' },
  'sb-worker': { 'admin-listen': 'admin' },
  sbctl: {},
};
// The broker bind flag each client role connects to, and the env variable
// the client reads when --broker is not given.
const BROKER_ROLE = {
  'sb-frontend': { bind: 'frontend-endpoint', env: 'SB_BROKER_FRONTEND_ENDPOINT' },
  'sb-worker': { bind: 'worker-endpoint', env: 'SB_BROKER_WORKER_ENDPOINT' },
};
const LONG_RUNNING = new Set(['sb-frontend', 'sb-broker', 'sb-worker']);

const ns = (o) => o.metadata?.namespace ?? '';
const id = (o) => `${o.kind}/${o.metadata?.name}`;

// { owner, ns, template } for every object with a pod template.
function podTemplates(objects) {
  const out = [];
  for (const o of objects) {
    let t = null;
    if (['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'Job'].includes(o.kind)) t = o.spec?.template;
    else if (o.kind === 'CronJob') t = o.spec?.jobTemplate?.spec?.template;
    if (t) out.push({ owner: o, ns: ns(o), template: t, labels: t.metadata?.labels ?? {} });
  }
  return out;
}

function selectorMatches(sel, labels) {
  if (!sel) return false;
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of sel.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, e.key);
    if (e.operator === 'In' && !(has && e.values.includes(labels[e.key]))) return false;
    if (e.operator === 'NotIn' && has && e.values.includes(labels[e.key])) return false;
    if (e.operator === 'Exists' && !has) return false;
    if (e.operator === 'DoesNotExist' && has) return false;
  }
  return true;
}

// A Service's selector is a plain map.
const mapMatches = (sel, labels) => Object.entries(sel).every(([k, v]) => labels[k] === v);

// The gateway binary a container runs: from its command, else its image.
function binaryOf(c) {
  const cmd = c.command?.[0];
  if (cmd) return cmd.split('/').pop();
  return imageRepoBase(c.image);
}

function imageRepoBase(image = '') {
  const noDigest = image.split('@')[0];
  const last = noDigest.split('/').pop();
  return last.split(':')[0];
}

// Kubernetes' $(VAR) expansion of command and args: VAR from the container's
// env (a literal value; a valueFrom is only known at run time). Undefined
// names stay as written, as Kubernetes leaves them.
function expand(s, env, undefinedVars) {
  return s.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (all, name) => {
    if (all === '$$') return '$';
    if (!env.has(name)) {
      undefinedVars.add(name);
      return all;
    }
    const v = env.get(name);
    return v === null ? `<${name} at run time>` : v;
  });
}

// The literal env of a container: name -> value | null (valueFrom).
function envMap(c) {
  const m = new Map();
  for (const e of c.env ?? []) m.set(e.name, e.valueFrom ? null : String(e.value ?? ''));
  return m;
}

// Parses args against the binary's options: { flags: Map(name -> [values]),
// unknown: [..], positional: [..] }.
function parseArgs(args, options) {
  const flags = new Map();
  const unknown = [];
  const positional = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (!a.startsWith('--')) {
      positional.push(a);
      continue;
    }
    const eq = a.indexOf('=');
    const name = a.slice(2, eq < 0 ? undefined : eq);
    let value = eq < 0 ? null : a.slice(eq + 1);
    const kind = options?.get(name);
    if (!kind) {
      unknown.push(name);
      continue;
    }
    if (value === null && kind === 'required') value = args[++i] ?? null;
    if (!flags.has(name)) flags.set(name, []);
    flags.get(name).push(value);
  }
  return { flags, unknown, positional };
}

// The port of "HOST:PORT" or "tcp://*:PORT"; null when there is none.
function portOf(spec) {
  const m = /:(\d+)$/.exec(spec ?? '');
  return m ? Number(m[1]) : null;
}

// Resolves a port (number or name) against a container's declared ports:
// the port number, or null when the container declares no such port.
function resolvePort(p, containers) {
  for (const c of containers)
    for (const cp of c.ports ?? [])
      if ((typeof p === 'number' && cp.containerPort === p) || cp.name === p) return cp.containerPort;
  return null;
}

function parseQuantity(q) {
  if (q === undefined || q === null) return null;
  const m = /^([0-9.]+)(m|k|M|G|T|Ki|Mi|Gi|Ti)?$/.exec(String(q));
  if (!m) return NaN;
  const mult = { m: 1e-3, k: 1e3, M: 1e6, G: 1e9, T: 1e12, Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3, Ti: 1024 ** 4 };
  return Number(m[1]) * (m[2] ? mult[m[2]] : 1);
}

// Everything about one container the checks share.
function describe(pt, c, src) {
  const bin = binaryOf(c);
  const info = src.binaries[bin];
  const env = envMap(c);
  const undefinedVars = new Set();
  const args = (c.args ?? []).map((a) => expand(String(a), env, undefinedVars));
  const command = (c.command ?? []).map((a) => expand(String(a), env, undefinedVars));
  const parsed = info?.options ? parseArgs(args, info.options) : { flags: new Map(), unknown: [], positional: args };
  const flag = (name) => parsed.flags.get(name)?.at(-1) ?? null;
  return {
    pt,
    c,
    bin,
    info,
    env,
    args,
    command,
    parsed,
    flag,
    undefinedVars,
    where: `${id(pt.owner)} container ${c.name}`,
  };
}

export function checkWiring(objects, src) {
  const problems = [];
  const add = (check, msg) => problems.push({ check, msg });
  const templates = podTemplates(objects);
  const containers = [];
  for (const pt of templates) {
    for (const c of pt.template.spec?.containers ?? []) containers.push(describe(pt, c, src));
    for (const c of pt.template.spec?.initContainers ?? []) containers.push({ ...describe(pt, c, src), init: true });
  }
  const find = (kind, namespace, name) =>
    objects.find((o) => o.kind === kind && ns(o) === namespace && o.metadata?.name === name);
  const byBin = (bin) => containers.filter((d) => d.bin === bin && !d.init);

  // Secrets an operator object in the output will make: name -> { keys, by }.
  const provided = new Map();
  for (const o of objects)
    if (o.apiVersion?.startsWith('postgresql.cnpg.io/') && o.kind === 'Cluster')
      provided.set(`${ns(o)}/${o.metadata.name}-app`, { keys: CNPG_APP_KEYS, by: `${id(o)} (CloudNativePG)` });

  // ---- image, flags
  for (const d of containers) {
    if (!d.info) {
      add('image', `${d.where}: runs ${d.bin}, not one of ${Object.keys(src.binaries).join(', ')}`);
      continue;
    }
    if (d.c.command && d.c.command[0] !== `/usr/local/bin/${d.bin}`)
      add('image', `${d.where}: command ${d.c.command[0]}, the image has /usr/local/bin/${d.bin}`);
    if (imageRepoBase(d.c.image) !== d.bin) add('image', `${d.where}: image ${d.c.image} does not hold ${d.bin}`);
    for (const u of d.parsed.unknown) add('flags', `${d.where}: ${d.bin} has no option --${u}`);
    if (d.bin === 'sbctl') {
      const verbs = d.info.commands.get(d.args[0]);
      if (!verbs) add('flags', `${d.where}: sbctl has no command ${JSON.stringify(d.args[0])}`);
      else if (verbs.size && !verbs.has(d.args[1]))
        add(
          'flags',
          `${d.where}: sbctl ${d.args[0]} has no ${JSON.stringify(d.args[1])} (it has ${[...verbs].join(', ')})`,
        );
    }
    for (const v of d.undefinedVars) add('env', `${d.where}: $(${v}) in command or args is not in its env`);
  }

  // ---- ports and probes
  for (const d of containers) {
    if (!d.info || d.init) continue;
    const listeners = LISTENERS[d.bin];
    const listening = new Map(); // port -> flag
    for (const flag of Object.keys(listeners)) {
      const v = d.flag(flag);
      if (v === null) continue;
      const p = portOf(v);
      if (p === null) add('ports', `${d.where}: --${flag}=${v} names no port`);
      else listening.set(p, flag);
    }
    for (const cp of d.c.ports ?? [])
      if (!listening.has(cp.containerPort))
        add('ports', `${d.where}: declares port ${cp.name ?? ''} ${cp.containerPort}, which no listener flag opens`);
    for (const [p, flag] of listening)
      if (!(d.c.ports ?? []).some((cp) => cp.containerPort === p))
        add('ports', `${d.where}: --${flag} listens on ${p}, which the container does not declare`);

    const admin = d.flag('admin-listen');
    const adminPort = portOf(admin);
    const probes = { livenessProbe: '/healthz', readinessProbe: '/readyz', startupProbe: '/healthz' };
    for (const [kind, path] of Object.entries(probes)) {
      const pr = d.c[kind];
      if (!pr) {
        if (LONG_RUNNING.has(d.bin) && kind !== 'startupProbe') add('probes', `${d.where}: no ${kind}`);
        continue;
      }
      const action = pr.httpGet ?? pr.tcpSocket;
      if (!action) {
        add('probes', `${d.where}: ${kind} is neither httpGet nor tcpSocket on the admin port`);
        continue;
      }
      const p = resolvePort(action.port, [d.c]);
      if (p === null) {
        add('probes', `${d.where}: ${kind} port ${action.port} is not a port the container declares`);
        continue;
      }
      if (adminPort === null) add('probes', `${d.where}: ${kind} on port ${p} but no --admin-listen serves health`);
      else if (p !== adminPort)
        add('probes', `${d.where}: ${kind} on port ${p}, but --admin-listen (health) is on ${adminPort}`);
      if (pr.httpGet && pr.httpGet.path !== path)
        add('probes', `${d.where}: ${kind} asks ${pr.httpGet.path}, not ${path}`);
    }
  }

  // ---- refs: Secrets and ConfigMaps
  const secretKeys = (namespace, name) => {
    const o = find('Secret', namespace, name);
    if (o) return { keys: [...Object.keys(o.data ?? {}), ...Object.keys(o.stringData ?? {})] };
    return provided.get(`${namespace}/${name}`) ?? null;
  };
  const cmKeys = (namespace, name) => {
    const o = find('ConfigMap', namespace, name);
    return o ? { keys: [...Object.keys(o.data ?? {}), ...Object.keys(o.binaryData ?? {})] } : null;
  };
  const refCheck = (d, kind, name, key, optional, how) => {
    const found = kind === 'Secret' ? secretKeys(d.pt.ns, name) : cmKeys(d.pt.ns, name);
    if (!found) {
      if (!optional) add('refs', `${d.where}: ${how} names ${kind} ${name}, which is not in the output`);
      return;
    }
    if (key !== undefined && !found.keys.includes(key) && !optional)
      add(
        'refs',
        `${d.where}: ${how} names key ${JSON.stringify(key)} of ${kind} ${name}, which has ${found.keys.join(', ')}`,
      );
  };
  for (const d of containers) {
    for (const e of d.c.env ?? []) {
      const s = e.valueFrom?.secretKeyRef;
      const m = e.valueFrom?.configMapKeyRef;
      if (s) refCheck(d, 'Secret', s.name, s.key, s.optional, `env ${e.name}`);
      if (m) refCheck(d, 'ConfigMap', m.name, m.key, m.optional, `env ${e.name}`);
    }
    for (const ef of d.c.envFrom ?? []) {
      if (ef.secretRef) refCheck(d, 'Secret', ef.secretRef.name, undefined, ef.secretRef.optional, 'envFrom');
      if (ef.configMapRef)
        refCheck(d, 'ConfigMap', ef.configMapRef.name, undefined, ef.configMapRef.optional, 'envFrom');
    }
  }
  for (const pt of templates) {
    const d = { pt, where: `${id(pt.owner)}` };
    for (const v of pt.template.spec?.volumes ?? []) {
      const sources = [];
      if (v.secret) sources.push(['Secret', v.secret.secretName, v.secret]);
      if (v.configMap) sources.push(['ConfigMap', v.configMap.name, v.configMap]);
      for (const s of v.projected?.sources ?? []) {
        if (s.secret) sources.push(['Secret', s.secret.name, s.secret]);
        if (s.configMap) sources.push(['ConfigMap', s.configMap.name, s.configMap]);
      }
      for (const [kind, name, spec] of sources) {
        refCheck(d, kind, name, undefined, spec.optional, `volume ${v.name}`);
        for (const it of spec.items ?? []) refCheck(d, kind, name, it.key, spec.optional, `volume ${v.name}`);
      }
    }
  }
  // The reasoning key file is a key of a mounted Secret.
  for (const d of byBin('sb-frontend')) {
    const path = d.flag('reasoning-key-file') ?? d.env.get('SB_REASONING_KEY_FILE');
    if (!path) {
      add('refs', `${d.where}: no --reasoning-key-file (encrypted reasoning would be refused)`);
      continue;
    }
    const mount = (d.c.volumeMounts ?? []).find((m) => path.startsWith(`${m.mountPath.replace(/\/$/, '')}/`));
    const vol = mount && (d.pt.template.spec.volumes ?? []).find((v) => v.name === mount.name);
    if (!vol?.secret) {
      add('refs', `${d.where}: --reasoning-key-file ${path} is not in a mounted Secret`);
      continue;
    }
    const rel = path.slice(mount.mountPath.replace(/\/$/, '').length + 1);
    const item = (vol.secret.items ?? []).find((it) => it.path === rel);
    const key = vol.secret.items ? item?.key : rel;
    if (key === undefined)
      add('refs', `${d.where}: --reasoning-key-file ${path}: volume ${vol.name} has no item ${rel}`);
    else refCheck(d, 'Secret', vol.secret.secretName, key, false, `--reasoning-key-file ${path}`);
  }

  // ---- env
  const dsnSources = new Map();
  for (const d of containers) {
    if (!d.info) continue;
    const used = new Set(
      [...(d.c.args ?? []), ...(d.c.command ?? [])].flatMap((a) =>
        [...String(a).matchAll(/\$\(([A-Za-z0-9_]+)\)/g)].map((m) => m[1]),
      ),
    );
    // libpq reads PG* itself (PGSSLMODE, PGSSLROOTCERT, ...) in the binaries that link it.
    const libpq = (n) => /^PG[A-Z]+$/.test(n) && ['sb-frontend', 'sb-worker', 'sbctl'].includes(d.bin);
    for (const e of d.c.env ?? [])
      if (!d.info.env.has(e.name) && !used.has(e.name) && !libpq(e.name))
        add('env', `${d.where}: sets ${e.name}, which ${d.bin} never reads and no $(${e.name}) uses`);
    for (const ef of d.c.envFrom ?? []) {
      if (!ef.configMapRef) continue; // a Secret's keys are credential_refs, read by name at run time
      const cm = find('ConfigMap', d.pt.ns, ef.configMapRef.name);
      for (const k of Object.keys(cm?.data ?? {}))
        if (!d.info.env.has(k))
          add('env', `${d.where}: ConfigMap ${ef.configMapRef.name} sets ${k}, which ${d.bin} never reads`);
    }
    if (['sb-frontend', 'sb-worker', 'sbctl'].includes(d.bin)) {
      const e = (d.c.env ?? []).find((x) => x.name === 'SB_PG_DSN');
      const flagDsn = d.flag('pg') ?? d.flag('database');
      if (flagDsn)
        add('env', `${d.where}: the DSN is in its args (visible in the pod spec); use SB_PG_DSN from a Secret`);
      else if (!e) add('env', `${d.where}: no SB_PG_DSN`);
      else if (!e.valueFrom?.secretKeyRef) add('env', `${d.where}: SB_PG_DSN is not read from a Secret`);
      else {
        const k = `${e.valueFrom.secretKeyRef.name}/${e.valueFrom.secretKeyRef.key}`;
        if (!dsnSources.has(d.pt.ns)) dsnSources.set(d.pt.ns, new Map());
        dsnSources.get(d.pt.ns).set(k, [...(dsnSources.get(d.pt.ns).get(k) ?? []), d.where]);
      }
    }
  }
  for (const [, m] of dsnSources)
    if (m.size > 1)
      add(
        'env',
        `SB_PG_DSN comes from different Secrets: ${[...m].map(([k, w]) => `${k} (${w.join(', ')})`).join('; ')}`,
      );

  // ---- services
  for (const svc of objects.filter((o) => o.kind === 'Service')) {
    const sel = svc.spec?.selector;
    if (!sel || !Object.keys(sel).length) {
      add('services', `${id(svc)}: no selector`);
      continue;
    }
    const pts = templates.filter((pt) => pt.ns === ns(svc) && mapMatches(sel, pt.labels));
    if (!pts.length) {
      add('services', `${id(svc)}: its selector ${JSON.stringify(sel)} matches no pod template`);
      continue;
    }
    for (const port of svc.spec.ports ?? []) {
      const target = port.targetPort ?? port.port;
      for (const pt of pts)
        if (resolvePort(target, pt.template.spec.containers) === null)
          add(
            'services',
            `${id(svc)} port ${port.name ?? port.port}: targetPort ${target} is not declared by ${id(pt.owner)}`,
          );
    }
  }

  // ---- broker discovery
  for (const d of containers.filter((x) => BROKER_ROLE[x.bin] && !x.init)) {
    const role = BROKER_ROLE[d.bin];
    const spec = d.flag('broker') ?? d.env.get(role.env);
    if (!spec) {
      add('broker', `${d.where}: no --broker (the default is a broker on localhost)`);
      continue;
    }
    for (const entry of spec.split(',')) {
      const m = /^dns:\/\/([^:/]+):(\d+)$/.exec(entry);
      if (!m) {
        add('broker', `${d.where}: --broker entry ${entry} is not dns://SERVICE:PORT (pod addresses change)`);
        continue;
      }
      const [, host, portText] = m;
      const port = Number(portText);
      const hm = /^([a-z0-9-]+)(?:\.([a-z0-9-]+)(?:\.svc(?:\.cluster\.local)?)?)?\.?$/.exec(host);
      if (!hm) {
        add('broker', `${d.where}: ${host} is not a Service name of the cluster`);
        continue;
      }
      const svc = find('Service', hm[2] ?? d.pt.ns, hm[1]);
      if (!svc) {
        add(
          'broker',
          `${d.where}: --broker ${entry}: no Service ${hm[1]} in namespace ${hm[2] ?? (d.pt.ns || '(none)')}`,
        );
        continue;
      }
      if (svc.spec?.clusterIP !== 'None')
        add(
          'broker',
          `${d.where}: --broker ${entry}: Service ${hm[1]} is not headless (clusterIP: None), so its name is one virtual IP, not every broker`,
        );
      const sp = (svc.spec?.ports ?? []).find((p) => p.port === port);
      if (!sp) {
        add('broker', `${d.where}: --broker ${entry}: Service ${hm[1]} has no port ${port}`);
        continue;
      }
      const brokers = templates.filter((pt) => pt.ns === ns(svc) && mapMatches(svc.spec.selector ?? {}, pt.labels));
      for (const pt of brokers) {
        const bc = pt.template.spec.containers.map((c) => describe(pt, c, src)).find((x) => x.bin === 'sb-broker');
        if (!bc) {
          add('broker', `${d.where}: --broker ${entry}: ${id(pt.owner)} behind Service ${hm[1]} runs no sb-broker`);
          continue;
        }
        // DNS of a headless Service gives pod addresses: clients connect to
        // PORT on the pod itself, which the broker must bind for their role.
        const bind = portOf(bc.flag(role.bind));
        const who = d.bin === 'sb-frontend' ? 'frontends' : 'workers';
        if (bind !== port)
          add(
            'broker',
            `${d.where}: --broker ${entry}, but ${id(pt.owner)} listens for ${who} on ${bind ?? `(no --${role.bind})`}`,
          );
        const cport = resolvePort(sp.targetPort ?? sp.port, [bc.c]);
        if (cport !== port)
          add(
            'broker',
            `Service/${hm[1]} port ${port}: targetPort ${sp.targetPort} is ${cport ?? 'undeclared'} on ${id(pt.owner)}, not ${port}`,
          );
      }
      if (!brokers.length) add('broker', `${d.where}: --broker ${entry}: Service ${hm[1]} selects no pods`);
    }
  }
  for (const pt of templates.filter((p) => p.template.spec.containers.some((c) => binaryOf(c) === 'sb-broker')))
    if ((pt.owner.spec?.replicas ?? 1) < 2)
      add('broker', `${id(pt.owner)}: ${pt.owner.spec?.replicas ?? 1} broker, active-active needs at least 2`);

  // ---- worker groups, KEDA
  const workerModels = new Map(); // Deployment key -> { models, d }
  for (const d of byBin('sb-worker')) {
    if (d.pt.owner.kind !== 'Deployment') continue;
    const spec = d.flag('models');
    const models = spec === null ? ['*'] : spec.split(',').map((s) => s.trim());
    if (models.some((m) => !m || m === '*' || m.includes('<')))
      add('keda', `${d.where}: --models ${spec ?? '(none: every model)'} is not a list of model ids`);
    workerModels.set(`${d.pt.ns}/${d.pt.owner.metadata.name}`, { models, d });
  }
  const allModels = new Map();
  for (const [dep, { models }] of workerModels)
    for (const m of models) {
      if (allModels.has(m)) add('keda', `model ${m} is served by two worker groups: ${allModels.get(m)} and ${dep}`);
      allModels.set(m, dep);
    }
  const scaled = new Map(); // Deployment key -> [scaler ids]
  for (const so of objects.filter((o) => o.apiVersion?.startsWith('keda.sh/') && o.kind === 'ScaledObject')) {
    const ref = so.spec?.scaleTargetRef ?? {};
    const kind = ref.kind ?? 'Deployment';
    const target = find(kind, ns(so), ref.name);
    if (!target || (ref.apiVersion && ref.apiVersion !== target.apiVersion)) {
      add('keda', `${id(so)}: scaleTargetRef ${ref.apiVersion ?? 'apps/v1'} ${kind} ${ref.name} is not in the output`);
      continue;
    }
    const key = `${ns(so)}/${ref.name}`;
    scaled.set(key, [...(scaled.get(key) ?? []), id(so)]);
    const group = workerModels.get(key);
    if (!group) add('keda', `${id(so)}: scales ${kind} ${ref.name}, which runs no sb-worker`);
    let queueDepth = false;
    for (const [i, tr] of (so.spec.triggers ?? []).entries()) {
      const tname = `${id(so)} trigger ${tr.name ?? i}`;
      if (tr.type !== 'prometheus') continue;
      const md = tr.metadata ?? {};
      if (!/^https?:\/\/[^\s/]+/.test(md.serverAddress ?? ''))
        add('keda', `${tname}: serverAddress ${md.serverAddress} is not a URL`);
      if (!(Number(md.threshold) > 0)) add('keda', `${tname}: threshold ${md.threshold} is not a positive number`);
      let q;
      try {
        q = parseQuery(md.query ?? '');
      } catch (e) {
        add('keda', `${tname}: query ${JSON.stringify(md.query)}: ${e.message}`);
        continue;
      }
      const labelsSeen = new Set();
      for (const sel of q.selectors) {
        const metric = src.metrics.get(sel.metric);
        if (!metric) {
          add('keda', `${tname}: ${sel.metric} is not a metric the gateway exports`);
          continue;
        }
        if (![...metric.components].some((c) => c === 'broker' || c === 'frontend'))
          add(
            'keda',
            `${tname}: ${sel.metric} comes from ${[...metric.components].join(', ')}, whose numbers do not count queued or incoming jobs`,
          );
        if (sel.metric === 'sb_broker_queue_depth') queueDepth = true;
        for (const mt of sel.matchers) {
          labelsSeen.add(mt.label);
          if (!metric.labels.includes(mt.label) && !TARGET_LABELS.has(mt.label))
            add(
              'keda',
              `${tname}: ${sel.metric} has no label ${mt.label} (it has ${metric.labels.join(', ') || 'none'})`,
            );
        }
        for (const g of q.grouping)
          if (!metric.labels.includes(g) && !TARGET_LABELS.has(g))
            add('keda', `${tname}: groups by ${g}, which ${sel.metric} lacks`);
        // This installation's series only.
        const nsm = sel.matchers.find((mt) => mt.label === 'namespace');
        if (ns(so) && (!nsm || nsm.op !== '=' || nsm.value !== ns(so)))
          add(
            'keda',
            `${tname}: ${sel.metric} is not limited to namespace="${ns(so)}" (${nsm ? `${nsm.op}"${nsm.value}"` : 'no matcher'}): it would count other installations`,
          );
        // The group's models, exactly.
        if (!group) continue;
        const mm = sel.matchers.find((mt) => mt.label === 'model');
        if (!mm || (mm.op !== '=~' && mm.op !== '=')) {
          add('keda', `${tname}: ${sel.metric} is not limited to the group's models (${group.models.join(',')})`);
          continue;
        }
        let re;
        try {
          re = mm.op === '=' ? { test: (s) => s === mm.value } : promRegex(mm.value);
        } catch (e) {
          add('keda', `${tname}: model regex ${mm.value}: ${e.message}`);
          continue;
        }
        for (const m of group.models)
          if (!re.test(m))
            add('keda', `${tname}: model=~"${mm.value}" misses ${m}, which ${ref.name} serves (--models)`);
        for (const [m, dep] of allModels)
          if (re.test(m) && !group.models.includes(m))
            add(
              'keda',
              `${tname}: model=~"${mm.value}" also matches ${m}, which ${dep.split('/')[1]} serves, not ${ref.name}`,
            );
        if (sel.metric === 'sb_broker_worker_credits') {
          const conc = Number(group.d.flag('concurrency') ?? 64);
          if (Number(md.threshold) > conc)
            add(
              'keda',
              `${tname}: threshold ${md.threshold} credits in use per replica is above --concurrency ${conc}: it never adds a replica before the queue does`,
            );
        }
      }
    }
    if (!queueDepth) add('keda', `${id(so)}: no trigger on sb_broker_queue_depth (the brokers' queue of its models)`);
  }
  for (const [dep] of workerModels)
    if (!scaled.has(dep)) add('keda', `Deployment/${dep.split('/')[1]}: a worker group without a ScaledObject`);

  // ---- autoscale
  for (const hpa of objects.filter((o) => o.kind === 'HorizontalPodAutoscaler')) {
    const ref = hpa.spec?.scaleTargetRef ?? {};
    const target = find(ref.kind, ns(hpa), ref.name);
    if (!target || target.apiVersion !== ref.apiVersion) {
      add('autoscale', `${id(hpa)}: scaleTargetRef ${ref.apiVersion} ${ref.kind} ${ref.name} is not in the output`);
      continue;
    }
    const key = `${ns(hpa)}/${ref.name}`;
    scaled.set(key, [...(scaled.get(key) ?? []), id(hpa)]);
    if ((hpa.spec.minReplicas ?? 1) > hpa.spec.maxReplicas)
      add('autoscale', `${id(hpa)}: minReplicas above maxReplicas`);
  }
  for (const [key, by] of scaled) {
    if (by.length > 1) add('autoscale', `Deployment/${key.split('/')[1]} is scaled by ${by.join(' and ')}`);
    const dep = find('Deployment', key.split('/')[0], key.split('/')[1]);
    if (dep?.spec?.replicas !== undefined)
      add('autoscale', `${id(dep)}: sets replicas under ${by.join(', ')} (each apply would reset the count)`);
  }

  // ---- pdb
  for (const pdb of objects.filter((o) => o.kind === 'PodDisruptionBudget'))
    if (!templates.some((pt) => pt.ns === ns(pdb) && selectorMatches(pdb.spec?.selector, pt.labels)))
      add('pdb', `${id(pdb)}: its selector matches no pod template`);

  // ---- netpol
  for (const np of objects.filter((o) => o.kind === 'NetworkPolicy')) {
    const sel = np.spec?.podSelector ?? {};
    const pts = templates.filter((pt) => pt.ns === ns(np) && selectorMatches(sel, pt.labels));
    if (!pts.length) add('netpol', `${id(np)}: its podSelector matches no pod template`);
    for (const r of np.spec?.ingress ?? [])
      for (const p of r.ports ?? [])
        if (typeof p.port === 'string' && !pts.some((pt) => resolvePort(p.port, pt.template.spec.containers) !== null))
          add('netpol', `${id(np)}: port ${p.port} is declared by none of the pods it selects`);
  }
  const allows = (pt, fromPt, port, external) => {
    const pols = objects.filter(
      (o) =>
        o.kind === 'NetworkPolicy' &&
        ns(o) === pt.ns &&
        selectorMatches(o.spec?.podSelector ?? {}, pt.labels) &&
        (o.spec?.policyTypes ?? ['Ingress']).includes('Ingress'),
    );
    if (!pols.length) return true;
    return pols.some((o) =>
      (o.spec.ingress ?? []).some((r) => {
        const portOk =
          !r.ports ||
          r.ports.some((p) => p.port === undefined || resolvePort(p.port, pt.template.spec.containers) === port);
        if (!portOk) return false;
        if (!r.from || !r.from.length) return true;
        return r.from.some((peer) =>
          external
            ? peer.namespaceSelector !== undefined || peer.ipBlock !== undefined
            : !peer.namespaceSelector && !peer.ipBlock && selectorMatches(peer.podSelector ?? {}, fromPt.labels),
        );
      }),
    );
  };
  for (const pt of templates) {
    const bc = pt.template.spec.containers.map((c) => describe(pt, c, src)).find((x) => x.bin === 'sb-broker');
    if (!bc) continue;
    for (const [bin, role] of Object.entries(BROKER_ROLE)) {
      const port = portOf(bc.flag(role.bind));
      for (const client of templates.filter(
        (t) => t.ns === pt.ns && t.template.spec.containers.some((c) => binaryOf(c) === bin),
      ))
        if (port !== null && !allows(pt, client, port, false))
          add('netpol', `${id(pt.owner)}: no NetworkPolicy rule lets ${id(client.owner)} reach port ${port}`);
    }
  }
  for (const d of containers.filter((x) => LONG_RUNNING.has(x.bin) && !x.init)) {
    const port = portOf(d.flag('admin-listen'));
    if (port !== null && !allows(d.pt, null, port, true))
      add('netpol', `${d.where}: NetworkPolicy keeps Prometheus (another namespace) from the admin port ${port}`);
  }

  // ---- security
  for (const d of containers) {
    const pod = d.pt.template.spec.securityContext ?? {};
    const sc = d.c.securityContext ?? {};
    const eff = (k) => (sc[k] !== undefined ? sc[k] : pod[k]);
    if (eff('runAsNonRoot') !== true) add('security', `${d.where}: runAsNonRoot is not true`);
    if (eff('runAsUser') === 0) add('security', `${d.where}: runAsUser 0`);
    if (sc.privileged === true) add('security', `${d.where}: privileged`);
    if (sc.allowPrivilegeEscalation !== false) add('security', `${d.where}: allowPrivilegeEscalation is not false`);
    if (!(sc.capabilities?.drop ?? []).includes('ALL')) add('security', `${d.where}: capabilities do not drop ALL`);
    if ((sc.capabilities?.add ?? []).length)
      add('security', `${d.where}: adds capabilities ${sc.capabilities.add.join(', ')}`);
    if (!['RuntimeDefault', 'Localhost'].includes(eff('seccompProfile')?.type))
      add('security', `${d.where}: no RuntimeDefault seccomp profile`);
    if (sc.readOnlyRootFilesystem !== true) add('security', `${d.where}: root filesystem is writable`);
  }
  for (const pt of templates)
    if (pt.template.spec?.automountServiceAccountToken !== false)
      add('security', `${id(pt.owner)}: mounts a service account token it has no use for`);

  // ---- resources
  for (const d of containers) {
    const r = d.c.resources ?? {};
    for (const kind of ['requests', 'limits'])
      for (const res of ['cpu', 'memory'])
        if (r[kind]?.[res] === undefined) add('resources', `${d.where}: no ${kind}.${res}`);
    for (const res of ['cpu', 'memory']) {
      const rq = parseQuantity(r.requests?.[res]);
      const lm = parseQuantity(r.limits?.[res]);
      if (Number.isNaN(rq) || Number.isNaN(lm)) add('resources', `${d.where}: ${res} quantity not understood`);
      else if (rq !== null && lm !== null && rq > lm)
        add('resources', `${d.where}: requests.${res} above limits.${res}`);
    }
  }

  // ---- shutdown
  for (const d of containers.filter((x) => LONG_RUNNING.has(x.bin) && !x.init)) {
    const pre = d.c.lifecycle?.preStop;
    if (!pre) {
      add('shutdown', `${d.where}: no preStop (endpoints must drop the pod before SIGTERM drains it)`);
      continue;
    }
    const sleep = pre.sleep
      ? Number(pre.sleep.seconds)
      : Number(/^sleep\s+(\d+)/.exec((pre.exec?.command ?? []).slice(-1)[0] ?? '')?.[1] ?? 0);
    const comp = d.info.component;
    const drain = comp === 'frontend' ? Number(d.flag('drain-seconds') ?? src.drain.frontend) : src.drain[comp];
    const grace = d.pt.template.spec.terminationGracePeriodSeconds ?? 30;
    if (grace < sleep + drain + 5)
      add(
        'shutdown',
        `${d.where}: terminationGracePeriodSeconds ${grace} < preStop ${sleep} s + drain ${drain} s + 5 s: the kubelet would kill it mid-drain`,
      );
  }

  // ---- namespace
  const nsObjs = objects.filter((o) => o.kind === 'Namespace');
  if (nsObjs.length === 1)
    for (const o of objects)
      if (!NAMESPACED_EXCEPT.has(o.kind) && ns(o) !== nsObjs[0].metadata.name)
        add('namespace', `${id(o)} is in namespace ${ns(o) || '(none)'}, not ${nsObjs[0].metadata.name}`);

  // ---- migrate
  if (!byBin('sbctl').some((d) => d.pt.owner.kind === 'Job' && d.args[0] === 'migrate'))
    add('migrate', 'no Job runs sbctl migrate');

  return problems;
}

export const CHECKS = [
  'image',
  'flags',
  'ports',
  'probes',
  'refs',
  'env',
  'services',
  'broker',
  'keda',
  'autoscale',
  'pdb',
  'netpol',
  'security',
  'resources',
  'shutdown',
  'namespace',
  'migrate',
];
