/*
 * sb-emulator: the upstream emulator, the only stand-in for an LLM provider
 * that Switchboard's tests may use. It speaks the providers' real wire
 * formats on loopback (OpenAI Chat Completions today). This file only parses
 * arguments and runs the loop; everything else is in libsbemulator (emu.h).
 *
 * README
 * ======
 * Usage: sb-emulator [--listen HOST:PORT] [--latency-ms N] [--require-key KEY]
 *                    [--max-body BYTES] [--journal N] [--idle-timeout S]
 *   --listen        default 127.0.0.1:18080 (port 0 = ephemeral; the bound
 *                   address is logged as "listening on HOST:PORT")
 *   --latency-ms    delay before every /v1 reply (event timer, never sleeps)
 *   --require-key   or env SB_EMU_KEY: every /v1 request must carry
 *                   "Authorization: Bearer KEY", else 401
 *                   {"error":{"message":"Incorrect API key provided",
 *                   "type":"invalid_request_error","param":null,"code":"invalid_api_key"}}
 *   --max-body      request body limit, default 32 MiB (larger -> 413)
 *   --journal       requests kept by the journal, default 1000
 *   --idle-timeout  keep-alive / read timeout in seconds, default 120
 * SIGINT/SIGTERM exit cleanly. HTTP/1.1 keep-alive; TCP_NODELAY on every socket.
 *
 * Endpoints
 *   POST /v1/chat/completions   OpenAI Chat Completions (validated like the real API)
 *   GET  /v1/models             {"object":"list","data":[{"id","object":"model","created","owned_by":"emulator"}]}
 *                               ids: gpt-4o, gpt-4o-mini, gpt-4.1, gpt-4.1-mini, o4-mini
 *   other /v1/...                 404 {"error":{"message":"Invalid URL (METHOD PATH)",...}}
 *   GET    /_emu/health         200 {"ok":true}
 *   GET    /_emu/requests?limit=N  {"requests":[entry...]}, newest last (default: all kept)
 *                               entry = {"seq","time" (epoch ms),"method","path","query" (or null),
 *                                        "headers" {lower-case name: value; repeats joined by ", "},
 *                                        "body" (parsed JSON or null),"body_bytes","request_id",
 *                                        "status" (reply status; null for hang/drop)}
 *   DELETE /_emu/requests       clears the journal
 *   GET    /_emu/stats          {"requests_total","open_requests","closed_by_client",
 *                                "open_connections","connections_total","journal_size"}
 *                               open_requests: /v1 requests not yet answered (delayed, hanging,
 *                               streaming); closed_by_client: /v1 requests whose client closed
 *                               the connection before the reply was complete.
 *   DELETE /_emu/stats          zeroes requests_total, closed_by_client, connections_total
 * Every /v1 reply carries "x-request-id: req_<hex>" (also in the journal entry).
 *
 * Chat completion reply (deterministic)
 *   content = "You said: " + text of the LAST user message (string content, or its
 *   text parts joined by one space), with directives removed and trimmed.
 *   If the last message has role "tool": "Tool result: " + that message's text.
 *   {"id":"chatcmpl-<hex>","object":"chat.completion","created","model":<requested>,
 *    "choices":[{"index":i,"message":{"role":"assistant","content","refusal":null,
 *    "annotations":[]},"logprobs":null,"finish_reason":"stop"}], "usage":{...},
 *    "service_tier":"default","system_fingerprint":null}; n > 1 gives n equal choices.
 *   max_completion_tokens (else max_tokens): if the content has more words, it is cut
 *   to that many words and finish_reason is "length".
 *
 * Token counting ("words" = runs of non-whitespace)
 *   prompt_tokens     = sum over messages of (4 + words in the message's text), counted on
 *                       the raw text (directives included; tool_calls not counted)
 *   completion_tokens = n * words in the reply content; for tool calls,
 *                       n * sum over calls of (1 + words in the arguments text)
 *   total_tokens      = prompt_tokens + completion_tokens
 *   usage also has prompt_tokens_details {cached_tokens:0,audio_tokens:0} and
 *   completion_tokens_details {reasoning_tokens:0,audio_tokens:0,
 *   accepted_prediction_tokens:0,rejected_prediction_tokens:0}.
 *
 * Directives, written anywhere in the last user message text as [[emu:...]]
 *   [[emu:status=NNN]]    400..599: reply NNN with an OpenAI error body, message
 *                         "emulated upstream error NNN" (429: type "requests", code
 *                         "rate_limit_exceeded" and "Retry-After: 2"; 5xx: type "server_error")
 *   [[emu:latency=MS]]    delay this reply by MS (added to --latency-ms)
 *   [[emu:hang]]          never answer; the request stays open until the client leaves
 *                         (then closed_by_client += 1, open_requests -= 1)
 *   [[emu:drop]]          close the connection without any reply
 *   [[emu:length]]        content cut to its first word ("You"), finish_reason "length"
 *   [[emu:malformed]]     200 with a body that is not JSON (stream: one bad SSE event)
 *   [[emu:chunk_delay=MS]]  streaming: pause MS between SSE events
 *   [[emu:hang_after=N]]    streaming: send N SSE events, then hold the stream open
 *   [[emu:drop_after=N]]    streaming: send N SSE events, then close the connection
 *   Unknown directive or bad value -> 400 naming it.
 *   CALL <name> <json-args>  when the cleaned text starts with "CALL ", every line
 *                         "CALL name {json}" becomes one tool call (args default {}):
 *                         content null, tool_calls [{"id":"call_<hex>","type":"function",
 *                         "function":{"name","arguments":<json text verbatim>}}],
 *                         finish_reason "tool_calls". 400 if a name is not among the
 *                         request's tools (or the JSON is invalid). Ignored when the last
 *                         message is a tool message (the other directives still apply).
 *
 * Streaming ("stream": true): text/event-stream, "data: <chunk>\n\n" events as OpenAI
 *   sends them: a role delta {"role":"assistant","content":"","refusal":null}, one
 *   content delta per word (leading whitespace included, so the deltas concatenate to
 *   the content), a final {"delta":{},"finish_reason":...}, with
 *   stream_options.include_usage a last chunk with "choices":[] and "usage" (earlier
 *   chunks then carry "usage":null), then "data: [DONE]". Tool calls stream as a head
 *   delta (index, id, type, name, arguments "") then argument pieces of <= 8 bytes.
 *   Errors (status directive, validation) are plain JSON replies, as upstream does.
 *
 * Validation (400, {"error":{"message","type":"invalid_request_error","param","code"}})
 *   Content-Type application/json; body a JSON object; no unknown top-level parameter
 *   ("Unrecognized request argument supplied: X"); model a non-empty string; messages a
 *   non-empty array; each message an object with role system|developer|user|assistant|
 *   tool|function, no properties outside its role's schema, content a string or an array
 *   of parts (user: text|image_url{url}|input_audio{data,format wav|mp3}|file; assistant:
 *   text|refusal; others: text), assistant content may be null/absent with tool_calls;
 *   tool messages need tool_call_id matching a tool call of the preceding assistant
 *   message, and every assistant tool call must be answered; tools[].function.name
 *   ^[a-zA-Z0-9_-]{1,64}$; tool_choice/parallel_tool_calls only with tools;
 *   stream_options only with stream; n 1..128, temperature 0..2, top_p 0..1, ...
 */
