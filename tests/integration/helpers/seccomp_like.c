/* Runs a command under a seccomp filter like a container engine's, to see what runnerd does
 * there without the engine:
 *   seccomp_like clone3 -- CMD...   clone3 is ENOSYS (docker's default, older kernels): libc
 *                                   and runnerd fall back to clone
 *   seccomp_like docker -- CMD...   docker's default profile (moby's default.json) for a
 *                                   container without CAP_SYS_ADMIN and CAP_SYS_PTRACE, in
 *                                   the calls runnerd needs: clone3 ENOSYS; unshare, setns,
 *                                   mount, umount2 and clone with a CLONE_NEW* flag EPERM;
 *                                   pidfd_getfd, kcmp and process_madvise EPERM (ptrace and
 *                                   process_vm_readv it allows on kernels from 4.8)
 * Sets no_new_privs (the filter needs it without CAP_SYS_ADMIN), then execs CMD. */
#include <errno.h>
#include <sched.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

static int deny(scmp_filter_ctx ctx, int err, const char *name)
{
	int nr = seccomp_syscall_resolve_name(name);
	if (nr == __NR_SCMP_ERROR)
		return 0; /* not this architecture's */
	return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(err), nr, 0);
}

int main(int argc, char **argv)
{
	if (argc < 4 || strcmp(argv[2], "--") != 0) {
		fprintf(stderr, "usage: seccomp_like clone3|docker -- CMD [ARG...]\n");
		return 2;
	}
	bool docker = strcmp(argv[1], "docker") == 0;
	if (!docker && strcmp(argv[1], "clone3") != 0) {
		fprintf(stderr, "seccomp_like: unknown mode %s\n", argv[1]);
		return 2;
	}
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int r = ctx ? deny(ctx, ENOSYS, "clone3") : -ENOMEM;
	static const char *const admin[] = {"unshare", "setns", "mount", "umount2"};
	static const char *const peek[] = {"pidfd_getfd", "kcmp", "process_madvise"};
	for (size_t i = 0; docker && r == 0 && i < sizeof(admin) / sizeof(admin[0]); i++)
		r = deny(ctx, EPERM, admin[i]);
	for (size_t i = 0; docker && r == 0 && i < sizeof(peek) / sizeof(peek[0]); i++)
		r = deny(ctx, EPERM, peek[i]);
	/* docker allows clone only without these flags (its mask 0x7E020000). */
	static const unsigned long ns[] = {CLONE_NEWNS,    CLONE_NEWUTS, CLONE_NEWIPC,
	                                   CLONE_NEWUSER,  CLONE_NEWPID, CLONE_NEWNET,
	                                   CLONE_NEWCGROUP};
	for (size_t i = 0; docker && r == 0 && i < sizeof(ns) / sizeof(ns[0]); i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
		                     SCMP_A0(SCMP_CMP_MASKED_EQ, ns[i], ns[i]));
	if (r == 0 && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		r = -errno;
	if (r == 0)
		r = seccomp_load(ctx);
	if (r < 0) {
		fprintf(stderr, "seccomp_like: %s\n", strerror(-r));
		return 126;
	}
	execvp(argv[3], argv + 3);
	fprintf(stderr, "seccomp_like: %s: %s\n", argv[3], strerror(errno));
	return 127;
}
