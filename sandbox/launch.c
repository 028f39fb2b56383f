/* runnerd's side of a sandbox: a spare made ahead of time (through the zygote, or by a clone of
 * runnerd), its preset checked, the plan handed over, the command's exec waited for. */
#include "lib/fdpass.h"
#include "lib/syscalls.h"
#include "sandbox/dircache.h"
#include "sandbox/launch_internal.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>

/* A packet of fds alone, led by their count. */
static int send_fds(int sock, const int *fds, uint32_t count)
{
	return rd_send_buf_fds(sock, &count, sizeof(count), fds, count, 0);
}

static int write_file(pid_t pid, const char *name, const char *text)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/%s", pid, name);
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, text, strlen(text));
	return n == (ssize_t)strlen(text) ? 0 : (n < 0 ? -errno : -EIO);
}

bool rd_sandbox_can_map_all_ids(void)
{
	cap_t caps = cap_get_proc();
	cap_flag_value_t uid = CAP_CLEAR, gid = CAP_CLEAR;
	if (caps && (cap_get_flag(caps, CAP_SETUID, CAP_EFFECTIVE, &uid) < 0 ||
	             cap_get_flag(caps, CAP_SETGID, CAP_EFFECTIVE, &gid) < 0))
		uid = CAP_CLEAR;
	cap_free(caps);
	return uid == CAP_SET && gid == CAP_SET;
}

int rd_write_id_maps(pid_t pid, bool full)
{
	/* Every id to itself, as the machine's own namespace maps them. */
	if (full) {
		int r = write_file(pid, "uid_map", "0 0 4294967295\n");
		return r < 0 ? r : write_file(pid, "gid_map", "0 0 4294967295\n");
	}
	char map[64];
	snprintf(map, sizeof(map), "%u %u 1\n", geteuid(), geteuid());
	int r = write_file(pid, "uid_map", map);
	if (r == 0)
		r = write_file(pid, "setgroups", "deny");
	snprintf(map, sizeof(map), "%u %u 1\n", getegid(), getegid());
	return r < 0 ? r : write_file(pid, "gid_map", map);
}

/* The reaper exists (out->reaper, out->reaper_pidfd): write its maps, then let it go. */
static int sandbox_go(struct rd_sandbox *out, struct rd_error *err)
{
	int r = 0;
	if (out->userns) {
		r = rd_write_id_maps(out->reaper, out->full_ids);
		if (r < 0) {
			rd_error_set(err, -r, "writing the sandbox's uid/gid map: %s",
			             strerror(-r));
			goto fail;
		}
	}
	if (write(out->go_fd, "g", 1) != 1) {
		r = rd_error_set(err, errno, "starting the sandbox: %s", strerror(errno));
		goto fail;
	}
	close(out->go_fd);
	out->go_fd = -1;
	return 0;
fail:
	rd_sandbox_destroy(out);
	return r < 0 ? r : -EPROTO;
}

