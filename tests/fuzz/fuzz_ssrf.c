/*
 * fuzz_ssrf: libFuzzer harness for sb_ssrf_check_url, which judges URLs a
 * client or a model chose (MCP server URLs, pages to open, redirect
 * targets) before the worker fetches them.
 *
 * Input: one byte of guard settings (bit 0: allow http; bit 1: allowlist
 * 127.0.0.0/8), then the URL. Checked besides "no crash, no leak, no UB":
 * the result is 0 or -EACCES with a short reason; an allowed URL has no
 * space, control or backslash and an allowed scheme; a guard that allows
 * more never refuses what a stricter one allowed; and, the differential
 * that matters, whenever the guard allows a URL that libcurl's own parser
 * (the one the fetch uses) accepts, curl sees the same kind of scheme, no
 * credentials, not "localhost", and a host that, if it is an address
 * literal in curl's reading or in the resolver's (inet_aton), is an address
 * the guard allows.
 */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fuzz.h"
#include "sb_alloc.h"
#include "sb_ssrf.h"

static sb_ssrf_t *fuzz_guards[4];

static void fuzz_ssrf_init(void)
{
    if (fuzz_guards[0])
        return;
    for (int i = 0; i < 4; i++) {
        fuzz_guards[i] = sb_ssrf_new();
        sb_ssrf_allow_http(fuzz_guards[i], i & 1);
        if (i & 2)
            FUZZ_REQUIRE(sb_ssrf_allow_cidr(fuzz_guards[i], "127.0.0.0/8") == 0);
    }
}

/* The address the guard would judge for a host as curl reports it. */
static void fuzz_ssrf_check_host(const sb_ssrf_t *g, const char *host)
{
    FUZZ_REQUIRE(strcasecmp(host, "localhost") != 0 && strcasecmp(host, "localhost.") != 0);
    size_t n = strlen(host);
    if (n >= 2 && host[0] == '[' && host[n - 1] == ']') {
        char buf[64];
        FUZZ_REQUIRE(n - 2 < sizeof buf);
        memcpy(buf, host + 1, n - 2);
        buf[n - 2] = '\0';
        struct sockaddr_in6 sin6 = {.sin6_family = AF_INET6};
        FUZZ_REQUIRE(inet_pton(AF_INET6, buf, &sin6.sin6_addr) == 1);
        FUZZ_REQUIRE(sb_ssrf_addr_allowed(g, (struct sockaddr *)&sin6, sizeof sin6));
        return;
    }
    struct sockaddr_in sin = {.sin_family = AF_INET};
    if (inet_aton(host, &sin.sin_addr))
        FUZZ_REQUIRE(sb_ssrf_addr_allowed(g, (struct sockaddr *)&sin, sizeof sin));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_ssrf_init();
    if (size < 1)
        return 0;
    int mode = data[0] & 3;
    const sb_ssrf_t *g = fuzz_guards[mode];
    char *url = sb_xstrndup((const char *)data + 1, size - 1);
    char why[48];
    memset(why, 'x', sizeof why);
    int rc = sb_ssrf_check_url(g, url, why, sizeof why);
    FUZZ_REQUIRE(rc == 0 || rc == -EACCES);
    FUZZ_REQUIRE(memchr(why, '\0', sizeof why) != NULL);
    FUZZ_REQUIRE((rc == 0) == (why[0] == '\0'));
    FUZZ_REQUIRE(sb_ssrf_check_url(g, url, NULL, 0) == rc); /* no reason buffer: same answer */
    if (rc == 0) {
        /* A more permissive guard allows it too. */
        FUZZ_REQUIRE(sb_ssrf_check_url(fuzz_guards[3], url, NULL, 0) == 0);
        for (const char *p = url; *p; p++)
            FUZZ_REQUIRE((unsigned char)*p > 0x20 && *p != 0x7f && *p != '\\');
        bool https = !strncasecmp(url, "https://", 8), http = !strncasecmp(url, "http://", 7);
        FUZZ_REQUIRE(https || (http && (mode & 1)));

        CURLU *u = curl_url();
        FUZZ_REQUIRE(u != NULL);
        if (curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK) {
            char *scheme = NULL, *host = NULL, *user = NULL, *password = NULL;
            FUZZ_REQUIRE(curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK);
            FUZZ_REQUIRE(!strcmp(scheme, "https") || (!strcmp(scheme, "http") && (mode & 1)));
            FUZZ_REQUIRE(curl_url_get(u, CURLUPART_USER, &user, 0) != CURLUE_OK);
            FUZZ_REQUIRE(curl_url_get(u, CURLUPART_PASSWORD, &password, 0) != CURLUE_OK);
            if (curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK)
                fuzz_ssrf_check_host(g, host);
            curl_free(scheme);
            curl_free(host);
            curl_free(user);
            curl_free(password);
        }
        curl_url_cleanup(u);
    }
    free(url);
    return 0;
}
