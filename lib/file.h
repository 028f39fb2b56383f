/* Whole files read into memory; a directory of the user's own. */
#ifndef RD_FILE_H
#define RD_FILE_H

#include "lib/error.h"

#include <stddef.h>
#include <sys/types.h>

/* What fd has left to read, to its end, into *out (malloc'd, NUL-terminated; a NUL inside is
 * kept, so the length is what counts), however the file says its size (a /proc file says 0):
 * its length, or -errno; -EFBIG where it holds more than max bytes. */
ssize_t rd_read_fd(int fd, size_t max, char **out);

/* The file at path, opened read-only (O_NONBLOCK: a FIFO gives what it holds, or nothing,
 * rather than wait), read whole as rd_read_fd. -ENOENT where there is none. */
ssize_t rd_read_file(const char *path, size_t max, char **out);

/* path, a directory of the effective user's that no one else can enter (mode 0700, not a
 * symlink), made so where missing: 0, or -errno with err set naming what it is instead. */
int rd_own_dir(const char *path, struct rd_error *err);

#endif
