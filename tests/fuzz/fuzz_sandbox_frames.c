/*
 * fuzz_sandbox_frames: libFuzzer harness for the worker's reader of the
 * code interpreter's driver (worker/tools/wtool_sandbox.h): the bytes a
 * sandboxed process writes to its reply channel (the code can write
 * anything there), cut into frames and each frame checked against the
 * limits.
 *
 * Input: two bytes of settings, then the stream. Byte 0: the chunk size
 * the stream is fed in (0: byte by byte). Byte 1: the limits: bit 0 logs
 * 16 or 4096 bytes, bits 1-2 images 0, 1, 3 or 8, bit 3 an image's bytes
 * 32 or 1 MiB, bits 4-5 files 0, 1, 2 or 8, bit 6 the files' bytes 8 or
 * 1 MiB, bit 7 the frame bound 64 bytes or the limits' own.
 * Checked besides "no crash, no leak, no UB": the frames are exactly the
 * stream's lines, in order, up to the first one over the bound (a reference
 * split of the same bytes), and an over-long line is an error; a frame is
 * either refused with a reason and an empty result, or is a ready frame, or
 * a reply within every limit: status ok or error, logs NUL-free and short
 * enough, images base64 of a PNG within the size, files under /mnt/data/
 * with paths the put check takes and bytes within the total.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "sb_base64.h"
#include "wtool_sandbox.h"

static void fuzz_check_reply(const sb_sandbox_result_t *r, const sb_sandbox_limits_t *lim)
{
    FUZZ_REQUIRE(r->status == SB_SANDBOX_OK || r->status == SB_SANDBOX_ERROR);
    FUZZ_REQUIRE(r->logs != NULL && strlen(r->logs) <= lim->max_logs + 256);
    FUZZ_REQUIRE(r->n_images <= lim->max_images);
    for (size_t i = 0; i < r->n_images; i++) {
        size_t n;
        unsigned char *png = sb_base64_decode(r->images[i], strlen(r->images[i]), &n);
        FUZZ_REQUIRE(png != NULL && n >= 8 && n <= lim->max_image_bytes);
        FUZZ_REQUIRE(memcmp(png, "\x89PNG\r\n\x1a\n", 8) == 0);
        free(png);
    }
    FUZZ_REQUIRE(r->n_files <= lim->max_files);
    size_t total = 0;
    for (size_t i = 0; i < r->n_files; i++) {
        const char *rel;
        FUZZ_REQUIRE(strncmp(r->files[i].path, "/mnt/data/", 10) == 0);
        FUZZ_REQUIRE(sb_sandbox_check_path(r->files[i].path, &rel) == 0);
        FUZZ_REQUIRE(r->files[i].data != NULL);
        total += r->files[i].len;
    }
    FUZZ_REQUIRE(total <= lim->max_files_bytes);
}

static void fuzz_check_frame(const char *line, size_t len, const sb_sandbox_limits_t *lim)
{
    sb_sandbox_frame_kind_t kind;
    int64_t id;
    sb_sandbox_result_t r;
    const char *why = NULL;
    int rc = sb_sandbox_parse_frame(line, len, lim, &kind, &id, &r, &why);
    if (rc != 0) {
        FUZZ_REQUIRE(rc == -EBADMSG);
        FUZZ_REQUIRE(why != NULL && why[0] != '\0');
        FUZZ_REQUIRE(r.logs == NULL && r.images == NULL && r.files == NULL && id == 0);
        return;
    }
    if (kind == SB_SANDBOX_FRAME_REPLY)
        fuzz_check_reply(&r, lim);
    else
        FUZZ_REQUIRE(kind == SB_SANDBOX_FRAME_READY && r.logs == NULL);
    sb_sandbox_result_clear(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const size_t images[] = {0, 1, 3, 8}, files[] = {0, 1, 2, 8};
    if (size < 2)
        return 0;
    size_t step = data[0] ? data[0] : 1;
    uint8_t b = data[1];
    sb_sandbox_limits_t lim = {
        .max_logs = (b & 1) ? 4096 : 16,
        .max_images = images[(b >> 1) & 3],
        .max_image_bytes = (b & 8) ? 1024 * 1024 : 32,
        .max_files = files[(b >> 4) & 3],
        .max_files_bytes = (b & 64) ? 1024 * 1024 : 8,
    };
    size_t max = (b & 128) ? sb_sandbox_frame_max(&lim) : 64;
    const char *p = (const char *)data + 2;
    size_t n = size - 2;

    sb_sandbox_reader_t rd;
    sb_sandbox_reader_init(&rd, max);
    size_t ref = 0; /* where the reference split's next line starts */
    bool failed = false;
    for (size_t i = 0; i < n && !failed; i += step) {
        size_t k = n - i < step ? n - i : step;
        if (sb_sandbox_reader_feed(&rd, p + i, k) != 0) {
            failed = true;
            break;
        }
        for (;;) {
            const char *line;
            size_t len;
            int rc = sb_sandbox_reader_next(&rd, &line, &len);
            if (rc == 0)
                break;
            if (rc < 0) {
                FUZZ_REQUIRE(rc == -E2BIG);
                failed = true;
                break;
            }
            /* the reference: the next line of the stream, which must fit */
            const char *nl = memchr(p + ref, '\n', n - ref);
            FUZZ_REQUIRE(nl != NULL);
            size_t want = (size_t)(nl - (p + ref));
            FUZZ_REQUIRE(want <= max && len == want && memcmp(line, p + ref, len) == 0);
            ref += want + 1;
            fuzz_check_frame(line, len, &lim);
        }
    }
    /* an error only for a line (or an unfinished tail) over the bound at or after ref */
    bool over = false;
    for (size_t at = ref; at < n;) {
        const char *nl = memchr(p + at, '\n', n - at);
        size_t len = nl ? (size_t)(nl - (p + at)) : n - at;
        if (len > max)
            over = true;
        at += len + 1;
    }
    FUZZ_REQUIRE(failed == over);
    sb_sandbox_reader_free(&rd);
    return 0;
}
