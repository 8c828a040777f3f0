/*
 * provider_openai_chat: the "openai-chat" adapter, OpenAI Chat Completions
 * (POST {base_url}/chat/completions) and the servers that copy it: vLLM,
 * llama.cpp's server, Ollama, LM Studio. It speaks the common subset those
 * servers accept, so a few choices favour compatibility over OpenAI's newest
 * fields (see max_tokens in the build file).
 *
 * Internal to the adapter: what its three files share. The adapter's only
 * export is its vtable, sb_provider_openai_chat (provider.h); the helpers
 * they call back are in provider_util.h.
 *   provider_openai_chat_build.c   canonical job -> chat request; the vtable
 *   provider_openai_chat_parse.c   a whole chat response -> canonical events,
 *                                  and the item builders both paths use, so a
 *                                  streamed answer ends in exactly the items
 *                                  of the same answer sent whole
 *   provider_openai_chat_stream.c  an SSE stream of chunks -> canonical events
 */
#ifndef SB_PROVIDER_OPENAI_CHAT_H
#define SB_PROVIDER_OPENAI_CHAT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "provider_util.h"

#define SB_CHAT_KIND "openai-chat"

/* provider_openai_chat_build.c: the vtable's build_request */
int sb_chat_build_request(const json_t *job, sb_provider_request_t *req, json_t **err);

/* provider_openai_chat_parse.c: the item builders (new references) */
void sb_chat_new_id(char *out, size_t size, const char *prefix);
/* A reasoning item: partial (text NULL) or complete. */
json_t *sb_chat_reasoning_item(const char *id, const json_t *text);
/* A message item: partial (in_progress, no content) or complete with an
 * output_text part for text and a refusal part for refusal (either NULL). */
json_t *sb_chat_message_item(const char *id, bool done, const json_t *text, const json_t *refusal);
/* A function_call item: partial (arguments NULL: "" and in_progress) or
 * complete. */
json_t *sb_chat_call_item(const char *id, const json_t *call_id, const json_t *name, const json_t *arguments);
/* A chat usage object -> the usage event. */
json_t *sb_chat_usage(const json_t *usage);
/* Text of message.content (or a delta's): a string, or (some servers) an
 * array of parts joined; NULL when there is none. */
json_t *sb_chat_response_text(const json_t *content);
/* Whether an error body says insufficient_quota. */
bool sb_chat_is_quota(const json_t *root);
/* A choice's finish_reason -> the canonical status and incomplete_reason. */
void sb_chat_finish(const json_t *choice, const char **status, const char **reason);
/* The vtable's parse_response; the stream also uses it for a 2xx body that
 * came as plain JSON (a server that ignored "stream"). */
void sb_chat_parse_response(const json_t *job, const sb_provider_response_t *resp, json_t *events);

/* provider_openai_chat_stream.c: the vtable's stream hooks */
void *sb_chat_stream_new(const json_t *job);
int sb_chat_stream_feed(void *state, const char *data, size_t len, json_t *events);
void sb_chat_stream_finish(void *state, const sb_provider_response_t *resp, json_t *events);
void sb_chat_stream_destroy(void *state);

#endif
