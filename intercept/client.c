/* runnerd-intercept [--socket PATH] [--profile P] -- AGENT [ARGS...]: start an agent under
 * the exec filter of a `runnerd serve` on the host (lib/serve_proto.h). A small static program,
 * meant for a container's entrypoint: it asks the daemon for the filter and for the agent's
 * program and environment, loads the filter, hands the daemon the listener and execs the
 * agent. From then on every exec of the agent's is the daemon's to run, in a sandbox made in
 * this container; when the daemon is gone, they fail with ENOSYS.
 *
 * It needs no privilege and no engine option beyond the socket's mount, and it never
 * decides anything: what runs, with what environment, is the daemon's answer. */
#include "lib/fdpass.h"
#include "lib/serve_proto.h"
#include "lib/syscalls.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

extern char **environ;

static _Noreturn void usage(void)
{
	fprintf(stderr, "usage: runnerd-intercept [--socket PATH] [--profile NAME] -- AGENT "
	                "[ARGS...]\n");
	exit(2);
}

static _Noreturn void die(const char *what, int e)
{
	fprintf(stderr, "runnerd-intercept: %s: %s\n", what, strerror(e));
	exit(125);
}

/* The strings of v (n of them) into fd, each with its NUL. */
static int put_strings(int fd, char *const *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(v[i]) + 1;
		if (write(fd, v[i], len) != (ssize_t)len)
			return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *sock_path = getenv("RUNNERD_SOCKET");
	const char *profile = "";
	int i = 1;
	for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc)
			sock_path = argv[++i];
		else if (strcmp(argv[i], "--profile") == 0 && i + 1 < argc)
			profile = argv[++i];
		else
			usage();
	}
	if (i + 1 >= argc)
		usage();
	char **agent_argv = argv + i + 1;
	size_t agent_argc = (size_t)(argc - i - 1);
	if (!sock_path || !*sock_path)
		sock_path = RD_SERVE_SOCKET;
	if (strlen(profile) >= sizeof(((struct rd_serve_hello *)0)->profile)) {
		fprintf(stderr, "runnerd-intercept: --profile %s: too long\n", profile);
		return 2;
	}

	/* The request: the agent's argv and this environment, in a sealed memfd. */
	size_t envc = 0;
	while (environ && environ[envc])
		envc++;
	int block = memfd_create("runnerd-intercept", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (block < 0)
		die("memfd_create", errno);
	if (put_strings(block, agent_argv, agent_argc) < 0 || put_strings(block, environ, envc) < 0)
		die("writing the request", errno ? errno : EIO);
	if (fcntl(block, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		die("sealing the request", errno);

	int sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (sock < 0)
		die("socket", errno);
	if (strlen(sock_path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "runnerd-intercept: %s: path too long for a socket\n", sock_path);
		return 125;
	}
	strcpy(sa.sun_path, sock_path);
	if (connect(sock, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;
		fprintf(stderr,
		        "runnerd-intercept: cannot reach runnerd serve at %s: %s (is the daemon "
		        "running on the host, and its socket mounted here: -v %s:%s?)\n",
		        sock_path, strerror(e), RD_SERVE_SOCKET, sock_path);
		return 125;
	}
	struct rd_serve_hello h = {.magic = RD_SERVE_MAGIC,
	                           .version = RD_SERVE_VERSION,
	                           .argc = (uint32_t)agent_argc,
	                           .envc = (uint32_t)envc};
	strcpy(h.profile, profile);
	/* With the client's stderr, where the session says what it has to say once the agent
	 * runs (a refusal's reason). */
	int fds[2] = {block, STDERR_FILENO};
	int r =
	    rd_send_buf_fds(sock, &h, sizeof(h), fds, fcntl(STDERR_FILENO, F_GETFD) < 0 ? 1 : 2, 0);
	if (r < 0)
		die("sending the request", -r);
	close(block);

	/* The daemon's answer: the filter, and the agent's program, argv and environment. */
	struct timeval tv = {.tv_sec = 60};
	setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	struct rd_serve_answer a;
	int fd = -1;
	size_t n_fds = 0;
	ssize_t n = rd_recv_buf_fds(sock, &a, sizeof(a), &fd, 1, &n_fds, 0);
	if (n == 0)
		die("runnerd serve closed the connection", EPIPE);
	if (n < 0)
		die("waiting for runnerd serve", (int)-n);
	if (n != sizeof(a) || a.magic != RD_SERVE_MAGIC)
		die("runnerd serve's answer", EPROTO);
	if (a.status) {
		a.text[sizeof(a.text) - 1] = '\0';
		fprintf(stderr, "runnerd-intercept: runnerd serve refused: %s\n", a.text);
		return 125;
	}
	struct stat st;
	if (n_fds != 1 || fstat(fd, &st) < 0 || st.st_size <= 0 ||
	    (uint64_t)st.st_size > RD_SERVE_MAX_BLOCK)
		die("runnerd serve's answer", EPROTO);
	char *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (m == MAP_FAILED)
		die("mmap", errno);
	close(fd);
	char *end = m + st.st_size;
	size_t flen = (size_t)a.filter_len * sizeof(struct sock_filter);
	if (!a.filter_len || a.filter_len > BPF_MAXINSNS || flen >= (size_t)st.st_size)
		die("runnerd serve's filter", EPROTO);
	struct sock_fprog prog = {.len = (unsigned short)a.filter_len,
	                          .filter = (struct sock_filter *)m};
	char *p = m + flen;
	char **path = rd_serve_strings(&p, end, 1);
	char **run_argv = path ? rd_serve_strings(&p, end, a.argc) : NULL;
	char **run_env = run_argv ? rd_serve_strings(&p, end, a.envc) : NULL;
	if (!run_env)
		die("runnerd serve's answer", EPROTO);

	/* The filter, and its listener to the daemon. */
	struct rd_serve_loaded l = {.magic = RD_SERVE_MAGIC, .stage = RD_SERVE_STAGE_FILTER};
	int listener = -1;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		l.err = errno;
	else if ((listener = (int)rd_seccomp(SECCOMP_SET_MODE_FILTER,
	                                     SECCOMP_FILTER_FLAG_NEW_LISTENER |
	                                         SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV,
	                                     &prog)) < 0)
		l.err = errno;
	if (l.err) {
		(void)!rd_send_buf_fds(sock, &l, sizeof(l), NULL, 0, 0);
		die("loading the exec filter", l.err);
	}
	l.stage = RD_SERVE_STAGE_LOADED;
	r = rd_send_buf_fds(sock, &l, sizeof(l), &listener, 1, 0);
	if (r < 0)
		die("handing the listener to runnerd serve", -r);
	close(listener);

	execve(path[0], run_argv, run_env);
	l.stage = RD_SERVE_STAGE_EXEC;
	l.err = errno;
	(void)!rd_send_buf_fds(sock, &l, sizeof(l), NULL, 0, 0);
	fprintf(stderr, "runnerd-intercept: %s: %s\n", path[0], strerror(l.err));
	return l.err == ENOENT ? 127 : 126;
}
