/*
 * emu_openai_error: OpenAI's error bodies, {"error":{message,type,param,code}},
 * as both OpenAI protocols answer them (emu_openai_chat.c,
 * emu_openai_responses.c, their validators, and the server's 404 for an
 * unknown /v1 path): the 400 of a check, the 401 of a missing or wrong bearer
 * key, and the errors the fault stage asks for ([[emu:status=NNN]],
 * [[emu:bad_key]], [[emu:key_forbidden]], [[emu:leak_key]]). The emulator's
 * own wording, modelled on the real API's; not shared with the gateway.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_internal.h"
#include "sb_alloc.h"

#define MSG_MAX 640

void sb_emu_openai_error(struct sb_emu_reply *r, int status, const char *message, const char *type, const char *param,
                         const char *code)
{
    json_t *e = json_pack("{s:{s:s, s:s, s:s?, s:s?}}", "error", "message", message, "type", type, "param", param,
                          "code", code);
    sb_emu_reply_json(r, status, e);
    json_decref(e);
}

bool sb_emu_openai_check_auth(struct sb_emu_call *call)
{
    const char *key = sb_emu_required_key(call->emu);
    if (!key)
        return false;
    const char *auth = sb_emu_call_header(call, "Authorization");
    if (auth && !strncmp(auth, "Bearer ", 7) && !strcmp(auth + 7, key))
        return false;
    sb_emu_openai_error(&call->reply, 401, "Incorrect API key provided", "invalid_request_error", NULL,
                        "invalid_api_key");
    return true;
}

static bool vinvalid(struct sb_emu_call *call, const char *param, const char *code, const char *fmt, va_list ap)
{
    char msg[MSG_MAX];
    vsnprintf(msg, sizeof msg, fmt, ap);
    sb_emu_openai_error(&call->reply, 400, msg, "invalid_request_error", param, code);
    return false;
}

bool sb_emu_openai_invalid(struct sb_emu_call *call, const char *param, const char *code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vinvalid(call, param, code, fmt, ap);
    va_end(ap);
    return false;
}

#define QUOTA_MESSAGE                                                                                                  \
    "You exceeded your current quota, please check your plan and billing details. For more information on this "       \
    "error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors."

void sb_emu_openai_status_error(struct sb_emu_call *call, int status, const struct sb_emu_directives *d)
{
    struct sb_emu_reply *rep = &call->reply;
    char msg[64];
    snprintf(msg, sizeof msg, SB_EMU_STATUS_MESSAGE_FMT, status);
    if (status == 429 && d && d->quota)
        sb_emu_openai_error(rep, status, QUOTA_MESSAGE, "insufficient_quota", NULL, "insufficient_quota");
    else if (status == 429)
        sb_emu_openai_error(rep, status, msg, "requests", NULL, "rate_limit_exceeded");
    else if (status >= 500)
        sb_emu_openai_error(rep, status, msg, "server_error", NULL, NULL);
    else
        sb_emu_openai_error(rep, status, msg, "invalid_request_error", NULL, NULL);
    int retry = sb_emu_retry_after(d, status);
    if (retry >= 0) {
        char v[16];
        snprintf(v, sizeof v, "%d", retry);
        sb_emu_reply_header(rep, "Retry-After", v);
    }
}

/* OpenAI shows a refused key's first characters and last four. */
static char *masked_key(const char *credential)
{
    size_t n = strlen(credential);
    if (n < 12)
        return sb_xstrdup("********");
    size_t head = n / 6 < 8 ? n / 6 : 8;
    char *out = sb_xmalloc(n + 1);
    memcpy(out, credential, head);
    memset(out + head, '*', n - head - 4);
    memcpy(out + n - 4, credential + n - 4, 4);
    out[n] = '\0';
    return out;
}

void sb_emu_openai_auth_error(struct sb_emu_call *call, int auth, const char *credential)
{
    if (auth == 403) {
        sb_emu_openai_error(&call->reply, 403,
                            "You have insufficient permissions for this operation. Missing scopes: model.request. "
                            "Check that you have the correct role in your organization (Reader, Writer, Owner) and "
                            "project (Member, Owner), and if you're using a restricted API key, that it has the "
                            "necessary scopes.",
                            "invalid_request_error", NULL, NULL);
        return;
    }
    char *masked = masked_key(credential);
    char *msg = sb_xasprintf("Incorrect API key provided: %s. You can find your API key at "
                             "https://platform.openai.com/account/api-keys.",
                             masked);
    sb_emu_openai_error(&call->reply, 401, msg, "invalid_request_error", NULL, "invalid_api_key");
    free(msg);
    free(masked);
}

void sb_emu_openai_leak_error(struct sb_emu_call *call, int status, const char *message)
{
    sb_emu_openai_error(&call->reply, status, message, status >= 500 ? "server_error" : "invalid_request_error", NULL,
                        NULL);
}
