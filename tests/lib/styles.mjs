// What each API style's answer says, for the black-box suites (tests/fault,
// tests/multihost): the text of a success, and the style's own error body.

export function textOf(style, j) {
  try {
    if (style === 'responses') {
      return j.output.filter((o) => o.type === 'message').flatMap((o) => o.content).map((c) => c.text ?? '').join('');
    }
    if (style === 'chat') return j.choices[0].message.content;
    if (style === 'messages') return j.content.map((c) => c.text ?? '').join('');
    return j.candidates[0].content.parts.map((p) => p.text ?? '').join('');
  } catch { return null; }
}

// The style's error body, or null when the body is not one: {code, message}.
export function styleError(style, j) {
  if (!j || typeof j !== 'object' || !j.error || typeof j.error !== 'object') return null;
  const e = j.error;
  if (typeof e.message !== 'string' || !e.message) return null;
  if (style === 'messages') return j.type === 'error' && typeof e.type === 'string' ? { code: e.type, message: e.message } : null;
  if (style === 'gemini') return Number.isInteger(e.code) && typeof e.status === 'string' ? { code: e.status, message: e.message } : null;
  return 'type' in e && 'param' in e && 'code' in e ? { code: e.code ?? e.type, message: e.message } : null;
}
