/*
 * sb_ssrf: the outbound address policy (see sb_ssrf.h).
 *
 * Two entry points share one decision, sb_ssrf_decide, made on a 16-byte
 * address: the URL check (a literal host, after normalising every IPv4
 * spelling a resolver would accept) and the connect-time check (the address
 * curl is about to connect to). The URL parser is deliberately narrower than
 * RFC 3986 and WHATWG: whatever two parsers could read differently (userinfo,
 * backslashes, empty authorities, several colons, percent signs or non-ASCII
 * in a host name, control characters, spaces) is refused rather than
 * interpreted, so the host it judges is the host curl uses. The connect-time
 * check stays the last word either way: it sees the real address.
 */
#include "sb_ssrf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sb_alloc.h"

/* One allowlisted network: v4 networks are kept as 4 bytes, v6 as 16. */
struct sb_ssrf_cidr {
    int family;
    unsigned char addr[16];
    int prefix;
};

struct sb_ssrf {
    bool allow_http;
    struct sb_ssrf_cidr *cidrs;
    size_t n_cidrs;
};

/* Longest URL judged: longer ones are refused, not parsed. */
#define SB_SSRF_URL_MAX 8192

sb_ssrf_t *sb_ssrf_new(void)
{
    return sb_xcalloc(1, sizeof(sb_ssrf_t));
}

void sb_ssrf_destroy(sb_ssrf_t **pg)
{
    if (!pg || !*pg)
        return;
    free((*pg)->cidrs);
    free(*pg);
    *pg = NULL;
}

void sb_ssrf_allow_http(sb_ssrf_t *g, bool allow)
{
    g->allow_http = allow;
}

bool sb_ssrf_http_allowed(const sb_ssrf_t *g)
{
    return g && g->allow_http;
}

/* Whether the first `prefix` bits of a and b agree. */
static bool sb_ssrf_prefix_eq(const unsigned char *a, const unsigned char *b, int prefix)
{
    int whole = prefix / 8, rest = prefix % 8;
    if (memcmp(a, b, (size_t)whole) != 0)
        return false;
    if (rest == 0)
        return true;
    unsigned char mask = (unsigned char)(0xff << (8 - rest));
    return (a[whole] & mask) == (b[whole] & mask);
}

/* Parses "addr" or "addr/prefix" strictly (dotted quad or inet_pton IPv6). */
static int sb_ssrf_parse_cidr(const char *s, size_t len, struct sb_ssrf_cidr *out)
{
    char buf[INET6_ADDRSTRLEN + 8];
    if (len == 0 || len >= sizeof buf)
        return -EINVAL;
    memcpy(buf, s, len);
    buf[len] = '\0';
    int prefix = -1;
    char *slash = strchr(buf, '/');
    if (slash) {
        *slash = '\0';
        const char *p = slash + 1;
        if (!*p || strlen(p) > 3)
            return -EINVAL;
        prefix = 0;
        for (; *p; p++) {
            if (*p < '0' || *p > '9')
                return -EINVAL;
            prefix = prefix * 10 + (*p - '0');
        }
    }
    memset(out, 0, sizeof *out);
    if (inet_pton(AF_INET, buf, out->addr) == 1) {
        out->family = AF_INET;
        if (prefix < 0)
            prefix = 32;
        if (prefix > 32)
            return -EINVAL;
    } else if (inet_pton(AF_INET6, buf, out->addr) == 1) {
        out->family = AF_INET6;
        if (prefix < 0)
            prefix = 128;
        if (prefix > 128)
            return -EINVAL;
    } else {
        return -EINVAL;
    }
    out->prefix = prefix;
    return 0;
}

static void sb_ssrf_add(sb_ssrf_t *g, const struct sb_ssrf_cidr *c)
{
    g->cidrs = sb_xrealloc(g->cidrs, (g->n_cidrs + 1) * sizeof *g->cidrs);
    g->cidrs[g->n_cidrs++] = *c;
}

int sb_ssrf_allow_cidr(sb_ssrf_t *g, const char *cidr)
{
    struct sb_ssrf_cidr c;
    if (!cidr || sb_ssrf_parse_cidr(cidr, strlen(cidr), &c) < 0)
        return -EINVAL;
    sb_ssrf_add(g, &c);
    return 0;
}

