/*
 * test_ssrf: the outbound address policy (sb_ssrf). The suite of URL forms
 * that must all be refused (every spelling of a refused address, scheme,
 * credential and parser tricks), public forms that must pass, the allowlist
 * both ways, and the connect-time check on socket addresses.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "sb_ssrf.h"
#include "sb_test.h"

/* Every one refused by a default guard (https only, no allowlist). */
static const char *const refused[] = {
    /* loopback in every IPv4 spelling */
    "https://127.0.0.1/",
    "https://127.0.0.1:8443/x",
    "https://127.1",
    "https://127.0.1",
    "https://127.0.0.1.",
    "https://2130706433",
    "https://2130706433/admin",
    "https://0x7f000001",
    "https://0x7F.1",
    "https://0x7f.0x0.0x0.0x1",
    "https://0177.0.0.1",
    "https://0177.0.0.01",
    "https://017700000001",
    "https://0177.1",
    "https://127.255.255.254",
    /* unspecified, "this network" */
    "https://0",
    "https://0.0.0.0",
    "https://0x0",
    "https://0.1.2.3",
    /* private, CGNAT, link-local and metadata */
    "https://10.0.0.1",
    "https://012.0.0.1",
    "https://167772161",
    "https://172.16.0.1",
    "https://172.31.255.255",
    "https://192.168.1.1",
    "https://0xc0.0xa8.1.1",
    "https://100.64.0.1",
    "https://100.127.255.255",
    "https://169.254.169.254/latest/meta-data/",
    "https://169.254.0.1",
    "https://2852039166",
    "https://0xa9fea9fe",
    "https://0251.0376.0251.0376",
    "https://169.254.43518",
    /* reserved, documentation, benchmarking, multicast, broadcast */
    "https://192.0.0.8",
    "https://192.0.2.1",
    "https://198.18.0.1",
    "https://198.19.255.1",
    "https://198.51.100.7",
    "https://203.0.113.9",
    "https://224.0.0.1",
    "https://239.255.255.250",
    "https://240.0.0.1",
    "https://255.255.255.255",
    "https://4294967295",
    /* IPv6 literals */
    "https://[::1]/",
    "https://[::1]:443/",
    "https://[0:0:0:0:0:0:0:1]",
    "https://[::]",
    "https://[::ffff:127.0.0.1]",
    "https://[::ffff:7f00:1]",
    "https://[::FFFF:7F00:0001]",
    "https://[::ffff:169.254.169.254]",
    "https://[::ffff:10.0.0.1]",
    "https://[::ffff:8.8.8.8]",
    "https://[::127.0.0.1]",
    "https://[::7f00:1]",
    "https://[::ffff:0:127.0.0.1]",
    "https://[64:ff9b::127.0.0.1]",
    "https://[64:ff9b::a9fe:a9fe]",
    "https://[64:ff9b::8.8.8.8]",
    "https://[64:ff9b:1::a00:1]",
    "https://[2002:7f00:1::]",
    "https://[2002:a9fe:a9fe::1]",
    "https://[2002:c0a8:101::1]",
    "https://[2001::1]",
    "https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]",
    "https://[2001:db8::1]",
    "https://[fc00::1]",
    "https://[fd00::1]",
    "https://[fd00:ec2::254]",
    "https://[fe80::1]",
    "https://[fe80::1%25eth0]",
    "https://[fe80::1%eth0]",
    "https://[febf::1]",
    "https://[fec0::1]",
    "https://[ff02::1]",
    "https://[ff05::c]",
    /* names */
    "https://localhost",
    "https://localhost/",
    "https://localhost:443/",
    "https://LOCALHOST",
    "https://localhost.",
    "https://a.localhost",
    "https://x.y.LocalHost.",
    "https://metadata.google.internal/computeMetadata/v1/",
    "https://metadata.google.internal.",
    /* schemes */
    "http://example.com/",
    "HTTP://example.com/",
    "file:///etc/passwd",
    "FILE:///etc/passwd",
    "gopher://example.com/_x",
    "ftp://example.com/",
    "dict://example.com:11211/",
    "ldap://example.com/",
    "ws://example.com/",
    "javascript:alert(1)",
    "data:text/plain,hi",
    "HTTPS://127.0.0.1/",
    "hTtPs://[::1]/",
    /* credentials and redirect-style tricks */
    "https://good.com@127.0.0.1/",
    "https://good.com@evil.example/",
    "https://user:pass@example.com/",
    "https://@example.com/",
    "https://127.0.0.1:443@example.com/",
    "https://example.com:443@169.254.169.254/",
    "https://example.com\\@127.0.0.1/",
    "https://127.0.0.1\\.example.com/",
    "https:/\\127.0.0.1/",
    "https:\\\\127.0.0.1",
    "https:127.0.0.1",
    "https:/127.0.0.1",
    "https:///127.0.0.1",
    "//127.0.0.1/",
    "127.0.0.1",
    "https://127.0.0.1#@example.com",
    "https://127.0.0.1?@example.com",
    "https://127.0.0.1/@example.com",
    /* malformed: whitespace, controls, bad ports, bad hosts */
    "https://exa mple.com/",
    "https://example.com/a b",
    " https://example.com/",
    "https://example.com/\n",
    "https://example.com\r\n@127.0.0.1/",
    "https://example.com\t/",
    "https://example.com:0/",
    "https://example.com:65536/",
    "https://example.com:/",
    "https://example.com:80a/",
    "https://example.com:1:2/",
    "https://[::1/",
    "https://[::1]x/",
    "https://[not-v6]/",
    "https://[1.2.3.4]/",
    "https://[fe80::1%]/",
    "https://exam%70le.com/",
    "https://127.0.0.1%2f.example.com/",
    "https://ex\xc3\xa4mple.com/",
    "https://127\xe3\x80\x82"
    "0\xe3\x80\x82"
    "0\xe3\x80\x82"
    "1/",
    "https://a..b/",
    "https://.example.com/",
    "https://example.com../",
    "https:///",
    "https://",
    "https://:443/",
    "https://1.2.3.256",
    "https://1.2.3.4.5",
    "https://08.0.0.1",
    "https://0x100000000",
    "https://99999999999",
    "https://example.123",
    "https://example.0x1f",
    "",
};

