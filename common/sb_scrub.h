/*
 * sb_scrub: takes the operator's secrets out of text that came from an
 * upstream, before it can reach a client, a log line or a database row.
 *
 * An upstream may quote the credential it received in an error message
 * (OpenAI-compatible servers and proxies do: "Received API Key = ..."). The
 * scrubber replaces two things with SB_SCRUB_MARKER:
 *   - every secret it was given (sb_scrub_add: the credentials the process
 *     knows), wherever it occurs, and a tail of the text that is the start of
 *     one (a message clipped in the middle of a key must not keep the half);
 *   - anything shaped like a provider key, whoever it belongs to: sk-...
 *     (OpenAI, Anthropic sk-ant-, OpenRouter sk-or-), AIza... (Google),
 *     gsk_, hf_, xai-, pplx-, r8_ keys, masked keys ("0a1b****wxyz": their
 *     visible ends are pieces of a secret), JWTs (eyJ...), the token after
 *     "Bearer", the value after a credential header or parameter name
 *     (authorization, x-api-key, x-goog-api-key, api-key, api_key, apikey),
 *     and a long token mixing letters and digits after the words key, token,
 *     secret or password ("Received API Key = 0a1b...").
 * Ordinary text is left alone: the shapes need a word boundary and a minimum
 * length, and a word after "key"/"token" is taken only when it is at least
 * 16 characters of letters and digits together ("API key not valid" and
 * "max_tokens: 4096" stay as they are).
 *
 * Pure and single-threaded: an sb_scrub_t is owned by one loop.
 */
#ifndef SB_SCRUB_H
#define SB_SCRUB_H

#include <stdbool.h>
#include <stddef.h>

/* What a removed secret becomes. */
#define SB_SCRUB_MARKER "[redacted]"
/* Shortest secret sb_scrub_add takes: shorter strings occur in ordinary
 * text too often to be removed everywhere (no real provider key is). */
#define SB_SCRUB_MIN_SECRET 8
/* Most secrets one scrubber keeps (later ones are refused). */
#define SB_SCRUB_MAX_SECRETS 1024

typedef struct sb_scrub sb_scrub_t;

/* Never NULL (aborts on out of memory). */
sb_scrub_t *sb_scrub_new(void);
/* NULL-safe; sets *s to NULL. */
void sb_scrub_destroy(sb_scrub_t **s);

/* Remembers secret (copied). Returns true when added; false when NULL,
 * shorter than SB_SCRUB_MIN_SECRET, part of SB_SCRUB_MARKER, already known,
 * or the table is full. */
bool sb_scrub_add(sb_scrub_t *s, const char *secret);
/* Secrets remembered. */
size_t sb_scrub_count(const sb_scrub_t *s);

/* Adds the value of every environment variable whose name says it holds a
 * credential (contains KEY, TOKEN, SECRET, PASSWORD or CREDENTIAL, any
 * case), so that a route's credential is known before its first job.
 * Returns how many were added. */
size_t sb_scrub_add_env(sb_scrub_t *s);

/* text with every secret of s (s may be NULL: shapes only), extra (one more
 * secret, may be NULL) and every key-shaped token replaced by
 * SB_SCRUB_MARKER; a run of adjacent removals becomes one marker. Returns a
 * new string (free()); NULL only when text is NULL. */
char *sb_scrub_text(const sb_scrub_t *s, const char *text, const char *extra);

/* Whether sb_scrub_text would change text. */
bool sb_scrub_found(const sb_scrub_t *s, const char *text, const char *extra);

#endif
