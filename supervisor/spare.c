#include "supervisor/spare.h"
#include "policy/rules.h"
#include "supervisor/masks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

/* Say once that the zygote is gone, if it is, and from then on that runnerd forks sandboxes. */
static void zygote_check(struct sup *u)
{
	struct spares *sp = &u->sp;
	if (!sp->zygote.lost || sp->warned_zygote)
		return;
	sp->warned_zygote = true;
	fprintf(stderr, "runnerd: the zygote process is gone; runnerd forks each sandbox itself "
	                "from now on\n");
}

void sup_spare_setup(struct sup *u)
{
	struct spares *sp = &u->sp;
	struct rd_error err = {0};
	sp->spare = RD_SANDBOX_NONE;
	sp->zygote = RD_ZYGOTE_NONE;
	sp->watch = RD_MASK_WATCH_NONE;
	sp->shadow = RD_SHADOW_WATCH_NONE;
	sp->zygote.view = &u->s->view;
	sp->zygote.required = u->s->remote.on; /* also when it cannot even start */
	/* The shadow directories, watched before the zygote reads them: a change meanwhile
	 * makes them again. Without memory for it, they are what the session started with. */
	if (rd_shadow_watch_init(&sp->shadow, &u->s->view) < 0)
		fprintf(stderr, "runnerd: out of memory watching the directories of masked files: "
		                "commands see them as they are now for the whole session\n");
	/* Last, while runnerd's memory is as small as it will be. Without it, runnerd forks each
	 * sandbox itself, as it does once the zygote is lost. */
	if (u->s->zygote_fd < 0) {
		sp->warned_zygote = true; /* said at startup */
	} else if (rd_zygote_start(
	               &sp->zygote, u->s->zygote_fd, u->full_ids, &u->s->view,
	               u->s->confine.n_filters || u->s->confine.host_userns ? &u->s->confine : NULL,
	               &err) < 0) {
		fprintf(stderr, "runnerd: %s; runnerd forks each sandbox itself\n", err.msg);
		sp->warned_zygote = true;
	} else {
		sp->zygote_src = (struct src){.type = SRC_ZYGOTE};
		sup_watch(u, sp->zygote.fd, &sp->zygote_src);
	}
	/* Started once, never again (a lost zygote is not restarted): its file is not kept open,
	 * one fd more for the callers' under a low RLIMIT_NOFILE. */
	if (u->s->zygote_fd >= 0) {
		close(u->s->zygote_fd);
		u->s->zygote_fd = -1;
	}
}

/* c's sandbox is on its way back: its command ended alone, and its pid 1, which said it can
 * take another plan, is putting it back (RD_REPORT_IDLE follows, sup_spare_return). Not one
 * that sup_spare_return will refuse for what is known already. */
static bool coming_back(const struct cmd *c)
{
	const struct run *r = &c->run;
	return r->status_known && r->reuse && r->sb.status_fd >= 0 && !r->reaped && !r->crowded &&
	       !r->granted && !r->killed && !r->timed_out && sup_cmd_exec_seen(c) &&
	       sup_ms_since(&r->ended_at) < RD_BACK_MS;
}

struct cmd *sup_spare_coming_back(const struct sup *u)
{
	for (struct cmd *c = u->cmds; c; c = c->next)
		if (coming_back(c))
			return c;
	return NULL;
}

long sup_spare_wait_ms(const struct sup *u)
{
	const struct spares *sp = &u->sp;
	if (sp->spare.reaper >= 0 || sp->spare.pending)
		return -1;
	/* A sandbox on its way back becomes the spare: the zygote would clone one for nothing
	 * (and on a busy CPU, one of the two waiting would then be destroyed). Until it comes,
	 * or RD_BACK_MS after its command's end. */
	const struct cmd *back = sup_spare_coming_back(u);
	if (back) {
		double left = RD_BACK_MS - sup_ms_since(&back->run.ended_at);
		return left > 0 ? (long)left + 1 : 0;
	}
	if (!sp->failed)
		return 0;
	double left = -sup_ms_since(&sp->retry_at);
	return left > 0 ? (long)left + 1 : 0;
}

/* Does the loop owe a spare now: none made, none asked of the zygote, and no failure's
 * backoff to wait out? */
static bool sup_spare_wanted(const struct sup *u)
{
	return sup_spare_wait_ms(u) == 0;
}

