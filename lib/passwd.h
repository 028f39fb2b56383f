/* A user's home directory from the password database. */
#ifndef RD_PASSWD_H
#define RD_PASSWD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The home of uid (absolute) into buf, or -errno (-ENOENT: no entry, or no absolute home).
 * files_only: /etc/passwd alone, read as a plain file, without the name service switch. That
 * is what runnerd serve uses in a container: NSS may load modules (shared objects) named by the
 * container's own /etc/nsswitch.conf, from the container's own files, into a process that is
 * root of the machine. */
int rd_home_of(uid_t uid, bool files_only, char *buf, size_t n);

#endif