/* Public forms every default guard lets through (a name is judged later,
 * at connect time, on what it resolves to). */
static const char *const allowed[] = {
    "https://example.com",
    "https://example.com/",
    "https://Example.COM:8443/path?q=1#frag",
    "HTTPS://example.com/",
    "https://example.com./",
    "https://sub_domain.example.com/",
    "https://93.184.216.34/",
    "https://8.8.8.8",
    "https://1.1.1.1:443/dns-query",
    "https://134744072",     /* 8.8.8.8 spelled as one number: normalised, public */
    "https://0x08.0x08.8.8", /* same */
    "https://[2606:4700:4700::1111]/",
    "https://[2001:4860:4860::8888]:443/",
    "https://[2002:808:808::1]/", /* 6to4 of 8.8.8.8 */
    "https://172.32.0.1/",        /* just past 172.16/12 */
    "https://100.128.0.1/",       /* just past 100.64/10 */
    "https://192.169.0.1/",
    "https://localhost.example.com/", /* not *.localhost */
    "https://mylocalhost/",
    "https://example.com/?next=http://127.0.0.1/", /* a redirect target is judged when followed */
    "https://example.com/path@127.0.0.1",
    "https://example.com#@127.0.0.1",
    "https://example.com/caf\xc3\xa9", /* non-ASCII outside the host */
    "https://xn--caf-dma.example/",
};

static void test_refused_suite(void)
{
    sb_ssrf_t *g = sb_ssrf_new();
    size_t n = sizeof refused / sizeof refused[0];
    CHECK(n >= 40);
    for (size_t i = 0; i < n; i++) {
        char why[64] = "unset";
        int rc = sb_ssrf_check_url(g, refused[i], why, sizeof why);
        if (rc != -EACCES)
            fprintf(stderr, "not refused: \"%s\"\n", refused[i]);
        CHECK_INT(rc, -EACCES);
        CHECK(why[0] != '\0' && strcmp(why, "unset") != 0);
        /* The reason names no part of the URL. */
        CHECK(strstr(why, "127") == NULL && strstr(why, "example") == NULL);
    }
    /* A NULL guard is the default guard. */
    for (size_t i = 0; i < n; i++)
        CHECK_INT(sb_ssrf_check_url(NULL, refused[i], NULL, 0), -EACCES);
    CHECK_INT(sb_ssrf_check_url(g, NULL, NULL, 0), -EACCES);
    printf("refused %zu URL forms\n", n);
    sb_ssrf_destroy(&g);
    CHECK(g == NULL);
    sb_ssrf_destroy(&g); /* NULL-safe */
}

