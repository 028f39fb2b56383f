/* Reading an exec request out of a trapped task: the path, argv and envp it passed to
 * execve/execveat, copied into runnerd's memory with the kernel's own limits and errnos.
 * The decoding is pure over a memory-read callback, so it is tested and fuzzed without a
 * task; rd_mem_read_task is the real callback (process_vm_readv). Copy first, then check
 * SECCOMP_IOCTL_NOTIF_ID_VALID, then use only the copy: that ordering is the caller's job. */
#ifndef RD_READER_H
#define RD_READER_H

#include "lib/error.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Reads from the task's address space. */
struct rd_mem {
	/* Copy up to len bytes at addr into buf. Returns the bytes copied, which may be short
	 * when the range crosses into an unmapped page; 0 when addr itself is unreadable; or
	 * -errno for any other failure (e.g. -ESRCH when the task is gone). */
	ssize_t (*read)(void *ctx, uint64_t addr, void *buf, size_t len);
	void *ctx;
};

/* process_vm_readv on the task whose tid is (pid_t)(intptr_t)ctx. */
ssize_t rd_mem_read_task(void *ctx, uint64_t addr, void *buf, size_t len);

/* The kernel's limits (fs/exec.c). */
#define RD_MAX_ARG_STRLEN  (32 * 4096) /* one argv/envp string, with its NUL */
#define RD_PATH_MAX        4096        /* the path, with its NUL */
#define RD_MAX_ARG_STRINGS 0x7FFFFFFF

/* The total the kernel allows for argv + envp strings plus their pointers for a task with
 * this soft RLIMIT_STACK: min(6 MiB, stack / 4), at least 128 KiB (bprm_stack_limits). */
size_t rd_exec_arg_limit(uint64_t rlimit_stack_cur);

/* Read the NUL-terminated path at addr. Returns 0 and a malloc'd copy in *path (its length
 * in *len), -EFAULT for a bad pointer (addr 0 included: page 0 is never mapped), -ENAMETOOLONG
 * when no NUL comes within RD_PATH_MAX bytes, -ESRCH (or another -errno) when the read itself
 * failed. An empty path is returned as "" (whether that is ENOENT depends on AT_EMPTY_PATH:
 * the caller's business). */
int rd_read_path(const struct rd_mem *mem, uint64_t addr, char **path, size_t *len) _wur_;

struct rd_strings {
	char **argv; /* NULL-terminated; argc entries */
	size_t argc;
	char **envp; /* NULL-terminated; envc entries */
	size_t envc;
	size_t bytes; /* sum of strlen + 1 over argv and envp, as the kernel counts */
	void *arena;  /* everything above lives in this one allocation */
};

/* Read argv and envp (arrays of ptr_size-byte pointers: 8, or 4 for a 32-bit task) as the
 * kernel's do_execveat_common does, in its order: count the argv pointers, then the envp
 * pointers (a NULL array pointer is an empty array; a bad pointer -> -EFAULT; more than
 * RD_MAX_ARG_STRINGS -> -E2BIG); then take (max(argc, 1) + envc) * 8 off limit (8 is the
 * kernel's pointer size, also for 4-byte arrays; -E2BIG if that is more than limit: with the
 * filename already taken off, this is both the kernel's "limit <= pointers" and its "the
 * filename does not fit"); then copy the envp strings, then the argv strings, each array
 * from its last string down to [0] (so of two bad strings in one array the higher index wins; a
 * bad pointer -> -EFAULT; a string whose strlen is RD_MAX_ARG_STRLEN or more -> -E2BIG; the
 * running total of strlen + 1 over limit -> -E2BIG); and when argc is 0, the kernel's own ""
 * for argv[0] needs one more byte (-E2BIG if it does not fit; *out keeps argc 0 and bytes
 * does not count it). limit is what the caller computed with rd_exec_arg_limit less the
 * strlen + 1 of bprm->filename, which the kernel copies first: the path as given, but
 * "/dev/fd/N/path" for execveat with a dirfd and a relative path and "/dev/fd/N" for an
 * empty one. (The kernel opens the file before all this, so open errors come first.)
 * err says which array and index failed. On error *out is empty. */
int rd_read_strings(const struct rd_mem *mem, uint64_t argv_addr, uint64_t envp_addr,
                    unsigned int ptr_size, size_t limit, struct rd_strings *out,
                    struct rd_error *err) _wur_;

void rd_strings_free(struct rd_strings *s);

#endif
