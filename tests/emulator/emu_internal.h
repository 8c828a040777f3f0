/*
 * emu_internal: what the emulator's modules share. emu_server.c owns the HTTP
 * server, connection tracking and the life of each request; every protocol
 * file (emu_openai_chat.c with its validator emu_openai_chat_check.c, later
 * emu_openai_responses.c, emu_anthropic.c, emu_gemini.c) only turns a parsed
 * request (struct sb_emu_call) into a reply description (struct
 * sb_emu_reply), which the server then delivers: at once, after a delay, as a
 * stream of SSE events, or never (hang). emu_schema_gen.c (JSON Schema
 * instances) and emu_media.c (images, audio, files) serve every protocol.
 */
#ifndef SB_EMU_INTERNAL_H
#define SB_EMU_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "emu.h"

struct evhttp_request;

/* ---- reply description (filled by a protocol handler) ---------------------- */

#define SB_EMU_MAX_HEADERS 6

struct sb_emu_header {
    const char *name; /* static string */
    char *value;      /* owned */
};

struct sb_emu_reply {
    int status;               /* HTTP status; 0 until a handler sets it */
    const char *content_type; /* static string */
    char *body;               /* owned; the whole body unless stream */
    size_t body_len;
    struct sb_emu_header headers[SB_EMU_MAX_HEADERS];
    size_t nheaders;

    int delay_ms; /* extra delay before the first byte (directive) */
    bool hang;    /* never answer; hold the request until the client leaves */
    bool drop;    /* close the connection without answering */

    /* Streaming: status + headers, then each chunk as one HTTP chunk. */
    bool stream;
    char **chunks; /* owned */
    size_t nchunks, chunks_cap;
    int chunk_delay_ms; /* pause between chunks; 0 = send all at once */
    long hang_after;    /* >= 0: after this many chunks, hold the stream open forever */
    long drop_after;    /* >= 0: after this many chunks, close the connection */
};

void sb_emu_reply_init(struct sb_emu_reply *r);
void sb_emu_reply_clear(struct sb_emu_reply *r);
/* Sets status and a JSON body (json is borrowed; serialised compactly). */
void sb_emu_reply_json(struct sb_emu_reply *r, int status, const json_t *json);
/* Sets a header; value is copied. Silently ignored past SB_EMU_MAX_HEADERS. */
void sb_emu_reply_header(struct sb_emu_reply *r, const char *name, const char *value);
/* Appends one SSE event "data: <json>\n\n" (json borrowed). */
void sb_emu_reply_sse_json(struct sb_emu_reply *r, const json_t *json);
/* Appends raw chunk bytes (copied). */
void sb_emu_reply_chunk(struct sb_emu_reply *r, const char *data);

/* ---- one request as seen by a protocol handler ---------------------------- */

struct sb_emu;

#define SB_EMU_MAX_CHOICES 8 /* n */

struct sb_emu_call {
    struct sb_emu *emu;         /* borrowed */
    struct evhttp_request *req; /* borrowed */
    const char *method;         /* "GET", "POST", ... */
    const char *path;           /* without the query string */
    const char *body;           /* NUL-terminated copy of the body (owned by the server) */
    size_t body_len;
    json_t *json;               /* the body parsed as JSON, or NULL (borrowed) */
    struct sb_emu_reply reply;  /* filled by the handler */
};

/* Case-insensitive request header lookup; NULL if absent. */
const char *sb_emu_call_header(const struct sb_emu_call *call, const char *name);
/* The configured required key, or NULL when auth is off. */
const char *sb_emu_required_key(const struct sb_emu *emu);

/*
 * [[emu:schema_violation_once=TAG]]: true the first time this emulator sees
 * tag (and remembers it), false afterwards. The oldest tags are forgotten past
 * SB_EMU_MAX_TAGS.
 */
#define SB_EMU_MAX_TAGS 4096
bool sb_emu_tag_first_use(struct sb_emu *emu, const char *tag);

/* ---- directives (emu_directives.c) ----------------------------------------- */

#define SB_EMU_TAG_MAX 128

struct sb_emu_directives {
    int status;         /* 400..599, or 0 */
    int latency_ms;     /* extra delay, or 0 */
    bool hang;          /* never answer */
    bool drop;          /* close the connection without answering */
    bool length;        /* finish_reason "length", reply cut to one word */
    bool malformed;     /* 200 with a body that is not JSON */
    int chunk_delay_ms; /* streaming: pause between chunks, or -1 */
    long hang_after;    /* streaming: hold open after N chunks, or -1 */
    long drop_after;    /* streaming: drop the connection after N chunks, or -1 */
    bool refuse;        /* content null, message.refusal set */
    bool violate;       /* structured output / generated arguments violate the schema */
    char violate_tag[SB_EMU_TAG_MAX + 1]; /* schema_violation_once=TAG: violate on TAG's first use */
};

struct sb_emu_tool_call {
    char *name;      /* owned */
    char *arguments; /* owned; JSON text exactly as written */
};

/*
 * Finds every "[[emu:NAME]]" / "[[emu:NAME=VALUE]]" in text, fills d, and
 * returns in *clean (owned) the text with the directives removed and the
 * whitespace trimmed. Returns 0, or -EINVAL with a message in err for an
 * unknown directive or a bad value.
 */