static void test_allowed_forms(void)
{
    sb_ssrf_t *g = sb_ssrf_new();
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++) {
        char why[64];
        int rc = sb_ssrf_check_url(g, allowed[i], why, sizeof why);
        if (rc != 0)
            fprintf(stderr, "refused: \"%s\" (%s)\n", allowed[i], why);
        CHECK_INT(rc, 0);
    }
    sb_ssrf_destroy(&g);
}

static void test_reasons(void)
{
    sb_ssrf_t *g = sb_ssrf_new();
    char why[64];
    CHECK_INT(sb_ssrf_check_url(g, "ftp://example.com/", why, sizeof why), -EACCES);
    CHECK_STR(why, "scheme not allowed");
    CHECK_INT(sb_ssrf_check_url(g, "https://10.1.2.3/", why, sizeof why), -EACCES);
    CHECK_STR(why, "address not allowed");
    CHECK_INT(sb_ssrf_check_url(g, "https://a@b/", why, sizeof why), -EACCES);
    CHECK_STR(why, "credentials in the URL");
    CHECK_INT(sb_ssrf_check_url(g, "https://localhost/", why, sizeof why), -EACCES);
    CHECK_STR(why, "host name not allowed");
    CHECK_INT(sb_ssrf_check_url(g, "https://a b/", why, sizeof why), -EACCES);
    CHECK_STR(why, "malformed URL");
    /* A short buffer is cut, not overrun. */
    char tiny[4] = "xxx";
    CHECK_INT(sb_ssrf_check_url(g, "ftp://x/", tiny, sizeof tiny), -EACCES);
    CHECK_STR(tiny, "sch");
    sb_ssrf_destroy(&g);
}

static void test_http(void)
{
    sb_ssrf_t *g = sb_ssrf_new();
    CHECK_INT(sb_ssrf_check_url(g, "http://example.com/", NULL, 0), -EACCES);
    CHECK(!sb_ssrf_http_allowed(g));
    CHECK(!sb_ssrf_http_allowed(NULL));
    sb_ssrf_allow_http(g, true);
    CHECK(sb_ssrf_http_allowed(g));
    CHECK_INT(sb_ssrf_check_url(g, "http://example.com/", NULL, 0), 0);
    CHECK_INT(sb_ssrf_check_url(g, "HTTP://example.com/", NULL, 0), 0);
    CHECK_INT(sb_ssrf_check_url(g, "https://example.com/", NULL, 0), 0);
    /* http being allowed lets no address through. */
    CHECK_INT(sb_ssrf_check_url(g, "http://127.0.0.1/", NULL, 0), -EACCES);
    CHECK_INT(sb_ssrf_check_url(g, "http://localhost/", NULL, 0), -EACCES);
    CHECK_INT(sb_ssrf_check_url(g, "httpx://example.com/", NULL, 0), -EACCES);
    CHECK_INT(sb_ssrf_check_url(g, "ftp://example.com/", NULL, 0), -EACCES);
    sb_ssrf_allow_http(g, false);
    CHECK_INT(sb_ssrf_check_url(g, "http://example.com/", NULL, 0), -EACCES);
    sb_ssrf_destroy(&g);
}