/* The preset of the next spare: the masks, network and filter of a command that no rule gives
 * masks of its own, for the home of the caller seen last (runnerd's own user's at first).
 * Called only while there is no spare, which is what keeps sp->preset unchanged under one.
 * NULL: a plain spare. A plan that does not fit a spare's preset gets a sandbox of its own,
 * made on the exec path; so after such a plan the next spare is a plain one, which fits any
 * plan, until a plan would fit the preset again. */
static const struct rd_sandbox_preset *spare_preset(struct sup *u)
{
	struct spares *sp = &u->sp;
	const char *home = u->mk.home;
	if (sp->preset_off || !home)
		return NULL;
	if (sp->preset_home && strcmp(sp->preset_home, home) == 0)
		return sp->preset_unfit ? NULL : &sp->preset;
	rd_mask_watch_free(&sp->watch);
	rd_strv_free(&sp->preset_masks);
	free(sp->preset_home);
	sp->preset_home = NULL;
	if (sup_masks_for(u, NULL, home, &sp->preset_masks) < 0)
		return NULL;
	if (!(sp->preset_home = strdup(home)))
		return NULL;
	sp->preset_gen++;
	/* A sandbox back from a command has the preset this one replaces. */
	rd_sandbox_destroy(&sp->idle);
	sp->idle = RD_SANDBOX_NONE;
	struct rd_box_opts box = rd_box_resolve(u->s->cfg, u->s->prof, NULL);
	sp->preset = (struct rd_sandbox_preset){
	    .masks = sp->preset_masks.v,
	    .n_masks = sp->preset_masks.n,
	    .net_none = rd_box_is(&box, RD_BOX_NETWORK, RD_NET_NONE),
	};
	/* The watch comes once this preset's first spare is on its way (sup_spare_make). */
	sp->watch_due = true;
	const struct rd_bpf *filter = rd_cmd_filter(u->s, &box);
	if (filter) {
		sp->preset.filter = filter->insns;
		sp->preset.filter_len = filter->len;
	}
	return sp->preset_unfit ? NULL : &sp->preset;
}

/* A spare could not be made: each exec makes its own sandbox until one can be made again,
 * tried after 1 s, then after twice as long each time it fails again, up to a minute (a
 * limit on namespaces or processes reached for a while is no reason to go without spares
 * for the rest of the session). Said once. A lost zygote is not such a failure: the next
 * spare is made without it. */
static void spare_failed(struct sup *u, const struct rd_error *err)
{
	struct spares *sp = &u->sp;
	if (sp->zygote.lost && !sp->warned_zygote) {
		zygote_check(u);
		return;
	}
	/* After runnerd kill, the spare made meanwhile was killed with the rest: no news. */
	if (!sp->said_failed && !u->killed_by[0])
		fprintf(stderr,
		        "runnerd: a sandbox could not be made ahead of time (%s): each command "
		        "makes its own until one can be again\n",
		        err->msg);
	sp->said_failed = true;
	sp->failed = true;
	sp->backoff_ms = sp->backoff_ms ? sp->backoff_ms * 2 : 1000;
	if (sp->backoff_ms > 60000)
		sp->backoff_ms = 60000;
	clock_gettime(CLOCK_MONOTONIC, &sp->retry_at);
	sp->retry_at.tv_sec += sp->backoff_ms / 1000;
	sp->retry_at.tv_nsec += (long)(sp->backoff_ms % 1000) * 1000000;
	if (sp->retry_at.tv_nsec >= 1000000000) {
		sp->retry_at.tv_sec++;
		sp->retry_at.tv_nsec -= 1000000000;
	}
}

/* A spare was made: the failures, if any, are over. */
static void spare_made(struct sup *u)
{
	if (u->sp.failed)
		sup_log(u, "a sandbox could be made ahead of time again");
	u->sp.failed = false;
	u->sp.backoff_ms = 0;
}

/* A spare died applying its preset: the same failure would repeat, so spares go without. */
static void preset_broken(struct sup *u)
{
	if (u->sp.preset_off)
		return;
	fprintf(stderr, "runnerd: the spare sandbox died while setting up masks and the command "
	                "filter ahead of time; each sandbox now sets them up itself\n");
	u->sp.preset_off = true;
}

