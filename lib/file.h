/* Whole files read into memory; a directory of the user's own; a file's lock that says its
 * holder lives. */
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

/* Liveness by a lock on a file: the lock fd (opened for writing) takes is the open file
 * description's (F_OFD_SETLK), so it holds while any fd of that description is open, whoever
 * else in the process opens and closes the file, and another process sees it (rd_lock_held)
 * from any pid or user namespace. 0 or -errno (-EAGAIN: someone else holds it). */
int rd_lock_take(int fd);

/* 1 if someone holds a lock on fd's file (rd_lock_take), 0 if no one, -errno. */
int rd_lock_held(int fd);

#endif