/* All or nothing: a list with one bad entry adds none of them. */
int sb_ssrf_allow_list(sb_ssrf_t *g, const char *list)
{
    if (!list)
        return -EINVAL;
    for (int pass = 0; pass < 2; pass++) {
        const char *p = list;
        while (*p) {
            const char *end = strchr(p, ',');
            if (!end)
                end = p + strlen(p);
            const char *a = p, *b = end;
            while (a < b && (*a == ' ' || *a == '\t'))
                a++;
            while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
                b--;
            struct sb_ssrf_cidr c;
            if (a < b) {
                if (sb_ssrf_parse_cidr(a, (size_t)(b - a), &c) < 0)
                    return -EINVAL;
                if (pass == 1)
                    sb_ssrf_add(g, &c);
            }
            p = *end ? end + 1 : end;
        }
    }
    return 0;
}

/* ---- the decision ----------------------------------------------------- */

/* Refused IPv4 networks: address (host order) and prefix length. */
static const struct {
    uint32_t net;
    int prefix;
} sb_ssrf_v4_refused[] = {
    {0x00000000u, 8},  /* 0.0.0.0/8 "this network" (0.0.0.0 reaches the host itself) */
    {0x0a000000u, 8},  /* 10/8 private */
    {0x64400000u, 10}, /* 100.64/10 carrier-grade NAT */
    {0x7f000000u, 8},  /* 127/8 loopback */
    {0xa9fe0000u, 16}, /* 169.254/16 link-local, cloud metadata 169.254.169.254 */
    {0xac100000u, 12}, /* 172.16/12 private */
    {0xc0000000u, 24}, /* 192.0.0/24 IETF protocol assignments */
    {0xc0000200u, 24}, /* 192.0.2/24 TEST-NET-1 */
    {0xc0586300u, 24}, /* 192.88.99/24 6to4 relay anycast (deprecated) */
    {0xc0a80000u, 16}, /* 192.168/16 private */
    {0xc6120000u, 15}, /* 198.18/15 benchmarking */
    {0xc6336400u, 24}, /* 198.51.100/24 TEST-NET-2 */
    {0xcb007100u, 24}, /* 203.0.113/24 TEST-NET-3 */
    {0xe0000000u, 4},  /* 224/4 multicast */
    {0xf0000000u, 4},  /* 240/4 reserved, 255.255.255.255 broadcast */
};

static bool sb_ssrf_v4_is_refused(const unsigned char v4[4])
{
    uint32_t a = (uint32_t)v4[0] << 24 | (uint32_t)v4[1] << 16 | (uint32_t)v4[2] << 8 | v4[3];
    for (size_t i = 0; i < sizeof sb_ssrf_v4_refused / sizeof sb_ssrf_v4_refused[0]; i++) {
        uint32_t mask = 0xffffffffu << (32 - sb_ssrf_v4_refused[i].prefix);
        if ((a & mask) == sb_ssrf_v4_refused[i].net)
            return true;
    }
    return false;
}

/* Refused IPv6 networks, whole. 6to4 (2002::/16) is judged by the IPv4
 * address it embeds instead (sb_ssrf_v6_is_refused). */
static const struct {
    unsigned char net[16];
    int prefix;
} sb_ssrf_v6_refused[] = {
    {{0}, 96},                                        /* ::/96: ::, ::1 and IPv4-compatible ::a.b.c.d */
    {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff}, 96}, /* ::ffff:0:0/96 IPv4-mapped */
    {{0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0}, 96}, /* ::ffff:0:0:0/96 IPv4-translated (SIIT) */
    {{0, 0x64, 0xff, 0x9b}, 96},                      /* 64:ff9b::/96 NAT64 well-known prefix */
    {{0, 0x64, 0xff, 0x9b, 0, 1}, 48},                /* 64:ff9b:1::/48 NAT64 local use */
    {{0x01, 0x00}, 64},                               /* 100::/64 discard-only */
    {{0x20, 0x01, 0, 0}, 32},                         /* 2001::/32 Teredo */
    {{0x20, 0x01, 0, 0x10}, 28},                      /* 2001:10::/28 ORCHID */
    {{0x20, 0x01, 0x0d, 0xb8}, 32},                   /* 2001:db8::/32 documentation */
    {{0xfc}, 7},                                      /* fc00::/7 unique local (fd00:ec2::254 metadata) */
    {{0xfe, 0x80}, 10},                               /* fe80::/10 link-local */
    {{0xfe, 0xc0}, 10},                               /* fec0::/10 site-local (deprecated) */
    {{0xff}, 8},                                      /* ff00::/8 multicast */
};