void sup_spare_make(struct sup *u)
{
	struct spares *sp = &u->sp;
	struct rd_error err = {0};
	if (!sup_spare_wanted(u))
		return;
	/* The zygote makes a changed shadow directory again before this spare. */
	rd_shadow_watch_check(&sp->shadow, &sp->zygote);
	int r = rd_sandbox_spare_begin(&sp->zygote, u->full_ids, spare_preset(u), &sp->spare, &err);
	/* The masks' watch, placed while the zygote makes that spare: watching a directory makes
	 * the kernel mark each entry it has cached there, 8.5 ms for a busy /tmp here, which the
	 * session's first command would otherwise wait for. A spare asked for before the watch
	 * has its masked paths looked up when it is used. Without inotify (or its limits
	 * reached), every spare's are. */
	if (sp->watch_due) {
		sp->watch_due = false;
		if (rd_mask_watch_init(&sp->watch, sp->preset_masks.v, sp->preset_masks.n) == 0)
			sp->preset.watch = &sp->watch;
	}
	zygote_check(u);
	if (r < 0)
		spare_failed(u, &err);
	else if (!sp->spare.pending)
		spare_made(u);
}

void sup_spare_ready(struct sup *u)
{
	struct spares *sp = &u->sp;
	struct rd_error err = {0};
	char b;
	/* The answer may have been taken already, by an exec that needed the spare. */
	if (sp->zygote.fd < 0 || (recv(sp->zygote.fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) < 0 &&
	                          (errno == EAGAIN || errno == EINTR)))
		return;
	if (!sp->spare.pending) {
		/* Nothing asked: the zygote is gone (EOF), or says what it must not. */
		rd_zygote_lost(&sp->zygote);
		zygote_check(u);
		return;
	}
	if (rd_sandbox_spare_finish(&sp->zygote, &sp->spare, &err) < 0)
		spare_failed(u, &err);
	else
		spare_made(u);
	zygote_check(u);
}

bool sup_spare_reaped(struct sup *u, pid_t pid)
{
	struct spares *sp = &u->sp;
	if (pid == sp->zygote.pid) {
		/* Its reapers are runnerd's children: they live on, watched as before. */
		sp->zygote.pid = -1;
		rd_zygote_lost(&sp->zygote);
		zygote_check(u);
		return true;
	}
	if (pid == sp->spare.reaper) {
		/* The spare died before use (its setup failed): forget it, pid and all. One back
		 * from a command ended in its reset (reaper.c), which says nothing of the preset.
		 */
		if (sp->spare.preset && !sp->spare.uses)
			preset_broken(u);
		rd_sandbox_close(&sp->spare);
		sp->spare = RD_SANDBOX_NONE;
		return true;
	}
	if (pid == sp->idle.reaper) {
		rd_sandbox_close(&sp->idle);
		sp->idle = RD_SANDBOX_NONE;
		return true;
	}
	return false;
}

void sup_spare_return(struct sup *u, struct cmd *c)
{
	struct spares *sp = &u->sp;
	struct run *r = &c->run;
	if (r->status_watched) {
		epoll_ctl(u->epfd, EPOLL_CTL_DEL, r->sb.status_fd, NULL);
		r->status_watched = false;
	}
	/* A command runnerd killed or timed out, or one whose sandbox had another preset than
	 * the next spare's (the caller's home changed, or the last plan fit none), gives it
	 * back to no one. Nor does one that finds both places taken (commands that ran at
	 * once). */
	struct rd_sandbox *to = NULL;
	if (!sp->spare.pending && sp->spare.reaper < 0)
		to = &sp->spare;
	else if (sp->idle.reaper < 0)
		to = &sp->idle;
	/* Nor one whose command ran beside another sandbox (crowded), nor one a rule granted a
	 * secret, nor one whose exec runnerd has not seen through yet (its setup pipe still
	 * open), nor once the agent has gone. */
	bool pending = !sup_cmd_exec_seen(c);
	rd_shadow_watch_check(&sp->shadow, &sp->zygote);
	if (!to || r->sb.view_gen != sp->zygote.view_gen || r->killed || r->timed_out || r->left ||
	    r->crowded || r->granted || r->reaped || r->sb.preset_use != RD_PRESET_USED ||
	    pending || u->agent_done || r->preset_gen != sp->preset_gen || !sp->preset_home ||
	    sp->preset_off || sp->preset_unfit || u->killed_by[0]) {
		/* Its pid 1 is reaped as this command's (sup_cmd_reaped). The setup pipe of an
		 * exec not seen through yet stays: its EOF (the exec went through) is what the
		 * handoff waits for (sup_handoff_exec_result), and it is there already. */
		pid_t pid = r->sb.reaper;
		int setup = pending ? r->sb.setup_fd : -1;
		if (pending)
			r->sb.setup_fd = -1;
		rd_sandbox_destroy(&r->sb);
		r->sb.reaper = pid;
		r->sb.setup_fd = setup;
		return;
	}
	*to = r->sb;
	to->preset = &sp->preset;
	to->preset_use = RD_PRESET_NONE;
	to->fit_known = false;
	r->sb = RD_SANDBOX_NONE;
	/* Nothing of the sandbox is the command's to wait for any more. */
	r->reaped = true;
}

