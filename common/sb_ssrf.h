/*
 * sb_ssrf: the one guard for every outbound URL a client or a model can
 * influence (MCP server URLs, searched and opened pages, later image and
 * file URLs). The worker's fetches (upstream.h, sb_upstream_fetch) apply it
 * twice: to the URL before anything starts (scheme, and a literal address in
 * any of its spellings), and to every address actually connected to (the
 * resolved one, at connect time, redirects included), so neither DNS
 * rebinding nor a redirect can reach a refused address.
 *
 * Refused: loopback, private (RFC 1918, IPv6 ULA), link-local, CGNAT
 * (100.64/10), multicast, broadcast, unspecified, reserved, documentation
 * and benchmarking ranges, cloud metadata (169.254.169.254,
 * fd00:ec2::254), IPv4-mapped / IPv4-compatible IPv6, NAT64 (64:ff9b::/96,
 * 64:ff9b:1::/48) and 6to4/Teredo forms of any refused IPv4 address; any
 * scheme but https (and http when allowed). Decimal, octal, hex and
 * shortened IPv4 host spellings are normalised before the decision.
 * An explicit allowlist of CIDRs (off by default; tests use it to reach
 * their loopback servers) lets chosen addresses through.
 */
#ifndef SB_SSRF_H
#define SB_SSRF_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

typedef struct sb_ssrf sb_ssrf_t;

/* A guard that refuses everything listed above and allows only https. */
sb_ssrf_t *sb_ssrf_new(void);
void sb_ssrf_destroy(sb_ssrf_t **g);

/* Lets addresses in cidr ("127.0.0.0/8", "::1/128", a bare address) through.
 * 0, or -EINVAL for a malformed CIDR. */
int sb_ssrf_allow_cidr(sb_ssrf_t *g, const char *cidr) __attribute__((warn_unused_result));
/* Lets a comma-separated list of CIDRs through. 0, or -EINVAL. */
int sb_ssrf_allow_list(sb_ssrf_t *g, const char *list) __attribute__((warn_unused_result));
/* Allows plain http as well as https. */
void sb_ssrf_allow_http(sb_ssrf_t *g, bool allow);
/* Whether plain http is allowed (false for NULL, the default guard). */
bool sb_ssrf_http_allowed(const sb_ssrf_t *g);

/* The URL check before a fetch: the scheme, the syntax, and the host when it
 * is an address literal in any spelling (or a name that always means this
 * machine or a metadata service: localhost, *.localhost,
 * metadata.google.internal). Any other name passes: what it resolves to is
 * judged at connect time. URLs with credentials (userinfo), backslashes,
 * spaces or control characters, and anything else two URL parsers could read
 * differently, are refused outright. g NULL: the default guard. 0, or
 * -EACCES with `why` (a short reason without the URL, for errors and logs;
 * may be NULL). */
int sb_ssrf_check_url(const sb_ssrf_t *g, const char *url, char *why, size_t why_len)
    __attribute__((warn_unused_result));

/* The check at connect time: true when the address may be connected to
 * (an allowlisted one, or one outside every refused range). An IPv4-mapped
 * IPv6 address is covered by the IPv4 networks of the allowlist. */
bool sb_ssrf_addr_allowed(const sb_ssrf_t *g, const struct sockaddr *sa, socklen_t len);

#endif
