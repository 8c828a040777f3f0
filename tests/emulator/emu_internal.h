/*
 * emu_internal: what the emulator's modules share. emu_server.c owns the HTTP
 * server, connection tracking and the life of each request; every protocol
 * file (emu_openai_chat.c, emu_openai_responses.c, emu_anthropic.c,
 * emu_gemini.c, each with its *_check.c validator) only turns a parsed
 * request (struct sb_emu_call) into a reply description (struct
 * sb_emu_reply), which the server then delivers: at once, after a delay, as a
 * stream of SSE events, or never (hang). emu_answer.c (what the model says),
 * emu_directives.c, emu_schema_gen.c (JSON Schema instances) and emu_media.c
 * (images, audio, files) serve every protocol; emu_check.c (typed-field
 * checks, emu_check.h) serves every validator, and emu_openai_check.c
 * (emu_openai_check.h) the two OpenAI ones.
 */
#ifndef SB_EMU_INTERNAL_H
#define SB_EMU_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emu.h"

struct evhttp_request;

/* ---- reply description (filled by a protocol handler; emu_reply.c) --------- */

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

    /* Faults of the delivery (emu_faults.c sets them from the directives). */
    int trickle_ms;   /* > 0: the body (or the stream) goes out in SB_EMU_TRICKLE_BYTES pieces this far apart */
    bool reset;       /* reset the TCP connection part-way: after half the body (a stream: half the chunks) */
    long reset_after; /* >= 0, streaming: after this many chunks, reset the TCP connection */

    /*
     * Endless stream ([[emu:endless]]): after the chunks, one more event
     * forever, every chunk_delay_ms (at least 1 ms): pre + the JSON
     * (with seq_field, when not NULL, set to endless_seq, endless_seq + 1, ...)
     * + post. Set with sb_emu_reply_endless.
     */
    json_t *endless_json;          /* owned; NULL = not endless */
    const char *endless_pre;       /* static */
    const char *endless_post;      /* static */
    const char *endless_seq_field; /* static or NULL */
    long long endless_seq;
};

void sb_emu_reply_init(struct sb_emu_reply *r);
void sb_emu_reply_clear(struct sb_emu_reply *r);
/* Sets status and a JSON body (json is borrowed; serialised compactly). */
void sb_emu_reply_json(struct sb_emu_reply *r, int status, const json_t *json);
/* Sets a header; value is copied. Silently ignored past SB_EMU_MAX_HEADERS. */
void sb_emu_reply_header(struct sb_emu_reply *r, const char *name, const char *value);
/* Appends one SSE event "data: <json>\n\n" (json borrowed). */
void sb_emu_reply_sse_json(struct sb_emu_reply *r, const json_t *json);
/*
 * Appends one SSE event: "event: <event>\n" when event is not NULL, then
 * "data: <json>" and the terminator ("\n\n"; Google sends "\r\n\r\n").
 */
void sb_emu_reply_sse(struct sb_emu_reply *r, const char *event, const json_t *json, const char *terminator);
/* Appends raw chunk bytes (copied). */
void sb_emu_reply_chunk(struct sb_emu_reply *r, const char *data);
/* Makes r a 200 text/event-stream reply (chunks follow). */
void sb_emu_reply_stream_start(struct sb_emu_reply *r);
/* Makes r endless after its chunks (see endless_json); json is stolen, the strings static. */
void sb_emu_reply_endless(struct sb_emu_reply *r, const char *pre, json_t *json, const char *post,
                          const char *seq_field, long long first_seq);
/* 200 with body text (copied) that is not the JSON it pretends to be ([[emu:malformed]]). */
void sb_emu_reply_malformed(struct sb_emu_reply *r, const char *text);

/* Bytes per piece of a trickled body ([[emu:trickle=MS]]). */
#define SB_EMU_TRICKLE_BYTES 16
/* Pause between the events of an endless stream when chunk_delay is not given. */
#define SB_EMU_ENDLESS_DELAY_MS 50
/* The text of every content delta an endless stream repeats. */
#define SB_EMU_ENDLESS_TEXT " more"