bool sup_spare_none_ready(const struct sup *u)
{
	const struct spares *sp = &u->sp;
	return sp->spare.reaper < 0 && !sp->spare.pending && sp->idle.reaper < 0;
}

int sup_spare_start(struct sup *u, struct cmd *c, const struct rd_launch_plan *plan, bool granted,
                    struct rd_error *err)
{
	struct spares *sp = &u->sp;
	/* A sandbox that ran a command before is one a process of another sandbox may have
	 * watched through an fd it got then (the /proc of its pid namespace): never for a
	 * command a rule grants a secret, which gets a sandbox no command has been in. And a
	 * command that runs beside another sandbox marks both crowded (sup_spare_return).
	 * Beside means a process of the other sandbox may be alive: not where pid 1 reported the
	 * end with nothing left (ended_alone; the caller read the reports, sup_cmd_read_ends). */
	bool others = false;
	for (struct cmd *o = u->cmds; o; o = o->next)
		if (o != c && sup_cmd_live(o) && !o->run.ended_alone) {
			o->run.crowded = true;
			others = true;
		}
	c->run.crowded = others;
	c->run.granted = granted;
	/* A shadow directory changed: the zygote makes it again, and a sandbox made before is
	 * not used (rd_sandbox_start). */
	rd_shadow_watch_check(&sp->shadow, &sp->zygote);
	if (granted && sp->idle.uses) {
		rd_sandbox_destroy(&sp->idle);
		sp->idle = RD_SANDBOX_NONE;
	}
	if (granted && sp->spare.uses) {
		rd_sandbox_destroy(&sp->spare);
		sp->spare = RD_SANDBOX_NONE;
	}
	/* One ready first: the one back from a command if the spare is still on its way (or
	 * gone); else the spare, which the other then replaces. */
	bool spare_ready = sp->spare.reaper >= 0 && !sp->spare.pending;
	if (sp->idle.reaper >= 0 && !spare_ready) {
		c->run.sb = sp->idle;
	} else {
		c->run.sb = sp->spare;
		sp->spare = sp->idle;
	}
	sp->idle = RD_SANDBOX_NONE;
	c->run.preset_gen = sp->preset_gen;
	if (sp->preset_home) {
		bool fits = rd_sandbox_preset_fits(&sp->preset, plan);
		sp->preset_unfit = !fits;
		/* The same comparison, made once. */
		c->run.sb.fit_known = c->run.sb.preset == &sp->preset;
		c->run.sb.fit = fits;
	}
	int r = rd_sandbox_start(&sp->zygote, plan, &c->run.sb, err);
	zygote_check(u);
	if (c->run.sb.preset_use == RD_PRESET_BROKEN)
		preset_broken(u);
	else if (c->run.sb.preset_use == RD_PRESET_STALE)
		sup_log(
		    u,
		    "exec %llu: a masked path, or a directory of masked files, changed since the "
		    "spare sandbox was made: a new sandbox for this command",
		    (unsigned long long)c->id);
	return r;
}

void sup_spare_teardown(struct sup *u)
{
	struct spares *sp = &u->sp;
	/* A spare still asked of the zygote exits without its go (runnerd's end closes here). */
	if (sp->spare.reaper >= 0)
		kill(sp->spare.reaper, SIGKILL);
	rd_sandbox_close(&sp->spare);
	rd_sandbox_destroy(&sp->idle);
	rd_zygote_stop(&sp->zygote);
	free(sp->preset_home);
	rd_mask_watch_end(&sp->watch);
	rd_shadow_watch_free(&sp->shadow);
	rd_strv_free(&sp->preset_masks);
}
