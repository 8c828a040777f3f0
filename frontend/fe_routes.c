/*
 * fe_routes: the route table (see fe_routes.h). Adding an endpoint is one
 * row here and a declaration in its own module's header. Order matters only
 * between patterns that could match the same path: the first match wins.
 */
#include "fe_routes.h"

#include "fe_chat_stored.h"
#include "fe_container_files_api.h"
#include "fe_containers_api.h"
#include "fe_conversations_api.h"
#include "fe_files_api.h"
#include "fe_gemini_models.h"
#include "fe_generate.h"
#include "fe_models.h"
#include "fe_responses_stored.h"
#include "fe_vstore_batches_api.h"
#include "fe_vstore_files_api.h"
#include "fe_vstore_search_api.h"
#include "fe_vstores_api.h"

/* method, path, style, endpoint, style_of, file_body (fe_route_t) */
static const fe_route_t fe_route_list[] = {
    {"POST", "/v1/responses", &fe_style_responses, fe_generate_start, NULL, false},
    {"GET", "/v1/responses/{}", &fe_style_responses, fe_responses_get, NULL, false},
    {"DELETE", "/v1/responses/{}", &fe_style_responses, fe_responses_delete, NULL, false},
    {"GET", "/v1/responses/{}/input_items", &fe_style_responses, fe_responses_input_items, NULL, false},
    {"POST", "/v1/responses/{}/cancel", &fe_style_responses, fe_responses_cancel, NULL, false},
    {"POST", "/v1/conversations", &fe_style_responses, fe_conversations_create, NULL, false},
    {"GET", "/v1/conversations/{}", &fe_style_responses, fe_conversations_get, NULL, false},
    {"POST", "/v1/conversations/{}", &fe_style_responses, fe_conversations_update, NULL, false},
    {"DELETE", "/v1/conversations/{}", &fe_style_responses, fe_conversations_delete, NULL, false},
    {"GET", "/v1/conversations/{}/items", &fe_style_responses, fe_conversations_items_list, NULL, false},
    {"POST", "/v1/conversations/{}/items", &fe_style_responses, fe_conversations_items_create, NULL, false},
    {"GET", "/v1/conversations/{}/items/{}", &fe_style_responses, fe_conversations_item_get, NULL, false},
    {"DELETE", "/v1/conversations/{}/items/{}", &fe_style_responses, fe_conversations_item_delete, NULL, false},
    {"POST", "/v1/chat/completions", &fe_style_chat, fe_generate_start, NULL, false},
    {"GET", "/v1/chat/completions", &fe_style_chat, fe_chat_stored_list, NULL, false},
    {"GET", "/v1/chat/completions/{}", &fe_style_chat, fe_chat_stored_get, NULL, false},
    {"POST", "/v1/chat/completions/{}", &fe_style_chat, fe_chat_stored_update, NULL, false},
    {"DELETE", "/v1/chat/completions/{}", &fe_style_chat, fe_chat_stored_delete, NULL, false},
    {"GET", "/v1/chat/completions/{}/messages", &fe_style_chat, fe_chat_stored_messages, NULL, false},
    {"POST", "/v1/files", &fe_style_responses, fe_files_upload, NULL, true},
    {"GET", "/v1/files", &fe_style_responses, fe_files_list, NULL, false},
    {"GET", "/v1/files/{}", &fe_style_responses, fe_files_get, NULL, false},
    {"DELETE", "/v1/files/{}", &fe_style_responses, fe_files_delete, NULL, false},
    {"GET", "/v1/files/{}/content", &fe_style_responses, fe_files_content, NULL, false},
    {"POST", "/v1/containers", &fe_style_responses, fe_containers_create, NULL, false},
    {"GET", "/v1/containers", &fe_style_responses, fe_containers_list, NULL, false},
    {"GET", "/v1/containers/{}", &fe_style_responses, fe_containers_get, NULL, false},
    {"DELETE", "/v1/containers/{}", &fe_style_responses, fe_containers_delete, NULL, false},
    {"POST", "/v1/containers/{}/files", &fe_style_responses, fe_container_files_create, NULL, true},
    {"GET", "/v1/containers/{}/files", &fe_style_responses, fe_container_files_list, NULL, false},
    {"GET", "/v1/containers/{}/files/{}", &fe_style_responses, fe_container_files_get, NULL, false},
    {"DELETE", "/v1/containers/{}/files/{}", &fe_style_responses, fe_container_files_delete, NULL, false},
    {"GET", "/v1/containers/{}/files/{}/content", &fe_style_responses, fe_container_files_content, NULL, false},
    {"GET", "/v1/models", &fe_style_responses, fe_models_list, fe_models_style, false},
    {"GET", "/v1/models/{}", &fe_style_responses, fe_models_list, fe_models_style, false},
    {"POST", "/v1/messages", &fe_style_messages, fe_generate_start, NULL, false},
    {"POST", "/v1/messages/count_tokens", &fe_style_messages, fe_generate_count_tokens, NULL, false},
    {"GET", "/v1beta/models", &fe_style_gemini, fe_gemini_models_list, NULL, false},
    {"GET", "/v1beta/models/{}", &fe_style_gemini, fe_gemini_model_get, NULL, false},
    {"POST", "/v1beta/models/{}:generateContent", &fe_style_gemini, fe_generate_start, NULL, false},
    {"POST", "/v1beta/models/{}:streamGenerateContent", &fe_style_gemini, fe_generate_start, NULL, false},
    {"POST", "/v1beta/models/{}:countTokens", &fe_style_gemini, fe_generate_count_tokens, NULL, false},
    {"POST", "/v1/vector_stores", &fe_style_responses, fe_vstores_create, NULL, false},
    {"GET", "/v1/vector_stores", &fe_style_responses, fe_vstores_list, NULL, false},
    {"GET", "/v1/vector_stores/{}", &fe_style_responses, fe_vstores_get, NULL, false},
    {"POST", "/v1/vector_stores/{}", &fe_style_responses, fe_vstores_update, NULL, false},
    {"DELETE", "/v1/vector_stores/{}", &fe_style_responses, fe_vstores_delete, NULL, false},
    {"POST", "/v1/vector_stores/{}/search", &fe_style_responses, fe_vstore_search_start, NULL, false},
    {"POST", "/v1/vector_stores/{}/files", &fe_style_responses, fe_vstore_files_create, NULL, false},
    {"GET", "/v1/vector_stores/{}/files", &fe_style_responses, fe_vstore_files_list, NULL, false},
    {"GET", "/v1/vector_stores/{}/files/{}", &fe_style_responses, fe_vstore_files_get, NULL, false},
    {"POST", "/v1/vector_stores/{}/files/{}", &fe_style_responses, fe_vstore_files_update, NULL, false},
    {"DELETE", "/v1/vector_stores/{}/files/{}", &fe_style_responses, fe_vstore_files_delete, NULL, false},
    {"GET", "/v1/vector_stores/{}/files/{}/content", &fe_style_responses, fe_vstore_files_content, NULL, false},
    {"POST", "/v1/vector_stores/{}/file_batches", &fe_style_responses, fe_vstore_batches_create, NULL, false},
    {"GET", "/v1/vector_stores/{}/file_batches/{}", &fe_style_responses, fe_vstore_batches_get, NULL, false},
    {"POST", "/v1/vector_stores/{}/file_batches/{}/cancel", &fe_style_responses, fe_vstore_batches_cancel, NULL, false},
    {"GET", "/v1/vector_stores/{}/file_batches/{}/files", &fe_style_responses, fe_vstore_batches_files, NULL, false},
};

/* A path that matched no route is answered in the style its prefix names. */
static const fe_route_prefix_t fe_route_prefixes[] = {
    {"/v1/chat/", &fe_style_chat},
    {"/v1/messages", &fe_style_messages},
    {"/v1beta/", &fe_style_gemini},
    {"", &fe_style_responses},
};

const fe_route_table_t fe_routes = {
    .routes = fe_route_list,
    .n_routes = sizeof fe_route_list / sizeof fe_route_list[0],
    .prefixes = fe_route_prefixes,
    .n_prefixes = sizeof fe_route_prefixes / sizeof fe_route_prefixes[0],
};
