/* Whole files read into memory. */
#ifndef RD_FILE_H
#define RD_FILE_H

#include <stddef.h>
#include <sys/types.h>

/* What fd has left to read, to its end, into *out (malloc'd, NUL-terminated; a NUL inside is
 * kept, so the length is what counts), however the file says its size (a /proc file says 0):
 * its length, or -errno; -EFBIG where it holds more than max bytes. */
ssize_t rd_read_fd(int fd, size_t max, char **out);

/* The file at path, opened read-only (O_NONBLOCK: a FIFO gives what it holds, or nothing,
 * rather than wait), read whole as rd_read_fd. -ENOENT where there is none. */
ssize_t rd_read_file(const char *path, size_t max, char **out);

#endif
