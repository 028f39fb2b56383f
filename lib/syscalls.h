/* Raw wrappers for the system calls glibc 2.36 does not wrap, and the constants Debian 12's
 * headers lack. Each returns -1 with errno set, like the libc wrappers. */
#ifndef RD_SYSCALLS_H
#define RD_SYSCALLS_H

#include <errno.h>
#include <linux/filter.h>
#include <linux/openat2.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
#define SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (1UL << 5)
#endif
#ifndef SECCOMP_ADDFD_FLAG_SETFD
#define SECCOMP_ADDFD_FLAG_SETFD (1UL << 0)
#endif
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

static inline int rd_seccomp(unsigned int op, unsigned int flags, void *args)
{
	return (int)syscall(__NR_seccomp, op, flags, args);
}

static inline int rd_pidfd_open(pid_t pid, unsigned int flags)
{
	return (int)syscall(__NR_pidfd_open, pid, flags);
}

static inline int rd_pidfd_getfd(int pidfd, int targetfd, unsigned int flags)
{
	return (int)syscall(__NR_pidfd_getfd, pidfd, targetfd, flags);
}

static inline int rd_pidfd_send_signal(int pidfd, int sig, siginfo_t *info, unsigned int flags)
{
	return (int)syscall(__NR_pidfd_send_signal, pidfd, sig, info, flags);
}

/* clone3, or clone where clone3 is ENOSYS: an older kernel, or a container's seccomp profile
 * (docker's default answers clone3 so, for libc to fall back). Fork-like only: the fallback
 * takes args->flags, pidfd and exit_signal, and refuses what clone cannot pass (a stack, tids,
 * a cgroup) with the ENOSYS it got. x86_64's argument order: flags, stack, parent_tid (where
 * CLONE_PIDFD writes the pidfd), child_tid, tls. */
static inline long rd_clone3(struct clone_args *args, size_t size)
{
	long r = syscall(__NR_clone3, args, size);
	if (r >= 0 || errno != ENOSYS || args->stack || args->stack_size || args->set_tid ||
	    args->cgroup || args->parent_tid || args->child_tid || args->tls ||
	    args->exit_signal > 0xff || args->flags > 0xffffffffULL)
		return r;
#if defined(__x86_64__) || defined(__aarch64__)
	/* Both take flags, stack, parent_tid (the pidfd's place with CLONE_PIDFD) first. */
	return syscall(__NR_clone, (unsigned long)(args->flags | args->exit_signal), 0UL,
	               (int *)(uintptr_t)args->pidfd, (int *)0, 0UL);
#else
	return r; /* clone's order differs here: no fallback */
#endif
}

static inline int rd_close_range(unsigned int first, unsigned int last, unsigned int flags)
{
	return (int)syscall(__NR_close_range, first, last, flags);
}

static inline int rd_execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
                              int flags)
{
	return (int)syscall(__NR_execveat, dirfd, path, argv, envp, flags);
}

static inline int rd_openat2(int dirfd, const char *path, struct open_how *how)
{
	return (int)syscall(__NR_openat2, dirfd, path, how, sizeof(*how));
}

#endif
