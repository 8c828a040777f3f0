/*
 * fe_admin_api: the admin API on the frontend's admin listener, under
 * /admin/v1/, for admin keys only ("Authorization: Bearer sk-sbadmin-...",
 * sbctl admin-key create). A generation key is refused with 403 and a
 * missing or unknown key with 401; the admin listener is the only place it
 * is served (never the public port).
 *
 * Each endpoint is one operation of the database's sb_admin_api (schema
 * 015): the route names it, and its arguments are the JSON body, the path's
 * names and the query string; the operation's (status, body) is the reply.
 * Changes go through the same sb_admin_* rules as sbctl and are audited with
 * the actor "admin-key:<id>". A key is created here (its secret made in this
 * process, shown once in the reply, stored only as its hash).
 *
 *   GET  /admin/v1/whoami                  GET  /admin/v1/live (the broker's queues, credits and circuits, now)
 *   GET  /admin/v1/accounts                POST /admin/v1/accounts {name, zero_data_retention}
 *   POST /admin/v1/accounts/{name}/enable  POST /admin/v1/accounts/{name}/disable
 *   GET  /admin/v1/groups                  POST /admin/v1/groups {name}
 *   POST /admin/v1/groups/{group}/models {model}   DELETE /admin/v1/groups/{group}/models/{model}
 *   GET  /admin/v1/keys[?account=]         POST /admin/v1/keys {account, group, name}
 *   POST /admin/v1/keys/{id}/enable|disable   POST /admin/v1/keys/{id}/group {group}
 *   GET  /admin/v1/models                  PUT  /admin/v1/models/{id} {provider, base_url, ...}
 *   POST /admin/v1/models/{id}/enable|disable
 *   GET  /admin/v1/limits                  PUT  /admin/v1/limits/keys/{id} {rpm, tpm, concurrency}
 *   PUT  /admin/v1/limits/groups/{name} {...}   PUT /admin/v1/limits/accounts/{name} {quota_tokens}
 *   POST /admin/v1/limits/accounts/{name}/reset_usage
 *   GET  /admin/v1/request_log?since&until&key_id&account&model&status&style&q&limit
 *   GET  /admin/v1/usage?since&until&bucket=day|hour&...   GET /admin/v1/tool_calls?limit
 *   GET  /admin/v1/audit?resource&limit    GET  /admin/v1/admin_keys
 *   GET  /admin/v1/search_backends
 *   POST /admin/v1/search_backends {name, kind, base_url, credential_ref, default}
 *   POST /admin/v1/search_backends/{name}/default|enable|disable
 *   DELETE /admin/v1/search_backends/{name}
 *   GET  /admin/v1/prompts[?account=]      GET  /admin/v1/prompts/{id}[?version=]
 *   POST /admin/v1/prompts {account, name, body}
 *   POST /admin/v1/prompts/{id}/versions {body, set_current}
 *   POST /admin/v1/prompts/{id}/current {version}
 * A model id with '/' goes in a path as %2F.
 */
#ifndef FE_ADMIN_API_H
#define FE_ADMIN_API_H

#include <stdbool.h>

#include "sb_http.h"

struct fe_server;

/* Serves req when its path is under /admin/v1/ (true), else leaves it
 * (false). */
bool fe_admin_api_handle(sb_http_req_t *req, struct fe_server *srv);

#endif