static bool sb_ssrf_v6_is_refused(const unsigned char v6[16])
{
    for (size_t i = 0; i < sizeof sb_ssrf_v6_refused / sizeof sb_ssrf_v6_refused[0]; i++)
        if (sb_ssrf_prefix_eq(v6, sb_ssrf_v6_refused[i].net, sb_ssrf_v6_refused[i].prefix))
            return true;
    /* 6to4: 2002:AABB:CCDD::/48 is relayed to the IPv4 address AA.BB.CC.DD. */
    if (v6[0] == 0x20 && v6[1] == 0x02)
        return sb_ssrf_v4_is_refused(v6 + 2);
    return false;
}

static bool sb_ssrf_in_allowlist(const sb_ssrf_t *g, int family, const unsigned char *addr)
{
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    /* An IPv4-mapped address is the IPv4 address itself to the kernel: an
     * IPv4 network on the list covers it. */
    if (family == AF_INET6 && !memcmp(addr, mapped, sizeof mapped) && sb_ssrf_in_allowlist(g, AF_INET, addr + 12))
        return true;
    for (size_t i = 0; i < g->n_cidrs; i++)
        if (g->cidrs[i].family == family && sb_ssrf_prefix_eq(addr, g->cidrs[i].addr, g->cidrs[i].prefix))
            return true;
    return false;
}

/* The one decision: addr is 4 bytes (AF_INET) or 16 (AF_INET6). */
static bool sb_ssrf_decide(const sb_ssrf_t *g, int family, const unsigned char *addr)
{
    if (g && sb_ssrf_in_allowlist(g, family, addr))
        return true;
    return family == AF_INET ? !sb_ssrf_v4_is_refused(addr) : !sb_ssrf_v6_is_refused(addr);
}

bool sb_ssrf_addr_allowed(const sb_ssrf_t *g, const struct sockaddr *sa, socklen_t len)
{
    if (!sa)
        return false;
    if (sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
        struct sockaddr_in sin;
        memcpy(&sin, sa, sizeof sin);
        return sb_ssrf_decide(g, AF_INET, (const unsigned char *)&sin.sin_addr);
    }
    if (sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
        struct sockaddr_in6 sin6;
        memcpy(&sin6, sa, sizeof sin6);
        return sb_ssrf_decide(g, AF_INET6, sin6.sin6_addr.s6_addr);
    }
    return false; /* AF_UNIX and the rest: never an outbound fetch */
}

/* ---- URL parsing -------------------------------------------------------- */

static void sb_ssrf_why(char *why, size_t why_len, const char *text)
{
    if (why && why_len)
        snprintf(why, why_len, "%s", text);
}

/* One part of an IPv4 literal as inet_aton reads it: 0x hex, leading-0
 * octal, else decimal. -1 when not a number; -2 when out of range. */
static int64_t sb_ssrf_v4_part(const char *s, size_t n)
{
    int base = 10;
    size_t i = 0;
    if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        i = 2;
    } else if (n >= 2 && s[0] == '0') {
        base = 8;
        i = 1;
    }
    if (n == 0)
        return -1;
    uint64_t v = 0;
    for (; i < n; i++) {
        int d;
        char c = s[i];
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (base == 16 && c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else if (base == 16 && c >= 'A' && c <= 'F')
            d = c - 'A' + 10;
        else
            return -1;
        if (d >= base)
            return -1;
        v = v * (uint64_t)base + (uint64_t)d;
        if (v > 0xffffffffu)
            return -2;
    }
    return (int64_t)v;
}

/* Whether a label looks like a number (the WHATWG "ends in a number" test):
 * all decimal digits, or 0x followed by hex digits. */
