#include "sandbox/cmdfilter.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Calls that reach other processes' memory, the kernel, or other namespaces. */
static const char *const denied[] = {
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "kexec_load",
    "kexec_file_load",
    "bpf",
    "perf_event_open",
    "keyctl",
    "add_key",
    "request_key",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "open_tree",
    "mount_setattr",
    "setns",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "userfaultfd",
    "name_to_handle_at",
    "open_by_handle_at",
};

/* What a sandbox inside the sandbox needs (bubblewrap, as Codex and Claude Code run it): mounts
 * in namespaces of its own. The kernel allows them only with CAP_SYS_ADMIN over the namespace,
 * which a command has over none but those it makes below its own user namespace. */
static const char *const nested[] = {
    "mount",
    "umount",
    "umount2",
    "pivot_root",
};

static const unsigned long new_ns[] = {
    CLONE_NEWNS,   CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
    CLONE_NEWUSER, CLONE_NEWPID,    CLONE_NEWNET, 0x00000080 /* CLONE_NEWTIME */,
};

/* The number of the system call name into *nr (negative for one the native architecture lacks:
 * libseccomp's own), or -1 with err set: a name libseccomp does not know is an error, never a
 * denial quietly dropped. */
static int syscall_nr(const char *name, int *nr, struct rd_error *err)
{
	*nr = seccomp_syscall_resolve_name(name);
	if (*nr == __NR_SCMP_ERROR)
		return rd_error_set(err, ENOSYS,
		                    "building the command filter: libseccomp does not know the "
		                    "system call %s",
		                    name);
	return 0;
}

static int deny_names(scmp_filter_ctx ctx, const char *const *names, size_t n, struct rd_error *err)
{
	for (size_t i = 0; i < n; i++) {
		int nr, r = syscall_nr(names[i], &nr, err);
		if (r < 0)
			return r;
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
		if (r < 0)
			return rd_error_set(err, -r, "building the command filter: %s",
			                    strerror(-r));
	}
	return 0;
}

/* No file made setuid or setgid: as root, a command is the machine's uid 0 to the file system,
 * and such a file, left in a writable root, would give root to whoever runs it outside. The
 * mode is an argument of chmod, fchmod, fchmodat and fchmodat2, and of open, openat, creat,
 * mknod and mknodat that create a file; openat2 passes it in memory a filter cannot read:
 * ENOSYS, and callers fall back to openat. */
static int deny_suid(scmp_filter_ctx ctx, struct rd_error *err)
{
	static const struct {
		const char *name;
		unsigned mode_arg;
		int flags_arg; /* -1: the call always creates or changes a mode */
	} calls[] = {
	    {"chmod", 1, -1},     {"fchmod", 1, -1}, {"fchmodat", 2, -1},
	    {"fchmodat2", 2, -1}, {"creat", 1, -1},  {"mknod", 1, -1},
	    {"mknodat", 2, -1},   {"open", 2, 1},    {"openat", 3, 2},
	};
	static const unsigned long bits[] = {S_ISUID, S_ISGID};
	static const unsigned long creates[] = {O_CREAT, __O_TMPFILE};
	int r = 0;
	for (size_t i = 0; r == 0 && i < ARRAY_SIZE(calls); i++) {
		int nr;
		if (syscall_nr(calls[i].name, &nr, err) < 0)
			return -1;
		for (size_t b = 0; r == 0 && b < ARRAY_SIZE(bits); b++) {
			struct scmp_arg_cmp mode = {calls[i].mode_arg, SCMP_CMP_MASKED_EQ, bits[b],
			                            bits[b]};
			if (calls[i].flags_arg < 0) {
				r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1, mode);
				continue;
			}
			for (size_t c = 0; r == 0 && c < ARRAY_SIZE(creates); c++) {
				struct scmp_arg_cmp flag = {(unsigned)calls[i].flags_arg,
				                            SCMP_CMP_MASKED_EQ, creates[c],
				                            creates[c]};
				r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 2, flag, mode);
			}
		}
	}
	if (r == 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(openat2), 0);
	return r < 0 ? rd_error_set(err, -r, "building the command filter: %s", strerror(-r)) : 0;
}

int rd_cmdfilter_build(struct rd_bpf *out, bool userns, struct rd_error *err)
{
	memset(out, 0, sizeof(*out));
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return rd_error_set(err, ENOMEM, "seccomp_init failed");
	/* A binary tree of syscall numbers instead of a chain: the same verdicts, far
	 * cheaper to load. At load the kernel emulates the filter for every syscall number
	 * of each architecture (about 900 runs, to cache the calls it always allows), so
	 * the load costs the path length many times over: 145 us per load with the chain,
	 * 44 us with the tree. */
	int r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
	if (r == 0)
		r = seccomp_arch_add(ctx, SCMP_ARCH_X32);
	if (r == 0)
		r = seccomp_arch_add(ctx, SCMP_ARCH_X86);
	if (r < 0) {
		seccomp_release(ctx);
		return rd_error_set(err, -r, "building the command filter: %s", strerror(-r));
	}
	if (deny_names(ctx, denied, ARRAY_SIZE(denied), err) < 0 ||
	    (!userns && deny_names(ctx, nested, ARRAY_SIZE(nested), err) < 0) ||
	    deny_suid(ctx, err) < 0) {
		seccomp_release(ctx);
		return -1;
	}
	/* Without user namespaces, no new namespace: unshare or clone with any CLONE_NEW*
	 * flag (one rule per flag: a comparison can only test "these bits all set"). clone3
	 * passes its flags in memory a filter cannot read: ENOSYS, and libc falls back to
	 * clone. */
	for (size_t i = 0; !userns && r == 0 && i < ARRAY_SIZE(new_ns); i++) {
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 1,
		                     SCMP_A0(SCMP_CMP_MASKED_EQ, new_ns[i], new_ns[i]));
		if (r == 0)
			r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
			                     SCMP_A0(SCMP_CMP_MASKED_EQ, new_ns[i], new_ns[i]));
	}
	if (r == 0 && !userns)
		r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	if (r == 0)
		r = rd_seccomp_deny_tty_inject(ctx);
	if (r < 0) {
		seccomp_release(ctx);
		return rd_error_set(err, -r, "building the command filter: %s", strerror(-r));
	}
	r = rd_bpf_export(ctx, out, err);
	seccomp_release(ctx);
	return r;
}
