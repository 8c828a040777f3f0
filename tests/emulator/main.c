/*
 * sb-emulator: the upstream emulator, the only stand-in for an LLM provider
 * that Switchboard's tests may use. It speaks the providers' real wire
 * formats on loopback: OpenAI Chat Completions and Responses, Anthropic
 * Messages and Google Gemini generateContent, each validated like the real
 * API and answering with the same deterministic behaviours. This file only
 * parses arguments and runs the loop; everything else is in libsbemulator
 * (emu.h).
 *
 * README
 * ======
 * Usage: sb-emulator [--listen HOST:PORT] [--latency-ms N] [--require-key KEY]
 *                    [--max-body BYTES] [--journal N] [--idle-timeout S]
 *   --listen        default 127.0.0.1:18080 (port 0 = ephemeral; the bound
 *                   address is logged as "listening on HOST:PORT")
 *   --latency-ms    delay before every /v1, /v1beta, /_search and /_pages reply (event timer, never sleeps)
 *   --require-key   or env SB_EMU_KEY: the one upstream key of every protocol, each carried
 *                   the provider's way (without it no credential is checked):
 *                   OpenAI    "Authorization: Bearer KEY", else 401
 *                             {"error":{"message":"Incorrect API key provided",
 *                             "type":"invalid_request_error","param":null,"code":"invalid_api_key"}}
 *                   Anthropic "x-api-key: KEY" or "Authorization: Bearer KEY" (what the SDKs send since
 *                             API version 2026-10-21; x-api-key wins when both are there), else 401
 *                             authentication_error "x-api-key header is required" (absent) /
 *                             "invalid x-api-key" (wrong)
 *                   Gemini    "x-goog-api-key: KEY" or "?key=KEY": absent -> 403 PERMISSION_DENIED
 *                             "Method doesn't allow unregistered callers (callers without
 *                             established identity). Please use API Key or other form of API
 *                             consumer identity to call this API." (401 UNAUTHENTICATED when only
 *                             an Authorization header is sent); wrong -> 400 INVALID_ARGUMENT "API
 *                             key not valid. Please pass a valid API key." with an ErrorInfo detail
 *                             reason "API_KEY_INVALID"
 *   --max-body      request body limit, default 32 MiB (larger -> 413)
 *   --journal       requests kept by the journal, default 1000
 *   --idle-timeout  keep-alive / read timeout in seconds, default 120
 * SIGINT/SIGTERM exit cleanly. HTTP/1.1 keep-alive; TCP_NODELAY on every socket.
 *
 * Endpoints (base URLs for a gateway: http://HOST:PORT/v1 for OpenAI, http://HOST:PORT for
 * Anthropic (it appends /v1/messages), http://HOST:PORT/v1beta for Gemini)
 *   POST /v1/chat/completions   OpenAI Chat Completions
 *   POST /v1/responses          OpenAI Responses
 *   POST /v1/responses/input_tokens  OpenAI input token count:
 *                               {"object":"response.input_tokens","input_tokens":N}
 *   POST /v1/messages           Anthropic Messages
 *   POST /v1/messages/count_tokens  Anthropic token count: {"input_tokens":N} (same validation)
 *   GET  /v1/models             {"object":"list","data":[{"id","object":"model","created","owned_by":"emulator"}]}
 *                               ids: gpt-4o, gpt-4o-mini, gpt-4.1, gpt-4.1-mini, o4-mini. With x-api-key
 *                               or anthropic-version and no Authorization header, Anthropic's list:
 *                               {"data":[{"type":"model","id","display_name","created_at"}],"has_more":false,
 *                               "first_id","last_id"} (claude-emu-1, claude-sonnet-4-5, claude-haiku-4-5)
 *   POST /v1beta/models/{model}:generateContent        Gemini (also under /v1/models/...)
 *   POST /v1beta/models/{model}:streamGenerateContent  ?alt=sse: SSE; otherwise a streamed JSON array
 *   POST /v1beta/models/{model}:countTokens            {"totalTokens":N,"promptTokensDetails":[...]}
 *   POST /v1/embeddings         OpenAI embeddings          } see "Embeddings" and "Images" below
 *   POST /v1beta/models/{model}:embedContent | :batchEmbedContents   Gemini embeddings
 *   POST /v1/images/generations OpenAI Images (JSON)       }
 *   POST /v1/images/edits       OpenAI Images (multipart upload)
 *   GET  /v1beta/models         {"models":[{"name":"models/emu-model",...}]} (also gemini-2.5-flash,
 *                               gemini-2.5-pro); GET /v1beta/models/{id} one of them, else 404 NOT_FOUND
 *                               "models/{id} is not found for API version v1beta, or is not supported
 *                               for generateContent. ..."
 *   other /v1/...               404 {"error":{"message":"Invalid URL (METHOD PATH)",...}}; other /v1beta/...
 *                               404 {"error":{"code":404,"message":"Method not found.","status":"NOT_FOUND"}}
 *   GET    /_search/search?q=Q&format=json   a SearXNG-compatible search backend over the emulator's
 *                               web (see "Web" below): {"query","number_of_results","results":[{"url",
 *                               "title","content","engine":"emulator","engines":["emulator"],"parsed_url",
 *                               "positions","score","category":"general"}],"answers":[],"corrections":[],
 *                               "infoboxes":[],"suggestions":[],"unresponsive_engines":[]}. format
 *                               absent or not json -> 403 "403 Forbidden" (text/html; as a SearXNG
 *                               whose settings list only json); q absent or empty -> 400. No key needed.
 *   GET    /_search/brave/res/v1/web/search?q=Q[&count=N][&country=CC]   Brave Search's web search
 *                               (base URL for a gateway: http://HOST:PORT/_search/brave):
 *                               {"type":"search","query":{"original","more_results_available":false},
 *                               "web":{"type":"search","results":[{"type":"search_result","title","url",
 *                               "description" (query words in <strong>),"is_source_local",
 *                               "is_source_both","language","family_friendly","meta_url"}],
 *                               "family_friendly":true}} ("web" left out when nothing matched).
 *                               Needs "X-Subscription-Token": equal to --require-key when set, any
 *                               non-empty value otherwise; absent or wrong -> 422 {"type":"ErrorResponse",
 *                               "error":{"id","status":422,"code":"SUBSCRIPTION_TOKEN_INVALID","detail":
 *                               "The provided subscription token is invalid.","meta":{...}},"time"}.
 *                               q missing, count not 1..20, country not 2 letters or ALL -> 422
 *                               code "VALIDATION" with meta.errors [{"type","loc":["query",param],"msg"}].
 *   GET    /_pages/<name>.html  the web's pages (text/html; charset=utf-8); also /_pages/notes.txt
 *                               (text/plain), /_pages/image.png (image/png: not text),
 *                               /_pages/moved.html (302 to zorblax.html); anything else 404 (HTML)
 *   GET    /_emu/health         200 {"ok":true}
 *   GET    /_emu/requests?limit=N  {"requests":[entry...]}, newest last (default: all kept)
 *                               entry = {"seq","time" (epoch ms),"method","path","query" (or null; the
 *                                        value of key= replaced by "[redacted]"),
 *                                        "headers" {lower-case name: value; repeats joined by ", ";
 *                                        authorization, x-api-key, x-goog-api-key, api-key,
 *                                        proxy-authorization and x-subscription-token keep their NAME with the value
 *                                        "[redacted]": credentials never reach the journal},
 *                                        "auth_header" (the credential carrier: "x-api-key" over
 *                                        "x-goog-api-key" over "authorization" over "api-key" over
 *                                        "x-subscription-token", then
 *                                        "?key" for Gemini's query key, or null),
 *                                        "body" (parsed JSON or null),"body_bytes","request_id",
 *                                        "protocol" ("openai-chat","openai-responses","anthropic",
 *                                        "gemini" (its embeddings too),"openai-embeddings",
 *                                        "openai-images","openai" for the model list, "searxng",
 *                                        "brave" and "pages" for the web, or null),
 *                                        "status" (reply status; null for hang/drop),
 *                                        "model" (the upstream model asked for, or null),
 *                                        "fault" (true when a fault was injected, see below)}
 *                               anthropic-version and anthropic-beta are kept verbatim.
 *   DELETE /_emu/requests       clears the journal
 *   GET    /_emu/stats          {"requests_total","open_requests","closed_by_client",
 *                                "open_connections","connections_total","journal_size",
 *                                "by_model":{"<upstream model>":{"requests":N,"faults":F},...}}
 *                               open_requests: /v1 requests not yet answered (delayed, hanging,
 *                               streaming); closed_by_client: /v1 requests whose client closed
 *                               the connection before the reply was complete. by_model: see
 *                               "Fault injection" below.
 *                               The web's requests (/_search, /_pages) are journaled and counted in
 *                               requests_total and open_requests like /v1 ones (never in by_model).
 *   DELETE /_emu/stats          zeroes requests_total, closed_by_client, connections_total and
 *                               forgets by_model
 *   PUT    /_emu/faults/{model} {"directives":"status=503 retry_after=2","count":3}: route faults
 *   GET    /_emu/faults         DELETE /_emu/faults, GET|DELETE /_emu/faults/{model}: see "Fault
 *                               injection" below
 *   PUT    /_emu/scenarios/{model} {"tool":"^shell$","arguments":{...},"after_result":"...","answer":"...",
 *                               "repeat":N}
 *   GET    /_emu/scenarios      DELETE /_emu/scenarios, GET|DELETE /_emu/scenarios/{model}: see
 *                               "Scenarios" below
 * Every /v1 and /v1beta reply carries "x-request-id: req_<hex>" (also in the journal entry);
 * Anthropic replies also "request-id" with the same value, also in their error bodies.
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
 *                         "rate_limit_exceeded" and "Retry-After: 1"; 5xx: type "server_error",
 *                         code null). The fault directives (retry_after, quota, trickle, reset,
 *                         reset_after, endless, context_exceeded, context) are described under
 *                         "Fault injection" below.
 *   [[emu:latency=MS]]    delay this reply by MS (added to --latency-ms); nothing at all, not
 *                         even the status line, is sent before
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
 *
 * The other protocols: what they share with Chat Completions
 *   One engine (emu_answer.c) decides every reply, so the rules above hold everywhere:
 *   "You said: <last user text>" + attachment acknowledgements (same strings: an image given
 *   as base64 in any format reads "[image: data:image/png, N bytes]"); "Tool result: <text>"
 *   after a tool result; CALL lines -> tool calls (unknown function -> 400; for Messages and
 *   Gemini the arguments must be a JSON object, else 400 "CALL directive: arguments for 'f'
 *   must be a JSON object"); a forced tool call gets arguments generated from its schema;
 *   structured output from the same generator; every directive ([[emu:status|latency|hang|
 *   drop|length|malformed|chunk_delay|hang_after|drop_after|refuse|schema_violation|
 *   schema_violation_once=TAG]] and the fault directives below); reasoning "Reasoning
 *   (<label>) about: <last user text>";
 *   token counts "4 + words" per message/item/content plus the system prompt or instructions
 *   as one more, 85 per image, decoded bytes / 100 per file or audio. Status directives
 *   answer in the provider's own error body; 429 adds "Retry-After: 1". Output tokens =
 *   words of the text (or 1 + words of each call's arguments) + reasoning words.
 *   Where schema_violation cannot make tool arguments break the schema as an object (Messages
 *   tool_use.input, Gemini functionCall.args must be objects), the arguments are
 *   {"emu_violation": <the wrong value>}.
 *
 * OpenAI Responses (POST /v1/responses; bearer auth and OpenAI error bodies as above)
 *   Last user text: the last user message (string input = one user message; text parts
 *   input_text joined by one space); its input_image (image_url http(s)/data URL, or file_id ->
 *   "[image: file-id]") and input_file (file_data data URL + filename, file_id or file_url ->
 *   "[file: <id or url>]") parts are acknowledged. The input ends with a function_call_output ->
 *   "Tool result: <output>" (a string, or its input_text parts joined).
 *   Reply: {"id":"resp_<hex>","object":"response","created_at","status":"completed"|"incomplete",
 *   "background":false,"error":null,"incomplete_details":null|{"reason":"max_output_tokens"},
 *   "instructions","max_output_tokens","max_tool_calls","model","output":[...],
 *   "parallel_tool_calls","previous_response_id":null,"reasoning":{"effort","summary"},
 *   "service_tier","store","temperature","text":{"format","verbosity"},"tool_choice","tools",
 *   "top_logprobs","top_p","truncation","usage","user","metadata"} (request values echoed,
 *   the API's defaults otherwise). output items, in order:
 *     reasoning      (reasoning.effort given and not "none") {"id":"rs_<hex>","type":"reasoning",
 *                    "summary":[] (or [{"type":"summary_text","text"}] when reasoning.summary is
 *                    set), "content":[{"type":"reasoning_text","text"}]}; with include
 *                    ["reasoning.encrypted_content"] no content but "encrypted_content":
 *                    "emu-enc:" + base64 of the reasoning text.
 *     web_search_call (a web_search / web_search_preview tool, tool_choice not none, no function
 *                    forced) {"id":"ws_<hex>","type":"web_search_call","status":"completed",
 *                    "action":{"type":"search","query":<last user text>}}, and the message text
 *                    is "Searched: <last user text>".
 *     function_call  per call {"id":"fc_<hex>","type":"function_call","status":"completed",
 *                    "arguments","call_id":"call_<hex>","name"}
 *     message        (no calls) {"id":"msg_<hex>","type":"message","status","role":"assistant",
 *                    "content":[{"type":"output_text","annotations":[],"logprobs":[],"text"}]};
 *                    refusal: [{"type":"refusal","refusal":"I'm sorry, I can't help with that."}]
 *   Reasoning seen: every reasoning item sent back with encrypted_content issued here appends
 *   " [reasoning seen: <decoded text>]" to the echo / tool-result text (not to JSON output).
 *   [[emu:length]] or max_output_tokens (words) -> status "incomplete", incomplete_details
 *   {"reason":"max_output_tokens"}, message status "incomplete". usage {"input_tokens",
 *   "input_tokens_details":{"cached_tokens":0},"output_tokens","output_tokens_details":
 *   {"reasoning_tokens"},"total_tokens"}. tool_choice "required" (first function) or
 *   {"type":"function","name"} forces a call. text.format json_schema -> the generated instance;
 *   json_object -> {"echo":...} (400 unless some input text mentions "json").
 *   Validation (400 OpenAI body): Content-Type/body as Chat; unknown parameters at any depth
 *   "Unknown parameter: 'input[0].foo'." (param = the path, code "unknown_parameter") - so a
 *   Chat-shaped tool fails with "Missing required parameter: 'tools[0].name'." and Chat's
 *   response_format with "Unknown parameter: 'response_format'."; model; input (required; string
 *   or items: message (role user|assistant|system|developer; user parts input_text|input_image|
 *   input_file, system/developer input_text, assistant output_text|refusal), function_call
 *   {call_id,name,arguments}, function_call_output {call_id, output string|parts}, reasoning
 *   {id,summary,content?,encrypted_content?}, web_search_call, item_reference); every
 *   function_call_output answers an earlier function_call ("No tool call found for function
 *   call output with call_id X."), every function_call has an output ("No tool output found
 *   for function call X."), a reasoning item is not last ("Item 'rs_x' of type 'reasoning' was
 *   provided without its required following item."); tools function {name ^[a-zA-Z0-9_-]{1,64}$,
 *   description, parameters, strict (true -> strict schema rules as Chat)} or web_search*
 *   (other built-ins are refused); tool_choice none|auto|required|{type:function,name}|
 *   {type:allowed_tools,...}|{type:web_search*} ("Tool choice 'function' not found in 'tools'
 *   parameter."); text {format {type text|json_object|json_schema+name+schema+strict?+
 *   description?}, verbosity}; reasoning {effort none|minimal|low|medium|high|xhigh, summary
 *   auto|concise|detailed}; include values of the API; max_output_tokens >= 16; temperature
 *   0..2; top_p 0..1; top_logprobs 0..20; truncation auto|disabled; metadata as Chat;
 *   stream_options {include_obfuscation} only with stream.
 *   Nothing is ever stored, so: previous_response_id -> 400 "Previous response with id 'X' not
 *   found." (param previous_response_id, code previous_response_not_found); a reasoning item
 *   without encrypted_content or an item_reference -> 404 "Item with id 'X' not found. Items are
 *   not persisted when `store` is set to false. Try again with `store` set to true, or remove
 *   this item from your input." (with store:false; "Item with id 'X' not found." otherwise);
 *   encrypted_content not issued here -> 400 "The encrypted content gAAA...DQ== could not be
 *   verified." (code invalid_encrypted_content); conversation / prompt -> 404 not found;
 *   background:true -> 400.
 *   Streaming (stream:true): "event: <type>\ndata: <json>\n\n", every event with "type" and
 *   "sequence_number" 0,1,...: response.created, response.in_progress (response status
 *   "in_progress", output [], usage null); per output item response.output_item.added ...
 *   response.output_item.done: reasoning -> [reasoning_summary_part.added, reasoning_summary_
 *   text.delta*, .done, reasoning_summary_part.done] + [content_part.added, reasoning_text.delta*,
 *   reasoning_text.done, content_part.done] (not when encrypted); web_search_call ->
 *   response.web_search_call.in_progress/.searching/.completed; function_call ->
 *   response.function_call_arguments.delta* (<= 8 bytes each) and .done {name, arguments};
 *   message -> response.content_part.added, response.output_text.delta* (one per word, with
 *   "logprobs":[]; refusal: response.refusal.delta*), response.output_text.done (.refusal.done),
 *   response.content_part.done; last response.completed (or response.incomplete) with the full
 *   Response. Delta events carry "obfuscation" unless stream_options.include_obfuscation is false.
 *   POST /v1/responses/input_tokens: the same auth and validation, but only the parameters that
 *   endpoint takes (model, input, instructions, tools, tool_choice, text, reasoning,
 *   parallel_tool_calls, truncation, previous_response_id, conversation; model and input
 *   optional; others "Unknown parameter") -> {"object":"response.input_tokens","input_tokens":N},
 *   N the usage.input_tokens a response to the same input reports.
 *
 * Anthropic Messages (POST /v1/messages)
 *   Headers: x-api-key or a bearer token (see --require-key), anthropic-version required
 *   ("anthropic-version: header is required"; 2023-01-01, 2023-06-01 and 2026-10-21 are valid,
 *   else 'anthropic-version: "X" is not a valid version'), anthropic-beta a comma list of
 *   "<name>-YYYY-MM-DD" (else "Unexpected value(s) `x` for the `anthropic-beta` header. ...").
 *   API version 2026-10-21 (sent by the SDK majors of that date, e.g. @anthropic-ai/sdk 1.x):
 *   temperature, top_p and top_k are gone ("temperature: Extra inputs are not permitted", even
 *   at 1.0), a document block in an assistant message and a user text block with non-empty
 *   citations are 400. Errors: {"type":"error","error":{"type",
 *   "message"},"request_id":"req_..."} - invalid_request_error 400, authentication_error 401,
 *   permission_error 403, not_found_error 404, request_too_large 413, rate_limit_error 429,
 *   api_error 500 (other 5xx), timeout_error 504, overloaded_error 529 ([[emu:status=529]]:
 *   message "Overloaded").
 *   Last user text: the text blocks (or string content) of the last user message that has text;
 *   its image (base64 -> "[image: data:<media_type>, N bytes]", url -> "[image: <url>]", file ->
 *   "[image: <file_id>]") and document blocks (base64 PDF -> "[file: <title or file>,
 *   application/pdf, N bytes]", text source -> "[file: <title or file>, text/plain, N bytes:
 *   <preview>]", url/file -> "[file: <url or id>]") are acknowledged. The last message is a user
 *   message with tool_result blocks and no text -> "Tool result: <content of the last
 *   tool_result>" (string, or its text blocks joined).
 *   Reply: {"id":"msg_<hex>","type":"message","role":"assistant","model","content":[...],
 *   "stop_reason","stop_sequence","usage":{"input_tokens","cache_creation_input_tokens":0,
 *   "cache_read_input_tokens":0,"output_tokens","service_tier":"standard"}}. content:
 *     thinking  (thinking enabled / adaptive / between_tools) {"type":"thinking","thinking":"Reasoning
 *               (<budget_tokens> | adaptive | between_tools) about: <text>","signature":"emu-sig:" + base64 of
 *               the thinking text}
 *     server_tool_use + web_search_tool_result (a web_search_* tool, no forced tool), then the
 *               text "Searched: <text>"; usage.server_tool_use {"web_search_requests":1}
 *     tool_use  per call {"type":"tool_use","id":"toolu_<hex>","name","input":<object>}
 *     text      {"type":"text","text"}
 *   stop_reason: end_turn; tool_use; max_tokens ([[emu:length]] or more words than max_tokens,
 *   thinking not counted); stop_sequence (stop_sequence = the matched one); refusal
 *   ([[emu:refuse]], text "I'm sorry, I can't help with that."). tool_choice any (first tool) or
 *   {type:tool,name} forces a call; output_config.format {type:json_schema,schema} (or the beta
 *   output_format with anthropic-beta structured-outputs-2025-11-13) -> the generated JSON.
 *   Validation (400 invalid_request_error, pydantic-style messages): "model|messages|max_tokens:
 *   Field required"; unknown fields "<path>: Extra inputs are not permitted" at any depth (block
 *   fields as "messages.0.content.0.text.foo"; output_format without its beta too); types
 *   ("max_tokens: Input should be a valid integer"); max_tokens >= 1, temperature 0..1, top_p
 *   0..1, top_k >= 0 (2023 versions only); system a string or text blocks; also accepted:
 *   cache_control, container, diagnostics, inference_geo, speed standard|fast, user_profile_id,
 *   workspace_id, service_tier auto|standard_only, metadata {user_id}; messages non-empty
 *   ("messages: List should have at least 1 item after validation, not 0"), role user|assistant|
 *   system (system messages: text only; counted, never echoed; alternation not required),
 *   content a string or blocks text (non-empty) | image {source base64 (image/jpeg|
 *   png|gif|webp, valid base64) | url | file} | document {source base64 application/pdf | text
 *   text/plain | content | url | file} (user) | tool_use {id,name,input} | thinking {thinking,
 *   signature} | redacted_thinking {data} (assistant) | tool_result {tool_use_id, content?,
 *   is_error?} (user); unknown block type "messages.0.content.0: Input tag 'x' found using
 *   'type' does not match any of the expected tags: ..."; only the final assistant message may
 *   be empty. tools: custom {name ^[a-zA-Z0-9_-]{1,128}$ (unique), description, input_schema
 *   {type:"object"} required, strict, cache_control} or web_search_2025xxxx; tool_choice
 *   {type auto|any|tool|none, name, disable_parallel_tool_use}, only with tools ("tool_choice may
 *   only be specified while providing tools."), a named tool must exist. thinking {type enabled,
 *   budget_tokens >= 1024 ("thinking.enabled.budget_tokens: Input should be greater than or
 *   equal to 1024") and < max_tokens ("`max_tokens` must be greater than
 *   `thinking.budget_tokens`. ...")} | disabled | adaptive {display summarized|omitted} |
 *   between_tools (the last two think, labelled by their type); output_config {format, effort
 *   low|medium|high|xhigh|max}; with thinking: temperature 1 only,
 *   no top_k, no forced tool_choice ("Thinking may not be enabled when tool_choice forces tool
 *   use."). Conversation: every tool_result answers a tool_use of the previous assistant
 *   message ("messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: X.
 *   Each `tool_result` block must have a corresponding `tool_use` block in the previous
 *   message."); every tool_use followed by a message is answered in it ("messages.1: `tool_use`
 *   ids were found without `tool_result` blocks immediately after: X. ..."); every thinking
 *   block carries the signature issued here ("messages.1.content.0: Invalid `signature` in
 *   `thinking` block"; redacted_thinking data is not checked); with thinking on, the assistant
 *   message before a final tool_result turn starts with thinking/redacted_thinking
 *   ("messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found
 *   `tool_use`. When `thinking` is enabled, a final `assistant` message must start with a
 *   thinking block ...").
 *   Streaming (stream:true): "event: <type>\ndata: <json>\n\n": message_start {message with
 *   content [], stop_reason null, usage.output_tokens 1}; per block content_block_start (a ping
 *   after the first), content_block_delta* (thinking_delta per word then one signature_delta;
 *   text_delta per word; input_json_delta: "" then pieces of <= 8 bytes), content_block_stop;
 *   message_delta {delta {stop_reason, stop_sequence}, usage {output_tokens}}; message_stop.
 *   POST /v1/messages/count_tokens: same headers and validation (no max_tokens) ->
 *   {"input_tokens":N}.
 *
 * Gemini (POST /v1beta/models/{model}:generateContent; the model in the path is echoed as
 *   modelVersion; any model name is accepted)
 *   Errors: {"error":{"code","message","status"[,"details"]}} with status INVALID_ARGUMENT 400,
 *   UNAUTHENTICATED 401, PERMISSION_DENIED 403, NOT_FOUND 404, RESOURCE_EXHAUSTED 429 (details
 *   RetryInfo "1s"), INTERNAL 500 (and other 5xx), UNAVAILABLE 503, DEADLINE_EXCEEDED 504.
 *   Field names are read in lowerCamelCase or snake_case (proto3 JSON). Last user text: the
 *   non-thought text parts of the last user content (role "user" or none) that has text;
 *   inlineData image/... -> "[image: data:<mime>, N bytes]", audio/... -> "[audio: <wav|mp3|
 *   subtype>, N bytes]", other -> "[file: file, <mime>, N bytes(: preview)]"; fileData -> "[image:
 *   <uri>]" for image/..., else "[file: <uri>]". The last content is a user turn of
 *   functionResponse parts -> "Tool result: <response>": a response holding one string value
 *   reads as that string ({"result":"sunny"} -> "sunny"), else its compact JSON.
 *   Reply: {"candidates":[{"content":{"parts":[...],"role":"model"},"finishReason","index"}],
 *   "usageMetadata":{"promptTokenCount","candidatesTokenCount","totalTokenCount",
 *   "thoughtsTokenCount" (when thinking),"promptTokensDetails":[{"modality":"TEXT","tokenCount"}]},
 *   "modelVersion","responseId"}. parts: {"text":"Reasoning (<budget | dynamic | level>) about:
 *   <text>","thought":true} first when thinkingConfig.includeThoughts; then {"text"} or per call
 *   {"functionCall":{"name","args"}}; while thinking, the first call part carries
 *   "thoughtSignature": base64("emu-ts:<function name>"). candidateCount n -> n candidates,
 *   " #k" on candidate k >= 1. finishReason STOP (also calls and stop sequences), MAX_TOKENS
 *   ([[emu:length]], maxOutputTokens), SAFETY ([[emu:refuse]]: no content, safetyRatings
 *   blocked). A googleSearch tool (no function forced) -> "Searched: <text>" with
 *   groundingMetadata {webSearchQueries:[<text>],...}. Thinking is on when thinkingConfig has
 *   thinkingBudget != 0, thinkingLevel, or includeThoughts; thoughtsTokenCount counts the
 *   reasoning words even when the thought part is not included. toolConfig.functionCallingConfig
 *   mode ANY forces a call (first allowedFunctionNames, else the first declaration), arguments
 *   generated from parametersJsonSchema or from parameters converted from the OpenAPI subset
 *   (upper-case types, nullable). responseMimeType application/json with responseSchema
 *   (converted) or responseJsonSchema -> the generated JSON, without a schema {"echo":...};
 *   text/x.enum with an enum schema -> the first value as bare text.
 *   Validation, phase 1 (proto3 JSON parsing; every problem collected into one 400 message joined
 *   by "\n", with a google.rpc.BadRequest fieldViolations detail): unknown names at any depth
 *   'Invalid JSON payload received. Unknown name "x": Cannot find field.' (top level) or
 *   '... Unknown name "x" at '<snake_case path>': Cannot find field.' (e.g. 'generation_config',
 *   'tools[0].function_declarations[0].parameters' - JSON Schema keywords such as
 *   additionalProperties or const are unknown in the Schema proto; map entries read
 *   'properties[i].value'); wrong JSON types and bad enum values "Invalid value at
 *   '<path>' (TYPE_FLOAT), "hot""; bytes (inlineData.data, thoughtSignature) that are not base64
 *   "Invalid value at '<path>' (TYPE_BYTES), Base64 decoding failed for "x"". Enums are accepted
 *   case-insensitively. Phase 2: "* GenerateContentRequest.contents: contents is not specified",
 *   "Please use a valid role: user, model.", "* GenerateContentRequest.contents[i].parts:
 *   contents.parts must not be empty.", the 'data' oneof (exactly one of text, inlineData,
 *   fileData, functionCall, functionResponse, executableCode, codeExecutionResult), inlineData
 *   mimeType/data and fileData fileUri required, systemInstruction text only, function names
 *   (letter or _ first, [a-zA-Z0-9_.:-], <= 64), parameters and parametersJsonSchema not both,
 *   allowedFunctionNames only with ANY/VALIDATED and declared, candidateCount 1..8,
 *   maxOutputTokens > 0, temperature 0..2, topP 0..1, <= 5 stopSequences, responseMimeType
 *   text/plain|application/json|application/xml|application/yaml|text/x.enum, a response schema
 *   only with application/json or text/x.enum and not both kinds, thinkingBudget -1..32768 and not
 *   with thinkingLevel. Turns: a functionCall turn follows a user turn ("Please ensure that
 *   function call turn comes immediately after a user turn or after a function response turn."),
 *   a functionResponse turn follows the model turn of the calls ("Please ensure that function
 *   response turn comes immediately after a function call turn."), with as many responses as
 *   calls ("Please ensure that the number of function response parts is equal to the number of
 *   function call parts of the function call turn."), each naming a called function ("*
 *   GenerateContentRequest.contents[i].parts[j].function_response.name: function response 'g'
 *   does not answer a function call of the previous turn."). Thought signatures: a
 *   thoughtSignature on a functionCall part must be the one issued here ("*
 *   GenerateContentRequest.contents[i].parts[j].thought_signature: Thought signature is not
 *   valid."); when the request thinks, the first functionCall part of every model turn since the
 *   last user prompt must carry one ("Function call is missing a thought_signature in
 *   functionCall parts. This is required for tools to work correctly, ... function call
 *   `default_api:<name>` , position <content index + 1>. ...").
 *   Streaming: :streamGenerateContent?alt=sse sends "data: <GenerateContentResponse>\r\n\r\n"
 *   chunks (Google's separator), candidate by candidate: the thought part (if included), one
 *   chunk per word (or one with all function calls); the last chunk of a candidate has its
 *   finishReason, the very last the full usageMetadata (earlier ones promptTokenCount and
 *   totalTokenCount only); every chunk has modelVersion and responseId. Without alt=sse the same
 *   chunks form one JSON array ("[" chunk ",\r\n" chunk ... "]"), Content-Type application/json.
 *   :countTokens takes {contents} or {generateContentRequest} -> {"totalTokens":N,
 *   "promptTokensDetails":[{"modality":"TEXT","tokenCount":N}]}.
 *   Image models (a name containing "image", e.g. gemini-2.5-flash-image; emu_gemini_image.c):
 *   the answer's text part is followed by {"inlineData":{"mimeType":"image/png","data"}} (see
 *   "Images"), unless generationConfig.responseModalities leaves IMAGE out; IMAGE without TEXT:
 *   the image is the only part. usageMetadata.candidatesTokenCount adds 1290 per image, with
 *   "candidatesTokensDetails":[{"modality":"IMAGE","tokenCount"}]. Streaming: the image rides on
 *   the candidate's last chunk. No image with function calls or a refusal. The colour hashes the
 *   last user text (without directives) and every inlineData image of the contents, in order, so
 *   sending an earlier image back (an edit) changes it. imageConfig {aspectRatio 1:1|2:3|3:2|3:4|
 *   4:3|4:5|5:4|9:16|16:9|21:9 (wide -> 24x16, tall -> 16x24), imageSize 1K|2K|4K}; other names
 *   are unknown fields. Any other model with IMAGE in responseModalities -> 400 "Model does not
 *   support the requested response modalities: image".
 *
 * Embeddings (emu_embed.c, emu_openai_embeddings.c, emu_gemini_embed.c)
 *   Vectors: a hashed bag of words, deterministic and meaningful (texts that share content words
 *   are close): words are runs of ASCII letters/digits and non-ASCII bytes, lower-cased, crudely
 *   stemmed (ies->y, sses->ss, -ing, -ed, -ly, -es after s/x/z/ch/sh, -s), English stop words
 *   dropped (kept when a text has nothing else); each distinct stem weighs 1 + ln(count) and is
 *   added at two signed coordinates chosen by a 64-bit hash of it; the vector is L2-normalised.
 *   A requested dimension hashes into that many coordinates (not a prefix of a longer vector).
 *   Default dimension: text-embedding-3-small 1536, text-embedding-3-large 3072,
 *   text-embedding-ada-002 1536, gemini-embedding-001 3072, text-embedding-004 / embedding-001 768,
 *   any other embedding model (e.g. "emu-embed") 256; the same text and dimension give the same
 *   vector on both APIs. Tokens: words of a text, ids of a token array.
 *   OpenAI POST /v1/embeddings {model, input: string | string[] | int[] | int[][], encoding_format
 *   float|base64, dimensions, user} -> {"object":"list","data":[{"object":"embedding","index",
 *   "embedding":[floats] | "<base64 of little-endian float32>"}],"model","usage":{"prompt_tokens",
 *   "total_tokens"}}. Refused: unknown parameter "Unrecognized request argument supplied: x"; no
 *   model "you must provide a model parameter"; a model without "embed" in its name 404
 *   model_not_found; input missing; "", [], [""], mixed kinds, an empty token array or a negative
 *   id "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/
 *   api-reference."; > 2048 inputs array_above_max_length; an input > 8192 tokens "This model's
 *   maximum context length is 8192 tokens, however you requested N tokens (...)"; > 300000 tokens
 *   in all (type/code max_tokens_per_request); dimensions on text-embedding-ada-002 "This model
 *   does not support specifying dimensions.", below 1 or above the model's default (emu models:
 *   4096) as integer range errors.
 *   Gemini POST models/{m}:embedContent {content:{parts:[{text}]}, taskType, title,
 *   outputDimensionality, model?} -> {"embedding":{"values":[...]}}; :batchEmbedContents
 *   {requests:[{model:"models/{m}", content, taskType, title, outputDimensionality}]} ->
 *   {"embeddings":[{"values"}...]}. Proto3 names checked as for generateContent (so
 *   embedContentConfig is an unknown name); then "* EmbedContentRequest.content: content is not
 *   specified", "...content.parts: contents.parts must not be empty.", "...content: contains an
 *   empty Part." (an empty text), non-text parts refused unless the model name has
 *   "embedding-2", output_dimensionality 0 (default) to the model's size, a title only with
 *   RETRIEVAL_DOCUMENT, 1..100 requests a batch ("at most 100 requests can be in one batch"),
 *   each request's model "models/{m}" of the URL ("unexpected model name format" when missing). A
 *   model without "embed" -> 404 "models/{m} is not found for API version v1beta, or is not
 *   supported for embedContent. ...". Directives ([[emu:status=503]], ...) in the first text that
 *   has any, route faults and auth work as in the chat protocols.
 *
 * Images (emu_images.c, emu_images_check.c, emu_picture.c, emu_image_sniff.c, emu_multipart.c)
 *   OpenAI POST /v1/images/generations (JSON) and /v1/images/edits (multipart/form-data: image or
 *   image[] files, mask, text fields; integers and booleans read from their text). Models:
 *   gpt-image-1, gpt-image-1-mini, gpt-image-1.5, gpt-image-2, gpt-image-2-2026-04-21,
 *   chatgpt-image-latest, and any "emu-image..."; dall-e-2 / dall-e-3 are valid names the
 *   emulator does not emulate (400 saying so); no model: generations default to dall-e-2 (or
 *   gpt-image-1 when a GPT-only parameter is given), edits to gpt-image-1.5.
 *   Reply {"created","background","data":[{"b64_json"}],"output_format","quality","size","usage":{
 *   "input_tokens","input_tokens_details":{"image_tokens","text_tokens"},"output_tokens",
 *   "total_tokens","output_tokens_details":{"image_tokens","text_tokens":0}}} with auto resolved
 *   (size 1024x1024, quality high, background opaque, output_format png). Tokens: text = prompt
 *   words, image = 85 per input image, output per image 272/1056/4160 (low/medium/high) for
 *   1024x1024, 408/1584/6240 for 1536x1024 and 1024x1536, gpt-image-2 free sizes in proportion.
 *   stream:true -> SSE with "event:" lines: per image, partial_images events
 *   image_generation.partial_image (edits: image_edit.partial_image) {type, b64_json, created_at,
 *   size, quality, background, output_format, partial_image_index}, then image_generation.completed
 *   (image_edit.completed) {type, b64_json, created_at, size, quality, background, output_format,
 *   usage (that image's output tokens)}.
 *   The pictures: 16x16 pixels (1536x1024 -> 24x16, 1024x1536 -> 16x24), 8x8 blocks painted in
 *   raster order, a final image has every block in the foreground colour, partial k of P
 *   floor(blocks*(k+1)/(P+1)) of them on the background (grey, or transparent). The colour hashes
 *   the prompt without directives and, for an edit, every input image's and the mask's bytes, and
 *   the image's index of n. png: RGB (RGBA when transparent) with tEXt Software, Description (the
 *   prompt, printable ASCII, <= 256 bytes) and Comment ("generation by gpt-image-1, image 1 of 1",
 *   "edit by ..., of N input images", ", partial k of P"); jpeg: baseline with a COM
 *   "<prompt>; <comment>"; webp: lossless VP8L.
 *   Refused as the real API refuses: "Unknown parameter: 'x'." (response_format and style too,
 *   moderation on edits, input_fidelity on generations); prompt missing, empty or > 32000
 *   characters; model not one of the list "Invalid value: 'x'. Supported values are: ..."; n
 *   1..10; size (gpt-image-2: WxH multiples of 16, <= 3840 a side and 3840x2160 pixels, aspect 1:3
 *   to 3:1); quality low|medium|high|auto; background transparent|opaque|auto ("Transparent
 *   background is not supported for this model." on gpt-image-2; not with jpeg); moderation
 *   low|auto; output_format png|jpeg|webp; output_compression 0..100 ("Compression less than 100
 *   is not supported for PNG output format."); partial_images 0..3; stream boolean;
 *   input_fidelity high|low, not on gpt-image-1-mini. Edits: "Missing required parameter:
 *   'image'."; <= 16 images; each file's Content-Type "Invalid file 'image[1]': failed to
 *   determine mimetype..." (none) / "...: unsupported mimetype ('x'). Supported file formats are
 *   'image/jpeg', 'image/png', and 'image/webp'." (code unsupported_file_mimetype; the param is
 *   'image' for one image field, 'image[i]' for an array); bytes that are not that kind "Invalid
 *   image file or mode for image N, please check your image file."; mask a PNG ("Supported file
 *   formats are 'image/png'."), with alpha ("Invalid mask image format - mask image missing alpha
 *   channel"), the size of the first image; a text field named image "Invalid type for 'image':
 *   expected one of an array of files or file, but got a string instead."; a body that is not
 *   multipart "Invalid Content-Type header (...), expected multipart/form-data...". Directives in
 *   the prompt and route faults apply; the journal's body is null for an upload.
 *
 * Fault injection (emu_faults.c): the failures a gateway's resilience tests need, per request
 * (in-band [[emu:...]] directives in the last user message) or per route (see "Route faults").
 * Every mode works in every protocol, in the provider's own error body; "stream" modes apply
 * to stream:true / :streamGenerateContent requests and are ignored otherwise.
 *   [[emu:status=NNN]]      400..599 in the provider's error body (OpenAI/Responses: 5xx type
 *                           "server_error", 429 type "requests" code "rate_limit_exceeded", else
 *                           "invalid_request_error"; Anthropic: api_error 500/502/503, 529
 *                           overloaded_error, 504 timeout_error, 429 rate_limit_error; Gemini:
 *                           INTERNAL 500/502, UNAVAILABLE 503, RESOURCE_EXHAUSTED 429), message
 *                           "emulated upstream error NNN". Streams get the same plain JSON error,
 *                           as providers answer before a stream starts.
 *   [[emu:retry_after=S]]   0..86400: "Retry-After: S" on the error reply (status, quota); Gemini
 *                           also gets a google.rpc.RetryInfo detail {"retryDelay":"Ss"}. Without
 *                           it a 429 carries "Retry-After: 1" (Gemini RetryInfo "1s"), other
 *                           statuses none. Anthropic names the header "retry-after".
 *   [[emu:quota]]           a 429 (implied when no status is given) that is about quota, where the
 *                           provider tells them apart: OpenAI/Responses {"error":{"message":"You
 *                           exceeded your current quota, please check your plan and billing
 *                           details. For more information on this error, read the docs: https://
 *                           platform.openai.com/docs/guides/error-codes/api-errors.","type":
 *                           "insufficient_quota","param":null,"code":"insufficient_quota"}};
 *                           Gemini RESOURCE_EXHAUSTED "You exceeded your current quota, please
 *                           check your plan and billing details. For more information on this
 *                           error, head to: https://ai.google.dev/gemini-api/docs/rate-limits."
 *                           with QuotaFailure and Help details; no Retry-After / RetryInfo unless
 *                           retry_after is given. Anthropic has one 429: rate_limit_error with
 *                           "retry-after: 1", as without quota.
 *   [[emu:latency=MS]]      slow first byte: nothing (not even the status line) before MS.
 *   [[emu:trickle=MS]]      1..60000: the body goes out in 16-byte pieces, MS apart (the first at
 *                           once). A plain reply keeps its real Content-Length (not chunked); a
 *                           stream's SSE bytes are cut into 16-byte HTTP chunks regardless of event
 *                           boundaries (chunk_delay is then not used).
 *   [[emu:reset]]           status line, headers and half of the body (Content-Length = the whole
 *                           body), then a TCP reset (SO_LINGER {1,0} and close, no FIN first): the
 *                           client's read fails with ECONNRESET. A stream: half of its events
 *                           (at least 1), then the reset.
 *   [[emu:reset_after=N]]   stream: N events (SSE events, Gemini array elements), then the reset.
 *   [[emu:drop]] / [[emu:drop_after=N]] / [[emu:hang]] / [[emu:hang_after=N]]  as above (drop
 *                           closes cleanly with a FIN; hang holds the connection open).
 *   [[emu:malformed]]       200 with a body that is not JSON (stream: one broken event; token
 *                           count endpoints too).
 *   [[emu:endless]]         stream: the usual opening events and the answer's content deltas, then
 *                           one more content delta " more" every chunk_delay ms (default 50;
 *                           chunk_delay=0 means every 1 ms) forever; never a final event (no
 *                           finish_reason / [DONE], response.completed, message_stop,
 *                           finishReason; Gemini's JSON array never closes). Responses events keep
 *                           counting sequence_number. It stops when the client disconnects (then
 *                           closed_by_client += 1); while the client does not read, at most 64 KiB
 *                           is queued. With reset_after/drop_after/hang_after it stops after that
 *                           many events.
 *   [[emu:context_exceeded]] 400, the provider's context-window error:
 *                           OpenAI {"error":{"message":"This model's maximum context length is
 *                             128000 tokens. However, your messages resulted in N tokens. Please
 *                             reduce the length of the messages.","type":"invalid_request_error",
 *                             "param":"messages","code":"context_length_exceeded"}}
 *                           Responses {"error":{"message":"Your input exceeds the context window of
 *                             this model. Please adjust your input and try again.","type":
 *                             "invalid_request_error","param":"input","code":
 *                             "context_length_exceeded"}}
 *                           Anthropic invalid_request_error "prompt is too long: N tokens > 200000
 *                             maximum"
 *                           Gemini INVALID_ARGUMENT "The input token count (N) exceeds the maximum
 *                             number of tokens allowed (1048576)."
 *                           N = the input token count (as usage reports it) when it exceeds the
 *                           limit, else limit + that count (forced on a short input).
 *   [[emu:leak_key]]        an error whose message quotes the credential the request carried, as a
 *                           careless OpenAI-compatible proxy does: "Authentication Error, key not
 *                           allowed to access model M. Received API Key = <credential> (from
 *                           <header>: <its raw value>)" (the credential: x-api-key, else
 *                           x-goog-api-key, else the bearer token, else ?key=). Without a stream: the
 *                           status=NNN error body (default 400; OpenAI type invalid_request_error or
 *                           server_error, Anthropic by status, Gemini status name). With a stream:
 *                           200, one opening event (Chat: a role delta chunk; Responses:
 *                           response.created; Anthropic: message_start; Gemini: a "You" chunk), then
 *                           the provider's in-stream error with that message (Chat: data:
 *                           {"error":{...,"type":"server_error"}}; Responses: event error code
 *                           server_error; Anthropic: event error api_error; Gemini: {"error":{"code":
 *                           500,...,"status":"INTERNAL"}}), and the stream ends there.
 *   [[emu:bad_key]]         what the provider answers for a key it does not accept, even if it is the
 *                           right one: OpenAI/Responses 401 {"error":{"message":"Incorrect API key
 *                           provided: <first chars>****<last 4>. You can find your API key at
 *                           https://platform.openai.com/account/api-keys.","type":
 *                           "invalid_request_error","param":null,"code":"invalid_api_key"}};
 *                           Anthropic 401 authentication_error "invalid x-api-key"; Gemini 400
 *                           INVALID_ARGUMENT "API key not valid. Please pass a valid API key." with
 *                           reason API_KEY_INVALID (Google says a bad key with a 400).
 *   [[emu:key_forbidden]]   the provider's 403 for a key that may not do this: OpenAI/Responses
 *                           "You have insufficient permissions for this operation. Missing scopes:
 *                           model.request. ..."; Anthropic permission_error "Your API key does not
 *                           have permission to use the specified resource."; Gemini
 *                           PERMISSION_DENIED "Your API key was reported as leaked. Please use
 *                           another API key.". bad_key / key_forbidden come before leak_key, which
 *                           comes before context and status.
 *   [[emu:context=N]]       (mostly a route setting) a request whose input token count exceeds N
 *                           gets the error above with N as the maximum and its real count;
 *                           others are answered normally.
 *   Precedence: drop, hang > bad_key/key_forbidden > leak_key > context > status/quota >
 *   malformed > the answer; latency, trickle
 *   and reset apply to whatever is sent (an error reply too). Token count endpoints
 *   (count_tokens, input_tokens, :countTokens) honour status/quota/retry_after, latency, hang,
 *   drop, trickle, reset and malformed, not context or the stream modes.
 *   Route faults: a route is the upstream model a request asks for (the body's "model"; Gemini:
 *   the {model} of models/{model}:method).
 *     PUT /_emu/faults/{model}  {"directives":"status=503 retry_after=2","count":3}: the next
 *                           `count` requests for that model (absent, null or 0: every request
 *                           until cleared) behave as if those directives were in the request
 *                           (same names and values, separated by spaces or commas; "[[emu:x]]"
 *                           wrappers allowed). The request's own directives win on conflicts and
 *                           combine otherwise. A route is used up only by requests that pass auth
 *                           and validation (a 400 for the request itself does not count); used up,
 *                           it disappears. {model} is the rest of the path, percent-decoded
 *                           ("org/model" or "org%2Fmodel"). 200 {"model","directives","count",
 *                           "remaining" (null when unlimited)}; replaces an earlier one. A bad
 *                           body or directive -> 400 {"error":"unknown emulator directive
 *                           '[[emu:bogus]]'"} (or "bad value in emulator directive ...").
 *     GET /_emu/faults          {"faults":{"<model>":{"directives","count","remaining"},...}}
 *     GET /_emu/faults/{model}  that entry, or 404
 *     DELETE /_emu/faults/{model}  {"ok":true,"removed":1|0};  DELETE /_emu/faults: all,
 *                           {"ok":true,"removed":N}. Other methods: 405.
 *   Per-model counters (GET /_emu/stats "by_model"): requests = /v1 generation and token-count
 *   requests that named that model (counted whatever the outcome: auth and validation errors
 *   too); faults = those that got an injected fault: status/quota, context (exceeded), latency >
 *   0, hang, drop, malformed, trickle, reset, leak_key, bad_key, key_forbidden, and for streams
 *   endless, reset_after, hang_after, drop_after, whether asked in-band or by a route. Tests count upstream attempts
 * with them; DELETE /_emu/stats forgets them.
 *
 * Scenarios (emu_scenarios.c): the emulator playing the model for a real coding-agent client
 * (Codex CLI, Claude Code, Gemini CLI, the OpenAI Agents SDK), whose prompts start with the
 * client's own text (<environment_context>, <system-reminder>), so a CALL line cannot be used.
 *   PUT /_emu/scenarios/{model}  {"tool":"<POSIX extended regex on a tool name>","arguments":{...},
 *                           "after_result":"<text>","answer":"<text>","repeat":<integer 0..10000>},
 *                           every field optional (null =
 *                           absent), no other field. Installs (replaces) the scenario of the
 *                           upstream model {model} (as for route faults: the body's "model";
 *                           Gemini: the {model} of models/{model}:generateContent or
 *                           :streamGenerateContent; percent-decoded). 200 {"ok":true}. A bad regex
 *                           (regcomp REG_EXTENDED), "arguments" that is not an object, a wrong
 *                           type or an unknown field -> 400 {"error":"..."}, nothing installed.
 *                           The regex searches the name (as grep -E does): anchor it ("^shell$")
 *                           for a whole name.
 *     GET /_emu/scenarios       {"scenarios":{"<model>":{"tool","arguments","after_result","answer",
 *                           "repeat"},...}}
 *     GET /_emu/scenarios/{model}  that entry (absent fields null), or 404
 *     DELETE /_emu/scenarios/{model}  {"ok":true,"removed":1|0};  DELETE /_emu/scenarios: all,
 *                           {"ok":true,"removed":N}. Other methods: 405.
 *   A generation request (all four protocols, streamed or not; not the token count endpoints)
 *   whose model has a scenario is answered by the first rule that applies:
 *   1. The last turn is a tool result for a call of a tool whose name matches "tool" (Chat: the
 *      trailing role "tool" messages, named by the assistant tool_calls entry with their
 *      tool_call_id; Responses: the trailing function_call_output / custom_tool_call_output
 *      items, named by the function_call / custom_tool_call with their call_id; Messages: the
 *      tool_result blocks of a final user message, text beside them or not, named by the
 *      tool_use with their tool_use_id; Gemini: the functionResponse parts of the last
 *      content, by their name). The first such result in order counts: the model says
 *      after_result with every "{{result}}" replaced by the result's text (as "Tool result:"
 *      reads it; Gemini: a response holding one string value is that string, else its compact
 *      JSON), cut to its first 200 bytes without splitting a UTF-8 sequence. Without
 *      after_result: the usual answer ("Tool result: <text>"). With "repeat": N, before that:
 *      while the whole conversation holds at most N results of calls of matching tools (the
 *      same messages, items, blocks and parts counted anywhere in it, not only at the end),
 *      the model calls again as in rule 2 (when the request still offers a matching tool and
 *      tool_choice allows it), so it calls N + 1 times in all before it says after_result: a
 *      model that keeps calling, for a tool loop's limits.
 *   2. Else, when the request offers a tool whose name matches (function tools in every
 *      protocol, Responses custom tools too, Anthropic tools, Gemini functionDeclarations) and
 *      tool_choice allows a call (not none / NONE), the model calls the first matching tool
 *      offered, once, with "arguments" (absent: {}), finish reason tool calls in the protocol's
 *      own shape and ids (Chat tool_calls call_..., Responses function_call fc_/call_...,
 *      Messages tool_use toolu_..., Gemini functionCall). A Responses custom tool is called
 *      with a custom_tool_call item (id ctc_..., call_id call_...) whose input is
 *      arguments.input when it is a string, else the JSON text of "arguments"; streamed as
 *      response.custom_tool_call_input.delta / .done. When tool_choice forces a function, only
 *      that one may be called; if it does not match, the forced call is made as usual.
 *   3. Else the model says "answer"; without it, the usual behaviour (echo, CALL lines, ...).
 *   The scenario decides only what the model says: requests are validated exactly as without
 *   it (a request the real API refuses is refused), faults (in-band and route) apply first,
 *   [[emu:refuse]] still refuses, and reasoning (when asked), stop sequences, max tokens
 *   ([[emu:length]]), usage counts and streaming events are as for any answer; n choices all
 *   say the same text (no " #k"). Rules 1-3 take precedence over CALL lines; other models are
 *   not affected.
 *
 * Web (emu_search.c, emu_search_pages.c): a small fixed web for the gateway's web search tool.
 *   Eight pages about made-up topics (zorblax (a fruit), quintar (a river), helix-cafe (opening
 *   hours), vantor-lamp, glimmer-moss, orrin-festival, brask-language, tessel-bridge), each a full
 *   HTML document (head with title, style and script, nav, main, noscript, footer, a trailing
 *   script), served at /_pages/<name>.html, plus two results that exist only in search answers
 *   (https://wiki.example.org/wiki/Zorblax, https://news.example.net/2029/quintar-flood).
 *   A query's words (letters and digits, lower-cased; one-letter and common English words
 *   ignored) score 2 each for a word of an entry's title, 1 for one of its snippet or keywords;
 *   the entries that score are the results, best first, ties in corpus order. Every entry
 *   matches "fictional" (ten results). A "site:DOMAIN" term keeps only results on DOMAIN or its
 *   subdomains. A page's URL in a result is absolute on the request's Host header:
 *   http://<Host>/_pages/<name>.html.
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
    fprintf(
        stderr,
        "\nUpstream protocols, each validated like the real API (unknown fields -> 400 in its own error body):\n"
        "  POST /v1/chat/completions  OpenAI Chat Completions   (Authorization: Bearer KEY)\n"
        "  POST /v1/responses         OpenAI Responses          (Authorization: Bearer KEY)\n"
        "  POST /v1/messages          Anthropic Messages        (x-api-key: KEY, anthropic-version required)\n"
        "  POST /v1beta/models/M:generateContent | :streamGenerateContent[?alt=sse] | :countTokens\n"
        "                             Gemini                    (x-goog-api-key: KEY or ?key=KEY)\n"
        "  GET  /v1/models, /v1beta/models; POST /v1/messages/count_tokens, /v1/responses/input_tokens\n"
        "Same answers everywhere: \"You said: <last user text>\" + \" [image: ...]\" / \" [audio: wav, N bytes]\"\n"
        "  / \" [file: name, mime, N bytes(: text preview)]\" per attachment; \"Tool result: <text>\" after a tool\n"
        "  result; n / candidateCount choices with \" #k\" appended to choice k >= 1 (emu-single* models: n must\n"
        "  be 1); stop sequences and max tokens (words) cut the text.\n"
        "Structured output (response_format / text.format / output_config.format / responseSchema):\n"
        "  a deterministic instance of the schema (first free-form string = last user text);\n"
        "  JSON without a schema: {\"echo\":\"<last user text>\"}.\n"
        "Reasoning \"Reasoning (<effort|budget|level>) about: <text>\": Chat reasoning_content, Responses\n"
        "  reasoning item (encrypted \"emu-enc:<base64>\" with include reasoning.encrypted_content; sent back,\n"
        "  the reply ends \" [reasoning seen: <text>]\"), Messages thinking block signed \"emu-sig:<base64>\"\n"
        "  (required intact on later turns), Gemini thought part + thoughtSignature base64(\"emu-ts:<fn>\") on\n"
        "  function calls (required back while thinking).\n"
        "Forced tool choice (required / any / tool / ANY): a call with arguments generated from the schema.\n"
        "Web: GET /_search/search?q=Q&format=json (SearXNG), GET /_search/brave/res/v1/web/search?q=Q\n"
        "  (Brave; X-Subscription-Token), GET /_pages/<name>.html (the pages they find).\n"
        "Built-in web search tools (Responses web_search, Messages web_search_*, Gemini googleSearch):\n"
        "  a search item/block, then \"Searched: <text>\".\n"
        "Directives in the last user message:\n"
        "  [[emu:status=NNN]] [[emu:latency=MS]] [[emu:hang]] [[emu:drop]] [[emu:length]]\n"
        "  [[emu:malformed]] [[emu:chunk_delay=MS]] [[emu:hang_after=N]] [[emu:drop_after=N]]\n"
        "  [[emu:refuse]]  refusal \"I'm sorry, I can't help with that.\" (Messages stop_reason refusal,\n"
        "                  Gemini finishReason SAFETY)\n"
        "  [[emu:schema_violation]]  structured output / forced tool arguments break the schema\n"
        "  [[emu:schema_violation_once=TAG]]  only the first time TAG is seen\n"
        "  CALL <name> {json}  one tool call per line\n"
        "Faults (every protocol, its own error body):\n"
        "  [[emu:retry_after=S]]  Retry-After: S on an error (429 without it: Retry-After: 1)\n"
        "  [[emu:quota]]          429 insufficient_quota (OpenAI) / quota RESOURCE_EXHAUSTED (Gemini)\n"
        "  [[emu:trickle=MS]]     body (or stream) in 16-byte pieces, MS apart\n"
        "  [[emu:reset]]          headers and half the body, then a TCP reset (ECONNRESET)\n"
        "  [[emu:reset_after=N]]  stream: N events, then a TCP reset\n"
        "  [[emu:endless]]        stream: content deltas every chunk_delay ms (default 50), never the end\n"
        "  [[emu:context_exceeded]]  400 context length exceeded; [[emu:context=N]] only above N input tokens\n"
        "Streaming in every protocol with its own SSE event sequence.\n"
        "Control: GET /_emu/health, GET|DELETE /_emu/requests (journal; credentials by header name only),\n"
        "  GET|DELETE /_emu/stats (by_model: requests and faults per upstream model),\n"
        "  PUT /_emu/faults/{model} {\"directives\":\"status=503 retry_after=2\",\"count\":3} (route faults:\n"
        "  the next count requests for that model, 0/absent = all until cleared), GET|DELETE /_emu/faults,\n"
        "  GET|DELETE /_emu/faults/{model}.\n"
        "Scenarios (play the model for a real client whose prompts start with its own text):\n"
        "  PUT /_emu/scenarios/{model} {\"tool\":\"^shell$\",\"arguments\":{...},\n"
        "  \"after_result\":\"Done: {{result}}\",\"answer\":\"...\",\"repeat\":N} (every field optional;\n"
        "  tool: a POSIX extended regex on tool names):\n"
        "  for requests to that model, 1. a last turn that is the result of a matching tool's call ->\n"
        "  after_result ({{result}} = its first 200 bytes); 2. else a matching tool offered -> one call of\n"
        "  the first with arguments; 3. else answer (absent: the usual answer). repeat N: calls again after\n"
        "  each result while the conversation holds <= N of them. Precedes CALL lines;\n"
        "  validation and faults unchanged. GET|DELETE /_emu/scenarios, GET|DELETE /_emu/scenarios/{model}.\n"
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
    sb_info("listening on %s:%d%s%s", host, sb_emu_port(emu),
            cfg.require_key && *cfg.require_key ? " (key required)" : "", cfg.latency_ms ? " (latency set)" : "");
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
