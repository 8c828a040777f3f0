// Just enough PromQL to check a KEDA query against the metrics the gateway
// exports: the vector selectors it contains (metric name and label matchers,
// values unquoted as PromQL does) and the labels its aggregations group by.
// Anything this reader does not understand is an error, not a pass.

const KEYWORDS = new Set(['bool', 'and', 'or', 'unless', 'offset', 'atan2']);
const GROUPING = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);
const AGGREGATIONS = new Set([
  'sum',
  'min',
  'max',
  'avg',
  'group',
  'stddev',
  'stdvar',
  'count',
  'count_values',
  'bottomk',
  'topk',
  'quantile',
  'limitk',
  'limit_ratio',
]);

function tokenize(q) {
  const toks = [];
  let i = 0;
  while (i < q.length) {
    const rest = q.slice(i);
    let m;
    if ((m = /^\s+/.exec(rest))) {
      i += m[0].length;
      continue;
    }
    if ((m = /^"((?:[^"\\]|\\.)*)"|^'((?:[^'\\]|\\.)*)'|^`([^`]*)`/.exec(rest))) {
      const raw = m[3] !== undefined;
      toks.push({ t: 'str', v: raw ? m[3] : unquote(m[1] ?? m[2]) });
    } else if ((m = /^[0-9][0-9.]*(?:e[+-]?[0-9]+)?(?:ms|[smhdwy])?(?:[0-9]+(?:ms|[smhdwy]))*/i.exec(rest))) {
      toks.push({ t: 'num', v: m[0] });
    } else if ((m = /^[A-Za-z_:][A-Za-z0-9_:]*/.exec(rest))) {
      toks.push({ t: 'id', v: m[0] });
    } else if ((m = /^(=~|!~|!=|==|>=|<=|[{}()[\],=<>+\-*/%^@:])/.exec(rest))) {
      toks.push({ t: 'op', v: m[0] });
    } else throw new Error(`unexpected character at ${i}: ${rest.slice(0, 10)}`);
    i += m[0].length;
  }
  return toks;
}

// A double- or single-quoted PromQL string: Go's escapes. An unknown escape
// (e.g. "\." for a regex dot, which must be written "\\.") is an error, as it
// is in Prometheus.
function unquote(s) {
  return s.replace(/\\(.)/g, (all, c) => {
    const map = { '\\': '\\', '"': '"', "'": "'", n: '\n', t: '\t', r: '\r', a: '\x07', b: '\b', f: '\f', v: '\v' };
    if (c in map) return map[c];
    throw new Error(`unknown escape sequence ${all} in a PromQL string (a regex "\\." is written "\\\\.")`);
  });
}

// { selectors: [{ metric, matchers: [{ label, op, value }] }], grouping: [label] }
export function parseQuery(q) {
  const toks = tokenize(q);
  const selectors = [];
  const grouping = [];
  for (let i = 0; i < toks.length; i++) {
    const tk = toks[i];
    if (tk.t === 'op' && tk.v === '[') {
      while (i < toks.length && !(toks[i].t === 'op' && toks[i].v === ']')) i++;
      continue;
    }
    if (tk.t === 'op' && tk.v === '{') throw new Error('a selector without a metric name');
    if (tk.t !== 'id') continue;
    const next = toks[i + 1];
    if (GROUPING.has(tk.v)) {
      if (next?.v !== '(') continue;
      for (i += 2; i < toks.length && toks[i].v !== ')'; i++) if (toks[i].t === 'id') grouping.push(toks[i].v);
      continue;
    }
    if (KEYWORDS.has(tk.v)) continue;
    if (AGGREGATIONS.has(tk.v) && (next?.v === 'by' || next?.v === 'without')) continue; // sum by (l) (...)
    if (next?.t === 'op' && next.v === '(') continue; // a function or an aggregation
    const sel = { metric: tk.v, matchers: [] };
    if (next?.t === 'op' && next.v === '{') {
      for (i += 2; i < toks.length && toks[i].v !== '}'; i++) {
        if (toks[i].v === ',') continue;
        const [label, op, value] = [toks[i], toks[i + 1], toks[i + 2]];
        if (label?.t !== 'id' || !['=', '!=', '=~', '!~'].includes(op?.v) || value?.t !== 'str')
          throw new Error(`bad label matcher in ${tk.v}{...}`);
        sel.matchers.push({ label: label.v, op: op.v, value: value.v });
        i += 2;
      }
      if (i >= toks.length) throw new Error(`unterminated selector ${tk.v}{`);
    }
    selectors.push(sel);
  }
  if (!selectors.length) throw new Error('no metric selector');
  return { selectors, grouping };
}

// Prometheus regex matchers are RE2, anchored at both ends.
export function promRegex(value) {
  return new RegExp(`^(?:${value})$`);
}
