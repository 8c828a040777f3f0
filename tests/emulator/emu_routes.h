/*
 * emu_routes: which protocol handler answers a /v1/... or /v1beta/...
 * request (or a /_search/... or /_pages/... one: the emulator's web). emu_server.c calls it once per request; the
 * handlers never call back into it (they reach the request through emu_call.c and describe their reply through
 * emu_reply.c).
 */
#ifndef SB_EMU_ROUTES_H
#define SB_EMU_ROUTES_H

struct sb_emu_call;

/*
 * Hands call to the first route that matches its method and path (the table
 * in emu_routes.c, in order). A path no route takes is OpenAI's 404 "Invalid
 * URL (METHOD PATH)", or its 401 first when the bearer key is wrong.
 */
void sb_emu_route(struct sb_emu_call *call);

#endif
