/*
 * emu_server.h: the emulator's state (struct sb_emu, opaque in emu.h). It is
 * owned by emu_server.c, which creates, serves and frees it; emu_call.c reads
 * the parts a protocol handler may ask for (sb_emu_required_key,
 * sb_emu_faults_of, sb_emu_scenarios_of, sb_emu_tag_first_use). No other file
 * includes this header.
 */
#ifndef SB_EMU_SERVER_H
#define SB_EMU_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emu_internal.h"

struct event_base;
struct evhttp;
struct evhttp_bound_socket;
struct evhttp_connection;
struct sb_emu_req;

struct sb_emu {
    struct event_base *base; /* borrowed */
    struct evhttp *http;
    struct evhttp_bound_socket *bound;
    int port;
    int latency_ms;
    char *require_key;
    struct sb_emu_journal *journal;
    struct sb_emu_faults *faults;       /* route faults and per-model counters */
    struct sb_emu_scenarios *scenarios; /* per-model scenarios (emu_scenarios.c) */
    struct sb_emu_req *reqs;            /* live deferred requests */
    struct evhttp_connection **conn_by_fd;
    size_t conn_cap;
    struct sb_emu_stats stats;
    uint64_t journal_seq;
    bool closing;
    /* Tags seen by [[emu:schema_violation_once=TAG]]: a ring, oldest forgotten first. */
    char *tags[SB_EMU_MAX_TAGS];
    size_t ntags, tag_next;
};

#endif
