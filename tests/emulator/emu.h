/*
 * sb_emu: the upstream emulator as a library. It serves the LLM providers'
 * real wire formats (OpenAI Chat Completions and Responses, Anthropic
 * Messages, Gemini generateContent) on loopback so that the gateway's tests
 * never leave the machine. main.c wraps it into the
 * `sb-emulator` executable; tests/unit/emulator/test_emulator.c runs it in-process.
 *
 * The emulator runs on an event_base that the caller owns and dispatches; it
 * never blocks and never sleeps (delays are event timers). Behaviour, CLI,
 * endpoints and in-band directives are documented at the top of main.c.
 * The caller should ignore SIGPIPE (writes to a client that left) and, for
 * sub-millisecond accurate delays, create the base with
 * EVENT_BASE_FLAG_PRECISE_TIMER (main.c does both).
 */
#ifndef SB_EMU_H
#define SB_EMU_H

#include <stddef.h>
#include <stdint.h>

struct event_base;

#define SB_EMU_DEFAULT_HOST "127.0.0.1"
#define SB_EMU_DEFAULT_PORT 18080
#define SB_EMU_DEFAULT_MAX_BODY (32u * 1024u * 1024u)
#define SB_EMU_DEFAULT_JOURNAL 1000
#define SB_EMU_DEFAULT_IDLE_TIMEOUT_S 120

struct sb_emu_config {
    const char *host;        /* borrowed; NULL means SB_EMU_DEFAULT_HOST */
    int port;                /* 0 binds an ephemeral port (see sb_emu_port) */
    int latency_ms;          /* delay before every /v1 reply; 0 = none */
    const char *require_key; /* borrowed (copied); NULL/"" = no auth check */
    size_t max_body;         /* request body limit in bytes; 0 = default */
    size_t journal_max;      /* requests kept by the journal; 0 = default */
    int idle_timeout_s;      /* keep-alive/read timeout; 0 = default */
};

/* Counters exposed by GET /_emu/stats. */
struct sb_emu_stats {
    uint64_t requests_total;   /* /v1/... requests received */
    int64_t open_requests;     /* /v1/... requests received and not yet fully answered or abandoned */
    uint64_t closed_by_client; /* /v1/... requests whose client went away before the reply was complete */
    int64_t open_connections;  /* client TCP connections currently open */
    uint64_t connections_total;
};

struct sb_emu;

/* Binds the listener and registers everything on base (borrowed; it must
 * outlive the emulator). Returns NULL on failure (logged). */
struct sb_emu *sb_emu_new(struct event_base *base, const struct sb_emu_config *cfg);

/* The bound TCP port (useful after binding port 0). */
int sb_emu_port(const struct sb_emu *emu);

void sb_emu_get_stats(const struct sb_emu *emu, struct sb_emu_stats *out);

/* Frees everything, including requests still held open (hang directive).
 * NULL-safe; sets *emu to NULL. Call with the base not dispatching. */
void sb_emu_destroy(struct sb_emu **emu);

#endif