int rd_sandbox_spare_begin(struct rd_zygote *z, bool full_ids,
                           const struct rd_sandbox_preset *preset, struct rd_sandbox *out,
                           struct rd_error *err)
{
	int go[2], ep[2], sp[2], pl[2];
	*out = RD_SANDBOX_NONE;
	if (preset && preset->n_masks > PRESET_MAX_MASKS)
		preset = NULL;
	if (pipe2(go, O_CLOEXEC) < 0)
		return rd_error_set(err, errno, "pipe: %s", strerror(errno));
	if (pipe2(ep, O_CLOEXEC) < 0 || pipe2(sp, O_CLOEXEC | O_NONBLOCK) < 0 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pl) < 0) {
		int e = errno;
		close(go[0]);
		close(go[1]);
		return rd_error_set(err, e, "pipe: %s", strerror(e)); /* fds leak only on EMFILE */
	}
	out->go_fd = go[1];
	out->status_fd = sp[0];
	out->setup_fd = ep[0];
	out->plan_fd = pl[0];
	out->preset = preset;
	out->view_gen = z ? z->view_gen : 0;
	out->full_ids = full_ids;
	/* Before the request: a change the reaper may not see makes a new generation. */
	if (preset && rd_mask_watch_on(preset->watch)) {
		out->watched = true;
		out->watch_gen = rd_mask_watch_gen(preset->watch);
	}

	/* The zygote clones the reaper, so runnerd's own memory is neither copied nor
	 * write-protected. runnerd clones it itself without a zygote (or once it is lost), or for a
	 * preset too large to send. */
	int ends[RD_REAPER_NFDS] = {go[0], pl[1], ep[1], sp[1]};
	int r = -ENOSYS, pidfd = -1;
	long pid = 0;
	/* A zygote lost on the way, or a preset too large for it, is not an error: runnerd clones
	 * the reaper itself. */
	struct rd_error zerr = {0};
	if (z && z->fd >= 0 && (r = rd_zygote_request(z, preset, ends, &zerr)) == 0)
		out->pending = true;
	else if (r != -ENOSYS && r != -EMSGSIZE && !z->lost) {
		r = rd_error_set(err, -r, "%s", zerr.msg);
		goto fail;
	}
	if (!out->pending && z && z->required) {
		r = rd_error_set(err, EAGAIN,
		                 "the zygote is gone, and runnerd serve's sandboxes need it: this "
		                 "session runs no more commands");
		goto fail;
	}
	if (!out->pending) {
		/* A user namespace of its own, whose maps runnerd writes (sandbox_go), and the
		 * whole view made by the reaper itself. */
		struct clone_args ca = {
		    .flags =
		        CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_PIDFD,
		    .pidfd = (uint64_t)(uintptr_t)&pidfd,
		    .exit_signal = SIGCHLD,
		};
		out->userns = true;
		pid = rd_clone3(&ca, sizeof(ca));
		if (pid == 0)
			rd_reaper_main(go[0], pl[1], ep[1], sp[1], preset,
			               rd_root_ids(full_ids) ? RD_ROOT_IDS : 0, z->view);
		if (pid < 0)
			r = rd_error_set(err, errno,
			                 "clone3 (new user, pid, mount and IPC namespaces): %s",
			                 strerror(errno));
	}
fail:
	for (int i = 0; i < RD_REAPER_NFDS; i++)
		close(ends[i]);
	if (out->pending)
		return 0;
	if (pid <= 0) {
		rd_sandbox_close(out);
		*out = RD_SANDBOX_NONE;
		return r;
	}
	out->reaper = (pid_t)pid;
	out->reaper_pidfd = pidfd;
	return sandbox_go(out, err);
}

int rd_sandbox_spare_finish(struct rd_zygote *z, struct rd_sandbox *out, struct rd_error *err)
{
	int pidfd = -1;
	long pid = rd_zygote_answer(z, &pidfd, err);
	out->pending = false;
	/* runnerd reaps the reaper (CLONE_PARENT), but only in its loop, which ran since the
	 * request: alive (or a zombie) here, its pid cannot have been reused. */
	if (pid > 0 && rd_pidfd_send_signal(pidfd, 0, NULL, 0) < 0) {
		close(pidfd);
		pid = rd_error_set(err, EPROTO, "the sandbox died before it started");
	}
	if (pid <= 0) {
		rd_sandbox_close(out);
		*out = RD_SANDBOX_NONE;
		return (int)pid;
	}
	out->reaper = (pid_t)pid;
	out->reaper_pidfd = pidfd;
	return sandbox_go(out, err);
}

/* A sandbox made ahead of time: pid 1 of fresh namespaces,
 * /proc mounted, waiting for a plan. runnerd makes one while idle, off the exec path. With a
 * preset (may be NULL), the reaper also applies it before it waits; preset must stay unchanged
 * until the spare is started or destroyed. The zygote z, if any and not lost, clones the
 * reaper; the reaper is runnerd's child either way. */
static int sandbox_now(struct rd_zygote *z, bool full_ids, const struct rd_sandbox_preset *preset,
                       struct rd_sandbox *out, struct rd_error *err)
{
	bool had_zygote = !z->lost;
	struct rd_error first = {0};
	int r = rd_sandbox_spare_begin(z, full_ids, preset, out, &first);
	if (r == 0 && out->pending)
		r = rd_sandbox_spare_finish(z, out, &first);
	if (r < 0 && had_zygote && z->lost) {
		/* The zygote died under this request: once more, cloned by runnerd itself. */
		r = rd_sandbox_spare_begin(z, full_ids, preset, out, err);
		if (r == 0 && out->pending)
			r = rd_sandbox_spare_finish(z, out, err);
	} else if (r < 0) {
		rd_error_set(err, -r, "%s", first.msg);
	}
	return r;
}

