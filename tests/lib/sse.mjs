// readSSE: a whole server-sent-event stream read into [{event, data}] (data parsed as
// JSON when it is; [DONE] stays a string), for the black-box suites (tests/fault,
// tests/multihost), which use Node's built-ins only. Throws when the connection breaks.
export async function readSSE(res) {
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  const events = [];
  let block = { event: null, data: [] };
  for (;;) {
    const { done, value } = await reader.read();
    if (!done) buf += dec.decode(value, { stream: true });
    let m;
    while ((m = /\r\n|\n|\r/.exec(buf))) {
      if (m[0] === '\r' && m.index === buf.length - 1 && !done) break;
      const line = buf.slice(0, m.index);
      buf = buf.slice(m.index + m[0].length);
      if (line === '') {
        if (block.event !== null || block.data.length) {
          const t = block.data.join('\n');
          let data = t;
          try { data = JSON.parse(t); } catch { /* [DONE] */ }
          events.push({ event: block.event, data });
        }
        block = { event: null, data: [] };
      } else if (!line.startsWith(':')) {
        const i = line.indexOf(':');
        const f = i < 0 ? line : line.slice(0, i);
        let v = i < 0 ? '' : line.slice(i + 1);
        if (v.startsWith(' ')) v = v.slice(1);
        if (f === 'event') block.event = v;
        if (f === 'data') block.data.push(v);
      }
    }
    if (done) return events;
  }
}