static void test_allowlist(void)
{
    sb_ssrf_t *g = sb_ssrf_new();
    CHECK_INT(sb_ssrf_allow_cidr(g, "127.0.0.0/8"), 0);
    /* Inside: every spelling of a loopback address passes. */
    CHECK_INT(sb_ssrf_check_url(g, "https://127.0.0.1:9000/mcp", NULL, 0), 0);
    CHECK_INT(sb_ssrf_check_url(g, "https://127.1", NULL, 0), 0);
    CHECK_INT(sb_ssrf_check_url(g, "https://2130706433", NULL, 0), 0);
    CHECK_INT(sb_ssrf_check_url(g, "https://0x7f.0.0.2", NULL, 0), 0);
    CHECK_INT(sb_ssrf_check_url(g, "https://[::ffff:127.0.0.1]/", NULL, 0), 0); /* mapped = the v4 address */
    /* Outside it: still refused. */
    CHECK_INT(sb_ssrf_check_url(g, "https://128.0.0.1", NULL, 0), 0); /* public anyway */
    CHECK_INT(sb_ssrf_check_url(g, "https://10.0.0.1", NULL, 0), -EACCES);
    CHECK_INT(sb_ssrf_check_url(g, "https://169.254.169.254", NULL, 0), -EACCES);
    CHECK_INT(sb_ssrf_check_url(g, "https://[::1]", NULL, 0), -EACCES);
    CHECK_INT(sb_ssrf_check_url(g, "https://[64:ff9b::127.0.0.1]", NULL, 0), -EACCES);
    CHECK_INT(sb_ssrf_check_url(g, "https://[2002:7f00:1::]", NULL, 0), -EACCES);
    /* Names are names: the allowlist is about addresses. */
    CHECK_INT(sb_ssrf_check_url(g, "https://localhost/", NULL, 0), -EACCES);
    /* Nor does it allow a scheme. */
    CHECK_INT(sb_ssrf_check_url(g, "http://127.0.0.1/", NULL, 0), -EACCES);
    sb_ssrf_destroy(&g);

    g = sb_ssrf_new();
    CHECK_INT(sb_ssrf_allow_list(g, " 127.0.0.1/32 , ::1, 10.1.0.0/16,fd00::/8 "), 0);
    CHECK_INT(sb_ssrf_check_url(g, "https://127.0.0.1/", NULL, 0), 0);
    CHECK_INT(sb_ssrf_check_url(g, "https://127.0.0.2/", NULL, 0), -EACCES);
    CHECK_INT(sb_ssrf_check_url(g, "https://[::1]/", NULL, 0), 0);
    CHECK_INT(sb_ssrf_check_url(g, "https://[::2]/", NULL, 0), -EACCES);
    CHECK_INT(sb_ssrf_check_url(g, "https://10.1.255.3/", NULL, 0), 0);
    CHECK_INT(sb_ssrf_check_url(g, "https://10.2.0.1/", NULL, 0), -EACCES);
    CHECK_INT(sb_ssrf_check_url(g, "https://[fd12::1]/", NULL, 0), 0);
    CHECK_INT(sb_ssrf_check_url(g, "https://[fc00::1]/", NULL, 0), -EACCES);
    sb_ssrf_destroy(&g);

    /* Malformed CIDRs, and a list with one is taken whole or not at all. */
    g = sb_ssrf_new();
    static const char *const bad[] = {"",           "127.0.0.0/33", "::/129",       "127.1/8",
                                      "0x7f.0.0.1", "127.0.0.0/",   "127.0.0.0/-1", "127.0.0.0/8x",
                                      "localhost",  "1.2.3.4/0008", "[::1]",        "1.2.3.4 /8"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_INT(sb_ssrf_allow_cidr(g, bad[i]), -EINVAL);
    CHECK_INT(sb_ssrf_allow_cidr(g, NULL), -EINVAL);
    CHECK_INT(sb_ssrf_allow_list(g, "127.0.0.1/32,bogus"), -EINVAL);
    CHECK_INT(sb_ssrf_check_url(g, "https://127.0.0.1/", NULL, 0), -EACCES);
    CHECK_INT(sb_ssrf_allow_list(g, ""), 0);
    CHECK_INT(sb_ssrf_allow_list(g, ",,"), 0);
    CHECK_INT(sb_ssrf_check_url(g, "https://127.0.0.1/", NULL, 0), -EACCES);
    /* Host bits beyond the prefix do not matter; /0 allows everything. */
    CHECK_INT(sb_ssrf_allow_cidr(g, "192.168.7.9/24"), 0);
    CHECK_INT(sb_ssrf_check_url(g, "https://192.168.7.200/", NULL, 0), 0);
    CHECK_INT(sb_ssrf_check_url(g, "https://192.168.8.1/", NULL, 0), -EACCES);
    CHECK_INT(sb_ssrf_allow_cidr(g, "::/0"), 0);
    CHECK_INT(sb_ssrf_check_url(g, "https://[::1]/", NULL, 0), 0);
    CHECK_INT(sb_ssrf_check_url(g, "https://[fe80::1%25lo]/", NULL, 0), 0);
    CHECK_INT(sb_ssrf_check_url(g, "https://10.0.0.1/", NULL, 0), -EACCES); /* v6 /0 is not v4 */
    sb_ssrf_destroy(&g);
}

static struct sockaddr_in v4(const char *s)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(443)};
    CHECK_INT(inet_pton(AF_INET, s, &sin.sin_addr), 1);
    return sin;
}

