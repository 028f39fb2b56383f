/*
 * failed_exec_state: execs that fail in the kernel after the path resolved (a file that is not
 * a program: ENOEXEC; a script whose interpreter is missing: ENOENT), made from this very
 * process, which goes on afterwards. Checks, for each, that the caller got exactly the errno,
 * its registers (the syscall's arguments and three more), its signal mask and its open fds
 * back as they were. Under runnerd such a failure is known only after the caller's handoff to
 * the stub has begun; it must still look like a plain failed exec.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common.h"

#define ROUNDS 25

/* execve by a raw syscall instruction, reporting whether the registers the kernel preserves
 * across a syscall came back unchanged. */
static long raw_execve(const char *path, char *const argv[], char *const envp[], int *regs_ok)
{
	register long rdi __asm__("rdi") = (long)path;
	register long rsi __asm__("rsi") = (long)argv;
	register long rdx __asm__("rdx") = (long)envp;
	register long r10 __asm__("r10") = 0x1010;
	register long r8 __asm__("r8") = 0x0808;
	register long r9 __asm__("r9") = 0x0909;
	long ret;
	__asm__ volatile("syscall"
	                 : "=a"(ret), "+r"(rdi), "+r"(rsi), "+r"(rdx), "+r"(r10), "+r"(r8), "+r"(r9)
	                 : "0"((long)SYS_execve)
	                 : "rcx", "r11", "memory");
	*regs_ok = rdi == (long)path && rsi == (long)argv && rdx == (long)envp && r10 == 0x1010 &&
	           r8 == 0x0808 && r9 == 0x0909;
	return ret;
}

/* The open fds, as "0 1 2 ..." (the listing's own fd left out). */
static void fd_list(char *out, size_t size)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		DIE("opendir /proc/self/fd");
	size_t len = 0;
	out[0] = '\0';
	for (struct dirent *e; (e = readdir(d));) {
		if (e->d_name[0] == '.' || atoi(e->d_name) == dirfd(d))
			continue;
		len += (size_t)snprintf(out + len, size - len, "%s ", e->d_name);
		if (len >= size)
			DIE("too many fds");
	}
	closedir(d);
}

static void write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text) || close(fd) < 0)
		DIE(path);
}

static void probe(const char *label, const char *path)
{
	char *argv[] = {(char *)path, "arg", NULL};
	char *envp[] = {"RD_ITEST=1", NULL};
	int wrong_errno = 0, regs_bad = 0, fds_changed = 0, mask_changed = 0, err = 0;
	for (int i = 0; i < ROUNDS; i++) {
		char before[4096], after[4096];
		sigset_t m0, m1;
		fd_list(before, sizeof(before));
		sigprocmask(SIG_BLOCK, NULL, &m0);
		int regs_ok;
		long r = raw_execve(path, argv, envp, &regs_ok);
		sigprocmask(SIG_BLOCK, NULL, &m1);
		fd_list(after, sizeof(after));
		if (r >= 0)
			DIE("the exec returned without an error");
		if (i == 0)
			err = (int)-r;
		wrong_errno += (int)-r != err;
		regs_bad += !regs_ok;
		fds_changed += strcmp(before, after) != 0;
		mask_changed += memcmp(&m0, &m1, sizeof(m0)) != 0;
		if (strcmp(before, after) != 0 && fds_changed == 1)
			fprintf(stderr, "%s: fds before [%s] after [%s]\n", label, before, after);
	}
	printf("%s: errno=%s rounds=%d wrong_errno=%d regs_bad=%d fds_changed=%d "
	       "mask_changed=%d\n",
	       label, strerrorname_np(err), ROUNDS, wrong_errno, regs_bad, fds_changed,
	       mask_changed);
	fflush(stdout);
}

int main(void)
{
	char dir[] = "/tmp/rd-itest-failexec.XXXXXX";
	if (!mkdtemp(dir))
		DIE("mkdtemp");
	char garbage[64], noint[64];
	snprintf(garbage, sizeof(garbage), "%s/garbage", dir);
	snprintf(noint, sizeof(noint), "%s/nointerp", dir);
	write_file(garbage, "\x01\x02 not a program\n");
	write_file(noint, "#!/nonexistent/rd-itest-interpreter\necho unreachable\n");
	/* A mask and a high fd of our own, to see that both come back as they were. */
	sigset_t m;
	sigemptyset(&m);
	sigaddset(&m, SIGUSR1);
	sigaddset(&m, SIGWINCH);
	sigprocmask(SIG_BLOCK, &m, NULL);
	if (dup2(1, 900) < 0)
		DIE("dup2");
	probe("enoexec", garbage);
	probe("missing_interpreter", noint);
	unlink(garbage);
	unlink(noint);
	rmdir(dir);
	return 0;
}