#include <errno.h>
#include <event2/event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu.h"
#include "sb_log.h"

static void usage(void)
{
    fprintf(stderr, "usage: sb-emulator [--listen HOST:PORT] [--latency-ms N] [--require-key KEY]\n"
                    "                   [--max-body BYTES] [--journal N] [--idle-timeout S]\n");
}

static int parse_long(const char *s, long min, long max, long *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end != '\0' || v < min || v > max)
        return -EINVAL;
    *out = v;
    return 0;
}

/* "HOST:PORT" or "[V6]:PORT" into host (copied into buf) and port. */
static int parse_listen(const char *arg, char *buf, size_t buflen, int *port)
{
    const char *colon = strrchr(arg, ':');
    if (!colon || colon == arg)
        return -EINVAL;
    const char *h = arg;
    size_t hlen = (size_t)(colon - arg);
    if (h[0] == '[' && hlen >= 2 && h[hlen - 1] == ']') {
        h++;
        hlen -= 2;
    }
    if (hlen == 0 || hlen >= buflen)
        return -EINVAL;
    memcpy(buf, h, hlen);
    buf[hlen] = '\0';
    long p;
    if (parse_long(colon + 1, 0, 65535, &p) < 0)
        return -EINVAL;
    *port = (int)p;
    return 0;
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    sb_info("signal %d: shutting down", (int)sig);
    event_base_loopexit(arg, NULL);
}

