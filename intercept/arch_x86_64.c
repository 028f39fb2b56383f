/* x86_64: the only file that knows registers. At the interrupt stop after the reply, rip is
 * just past the 2-byte "syscall" instruction (0f 05), rax holds the result (the control fd's
 * number, which the answer returned) and orig_rax the syscall number. */
#include "intercept/handoff.h"

#include <asm/unistd_64.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>

#if !defined(__x86_64__)
#error "arch_x86_64.c is for x86_64 only"
#endif

#define X32_SYSCALL_BIT 0x40000000

bool rd_arch_native(const struct seccomp_data *d)
{
	return d->arch == AUDIT_ARCH_X86_64 && !(d->nr & X32_SYSCALL_BIT);
}

bool rd_arch_is_execveat(const struct seccomp_data *d)
{
	return d->nr == __NR_execveat;
}

_Static_assert(sizeof(struct user_regs_struct) <= sizeof(((struct rd_saved_task *)0)->regs),
               "rd_saved_task holds the registers");

int rd_arch_save_stop(pid_t tid, long returned, struct rd_saved_task *save, struct rd_error *err)
{
	struct user_regs_struct r;
	if (ptrace(PTRACE_GETREGS, tid, 0, &r) < 0)
		return rd_error_set(err, errno, "task %d: PTRACE_GETREGS: %s", tid,
		                    strerror(errno));
	if ((r.orig_rax != __NR_execve && r.orig_rax != __NR_execveat) ||
	    (long long)r.rax != returned)
		return rd_error_set(
		    err, EPROTO,
		    "task %d: not stopped at the end of its exec (orig_rax %lld, rax "
		    "%lld)",
		    tid, (long long)r.orig_rax, (long long)r.rax);
	errno = 0;
	long word = ptrace(PTRACE_PEEKTEXT, tid, r.rip - 2, 0);
	if (errno != 0 || (word & 0xffff) != 0x050f)
		return rd_error_set(err, EPROTO, "task %d: no syscall instruction before rip", tid);
	memcpy(save->regs, &r, sizeof(r));
	if (ptrace(PTRACE_GETSIGMASK, tid, sizeof(save->sigmask), &save->sigmask) < 0)
		return rd_error_set(err, errno, "task %d: PTRACE_GETSIGMASK: %s", tid,
		                    strerror(errno));
	return 0;
}

int rd_arch_rewrite_exec(pid_t tid, const struct rd_saved_task *save, int stub_fd,
                         uint64_t empty_path, uint64_t argv, struct rd_error *err)
{
	struct user_regs_struct r;
	memcpy(&r, save->regs, sizeof(r));
	r.rip -= 2;
	/* orig_rax = -1: no syscall-restart logic may touch what we set (e.g. if a signal
	 * handler runs before the instruction re-executes, sigreturn restores exactly this). */
	r.orig_rax = (unsigned long long)-1;
	r.rax = __NR_execveat;
	r.rdi = (unsigned long long)stub_fd;
	r.rsi = empty_path;
	r.rdx = argv;
	r.r10 = 0; /* envp: the stub needs none and gets none */
	r.r8 = AT_EMPTY_PATH;
	if (ptrace(PTRACE_SETREGS, tid, 0, &r) < 0)
		return rd_error_set(err, errno, "task %d: PTRACE_SETREGS: %s", tid,
		                    strerror(errno));
	/* Every signal blocked from here: the mask survives exec, so none can kill the stub
	 * before it has set up its signalfd, and the stub forwards what is pending then. The
	 * command already has the caller's real mask. */
	uint64_t all = ~0ULL;
	if (ptrace(PTRACE_SETSIGMASK, tid, sizeof(all), &all) < 0)
		return rd_error_set(err, errno, "task %d: PTRACE_SETSIGMASK: %s", tid,
		                    strerror(errno));
	return 0;
}

int rd_arch_inject_close(pid_t tid, const struct rd_saved_task *save, int lo, int hi,
                         struct rd_error *err)
{
	struct user_regs_struct r;
	memcpy(&r, save->regs, sizeof(r));
	r.rip -= 2; /* the syscall instruction, checked by rd_arch_save_stop */
	r.orig_rax = (unsigned long long)-1;
	r.rax = __NR_close_range;
	r.rdi = (unsigned long long)lo;
	r.rsi = (unsigned long long)hi;
	r.rdx = 0;
	uint64_t all = ~0ULL;
	if (ptrace(PTRACE_SETREGS, tid, 0, &r) < 0 ||
	    ptrace(PTRACE_SETSIGMASK, tid, sizeof(all), &all) < 0)
		return rd_error_set(err, errno, "task %d: setting up close_range: %s", tid,
		                    strerror(errno));
	return 0;
}

int rd_arch_return_errno(pid_t tid, const struct rd_saved_task *save, int e, struct rd_error *err)
{
	struct user_regs_struct r;
	memcpy(&r, save->regs, sizeof(r));
	/* orig_rax = -1: the errno is final, no restart logic may touch it. */
	r.orig_rax = (unsigned long long)-1;
	r.rax = (unsigned long long)(long long)-e;
	if (ptrace(PTRACE_SETREGS, tid, 0, &r) < 0 ||
	    ptrace(PTRACE_SETSIGMASK, tid, sizeof(save->sigmask), &save->sigmask) < 0)
		return rd_error_set(err, errno, "task %d: restoring its registers: %s", tid,
		                    strerror(errno));
	return 0;
}

bool rd_arch_is_stub_exec(const struct seccomp_data *d, int stub_fd, uint64_t empty_path,
                          uint64_t argv)
{
	return rd_arch_native(d) && d->nr == __NR_execveat && d->args[0] == (uint64_t)stub_fd &&
	       d->args[1] == empty_path && d->args[2] == argv && d->args[3] == 0 &&
	       d->args[4] == (uint64_t)AT_EMPTY_PATH;
}
