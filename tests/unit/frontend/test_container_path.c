/*
 * Unit tests for fe_container_path: a client's filename as a path under
 * /mnt/data. Directories are dropped (both separators), control bytes
 * become '_', and what cannot be one safe component (empty, ".", "..",
 * over 255 bytes, not UTF-8) is refused.
 */
#include <errno.h>
#include <string.h>

#include "fe_container_path.h"
#include "sb_test.h"

static void check_path(const char *in, const char *want)
{
    char out[FE_CONTAINER_PATH_MAX];
    memset(out, 'x', sizeof out);
    int rc = fe_container_path(in, out, sizeof out);
    CHECK_INT(rc, 0);
    if (rc == 0)
        CHECK_STR(out, want);
}

static void check_refused(const char *in)
{
    char out[FE_CONTAINER_PATH_MAX];
    CHECK_INT(fe_container_path(in, out, sizeof out), -EINVAL);
}

static void test_names(void)
{
    check_path("data.csv", "/mnt/data/data.csv");
    check_path("report 2024 (final).txt", "/mnt/data/report 2024 (final).txt");
    check_path(".hidden", "/mnt/data/.hidden");
    check_path("a..b", "/mnt/data/a..b"); /* dots inside a name are not a parent directory */
    check_path("\xc3\xa9t\xc3\xa9.md", "/mnt/data/\xc3\xa9t\xc3\xa9.md");
}

static void test_directories_dropped(void)
{
    check_path("dir/sub/file.txt", "/mnt/data/file.txt");
    check_path("/etc/passwd", "/mnt/data/passwd");
    check_path("../../etc/shadow", "/mnt/data/shadow");
    check_path("C:\\Users\\me\\plot.png", "/mnt/data/plot.png");
    check_path("..\\..\\x", "/mnt/data/x");
}

static void test_control_bytes(void)
{
    check_path("a\tb\nc\x7f.txt", "/mnt/data/a_b_c_.txt");
    check_path("\x01", "/mnt/data/_");
}

static void test_refused(void)
{
    check_refused(NULL);
    check_refused("");
    check_refused(".");
    check_refused("..");
    check_refused("dir/");
    check_refused("a/..");
    check_refused("a\\.");
    check_refused("bad\xff.txt");
    check_refused("\xc3"); /* a cut character */
    char longname[300];
    memset(longname, 'n', 256);
    longname[256] = '\0';
    check_refused(longname);
    longname[255] = '\0';
    char want[FE_CONTAINER_PATH_MAX] = "/mnt/data/";
    /* 255 bytes is the most: its 255 bytes and the NUL after the directory */
    memcpy(want + 10, longname, 256);
    check_path(longname, want);
    char small[8];
    CHECK_INT(fe_container_path("a", small, sizeof small), -EINVAL);
}

int main(void)
{
    test_names();
    test_directories_dropped();
    test_control_bytes();
    test_refused();
    return sb_test_finish("container_path");
}
