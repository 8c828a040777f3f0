/*
 * fuzz_container_path: libFuzzer harness for fe_container_path, which turns
 * a client's filename (a multipart upload's, or a /v1/files file's) into
 * the path a container file gets. Input: the filename's bytes (cut at the
 * first NUL, as a C string would be).
 *
 * Beyond "no crash, no UB" it checks what the sandbox relies on for every
 * accepted name: the path is /mnt/data/ plus one component of 1..255
 * bytes, with no '/', '\', control byte, NUL, and never "." or "..".
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fe_container_path.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *name = malloc(size + 1);
    FUZZ_REQUIRE(name != NULL);
    if (size)
        memcpy(name, data, size);
    name[size] = '\0';
    char out[FE_CONTAINER_PATH_MAX];
    int rc = fe_container_path(name, out, sizeof out);
    FUZZ_REQUIRE(rc == 0 || rc == -EINVAL);
    if (rc == 0) {
        size_t dl = strlen(FE_CONTAINER_DIR);
        FUZZ_REQUIRE(strncmp(out, FE_CONTAINER_DIR, dl) == 0);
        const char *leaf = out + dl;
        size_t n = strlen(leaf);
        FUZZ_REQUIRE(n >= 1 && n <= FE_CONTAINER_FILENAME_MAX);
        FUZZ_REQUIRE(strcmp(leaf, ".") != 0 && strcmp(leaf, "..") != 0);
        for (size_t i = 0; i < n; i++) {
            unsigned char c = (unsigned char)leaf[i];
            FUZZ_REQUIRE(c != '/' && c != '\\' && c >= 0x20 && c != 0x7f);
        }
        /* The name is the filename's last component, control bytes aside. */
        const char *slash = strrchr(name, '/'), *bslash = strrchr(name, '\\');
        const char *last = slash > bslash ? slash : bslash;
        FUZZ_REQUIRE(strlen(last ? last + 1 : name) == n);
    }
    free(name);
    return 0;
}
