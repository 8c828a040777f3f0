/*
 * fe_error: a style-neutral error (HTTP status, canonical kind, code, param,
 * message). Each request style renders it in its own body (its vtable's
 * error_body): OpenAI's in style/openai/fe_openai.c, Anthropic's in
 * style/messages/fe_anthropic_error.c, Google's in
 * style/gemini/fe_google_error.c.
 */
#ifndef FE_ERROR_H
#define FE_ERROR_H

#include <jansson.h>
#include <stdbool.h>

typedef struct {
    int status;       /* HTTP status; 0 = no error */
    const char *kind; /* SB_ERR_* (sb_event.h), static */
    char code[64];    /* machine code, "" = null */
    char param[64];   /* offending parameter, "" = null */
    char message[1024];
    int retry_after; /* seconds for Retry-After; 0 = none */
    bool no_retry;   /* retrying cannot help (quota): x-should-retry: false, which the SDKs obey */
} fe_error_t;

void fe_error_set(fe_error_t *e, int status, const char *kind, const char *code, const char *param, const char *fmt,
                  ...) __attribute__((format(printf, 6, 7)));

/* Fills e from a canonical error event. */
void fe_error_from_event(fe_error_t *e, const json_t *ev);

#endif
