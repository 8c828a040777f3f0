// Every rendered object against its OpenAPI schema: Kubernetes' built-in kinds
// with kubernetes-models, KEDA's with @kubernetes-models/keda, CloudNativePG's
// with @kubernetes-models/cloudnative-pg. An apiVersion/kind none of them
// knows is an error (a typo there would otherwise be applied unchecked, or
// refused by the API server only at deploy time).

// apiVersion group -> the package holding its models.
const PACKAGES = {
  'keda.sh': '@kubernetes-models/keda',
  'postgresql.cnpg.io': '@kubernetes-models/cloudnative-pg',
};

const cache = new Map();

async function modelsFor(apiVersion) {
  if (!cache.has(apiVersion)) {
    const group = apiVersion.includes('/') ? apiVersion.split('/')[0] : '';
    const pkg = PACKAGES[group] ?? 'kubernetes-models';
    cache.set(
      apiVersion,
      import(`${pkg}/${apiVersion}`).catch(() => null),
    );
  }
  return cache.get(apiVersion);
}

// The model class for obj, or null when its apiVersion/kind is unknown.
export async function modelOf(obj) {
  if (typeof obj?.apiVersion !== 'string' || typeof obj?.kind !== 'string') return null;
  const mod = await modelsFor(obj.apiVersion);
  const Model = mod?.[obj.kind];
  if (typeof Model !== 'function' || Model.apiVersion !== obj.apiVersion || Model.kind !== obj.kind) return null;
  return Model;
}

// kustomize writes a Secret's base64 data in 70-column lines; the API server
// decodes it with Go's base64, which skips CR and LF. The schema's "byte"
// format does not, so the lines are joined first (nothing else is changed).
function apiServerView(obj) {
  if (obj.apiVersion !== 'v1' || obj.kind !== 'Secret' || !obj.data) return obj;
  const data = Object.fromEntries(
    Object.entries(obj.data).map(([k, v]) => [k, typeof v === 'string' ? v.replace(/[\r\n]/g, '') : v]),
  );
  return { ...obj, data };
}

// [] when obj is known and valid; the reasons otherwise.
export async function schemaProblems(obj) {
  const what = `${obj?.kind ?? '?'}/${obj?.metadata?.name ?? '?'}`;
  const Model = await modelOf(obj);
  if (!Model) return [`${what}: unknown apiVersion/kind ${obj?.apiVersion}/${obj?.kind}`];
  try {
    new Model(apiServerView(obj)).validate();
    return [];
  } catch (e) {
    return [`${what} (${obj.apiVersion}): ${e.message}`];
  }
}
