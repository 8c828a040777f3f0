/*
 * sb_errkind: the one table of canonical error kinds (SB_ERR_*, sb_event.h)
 * and what each is called by the three vendors' APIs the gateway speaks and
 * calls: the HTTP status, OpenAI's error.type, Anthropic's error.type (and
 * the status Anthropic sends with it), and Google's google.rpc.Code name.
 * The frontend renders its error bodies from it; the worker reads Anthropic
 * error types back through it. (The upstream emulator keeps its own tables:
 * it is the independent oracle the gateway is tested against.)
 *
 * Two vendor answers depend on the status as well as the kind, and so are
 * functions, not only columns: OpenAI calls a 429 "rate_limit_error" and the
 * same causes at 503 "server_error"; Anthropic has no type of its own for a
 * gateway or upstream fault, which is "invalid_request_error" at 400, 405 and
 * 422 and "api_error" otherwise. Google's status name is a function of the
 * HTTP status alone (google.rpc.Code as Google's REST APIs map it; 501 is
 * UNIMPLEMENTED).
 *
 * All strings are static. A NULL or unknown kind answers as SB_ERR_SERVER.
 */
#ifndef SB_ERRKIND_H
#define SB_ERRKIND_H

#include <stdbool.h>
#include <stddef.h>

typedef struct sb_errkind_row {
    const char *kind;           /* SB_ERR_*: the same static string as sb_event.h's macro */
    int status;                 /* the HTTP status the gateway gives the kind by default */
    const char *openai_type;    /* OpenAI error.type at `status` */
    bool openai_by_status;      /* OpenAI's type follows the status: rate_limit_error at 429, else server_error */
    const char *anthropic_type; /* Anthropic error.type */
    bool anthropic_by_status;   /* no type of its own: invalid_request_error at 400/405/422, else anthropic_type */
    int anthropic_status;       /* the HTTP status Anthropic sends with anthropic_type (529: overloaded_error) */
    const char *google_status;  /* google.rpc.Code name of `status` */
} sb_errkind_row_t;

/* The table, in sb_event.h's order; *n gets its length. */
const sb_errkind_row_t *sb_errkind_rows(size_t *n);

/* kind -> its row; NULL for NULL or an unknown kind. */
const sb_errkind_row_t *sb_errkind_row(const char *kind);
/* The first row (table order) whose default status is `status`, or NULL:
 * 429 is rate_limit, 500 server_error, 502 upstream_error, 503 overloaded. */
const sb_errkind_row_t *sb_errkind_by_status(int status);
/* An Anthropic error.type -> the first row with it (api_error: upstream_error;
 * rate_limit_error: rate_limit), or NULL for NULL or a type Anthropic does not
 * document. */
const sb_errkind_row_t *sb_errkind_by_anthropic_type(const char *type);
/* A google.rpc.Code name -> the first row with it (INVALID_ARGUMENT:
 * invalid_request; UNAVAILABLE: upstream_error), or NULL. */
const sb_errkind_row_t *sb_errkind_by_google_status(const char *name);

/* The static SB_ERR_* string equal to kind (so it may be kept past the JSON
 * it came from); SB_ERR_SERVER for NULL or an unknown kind. */
const char *sb_errkind_intern(const char *kind);

/* OpenAI's error.type for kind at status. */
const char *sb_errkind_openai_type(const char *kind, int status);
/* Anthropic's error.type for kind at status. */
const char *sb_errkind_anthropic_type(const char *kind, int status);
/* The status Anthropic sends with an error.type (the status of a type read
 * from an SSE error event or a 200 error body); 502 for an unknown type. */
int sb_errkind_anthropic_status(const char *type);
/* Google's status name for an HTTP status. */
const char *sb_errkind_google_status(int status);

#endif
