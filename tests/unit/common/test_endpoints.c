/*
 * Unit tests for sb_endpoints: the broker list a frontend or a worker is
 * given, plain entries and dns:// names (resolved on a real libevent loop;
 * numeric hosts and /etc/hosts' localhost need no DNS server).
 */
#include <event2/event.h>
#include <stdbool.h>
#include <string.h>

#include "sb_endpoints.h"
#include "sb_test.h"
#include "sb_time.h"

static int changes, joined, left;
static char last[64];

static void on_change(const char *ep, bool listed, void *arg)
{
    (void)arg;
    changes++;
    listed ? joined++ : left++;
    snprintf(last, sizeof last, "%s", ep);
}

static void check_bad(struct event_base *base, const char *spec, const char *why)
{
    char err[256] = "";
    sb_endpoints_t *e = sb_endpoints_new(base, spec, on_change, NULL, err, sizeof err);
    CHECK(e == NULL);
    CHECK(strstr(err, why) != NULL);
    if (!strstr(err, why))
        fprintf(stderr, "  %s: %s\n", spec, err);
    sb_endpoints_destroy(&e);
}

static void run_until_changes(struct event_base *base, int want, int ms)
{
    int64_t end = sb_mono_ms() + ms;
    while (changes < want && sb_mono_ms() < end)
        event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
}

int main(void)
{
    struct event_base *base = event_base_new();
    char err[256];

    /* Plain entries: kept as written, sorted, duplicates dropped, spaces trimmed. */
    sb_endpoints_t *e = sb_endpoints_new(base, " tcp://10.0.0.2:5555, tcp://10.0.0.1:5555,tcp://10.0.0.2:5555",
                                         on_change, NULL, err, sizeof err);
    CHECK(e != NULL);
    size_t n = 0;
    const char *const *eps = sb_endpoints_list(e, &n);
    CHECK_INT(n, 2);
    if (n == 2) {
        CHECK_STR(eps[0], "tcp://10.0.0.1:5555");
        CHECK_STR(eps[1], "tcp://10.0.0.2:5555");
    }
    CHECK_INT(changes, 0); /* the first set is read, not announced */
    sb_endpoints_destroy(&e);
    CHECK(e == NULL);

    /* Malformed lists. */
    check_bad(base, "", "empty entry");
    check_bad(base, "tcp://a:1,,tcp://b:2", "empty entry");
    check_bad(base, "dns://sb-broker", "expected dns://NAME:PORT");
    check_bad(base, "dns://sb-broker:", "expected dns://NAME:PORT");
    check_bad(base, "dns://:5555", "expected dns://NAME:PORT");
    check_bad(base, "dns://sb-broker:65536", "expected dns://NAME:PORT");
    check_bad(base, "dns://sb-broker:55x5", "expected dns://NAME:PORT");

    /* A name: nothing until it resolves, then announced with the plain entries. */
    changes = 0;
    e = sb_endpoints_new(base, "dns://127.0.0.1:5601, ipc:///tmp/x.sock", on_change, NULL, err, sizeof err);
    CHECK(e != NULL);
    run_until_changes(base, 1, 3000);
    CHECK(changes >= 1);
    eps = sb_endpoints_list(e, &n);
    CHECK_INT(n, 2);
    if (n == 2) {
        CHECK_STR(eps[0], "ipc:///tmp/x.sock");
        CHECK_STR(eps[1], "tcp://127.0.0.1:5601");
    }
    CHECK_INT(joined, 1); /* the name's address joined; the plain entry was there from the start */
    CHECK_INT(left, 0);
    CHECK_STR(last, "tcp://127.0.0.1:5601");
    /* Resolving again to the same addresses announces nothing. */
    int before = changes;
    sb_endpoints_refresh(e);
    for (int i = 0; i < 50; i++)
        event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
    CHECK_INT(changes, before);
    sb_endpoints_destroy(&e);

    /* A name from /etc/hosts. */
    changes = 0;
    e = sb_endpoints_new(base, "dns://localhost:5602", on_change, NULL, err, sizeof err);
    CHECK(e != NULL);
    run_until_changes(base, 1, 3000);
    eps = sb_endpoints_list(e, &n);
    CHECK(n >= 1);
    bool loopback = false;
    for (size_t i = 0; i < n; i++)
        loopback |= !strcmp(eps[i], "tcp://127.0.0.1:5602") || !strcmp(eps[i], "tcp://[::1]:5602");
    CHECK(loopback);
    sb_endpoints_destroy(&e);

    /* Destroyed while a name is being resolved: nothing is called after. */
    changes = 0;
    e = sb_endpoints_new(base, "dns://no-such-host.invalid:5603", on_change, NULL, err, sizeof err);
    CHECK(e != NULL);
    sb_endpoints_destroy(&e);
    for (int i = 0; i < 20; i++)
        event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
    CHECK_INT(changes, 0);

    event_base_free(base);
    return sb_test_finish("endpoints");
}