/* ---- one request as seen by a protocol handler (emu_call.c) --------------- */

struct sb_emu;
struct sb_emu_faults;

#define SB_EMU_MAX_CHOICES 8 /* n */
#define SB_EMU_REQUEST_ID_MAX 80

struct sb_emu_call {
    struct sb_emu *emu;         /* borrowed */
    struct evhttp_request *req; /* borrowed */
    const char *method;         /* "GET", "POST", ... */
    const char *path;           /* without the query string */
    const char *body;           /* NUL-terminated copy of the body (owned by the server) */
    size_t body_len;
    const char *query;                      /* the query string, or NULL */
    json_t *json;                           /* the body parsed as JSON, or NULL (borrowed) */
    char request_id[SB_EMU_REQUEST_ID_MAX]; /* "req_<hex>", also sent as x-request-id */
    const char *protocol;                   /* static; set by the handler: "openai-chat", "openai-responses", ... */
    char *model;                            /* owned (sb_emu_call_set_model): the upstream model asked for, or NULL */
    bool faulted;                           /* the reply carries an injected fault (per-model stats) */
    struct sb_emu_reply reply;              /* filled by the handler */
};

/* Records the upstream model the request asks for (copied; NULL-safe): the route of its faults and stats. */
void sb_emu_call_set_model(struct sb_emu_call *call, const char *model);
/* The same, from a JSON body's "model" when it is a non-empty string. */
void sb_emu_call_set_model_from_body(struct sb_emu_call *call);

/* Case-insensitive request header lookup; NULL if absent. */
const char *sb_emu_call_header(const struct sb_emu_call *call, const char *name);
/* A query-string parameter (decoded, owned), or NULL if absent. */
char *sb_emu_call_query_param(const struct sb_emu_call *call, const char *name);
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
    int status;                           /* 400..599, or 0 */
    int latency_ms;                       /* extra delay, or 0 */
    bool hang;                            /* never answer */
    bool drop;                            /* close the connection without answering */
    bool length;                          /* finish_reason "length", reply cut to one word */
    bool malformed;                       /* 200 with a body that is not JSON */
    int chunk_delay_ms;                   /* streaming: pause between chunks, or -1 */
    long hang_after;                      /* streaming: hold open after N chunks, or -1 */
    long drop_after;                      /* streaming: drop the connection after N chunks, or -1 */
    bool refuse;                          /* content null, message.refusal set */
    bool violate;                         /* structured output / generated arguments violate the schema */
    char violate_tag[SB_EMU_TAG_MAX + 1]; /* schema_violation_once=TAG: violate on TAG's first use */
    /* Fault modes (emu_faults.c). */
    int retry_after;         /* Retry-After seconds on an error reply, or -1 */
    bool quota;              /* a 429 is an insufficient-quota one (implies status=429) */
    int trickle_ms;          /* body in small pieces this far apart, or 0 */
    bool reset;              /* reset the connection part-way through the body */
    long reset_after;        /* streaming: reset after N events, or -1 */
    bool endless;            /* streaming: content deltas forever, never the final event */
    bool context_exceeded;   /* 400 context length exceeded */
    long long context_limit; /* context=N: an input of more than N tokens is refused as too long, or -1 */
    bool leak_key;           /* an error whose message quotes the credential the request carried */
    int auth_fault;          /* bad_key (401, Gemini 400) / key_forbidden (403): the provider's answer, or 0 */
};

struct sb_emu_tool_call {
    char *name;      /* owned */
    char *arguments; /* owned; JSON text exactly as written (a custom tool's call: its raw input text) */
    bool custom;     /* a Responses custom (freeform) tool: custom_tool_call with string input */
};

/*
 * Finds every "[[emu:NAME]]" / "[[emu:NAME=VALUE]]" in text, fills d, and
 * returns in *clean (owned) the text with the directives removed and the
 * whitespace trimmed. Returns 0, or -EINVAL with a message in err for an
 * unknown directive or a bad value.
 */