/* A plan too large for one packet, in a memfd. */
static int plan_memfd(const struct rd_plan_blob *b, struct rd_error *err)
{
	_cleanup_close_ int fd = memfd_create("runnerd-plan", MFD_CLOEXEC);
	if (fd < 0)
		return rd_error_set(err, errno, "memfd_create: %s", strerror(errno));
	/* writev takes at most IOV_MAX (1024) entries at a time. */
	for (size_t off = 0; off < b->n_iov; off += 1024) {
		size_t cnt = b->n_iov - off < 1024 ? b->n_iov - off : 1024, want = 0;
		for (size_t i = 0; i < cnt; i++)
			want += b->iov[off + i].iov_len;
		ssize_t got = writev(fd, b->iov + off, (int)cnt);
		if (got < 0 || (size_t)got != want)
			return rd_error_set(err, got < 0 ? errno : EIO, "writing the plan: %s",
			                    strerror(got < 0 ? errno : EIO));
	}
	return steal_fd(&fd);
}

/* The plan's first packet: the plan itself (mfd < 0) or a 0 and the memfd, then the plan's lead
 * fds and as many of the caller's as fit; *sent says how many of those. */
static int send_plan(int sock, const struct rd_launch_plan *p, const struct rd_plan_blob *b,
                     int mfd, size_t *sent)
{
	int first[FDS_PER_MSG];
	uint32_t n = 0, zero = 0;
	if (mfd >= 0)
		first[n++] = mfd;
	first[n++] = p->cwd_fd;
	if (p->h.has_stub_ctl)
		first[n++] = p->stub_ctl_fd;
	if (p->h.exec_via == RD_EXEC_OWN)
		first[n++] = p->own_exec_fd;
	if (p->h.has_setup_fd)
		first[n++] = p->setup_fd;
	for (*sent = 0; *sent < p->h.n_fds && n < FDS_PER_MSG;)
		first[n++] = p->fds[(*sent)++].fd;
	struct iovec marker = {&zero, sizeof(zero)};
	return mfd < 0 ? rd_send_fds(sock, b->iov, b->n_iov, first, n, 0)
	               : rd_send_fds(sock, &marker, 1, first, n, 0);
}

/* The preset's report, and each masked path looked up again from inside the spare: it must
 * lead to what it led to once the masks were placed, or still to nothing. A path replaced since
 * (a new file there, a symlink turned elsewhere, a mount lost with an unlinked dentry) or one
 * that appeared where nothing was makes the spare stale. openat2 with RESOLVE_IN_ROOT resolves
 * absolute symlinks against the spare's root, as the command would. */
