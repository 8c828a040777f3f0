/*
 * wsql_tools: statements the data tools share: the route of a deployment
 * model a tool calls on the operator's behalf (the image model of image
 * generation, the embeddings model of a vector store). Routes are the operator's: no account scoping, and the
 * credential travels only as the name of the worker's environment variable.
 */
#ifndef WSQL_TOOLS_H
#define WSQL_TOOLS_H

#include "sb_db.h"

#define SB_WSQL_TOOL_ROUTE "tool_route"
#define SB_WSQL_STORE_ROUTE "store_route"

extern const sb_db_stmt_t sb_wsql_tool_statements[];
extern const int sb_wsql_tool_statement_count;

#endif