static bool sb_ssrf_numeric_label(const char *s, size_t n)
{
    if (n == 0)
        return false;
    size_t i = 0;
    bool hex = n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
    if (hex)
        i = 2;
    for (; i < n; i++) {
        char c = s[i];
        if (!((c >= '0' && c <= '9') || (hex && ((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))))
            return false;
    }
    return true;
}

/* A host of 1-4 dot-separated numbers (the last filling the remaining
 * bytes, as inet_aton and curl read "127.1" or "2130706433"). 1: an IPv4
 * literal, normalised into out; 0: not one (a name); -1: it ends in a number
 * but is no valid address, which resolvers disagree on: refused. */
static int sb_ssrf_parse_v4(const char *h, size_t n, unsigned char out[4])
{
    if (n > 0 && h[n - 1] == '.') /* one trailing dot, as for names */
        n--;
    size_t last = n;
    while (last > 0 && h[last - 1] != '.')
        last--;
    if (!sb_ssrf_numeric_label(h + last, n - last))
        return 0;
    uint32_t parts[4];
    int np = 0;
    size_t i = 0;
    while (i <= n) {
        size_t j = i;
        while (j < n && h[j] != '.')
            j++;
        if (np == 4)
            return -1;
        int64_t v = sb_ssrf_v4_part(h + i, j - i);
        if (v < 0)
            return -1;
        parts[np++] = (uint32_t)v;
        i = j + 1;
    }
    uint32_t a = 0;
    for (int k = 0; k < np - 1; k++) {
        if (parts[k] > 255)
            return -1;
        a |= parts[k] << (24 - 8 * k);
    }
    uint32_t lastv = parts[np - 1];
    if (np > 1 && lastv >> (8 * (5 - np)) != 0)
        return -1;
    a |= lastv;
    out[0] = (unsigned char)(a >> 24);
    out[1] = (unsigned char)(a >> 16);
    out[2] = (unsigned char)(a >> 8);
    out[3] = (unsigned char)a;
    return 1;
}

/* "[v6]" or "[v6%zone]" / "[v6%25zone]" without the brackets. */
static bool sb_ssrf_parse_v6(const char *h, size_t n, unsigned char out[16])
{
    char buf[INET6_ADDRSTRLEN + 1];
    const char *pct = memchr(h, '%', n);
    size_t alen = pct ? (size_t)(pct - h) : n;
    if (alen == 0 || alen >= sizeof buf)
        return false;
    if (pct) {
        const char *z = pct + 1, *end = h + n;
        if (end - z >= 2 && z[0] == '2' && z[1] == '5')
            z += 2;
        if (z == end)
            return false;
        for (; z < end; z++)
            if (!((*z >= 'a' && *z <= 'z') || (*z >= 'A' && *z <= 'Z') || (*z >= '0' && *z <= '9') || *z == '-' ||
                  *z == '_' || *z == '.' || *z == '~'))
                return false;
    }
    memcpy(buf, h, alen);
    buf[alen] = '\0';
    return inet_pton(AF_INET6, buf, out) == 1;
}

/* Names refused before any lookup: they mean this machine or its cloud's
 * metadata service wherever they are resolved. n excludes a trailing dot. */
static bool sb_ssrf_name_refused(const char *h, size_t n)
{
    static const char lh[] = "localhost", dotlh[] = ".localhost", meta[] = "metadata.google.internal";
    if (n == sizeof lh - 1 && !strncasecmp(h, lh, n))
        return true;
    if (n >= sizeof dotlh - 1 && !strncasecmp(h + n - (sizeof dotlh - 1), dotlh, sizeof dotlh - 1))
        return true;
    return n == sizeof meta - 1 && !strncasecmp(h, meta, n);
}

/* A host name of LDH labels (and '_', which DNS carries), at most one
 * trailing dot, no empty label. */
static bool sb_ssrf_valid_name(const char *h, size_t n)
{
    if (n > 0 && h[n - 1] == '.')
        n--;
    if (n == 0 || n > 253)
        return false;
    size_t label = 0;
    for (size_t i = 0; i < n; i++) {
        char c = h[i];
        if (c == '.') {
            if (label == 0)
                return false;
            label = 0;
            continue;
        }
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_'))
            return false;
        if (++label > 63)
            return false;
    }
    return label > 0;
}

int sb_ssrf_check_url(const sb_ssrf_t *g, const char *url, char *why, size_t why_len)
{
    sb_ssrf_why(why, why_len, "");
    if (!url) {
        sb_ssrf_why(why, why_len, "malformed URL");
        return -EACCES;
    }
    size_t len = strnlen(url, SB_SSRF_URL_MAX + 1);
    if (len == 0 || len > SB_SSRF_URL_MAX) {
        sb_ssrf_why(why, why_len, "malformed URL");
        return -EACCES;
    }
    /* Spaces, controls and backslashes (which WHATWG reads as '/') are
     * where parsers disagree: none of them anywhere. */
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)url[i];
        if (c <= 0x20 || c == 0x7f || c == '\\') {
            sb_ssrf_why(why, why_len, "malformed URL");
            return -EACCES;
        }
    }
    /* scheme "://" */
    size_t i = 0;
    while (i < len &&
           ((url[i] >= 'a' && url[i] <= 'z') || (url[i] >= 'A' && url[i] <= 'Z') ||
            (i > 0 && ((url[i] >= '0' && url[i] <= '9') || url[i] == '+' || url[i] == '-' || url[i] == '.'))))
        i++;
    if (i == 0 || len - i < 3 || memcmp(url + i, "://", 3) != 0) {
        sb_ssrf_why(why, why_len, "malformed URL");
        return -EACCES;
    }
    bool https = i == 5 && !strncasecmp(url, "https", 5);
    bool http = i == 4 && !strncasecmp(url, "http", 4);
    if (!https && !(http && g && g->allow_http)) {
        sb_ssrf_why(why, why_len, "scheme not allowed");
        return -EACCES;
    }
    /* authority: up to the path, query or fragment */
    const char *auth = url + i + 3;
    size_t alen = strcspn(auth, "/?#");
    if (alen == 0) {
        sb_ssrf_why(why, why_len, "malformed URL");
        return -EACCES;
    }
    if (memchr(auth, '@', alen)) {
        sb_ssrf_why(why, why_len, "credentials in the URL");
        return -EACCES;
    }
    const char *host, *port;
    size_t hlen;
    bool bracket = auth[0] == '[';
    if (bracket) {
        const char *close = memchr(auth, ']', alen);
        if (!close) {
            sb_ssrf_why(why, why_len, "malformed URL");
            return -EACCES;
        }
        host = auth + 1;
        hlen = (size_t)(close - host);
        port = close + 1;
        if (port < auth + alen && *port != ':') {
            sb_ssrf_why(why, why_len, "malformed URL");
            return -EACCES;
        }
    } else {
        host = auth;
        const char *colon = memchr(auth, ':', alen);
        hlen = colon ? (size_t)(colon - auth) : alen;
        port = auth + hlen;
    }
    /* port: ":" and 1..65535, or nothing */
    const char *aend = auth + alen;
    if (port < aend) {
        const char *p = port + 1;
        unsigned long v = 0;
        if (p == aend || aend - p > 5) {
            sb_ssrf_why(why, why_len, "malformed URL");
            return -EACCES;
        }
        for (; p < aend; p++) {
            if (*p < '0' || *p > '9') {
                sb_ssrf_why(why, why_len, "malformed URL");
                return -EACCES;
            }
            v = v * 10 + (unsigned long)(*p - '0');
        }
        if (v == 0 || v > 65535) {
            sb_ssrf_why(why, why_len, "malformed URL");
            return -EACCES;
        }
    }
    if (bracket) {
        unsigned char a6[16];
        if (!sb_ssrf_parse_v6(host, hlen, a6)) {
            sb_ssrf_why(why, why_len, "malformed URL");
            return -EACCES;
        }
        if (!sb_ssrf_decide(g, AF_INET6, a6)) {
            sb_ssrf_why(why, why_len, "address not allowed");
            return -EACCES;
        }
        return 0;
    }
    unsigned char a4[4];
    int v4 = sb_ssrf_parse_v4(host, hlen, a4);
    if (v4 < 0) {
        sb_ssrf_why(why, why_len, "malformed URL");
        return -EACCES;
    }
    if (v4 > 0) {
        if (!sb_ssrf_decide(g, AF_INET, a4)) {
            sb_ssrf_why(why, why_len, "address not allowed");
            return -EACCES;
        }
        return 0;
    }
    if (!sb_ssrf_valid_name(host, hlen)) {
        sb_ssrf_why(why, why_len, "malformed URL");
        return -EACCES;
    }
    if (sb_ssrf_name_refused(host, host[hlen - 1] == '.' ? hlen - 1 : hlen)) {
        sb_ssrf_why(why, why_len, "host name not allowed");
        return -EACCES;
    }
    return 0;
}