static enum rd_preset_use preset_check(struct rd_sandbox *sb)
{
	const struct rd_sandbox_preset *pre = sb->preset;
	size_t want = sizeof(uint32_t) + sizeof(struct preset_seen) * pre->n_masks;
	_cleanup_free_ char *buf = malloc(want + 1);
	if (!buf)
		return RD_PRESET_BROKEN;
	_cleanup_close_ int root = -1;
	size_t n_fds = 0;
	ssize_t n = rd_recv_buf_fds(sb->plan_fd, buf, want + 1, &root, 1, &n_fds, 0);
	if (n < 0 || n_fds != 1)
		return RD_PRESET_BROKEN;
	uint32_t count;
	memcpy(&count, buf, sizeof(count));
	if ((size_t)n != want || count != pre->n_masks)
		return RD_PRESET_BROKEN;
	/* Nothing changed at a masked path since the spare was asked for (or since its last use,
	 * when they were as it found them): it finds them as they are (maskwatch.h). The
	 * generation is read before any lookup below, so that a change made while they run
	 * makes another. If the sandbox comes back for another command, its next use starts from
	 * here: the first spare of a session, asked for before the watch, is otherwise looked
	 * up at every use. */
	uint64_t gen = rd_mask_watch_on(pre->watch) ? rd_mask_watch_gen(pre->watch) : 0;
	bool on = rd_mask_watch_on(pre->watch); /* reading the generation may turn it off */
	bool same = sb->watched && on && gen == sb->watch_gen;
	sb->watched = on;
	sb->watch_gen = gen;
	if (same)
		return RD_PRESET_USED;
	/* Most masked paths are missing, in directories that are missing too (the stores of the
	 * agents one does not use): a missing directory, looked up once, answers for every path
	 * in it. */
	struct rd_dircache dirs = {0};
	struct open_how how = {.flags = O_PATH | O_CLOEXEC,
	                       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
	for (size_t i = 0; i < pre->n_masks; i++) {
		struct preset_seen then;
		memcpy(&then, buf + sizeof(count) + sizeof(then) * i, sizeof(then));
		if (pre->masks[i][0] == '!')
			continue; /* an exception, placed with its directory's mask */
		const char *rel = pre->masks[i] + strspn(pre->masks[i], "/");
		size_t dlen = rd_dircache_dirlen(rel);
		int known = rd_dircache_get(&dirs, rel); /* 1: in a missing directory */
		if (known < 0 && then.absent && dlen && dlen < 4096 &&
		    rd_dircache_worth(pre->masks, pre->n_masks, i,
		                      dlen + (size_t)(rel - pre->masks[i]))) {
			char dir[4096];
			memcpy(dir, rel, dlen);
			dir[dlen] = '\0';
			_cleanup_close_ int d = rd_openat2(root, dir, &how);
			known = d < 0 && errno == ENOENT;
			rd_dircache_put(&dirs, rel, known == 1);
		}
		if (known == 1) {
			if (!then.absent)
				return RD_PRESET_STALE;
			continue;
		}
		_cleanup_close_ int fd = rd_openat2(root, *rel ? rel : ".", &how);
		struct stat st;
		if (fd < 0) {
			if (!then.absent || (errno != ENOENT && errno != ENOTDIR))
				return RD_PRESET_STALE;
		} else if (then.absent || fstat(fd, &st) < 0 || st.st_dev != then.dev ||
		           st.st_ino != then.ino) {
			return RD_PRESET_STALE;
		}
	}
	return RD_PRESET_USED;
}

int rd_sandbox_start(struct rd_zygote *z, const struct rd_launch_plan *p, struct rd_sandbox *sb,
                     struct rd_error *err)
{
	_cleanup_close_ int mfd = -1;
	int r;
	enum rd_preset_use use = RD_PRESET_NONE;
	/* A spare still being cloned: wait for it. If it failed (its reaper is -1 then), one is
	 * made below, and that one's failure is what counts. */
	struct rd_error spare_err = {0};
	bool fit_known = sb->fit_known;
	sb->fit_known = false;
	if (sb->pending && rd_sandbox_spare_finish(z, sb, &spare_err) < 0)
		sb->preset = NULL;
	/* Made before the view's shadow directories were made again: not as the home is now. */
	if (sb->reaper >= 0 && z && sb->view_gen != z->view_gen) {
		rd_sandbox_destroy(sb);
		use = RD_PRESET_STALE;
	}
	if (sb->reaper >= 0 && sb->preset) {
		bool fits = fit_known ? sb->fit : rd_sandbox_preset_fits(sb->preset, p);
		use = fits ? preset_check(sb) : RD_PRESET_UNFIT;
		if (use != RD_PRESET_USED)
			rd_sandbox_destroy(sb);
	}
	if (sb->reaper < 0 && (r = sandbox_now(z, !p->h.single_ids, NULL, sb, err)) < 0)
		return r;
	/* The caller may change the preset from now on. */
	sb->preset = NULL;
	sb->preset_use = use;
	/* A sandbox that ran a command before: its setup pipe, the first one, is gone; this
	 * command's comes with the plan. */
	struct rd_launch_plan again;
	_cleanup_close_ int setup_end = -1;
	if (sb->uses > 0) {
		int ep[2];
		if (pipe2(ep, O_CLOEXEC) < 0) {
			r = rd_error_set(err, errno, "pipe: %s", strerror(errno));
			goto fail;
		}
		sb->setup_fd = ep[0];
		setup_end = ep[1];
		again = *p;
		again.h.has_setup_fd = 1;
		again.setup_fd = ep[1];
		p = &again;
	}
	sb->uses++;
	/* The first packet: the plan itself if it fits (else a 0 and the plan in a memfd, its
	 * first fd), with its lead fds and as many of the caller's as fit; then the rest of the
	 * caller's, FDS_PER_MSG at a time. */
	struct rd_plan_blob b;
	r = rd_plan_pack(p, &b);
	if (r < 0) {
		rd_error_set(err, -r, "packing the plan: %s", strerror(-r));
		goto fail;
	}
	if ((b.size > PLAN_INLINE_MAX || b.n_iov > 1024) && (mfd = plan_memfd(&b, err)) < 0) {
		rd_plan_blob_free(&b);
		r = mfd;
		goto fail;
	}
	size_t sent;
	r = send_plan(sb->plan_fd, p, &b, mfd, &sent);
	if (r == -EMSGSIZE && mfd < 0) {
		/* A socket buffer smaller than the plan (net.core.wmem_default): the memfd. */
		if ((mfd = plan_memfd(&b, err)) < 0) {
			rd_plan_blob_free(&b);
			r = mfd;
			goto fail;
		}
		r = send_plan(sb->plan_fd, p, &b, mfd, &sent);
	}
	rd_plan_blob_free(&b);
	int chunk[FDS_PER_MSG];
	for (size_t i = sent; r == 0 && i < p->h.n_fds; i += FDS_PER_MSG) {
		uint32_t cnt =
		    p->h.n_fds - i < FDS_PER_MSG ? (uint32_t)(p->h.n_fds - i) : FDS_PER_MSG;
		for (uint32_t j = 0; j < cnt; j++)
			chunk[j] = p->fds[i + j].fd;
		r = send_fds(sb->plan_fd, chunk, cnt);
	}
	if (r < 0) {
		rd_error_set(err, -r, "handing the plan to the sandbox: %s", strerror(-r));
		goto fail;
	}
	return 0;
fail:
	rd_sandbox_destroy(sb);
	return r < 0 ? r : -EPROTO;
}

int rd_sandbox_wait_exec(struct rd_sandbox *s, int *exec_errno, struct rd_error *err)
{
	struct setup_msg m;
	ssize_t n;
	int r;
	*exec_errno = 0;
	do
		n = read(s->setup_fd, &m, sizeof(m));
	while (n < 0 && errno == EINTR);
	close(s->setup_fd);
	s->setup_fd = -1;
	if (n == 0)
		return 0;
	if (n != sizeof(m)) {
		r = rd_error_set(err, EPROTO, "the sandbox died while starting the command");
	} else {
		m.what[sizeof(m.what) - 1] = '\0';
		if (m.stage == STAGE_EXEC) {
			*exec_errno = m.err;
			r = rd_error_set(err, m.err, "exec in the sandbox: %s", strerror(m.err));
		} else {
			r = rd_error_set(err, m.err, "sandbox setup: %s: %s", m.what,
			                 strerror(m.err));
		}
	}
	rd_sandbox_destroy(s);
	return r;
}

/* A mark on the plan socket, then a plain SIGTERM to wake pid 1 (launch.h). */
static int marked_term(struct rd_sandbox *s, int mark)
{
	uint32_t m = (uint32_t)mark;
	if (s->plan_fd < 0 || s->reaper_pidfd < 0)
		return -EBADF;
	if (send(s->plan_fd, &m, sizeof(m), MSG_DONTWAIT | MSG_NOSIGNAL) != sizeof(m))
		return -errno;
	return rd_pidfd_send_signal(s->reaper_pidfd, SIGTERM, NULL, 0) < 0 ? -errno : 0;
}

int rd_sandbox_timeout(struct rd_sandbox *s)
{
	return marked_term(s, RD_REAPER_TIMEOUT_MARK);
}

int rd_sandbox_end(struct rd_sandbox *s)
{
	return marked_term(s, RD_REAPER_END_MARK);
}

int rd_sandbox_kill_command(struct rd_sandbox *s)
{
	return marked_term(s, RD_REAPER_KILL_MARK);
}

int rd_sandbox_signal(struct rd_sandbox *s, int sig)
{
	if (sig < 1 || sig > 64)
		return -EINVAL;
	return marked_term(s, RD_REAPER_SIGNAL_MARK | sig);
}

void rd_sandbox_destroy(struct rd_sandbox *s)
{
	/* SIGKILL to pid 1 ends the whole pid namespace. Not waited for here: that wait is the
	 * namespace's teardown (≈ 110 µs), on the exec path when a spare does not fit; the
	 * supervisor's loop reaps it like any child. By pidfd: the pid is not ours to reuse. */
	if (s->reaper_pidfd >= 0)
		rd_pidfd_send_signal(s->reaper_pidfd, SIGKILL, NULL, 0);
	rd_sandbox_close(s);
	s->reaper = -1;
	s->preset = NULL;
}

void rd_sandbox_close(struct rd_sandbox *s)
{
	if (s->reaper_pidfd >= 0)
		close(s->reaper_pidfd);
	if (s->status_fd >= 0)
		close(s->status_fd);
	if (s->setup_fd >= 0)
		close(s->setup_fd);
	if (s->plan_fd >= 0)
		close(s->plan_fd);
	if (s->go_fd >= 0)
		close(s->go_fd);
	s->reaper_pidfd = s->status_fd = s->setup_fd = s->plan_fd = s->go_fd = -1;
}
