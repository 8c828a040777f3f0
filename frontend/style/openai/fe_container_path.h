/*
 * fe_container_path: where a file a client names goes inside a container.
 * Every container file lives at /mnt/data/<name> (OpenAI's code interpreter
 * directory, the sandbox's one writable directory); the name comes from an
 * upload's filename or a /v1/files file's, both the client's choice, so it
 * is cut down to one safe path component here, once, before any row is
 * written or any sandbox materialises it.
 */
#ifndef FE_CONTAINER_PATH_H
#define FE_CONTAINER_PATH_H

#include <stddef.h>

/* The directory every container file is under, with its trailing slash. */
#define FE_CONTAINER_DIR "/mnt/data/"
/* Longest name kept (a file name component: NAME_MAX). */
#define FE_CONTAINER_FILENAME_MAX 255
/* Room for the longest path and its NUL. */
#define FE_CONTAINER_PATH_MAX (sizeof FE_CONTAINER_DIR + FE_CONTAINER_FILENAME_MAX)

/*
 * Writes FE_CONTAINER_DIR + the sanitised name of filename into out
 * (outsz >= FE_CONTAINER_PATH_MAX). The name is the last component of
 * filename (after the last '/' or '\', since browsers on Windows may send
 * C:\dir\file), with each control byte turned into '_'. Returns 0, or
 * -EINVAL when filename is NULL or not valid UTF-8, its name is empty, "."
 * or "..", or longer than FE_CONTAINER_FILENAME_MAX bytes (cutting it could
 * split a character or lose the extension). So the result never holds
 * "..", "//", a NUL or a control byte as a component, and stays under
 * FE_CONTAINER_DIR.
 */
int fe_container_path(const char *filename, char *out, size_t outsz) __attribute__((warn_unused_result));

#endif
