/*
 * fe_routes: the gateway's route table, every endpoint by method and path
 * (fe_routes.c). Only the server includes this: it hands the table to the
 * requests it accepts, so the HTTP layer (fe_router.h) never names an
 * endpoint.
 */
#ifndef FE_ROUTES_H
#define FE_ROUTES_H

#include "fe_router.h"

extern const fe_route_table_t fe_routes;

#endif