int sb_emu_directives_parse(const char *text, struct sb_emu_directives *d, char **clean, char *err,
                            size_t errlen) __attribute__((warn_unused_result));

/*
 * If text (already cleaned) starts with "CALL ", parses every line of the form
 * "CALL <name> [<json-args>]" into *calls (owned array, *ncalls entries; free
 * with sb_emu_tool_calls_free). Returns 1 when calls were found, 0 when the
 * text is not a CALL, -EINVAL (message in err) when a CALL line is malformed.
 */
int sb_emu_directives_calls(const char *text, struct sb_emu_tool_call **calls, size_t *ncalls, char *err,
                            size_t errlen) __attribute__((warn_unused_result));
void sb_emu_tool_calls_free(struct sb_emu_tool_call **calls, size_t ncalls);

/* Whitespace-separated words in s (the emulator's token count). */
size_t sb_emu_count_words(const char *s);
/* Byte length of the prefix of s holding its first n words (no trailing space). */
size_t sb_emu_words_prefix(const char *s, size_t n);

/* ---- JSON Schema (emu_schema_gen.c) ------------------------------------------ */

/*
 * A new value satisfying schema (borrowed; "$ref"s resolve against it), with
 * text in the first free-form string and "emu" in the others. Never NULL.
 */
json_t *sb_emu_schema_instance(const json_t *schema, const char *text);
/*
 * Takes instance and returns a value that violates schema: the first required
 * property removed, an extra property where additionalProperties is false, or
 * a value of a wrong type. NULL when the schema constrains nothing a JSON value
 * could break (the caller then answers with text that is not JSON).
 */
json_t *sb_emu_schema_violate(const json_t *schema, json_t *instance /* stolen */);
/* OpenAI strict mode: 0, or -EINVAL with "In context=(...), ..." in err. */
int sb_emu_schema_strict_check(const json_t *schema, char *err, size_t errlen) __attribute__((warn_unused_result));

/* ---- media (emu_media.c) ------------------------------------------------------ */

/* Standard base64 (padding optional). *out is owned and NUL-terminated. 0 or -EINVAL. */
int sb_emu_base64_decode(const char *in, size_t len, unsigned char **out, size_t *outlen)
    __attribute__((warn_unused_result));

struct sb_emu_data_url {
    char mime[128];   /* lower-cased, parameters dropped; "" if none */
    bool base64;      /* ";base64" before the comma */
    const char *data; /* borrowed: the text after the comma */
    size_t data_len;
};
/* Splits "data:<mime>[;params][;base64],<data>". 0, or -EINVAL if url is not a data URL. */
int sb_emu_data_url_parse(const char *url, struct sb_emu_data_url *out) __attribute__((warn_unused_result));

/*
 * The acknowledgement of one (validated) user content part that the reply
 * appends after the echo ("[image: ...]", "[audio: ...]", "[file: ...]"), or
 * NULL for a text part; adds the part's prompt-token cost to *tokens. Owned.
 */
char *sb_emu_part_ack(const json_t *part, long long *tokens);

/* Code points in UTF-8 s; byte length of its first n code points. */
size_t sb_emu_utf8_length(const char *s);
size_t sb_emu_utf8_prefix(const char *s, size_t n);

/* ---- journal (emu_journal.c) ------------------------------------------------ */

struct sb_emu_journal;

struct sb_emu_journal *sb_emu_journal_new(size_t capacity);
void sb_emu_journal_destroy(struct sb_emu_journal **j);
/* Appends entry (reference stolen), evicting the oldest past capacity. */
void sb_emu_journal_add(struct sb_emu_journal *j, json_t *entry);
/* New array of the newest `limit` entries (0 = all), oldest first. */
json_t *sb_emu_journal_list(const struct sb_emu_journal *j, size_t limit);
void sb_emu_journal_clear(struct sb_emu_journal *j);
size_t sb_emu_journal_size(const struct sb_emu_journal *j);

/* ---- protocols -------------------------------------------------------------- */

/* OpenAI error body {"error":{message,type,param,code}}; param/code may be NULL. */
void sb_emu_openai_error(struct sb_emu_reply *r, int status, const char *message, const char *type,
                         const char *param, const char *code);
/* OpenAI's 401 for a missing or wrong bearer key; returns true if it replied. */
bool sb_emu_openai_check_auth(struct sb_emu_call *call);
/* 400 invalid_request_error with a formatted message (param/code may be NULL). Always returns false. */
bool sb_emu_openai_invalid(struct sb_emu_call *call, const char *param, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/*
 * Validates a Chat Completions request like the real API (emu_openai_chat_check.c):
 * Content-Type, body, every parameter, messages, content parts, tools, formats.
 * Returns false when it replied with a 400.
 */
bool sb_emu_openai_chat_check(struct sb_emu_call *call);

void sb_emu_openai_chat_handle(struct sb_emu_call *call);   /* POST /v1/chat/completions */
void sb_emu_openai_models_handle(struct sb_emu_call *call); /* GET /v1/models */

#endif