int main(int argc, char **argv)
{
    sb_log_init("emulator");
    char host[256] = SB_EMU_DEFAULT_HOST;
    struct sb_emu_config cfg = {.host = host, .port = SB_EMU_DEFAULT_PORT, .require_key = getenv("SB_EMU_KEY")};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        long n;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage();
            return 0;
        }
        if (!v) {
            usage();
            return 2;
        }
        i++;
        if (!strcmp(a, "--listen")) {
            if (parse_listen(v, host, sizeof host, &cfg.port) < 0) {
                fprintf(stderr, "sb-emulator: bad --listen '%s' (want HOST:PORT)\n", v);
                return 2;
            }
        } else if (!strcmp(a, "--latency-ms") && parse_long(v, 0, 600000, &n) == 0) {
            cfg.latency_ms = (int)n;
        } else if (!strcmp(a, "--require-key")) {
            cfg.require_key = v;
        } else if (!strcmp(a, "--max-body") && parse_long(v, 1, 1L << 34, &n) == 0) {
            cfg.max_body = (size_t)n;
        } else if (!strcmp(a, "--journal") && parse_long(v, 1, 1000000, &n) == 0) {
            cfg.journal_max = (size_t)n;
        } else if (!strcmp(a, "--idle-timeout") && parse_long(v, 1, 86400, &n) == 0) {
            cfg.idle_timeout_s = (int)n;
        } else {
            fprintf(stderr, "sb-emulator: bad argument %s %s\n", a, v);
            usage();
            return 2;
        }
    }

    int rc = 1;
    struct event *sigint = NULL, *sigterm = NULL;
    struct sb_emu *emu = NULL;
    signal(SIGPIPE, SIG_IGN);
    /* Precise timers (timerfd) so --latency-ms and [[emu:latency]] are not rounded up to the
     * next millisecond tick. */
    struct event_base *base = NULL;
    struct event_config *ec = event_config_new();
    if (ec) {
        event_config_set_flag(ec, EVENT_BASE_FLAG_PRECISE_TIMER);
        base = event_base_new_with_config(ec);
        event_config_free(ec);
    }
    if (!base)
        goto fail;
    emu = sb_emu_new(base, &cfg);
    if (!emu)
        goto fail;
    sigint = evsignal_new(base, SIGINT, on_signal, base);
    sigterm = evsignal_new(base, SIGTERM, on_signal, base);
    if (!sigint || !sigterm || evsignal_add(sigint, NULL) < 0 || evsignal_add(sigterm, NULL) < 0)
        goto fail;
    sb_info("listening on %s:%d%s%s", host, sb_emu_port(emu), cfg.require_key && *cfg.require_key ? " (key required)" : "",
            cfg.latency_ms ? " (latency set)" : "");
    if (event_base_dispatch(base) < 0)
        goto fail;
    rc = 0;

fail:
    if (sigint)
        event_free(sigint);
    if (sigterm)
        event_free(sigterm);
    sb_emu_destroy(&emu);
    if (base)
        event_base_free(base);
    return rc;
}