static struct sockaddr_in6 v6(const char *s)
{
    struct sockaddr_in6 sin6 = {.sin6_family = AF_INET6, .sin6_port = htons(443)};
    CHECK_INT(inet_pton(AF_INET6, s, &sin6.sin6_addr), 1);
    return sin6;
}

static bool ok4(const sb_ssrf_t *g, const char *s)
{
    struct sockaddr_in sin = v4(s);
    return sb_ssrf_addr_allowed(g, (struct sockaddr *)&sin, sizeof sin);
}

static bool ok6(const sb_ssrf_t *g, const char *s)
{
    struct sockaddr_in6 sin6 = v6(s);
    return sb_ssrf_addr_allowed(g, (struct sockaddr *)&sin6, sizeof sin6);
}

static void test_addr_allowed(void)
{
    sb_ssrf_t *g = sb_ssrf_new();
    static const char *const bad4[] = {"127.0.0.1",   "0.0.0.0",    "10.9.8.7",        "172.20.0.1",
                                       "192.168.0.1", "100.64.0.1", "169.254.169.254", "192.0.0.1",
                                       "192.0.2.5",   "198.18.5.5", "198.51.100.1",    "203.0.113.1",
                                       "224.0.0.251", "240.1.2.3",  "255.255.255.255"};
    for (size_t i = 0; i < sizeof bad4 / sizeof bad4[0]; i++)
        CHECK(!ok4(g, bad4[i]));
    static const char *const good4[] = {"8.8.8.8",        "1.1.1.1",        "93.184.216.34",
                                        "172.15.255.255", "100.63.255.255", "223.255.255.255"};
    for (size_t i = 0; i < sizeof good4 / sizeof good4[0]; i++)
        CHECK(ok4(g, good4[i]));
    static const char *const bad6[] = {
        "::1",     "::",      "::ffff:127.0.0.1", "::ffff:7f00:1",   "::127.0.0.1",  "fd00:ec2::254", "fe80::1",
        "fec0::1", "ff02::1", "2001:db8::1",      "64:ff9b::7f00:1", "64:ff9b:1::1", "2002:7f00:1::", "2001::1",
        "fc00::"};
    for (size_t i = 0; i < sizeof bad6 / sizeof bad6[0]; i++)
        CHECK(!ok6(g, bad6[i]));
    CHECK(ok6(g, "2606:4700:4700::1111"));
    CHECK(ok6(g, "2002:808:808::1"));
    /* Short or foreign socket addresses are refused. */
    struct sockaddr_in sin = v4("8.8.8.8");
    CHECK(!sb_ssrf_addr_allowed(g, (struct sockaddr *)&sin, sizeof sin - 1));
    struct sockaddr_in6 sin6 = v6("2606:4700:4700::1111");
    CHECK(!sb_ssrf_addr_allowed(g, (struct sockaddr *)&sin6, sizeof sin6 - 1));
    struct sockaddr sa = {.sa_family = AF_UNIX};
    CHECK(!sb_ssrf_addr_allowed(g, &sa, sizeof sa));
    CHECK(!sb_ssrf_addr_allowed(g, NULL, 0));
    /* The allowlist at connect time, mapped addresses included. */
    CHECK_INT(sb_ssrf_allow_cidr(g, "127.0.0.1/32"), 0);
    CHECK(ok4(g, "127.0.0.1"));
    CHECK(!ok4(g, "127.0.0.2"));
    CHECK(ok6(g, "::ffff:127.0.0.1"));
    CHECK(!ok6(g, "::ffff:127.0.0.2"));
    CHECK(!ok6(g, "::1"));
    CHECK_INT(sb_ssrf_allow_cidr(g, "::1"), 0);
    CHECK(ok6(g, "::1"));
    /* A NULL guard refuses as the default one does. */
    CHECK(!ok4(NULL, "127.0.0.1"));
    CHECK(ok4(NULL, "8.8.8.8"));
    sb_ssrf_destroy(&g);
}

int main(void)
{
    test_refused_suite();
    test_allowed_forms();
    test_reasons();
    test_http();
    test_allowlist();
    test_addr_allowed();
    return sb_test_finish("test_ssrf");
}
