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
 *   "last user text" = text of the LAST user message (string content, or its text parts
 *   joined by one space), with directives removed and trimmed.
 *   content = "You said: " + last user text, then one acknowledgement per attachment of
 *   that message, in order, each after one space:
 *     [image: <http(s) url>]                     image_url with a web URL
 *     [image: data:image/png, N bytes]           image_url with a data URL (N = decoded bytes)
 *     [audio: wav, N bytes]                      input_audio
 *     [file: doc.pdf, application/pdf, N bytes]  file with file_data (name "file" if no filename)
 *     [file: notes.txt, text/plain, N bytes: <first 200 characters>]   a text/... MIME type; bytes
 *                                                that are not printable UTF-8 show as '?'
 *     [file: file-abc]                           file with file_id only
 *   e.g. "You said: look [image: https://x/c.png] [file: a.txt, text/plain, 5 bytes: hello]".
 *   If the last message has role "tool": "Tool result: " + that message's text.
 *   {"id":"chatcmpl-<hex>","object":"chat.completion","created","model":<requested>,
 *    "choices":[{"index":i,"message":{"role":"assistant","content","refusal":null,
 *    "annotations":[]},"logprobs":null,"finish_reason":"stop"}], "usage":{...},
 *    "service_tier":<requested, "default" for auto/absent>,"system_fingerprint":null}.
 *   n (1..8): n choices, index 0..n-1; choice k >= 1 has " #k" appended to its text
 *   (structured output: appended to the text that goes into the first string, so the JSON
 *   stays valid). Models whose name starts with "emu-single" refuse n != 1 with 400
 *   "n > 1 is not supported by this model" (param "n").
 *   stop (string or <= 4 strings): the content is cut before the earliest occurrence of
 *   any of them, finish_reason "stop" (applied to every kind of content, JSON included).
 *   max_completion_tokens (else max_tokens): then, if the content has more words, it is cut
 *   to that many words and finish_reason is "length" (reasoning is not counted).
 *   logprobs:true: choices[].logprobs = {"content":[{"token":<word piece, as streamed>,
 *   "logprob":0.0,"bytes":[...],"top_logprobs":[]}...],"refusal":null}; with
 *   top_logprobs >= 1 each entry's top_logprobs lists the token itself once.
 *   modalities with "audio" is accepted only for models whose name contains "audio" (else
 *   400, param "modalities"; "audio" {voice, format} then required); the reply is text only.
 *
 * Structured output (response_format)
 *   {"type":"json_object"}  content = {"echo":"<last user text>"} (compact JSON). As upstream,
 *     400 unless some message's text contains "json" (any case): "'messages' must contain the
 *     word 'json' in some form, to use 'response_format' of type 'json_object'."
 *   {"type":"json_schema","json_schema":{"name","schema","strict"?,"description"?}}
 *     content = compact JSON text of a deterministic instance of "schema" (no schema: as
 *     json_object). Validated: name required, ^[a-zA-Z0-9_-]{1,64}$; schema an object;
 *     strict a boolean; with strict:true the schema must pass the strict rules below (400
 *     "Invalid schema for response_format '<name>': In context=(...), ...", param
 *     "response_format"). The instance:
 *     - $ref "#", "#/$defs/X", "#/definitions/X" (any local JSON pointer); const; enum (first
 *       value); anyOf/oneOf (first branch); allOf (branches merged); type (a list: first
 *       non-null type); no type: inferred from the keywords (properties -> object, ...).
 *     - object: every property in "properties", in order, then any "required" name not
 *       listed there; nothing else (additionalProperties is always satisfied);
 *       minProperties filled with "emu_N" keys when additional properties are allowed.
 *     - array: max(minItems, 1) items clamped to maxItems (prefixItems honoured).
 *     - string: the FIRST free-form string in document order gets the last user text, the
 *       others "emu"; "format" date-time|date|time|duration|email|hostname|ipv4|ipv6|uuid|
 *       uri gives a fixed valid value; "pattern" gives a value from a small table of common
 *       patterns (^[a-z]+$, ^[A-Z]{3}$, ^\d+$, ^\d{4}-\d{2}-\d{2}$, e-mail, URL, phone,
 *       hex colour, uuid, ...); an unknown pattern is IGNORED (the plain value is used and
 *       may not match: a documented limitation). minLength pads with 'x', maxLength
 *       truncates (code points).
 *     - integer: the smallest allowed value >= 0 within minimum/maximum/exclusiveMinimum/
 *       exclusiveMaximum (draft 4 boolean form too) and multipleOf; the largest allowed one
 *       when the whole range is negative. number: likewise (0 if allowed; an exclusive lower
 *       bound b gives b+1, or the midpoint when the range is narrower).
 *     - boolean: true. null: null.
 *     - recursion: past depth 8, anyOf takes the first branch that allows null or holds no
 *       $ref, a type list containing "null" gives null, arrays get minItems items, objects
 *       only their required properties; past depth 32 the value is null.
 *     Not honoured: uniqueItems, not, if/then/else, dependencies, patternProperties.
 *
 * Reasoning (vLLM/DeepSeek style): reasoning_effort none|minimal|low|medium|high (else 400
 *   "Invalid value: 'x'. Supported values are: 'none', 'minimal', 'low', 'medium', and
 *   'high'.", param "reasoning_effort"). Unless "none": message.reasoning_content =
 *   "Reasoning (<effort>) about: <last user text>" in every choice;
 *   usage.completion_tokens_details.reasoning_tokens = its word count * n, included in
 *   completion_tokens. Streaming: delta.reasoning_content pieces (one per word) after the
 *   role delta and before any content / tool call delta.
 *
 * Tool calls
 *   CALL <name> <json-args>  when the cleaned text starts with "CALL ", every line
 *     "CALL name {json}" becomes one tool call (args default {}): content null,
 *     tool_calls [{"id":"call_<hex>","type":"function","function":{"name","arguments":
 *     <json text verbatim>}}], finish_reason "tool_calls". 400 if a name is not among the
 *     request's tools (or the JSON is invalid). Ignored when the last message is a tool
 *     message (the other directives still apply).
 *   tool_choice "required" (first function tool) or {"type":"function","function":{"name"}}:
 *     without a CALL directive, that tool is called with arguments generated from its
 *     "parameters" by the structured-output generator above (first free-form string = last
 *     user text; no parameters -> "{}"), also after a tool message (as upstream would).
 *     A name not among the tools -> 400 "Invalid value for 'tool_choice': ...".
 *   Tool definitions with strict:true: every object schema (nested ones included) needs
 *     additionalProperties:false and every property in required, else 400 "Invalid schema
 *     for function '<name>': In context=(), 'additionalProperties' is required to be
 *     supplied and to be false." / "...: In context=('properties', 'a'), 'required' is
 *     required to be supplied and to be an array including every key in properties.
 *     Missing 'b'.", param "tools[i].function.parameters", code "invalid_function_parameters".
 *
 * Token counting ("words" = runs of non-whitespace)
 *   prompt_tokens     = sum over messages of (4 + words in the message's text), counted on
 *                       the raw text (directives included; tool_calls not counted), plus
 *                       85 per image and decoded bytes / 100 per audio clip or file
 *                       (any user message)
 *   completion_tokens = sum over choices of words in the content (or refusal); for tool
 *                       calls, n * sum over calls of (1 + words in the arguments text);
 *                       plus the reasoning tokens
 *   total_tokens      = prompt_tokens + completion_tokens
 *   usage also has prompt_tokens_details {cached_tokens:0,audio_tokens:0} and
 *   completion_tokens_details {reasoning_tokens,audio_tokens:0,
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
 *   [[emu:refuse]]        message.content null, message.refusal "I'm sorry, I can't help
 *                         with that.", finish_reason "stop" (streaming: delta.refusal pieces
 *                         after a role delta {"role":"assistant","content":null,"refusal":""})
 *   [[emu:schema_violation]]  the structured output (json_schema) or the arguments of a call
 *                         forced by tool_choice violate their schema: the first required
 *                         property present is removed; else, if additionalProperties is
 *                         false, "emu_violation":true is added; else a value of a wrong type
 *                         (42, "emu_violation", {} or []); if the schema constrains nothing a
 *                         JSON value could break (and for json_object), the text is not JSON:
 *                         "This is not JSON: <last user text>".
 *   [[emu:schema_violation_once=TAG]]  the same, but only the first time this emulator
 *                         process sees TAG in a request that has something to violate;
 *                         later requests with TAG get valid output (validate-and-retry tests).
 *                         TAG: 1..128 characters; the last 4096 tags are remembered.
 *   Unknown directive or bad value -> 400 naming it.
 *
 * Streaming ("stream": true): text/event-stream, "data: <chunk>\n\n" events as OpenAI
 *   sends them, choice by choice (each chunk carries its choice's index): a role delta
 *   {"role":"assistant","content":"","refusal":null}, reasoning_content deltas, one content
 *   delta per word (leading whitespace included, so the deltas concatenate to the content;
 *   with logprobs each carries its entry), a final {"delta":{},"finish_reason":...}; with
 *   stream_options.include_usage a last chunk with "choices":[] and "usage" (earlier
 *   chunks then carry "usage":null), then "data: [DONE]". Tool calls stream as a head
 *   delta (index, id, type, name, arguments ""; it carries the role unless reasoning came
 *   first) then argument pieces of <= 8 bytes.
 *   Errors (status directive, validation) are plain JSON replies, as upstream does.
 *
 * Validation (400, {"error":{"message","type":"invalid_request_error","param","code"}})
 *   Content-Type application/json; body a JSON object; no unknown top-level parameter
 *   ("Unrecognized request argument supplied: X"); model a non-empty string; messages a
 *   non-empty array; each message an object with role system|developer|user|assistant|
 *   tool|function, no properties outside its role's schema, content a string or an array
 *   of parts (user: text|image_url|input_audio|file; assistant: text|refusal; others: text),
 *   assistant content may be null/absent with tool_calls; tool messages need tool_call_id
 *   matching a tool call of the preceding assistant message, and every assistant tool call
 *   must be answered; tools[].function.name ^[a-zA-Z0-9_-]{1,64}$, strict a boolean,
 *   parameters an object (strict rules above); tool_choice none|auto|required or an object
 *   naming a tool; tool_choice/parallel_tool_calls only with tools.
 *   Attachments: image_url.url http(s)://... or data:image/png|jpeg|gif|webp;base64,<valid
 *   non-empty base64>, else "Invalid image URL: 'messages[i].content[j].image_url.url'.
 *   Expected a base64-encoded data URL with an image MIME type (e.g. ...), but got ..."
 *   (param messages[i].content[j].image_url.url, code invalid_value); image_url.detail
 *   auto|low|high; input_audio {data: base64, format: wav|mp3}; file {file_data:
 *   "data:<mime>;base64,<base64>", filename?} or {file_id}, else "Invalid file data: ...".
 *   Parameters: n 1..8; temperature 0..2; top_p 0..1; presence/frequency_penalty -2..2;
 *   max_tokens/max_completion_tokens >= 1; top_logprobs 0..20 and only with logprobs:true;
 *   seed integer; logprobs/store/stream/parallel_tool_calls booleans; user/prompt_cache_key/
 *   safety_identifier strings; metadata <= 16 string values (keys <= 64, values <= 512
 *   chars); stop a string or <= 4 strings; stream_options {include_usage: bool} only with
 *   stream:true ("The 'stream_options' parameter is only allowed when 'stream' is
 *   enabled."); service_tier auto|default|flex|scale|priority; verbosity low|medium|high;
 *   reasoning_effort as above; modalities text|audio; audio {voice, format wav|aac|mp3|
 *   flac|opus|pcm16}; logit_bias token-id keys to -100..100; response_format as above.
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

/* --help: usage plus a summary of the in-band controls (the full reference is the comment above). */
static void help(void)
{
    usage();
    fprintf(stderr,
            "\nOpenAI Chat Completions on POST /v1/chat/completions, validated like the real API.\n"
            "Reply: \"You said: <last user text>\" + \" [image: ...]\" / \" [audio: wav, N bytes]\" /\n"
            "  \" [file: name, mime, N bytes(: text preview)]\" per attachment; \"Tool result: <text>\"\n"
            "  after a tool message; n choices with \" #k\" appended to choice k >= 1 (emu-single*\n"
            "  models: n must be 1); stop and max_(completion_)tokens cut the text.\n"
            "response_format json_schema: a deterministic instance of the schema (first free-form\n"
            "  string = last user text); json_object: {\"echo\":\"<last user text>\"}.\n"
            "reasoning_effort (not none): reasoning_content \"Reasoning (<effort>) about: <text>\".\n"
            "tool_choice required / {function:{name}}: a call with arguments generated from the schema.\n"
            "Directives in the last user message:\n"
            "  [[emu:status=NNN]] [[emu:latency=MS]] [[emu:hang]] [[emu:drop]] [[emu:length]]\n"
            "  [[emu:malformed]] [[emu:chunk_delay=MS]] [[emu:hang_after=N]] [[emu:drop_after=N]]\n"
            "  [[emu:refuse]]  content null, refusal \"I'm sorry, I can't help with that.\"\n"
            "  [[emu:schema_violation]]  structured output / forced tool arguments break the schema\n"
            "  [[emu:schema_violation_once=TAG]]  only the first time TAG is seen\n"
            "  CALL <name> {json}  one tool call per line\n"
            "Control: GET /_emu/health, GET|DELETE /_emu/requests, GET|DELETE /_emu/stats.\n"
            "Full reference: the comment at the top of tests/emulator/main.c.\n");
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
            help();
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