int sb_emu_directives_parse(const char *text, struct sb_emu_directives *d, char **clean, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/*
 * A directive list as a route fault gives it: "status=503 retry_after=2"
 * (names and values as in-band, separated by whitespace or commas; a
 * "[[emu:...]]" wrapper is accepted too). Fills d (reset first). 0, or
 * -EINVAL naming the bad directive in err; an empty list is -EINVAL.
 */
int sb_emu_directives_parse_list(const char *list, struct sb_emu_directives *d, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* Fills what d leaves unset from route (the request's own directives win). */
void sb_emu_directives_merge(struct sb_emu_directives *d, const struct sb_emu_directives *route);

/*
 * If text (already cleaned) starts with "CALL ", parses every line of the form
 * "CALL <name> [<json-args>]" into *calls (owned array, *ncalls entries; free
 * with sb_emu_tool_calls_free). Returns 1 when calls were found, 0 when the
 * text is not a CALL, -EINVAL (message in err) when a CALL line is malformed.
 */
int sb_emu_directives_calls(const char *text, struct sb_emu_tool_call **calls, size_t *ncalls, char *err, size_t errlen)
    __attribute__((warn_unused_result));
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
/* The same, also accepting the URL-safe alphabet ("-", "_"), as protobuf's JSON bytes do. */
int sb_emu_base64url_decode(const char *in, size_t len, unsigned char **out, size_t *outlen)
    __attribute__((warn_unused_result));
/* Google's strict reading of proto3 JSON bytes: decodes as
 * sb_emu_base64url_decode and the bits after the last whole byte are zero
 * (RFC 4648 §3.5), so "str" fails as it does at Google. 0 or -EINVAL. */
int sb_emu_base64url_decode_strict(const char *in, size_t len, unsigned char **out, size_t *outlen)
    __attribute__((warn_unused_result));
/* Standard base64 with padding of len bytes; owned. */
char *sb_emu_base64_encode(const void *data, size_t len);

struct sb_emu_data_url {
    char mime[128];   /* lower-cased, parameters dropped; "" if none */
    bool base64;      /* ";base64" before the comma */
    const char *data; /* borrowed: the text after the comma */
    size_t data_len;
};
/* Splits "data:<mime>[;params][;base64],<data>". 0, or -EINVAL if url is not a data URL. */
int sb_emu_data_url_parse(const char *url, struct sb_emu_data_url *out) __attribute__((warn_unused_result));

/* NULL if b64 (len bytes) is non-empty valid base64, else what is wrong with
 * it, worded for OpenAI's error messages ("an invalid base64-encoded value"). */
const char *sb_emu_base64_problem(const char *b64, size_t len);

/* NULL when url is an image URL OpenAI accepts (http(s), or a base64 data URL
 * of a PNG, JPEG, GIF or WebP image), else what is wrong with it (static, or
 * written into buf). */
const char *sb_emu_image_url_problem(const char *url, char *buf, size_t len);

/*
 * The acknowledgement of one (validated) user content part that the reply
 * appends after the echo ("[image: ...]", "[audio: ...]", "[file: ...]"), or
 * NULL for a text part; adds the part's prompt-token cost to *tokens. Owned.
 */
char *sb_emu_part_ack(const json_t *part, long long *tokens);

/*
 * The same acknowledgements for the other protocols' attachment shapes, so
 * one attachment reads the same whatever format carried it. Each returns an
 * owned string and adds the prompt-token cost to *tokens (85 per image,
 * decoded bytes / 100 per audio clip or file). b64 is already validated.
 */
char *sb_emu_ack_image_url(const char *url, long long *tokens);                    /* http(s) or data URL */
char *sb_emu_ack_image_data(const char *mime, const char *b64, long long *tokens); /* [image: data:<mime>, N bytes] */
char *sb_emu_ack_image_ref(const char *ref, long long *tokens);                    /* [image: <file id or URI>] */
char *sb_emu_ack_audio(const char *format, const char *b64, long long *tokens);    /* [audio: <format>, N bytes] */
char *sb_emu_ack_file_data(const char *name, const char *mime, const char *b64, long long *tokens);
char *sb_emu_ack_file_text(const char *name, const char *mime, const char *text, long long *tokens);
char *sb_emu_ack_file_ref(const char *ref); /* [file: <file id or URL>] */
/* Appends ack (owned, may be NULL) to *acks after one space; frees ack. */
void sb_emu_acks_append(char **acks, char *ack);

/* Code points in UTF-8 s; byte length of its first n code points. */
size_t sb_emu_utf8_length(const char *s);
size_t sb_emu_utf8_prefix(const char *s, size_t n);

/* ---- the answer (emu_answer.c) -------------------------------------------------- */

/*
 * The protocol-independent core of every reply. A protocol file validates its
 * request, reduces it to a struct sb_emu_ask (what the emulated model reads),
 * and the engine decides what the model says (struct sb_emu_answer): echo,
 * tool result, CALL directive or forced tool calls, structured output, web
 * search, refusal, stop and length cuts, reasoning, token counts. The protocol
 * file then writes the answer in its own wire format. Keeping this in one
 * place is what makes "[[emu:length]]" or "CALL f {}" behave identically in
 * Chat Completions, Responses, Messages and Gemini.
 */

#define SB_EMU_REFUSAL_TEXT "I'm sorry, I can't help with that."
#define SB_EMU_NOT_JSON_PREFIX "This is not JSON: "

/* A function tool the request declares (borrowed pointers). */
struct sb_emu_fn {
    const char *name;
    const json_t *schema; /* JSON Schema of the arguments; NULL = none */
    bool custom;          /* a Responses custom (freeform) tool: only scenarios call it, never CALL or tool_choice */
};

/* One tool result of the request's last turn: what a scenario's after_result reads. */
struct sb_emu_tool_result {
    const char *name; /* borrowed: the tool whose call it answers, or NULL when the request does not say */
    char *text;       /* owned: its text */
};
/* Frees the texts and the array (NULL-safe). */
void sb_emu_tool_results_free(struct sb_emu_tool_result *results, size_t n);

enum sb_emu_format {
    SB_EMU_FMT_TEXT,   /* plain text */
    SB_EMU_FMT_JSON,   /* any JSON object: {"echo":"<text>"} */
    SB_EMU_FMT_SCHEMA, /* an instance of schema, as compact JSON text */
    SB_EMU_FMT_ENUM,   /* Gemini text/x.enum: the instance of schema as bare text */
};

struct sb_emu_ask {
    const char *user_text; /* raw text of the last user turn, directives included ("" if none) */
    const char *acks;      /* its attachments' acknowledgements joined by one space ("" if none) */
    const char *tool_text; /* non-NULL: the request ends with a tool result; its text */
    const char *extra;     /* appended to echo / tool-result text (e.g. " [reasoning seen: x]"); may be NULL */
    /* Every tool a call can name, in the order offered. */
    const struct sb_emu_fn *fns;
    size_t nfns;
    /* The tool results of the last turn, in order (what a scenario's after_result reads). */
    const struct sb_emu_tool_result *results;
    size_t nresults;
    const char *forced; /* the function tool_choice forces, or NULL */
    bool no_calls;      /* tool_choice forbids calls (none / NONE) */
    bool objects_only;  /* arguments must be JSON objects (Messages tool_use.input, Gemini args) */
    bool search;        /* a built-in web search tool is offered and allowed */
    enum sb_emu_format format;
    const json_t *schema;  /* SB_EMU_FMT_SCHEMA / SB_EMU_FMT_ENUM */
    const char *reasoning; /* non-NULL: reason, labelled "Reasoning (<this>) about: <text>" */
    size_t n;              /* choices / candidates, 1..SB_EMU_MAX_CHOICES */
    long long max_words;   /* > 0: cut the text to this many words (finish LENGTH) */
    const json_t *stop;    /* a string or an array of strings, or NULL */
};

enum sb_emu_finish {
    SB_EMU_FINISH_STOP,
    SB_EMU_FINISH_LENGTH, /* [[emu:length]] or the token limit */
    SB_EMU_FINISH_TOOL_CALLS,
    SB_EMU_FINISH_STOP_SEQUENCE, /* cut at a stop sequence (stop_seq says which) */
    SB_EMU_FINISH_REFUSAL,       /* [[emu:refuse]]: the text is SB_EMU_REFUSAL_TEXT */
};

struct sb_emu_choice {
    char *text; /* owned; NULL with tool calls */
    enum sb_emu_finish finish;
    const char *stop_seq; /* borrowed from ask->stop when finish is STOP_SEQUENCE */
};

struct sb_emu_answer {
    struct sb_emu_directives d; /* from the last user text */
    char *clean;                /* owned: the last user text without directives, trimmed */
    size_t n;
    struct sb_emu_choice choices[SB_EMU_MAX_CHOICES];
    struct sb_emu_tool_call *calls; /* owned; the same calls in every choice */
    size_t ncalls;
    bool searched;              /* a web search was made (query = clean) */
    char *reasoning;            /* owned; NULL unless asked */
    long long output_tokens;    /* text / call words over all choices, reasoning excluded */
    long long reasoning_tokens; /* reasoning words * n */
};

/*
 * Parses the directives of user_text into a (zeroed first). 0, or -EINVAL
 * with a message in err (the protocol answers 400). The caller then runs the
 * fault stage (sb_emu_fault_stage: route faults, status, context, latency,
 * hang, drop, trickle, reset), handles malformed, and calls
 * sb_emu_answer_make.
 */
int sb_emu_answer_begin(struct sb_emu_answer *a, const char *user_text, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/*
 * Decides the answer. 0, or a negative code with a message in err: -EINVAL
 * for a malformed CALL line, -ENOENT for a CALL of a function the request
 * does not declare.
 */
int sb_emu_answer_make(struct sb_emu_call *call, const struct sb_emu_ask *ask, struct sb_emu_answer *a, char *err,
                       size_t errlen) __attribute__((warn_unused_result));
void sb_emu_answer_free(struct sb_emu_answer *a);
/* [[emu:schema_violation]], or [[emu:schema_violation_once=TAG]] on TAG's first use. Ask once per request. */
bool sb_emu_want_violation(struct sb_emu_call *call, const struct sb_emu_directives *d);
/* Length of the next streamed piece of s: leading whitespace plus one word. */
size_t sb_emu_next_word_piece(const char *s);
/* Length of the next piece of JSON arguments: up to 8 bytes, never splitting a UTF-8 sequence. */
size_t sb_emu_next_args_piece(const char *s);
/* "emulated upstream error NNN" */
#define SB_EMU_STATUS_MESSAGE_FMT "emulated upstream error %d"

/* ---- fault injection (emu_faults.c) ------------------------------------------ */

/*
 * How a protocol writes the errors a fault asks for, each in the provider's
 * own error body. status: [[emu:status=NNN]] with d->quota and the
 * Retry-After d asks for (sb_emu_retry_after). context: the context window
 * is exceeded, the input being `tokens` against `limit`; NULL where a
 * context limit does not apply (token counting).
 */
struct sb_emu_fault_errors {
    void (*status)(struct sb_emu_call *call, int status, const struct sb_emu_directives *d);
    void (*context)(struct sb_emu_call *call, long long tokens, long long limit);
    long long context_window; /* the provider's limit when only context_exceeded is given */
    /* [[emu:leak_key]]: an error with this message (it quotes the request's
     * credential): the status error's body with `status`, or, when stream,
     * a 200 stream that fails after its first event with the provider's
     * in-stream error. */
    void (*leak)(struct sb_emu_call *call, int status, const char *message, bool stream);
    /* [[emu:bad_key]] (auth 401) / [[emu:key_forbidden]] (auth 403): what the
     * provider answers for a key it refuses; credential is what the request
     * carried ("" when none), for providers whose message quotes part of it. */
    void (*auth)(struct sb_emu_call *call, int auth, const char *credential);
};

/*
 * The fault stage: every handler runs it once the request is valid and its
 * directives are read (d, from the last user text). It folds in the route
 * faults configured for call->model (PUT /_emu/faults/{model}; the request's
 * own directives win), puts the delivery faults on the reply (latency, hang,
 * drop, trickle, reset), marks call->faulted, and answers the context or
 * status error when one is due. prompt_tokens is the input count usage
 * reports; stream says whether the stream-only faults apply. Returns true
 * when the reply is decided (the handler stops there); false to go on, when
 * the handler still owes [[emu:malformed]] and, for a stream,
 * sb_emu_stream_faults.
 */
bool sb_emu_fault_stage(struct sb_emu_call *call, struct sb_emu_directives *d, bool stream, long long prompt_tokens,
                        const struct sb_emu_fault_errors *errs);
/* A stream's pacing and faults from d: chunk_delay, hang_after, drop_after, reset_after. */
void sb_emu_stream_faults(struct sb_emu_reply *rep, const struct sb_emu_directives *d);
/* Seconds for Retry-After on an error reply with this status: retry_after=S, else 1 for a 429 that is not
 * about quota; -1 for none. */
int sb_emu_retry_after(const struct sb_emu_directives *d, int status);
/* The fault table and per-model counters of the emulator (emu_server.c owns it). */
struct sb_emu_faults *sb_emu_faults_of(struct sb_emu *emu);

/* ---- scenarios (emu_scenarios.c) ---------------------------------------------- */

struct sb_emu_scenarios;
/* The per-model scenarios of the emulator (emu_server.c owns them; emu_scenarios.h). */
struct sb_emu_scenarios *sb_emu_scenarios_of(struct sb_emu *emu);

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
/*
 * What the journal keeps of a request (a new object, numbered seq):
 * method, path, query and headers (names lower-cased; credential values and
 * Gemini's ?key= replaced by "[redacted]"), "auth_header" (which credential
 * carrier was used, or null), and the parsed body. The server adds what the
 * handler decided (request_id, protocol, status, model, fault).
 */
json_t *sb_emu_journal_entry(const struct sb_emu_call *call, uint64_t seq);

/* ---- protocols -------------------------------------------------------------- */

/* OpenAI's error bodies (emu_openai_error.c), for both OpenAI protocols and the server's 404. */
/* OpenAI error body {"error":{message,type,param,code}}; param/code may be NULL. */
void sb_emu_openai_error(struct sb_emu_reply *r, int status, const char *message, const char *type, const char *param,
                         const char *code);
/* OpenAI's 401 for a missing or wrong bearer key; returns true if it replied. */
bool sb_emu_openai_check_auth(struct sb_emu_call *call);
/* 400 invalid_request_error with a formatted message (param/code may be NULL). Always returns false. */
bool sb_emu_openai_invalid(struct sb_emu_call *call, const char *param, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* [[emu:status=NNN]] as an OpenAI error (429: rate_limit_exceeded or, with quota, insufficient_quota;
 * Retry-After as sb_emu_retry_after says). d may be NULL. */
void sb_emu_openai_status_error(struct sb_emu_call *call, int status, const struct sb_emu_directives *d);
/* [[emu:bad_key]] / [[emu:key_forbidden]] as OpenAI answers them (sb_emu_fault_errors.auth). */
void sb_emu_openai_auth_error(struct sb_emu_call *call, int auth, const char *credential);
/* [[emu:leak_key]] before a stream (or without one): an OpenAI error body with message. */
void sb_emu_openai_leak_error(struct sb_emu_call *call, int status, const char *message);

/*
 * Content-Type application/json and a JSON object body, with OpenAI's
 * messages (emu_openai_check.c, where the rest of what the two OpenAI
 * validators share is). Returns false after replying 400.
 */
bool sb_emu_openai_check_body(struct sb_emu_call *call);

/* OpenAI Chat Completions (emu_openai_chat.c). */
/*
 * Validates a Chat Completions request like the real API (emu_openai_chat_check.c):
 * Content-Type, body, every parameter, messages, content parts, tools, formats.
 * Returns false when it replied with a 400.
 */
bool sb_emu_openai_chat_check(struct sb_emu_call *call);

void sb_emu_openai_chat_handle(struct sb_emu_call *call);   /* POST /v1/chat/completions */
void sb_emu_openai_models_handle(struct sb_emu_call *call); /* GET /v1/models */

/* OpenAI Responses (emu_openai_responses.c, validation in emu_openai_responses_check.c). */
/* count: a POST /v1/responses/input_tokens body (fewer parameters; model and input optional). */
bool sb_emu_openai_responses_check(struct sb_emu_call *call, bool count);
void sb_emu_openai_responses_handle(struct sb_emu_call *call);       /* POST /v1/responses */
void sb_emu_openai_responses_count_handle(struct sb_emu_call *call); /* POST /v1/responses/input_tokens */

/* Anthropic Messages (emu_anthropic.c, validation in emu_anthropic_check.c). */
/* {"type":"error","error":{"type","message"},"request_id"} */
void sb_emu_anthropic_error(struct sb_emu_call *call, int status, const char *type, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* x-api-key and anthropic-version (+ anthropic-beta syntax); returns false after replying. */
bool sb_emu_anthropic_check_headers(struct sb_emu_call *call);
/* Validates a Messages (or count_tokens) request body; returns false after replying 400. */
bool sb_emu_anthropic_check(struct sb_emu_call *call, bool count_tokens);
/* The signature the emulator issues for a thinking text ("emu-sig:" + base64); owned. */
char *sb_emu_anthropic_signature(const char *thinking);
void sb_emu_anthropic_messages_handle(struct sb_emu_call *call); /* POST /v1/messages */
void sb_emu_anthropic_count_handle(struct sb_emu_call *call);    /* POST /v1/messages/count_tokens */
void sb_emu_anthropic_models_handle(struct sb_emu_call *call);   /* GET /v1/models with x-api-key */

/* Google Gemini (emu_gemini.c, validation in emu_gemini_check.c). */
/* {"error":{"code","message","status"[,"details"]}}; details (stolen) may be NULL. */
void sb_emu_gemini_error(struct sb_emu_reply *r, int code, const char *status, json_t *details, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Gemini reads both lowerCamelCase and snake_case field names (proto3 JSON); this gets either. */
json_t *sb_emu_gget(const json_t *obj, const char *camel);
/*
 * Validates a GenerateContentRequest (count: a countTokens body) like the
 * real API: unknown names, enums, oneofs, bytes, turn order, function
 * responses, thought signatures. Returns false after replying 400.
 */
bool sb_emu_gemini_check(struct sb_emu_call *call, const json_t *req, bool count);
/* The proto3 JSON phase of that check on an EmbedContentRequest (or, batch, a BatchEmbedContentsRequest) body. */
bool sb_emu_gemini_check_embed_proto(struct sb_emu_call *call, bool batch);
/* Google's bodies for the faults of a request with no context limit (countTokens, embeddings): status, leak, auth. */
extern const struct sb_emu_fault_errors sb_emu_gemini_plain_errors;
/* Whether the request asks the model to think (thinkingConfig with a non-zero budget, a level, or includeThoughts). */
bool sb_emu_gemini_thinking(const json_t *req);
/* The thoughtSignature the emulator puts on a function call part: base64("emu-ts:<name>"); owned. */
char *sb_emu_gemini_signature(const char *name);
/* Converts a Gemini Schema (OpenAPI subset: upper-case types, nullable) to JSON Schema; new reference. */
json_t *sb_emu_gemini_schema_to_json(const json_t *schema);
/* Every /v1beta/... request (and /v1/models/...:method); see main.c. */
void sb_emu_gemini_route(struct sb_emu_call *call, bool is_get);

#endif
