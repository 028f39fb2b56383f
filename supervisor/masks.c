/* Masks go over paths. A command may rename a masked directory's parent, or put a symlink where
 * a masked path was, and the next command's mask would then miss the secret (or cover something
 * else). So every masked path that exists when the session starts is pinned: to its inode and
 * to the directory it is in. Once the directory is another, or a symlink stands where none was
 * (or the symlink that was leads elsewhere), or the path holds another kind of file, commands
 * are refused: better no command than one that sees what it must not.
 *
 * A file replaced by one of its kind in the same directory is no such move: the agent rewrites
 * its own files so (Claude Code writes ~/.claude.json to a temporary file and renames it over
 * the old one, at every start), bash writes ~/.bash_history so, git's credential store its
 * file. The mask goes on what is at the path (never through a symlink there): that file is
 * pinned in its place. And one removed (a logout) leaves nothing to hide. */
#include "supervisor/masks.h"
#include "lib/passwd.h"
#include "policy/rules.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char *sup_masks_home(struct sup *u, uid_t uid)
{
	struct masks *m = &u->mk;
	if (m->home && m->home_uid == uid)
		return m->home;
	char buf[4096];
	if (rd_home_of(uid, u->s->remote.on, buf, sizeof(buf)) < 0)
		return NULL;
	char *home = strdup(buf);
	if (!home)
		return NULL;
	free(m->home);
	m->home = home;
	m->home_uid = uid;
	return m->home;
}

/* The hidden control directories go on top of the profile's masks: a command that could reach
 * a control socket, this session's or another's, could answer its own "ask". */
static int add_control_masks(struct sup *u, struct rd_strv *m)
{
	char **v = realloc(m->v, (m->n + RD_CONTROL_DIRS + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	m->v = v;
	for (size_t i = 0; i < RD_CONTROL_DIRS && u->s->control_dirs[i]; i++)
		if (!(m->v[m->n] = strdup(u->s->control_dirs[i])))
			return -ENOMEM;
		else
			m->v[++m->n] = NULL;
	return 0;
}

/* A masked path that was a symlink at the start is masked where it led then (pinned): the
 * sandbox follows no symlink at a masked path, which a command could have planted to have
 * something else covered, or every sandbox fail. */
static int resolve_pinned(struct sup *u, struct rd_strv *m)
{
	for (size_t i = 0; i < m->n; i++)
		for (size_t k = 0; k < u->mk.n_pins; k++) {
			const struct pin *p = &u->mk.pins[k];
			/* An exception ("!" and a path) in such a masked directory moves with it.
			 */
			const char *path = m->v[i] + (m->v[i][0] == '!');
			if (!p->real || !p->path || !rd_path_within(path, p->path) ||
			    (path != m->v[i] && strcmp(path, p->path) == 0))
				continue;
			if (path == m->v[i] && strcmp(path, p->path) != 0)
				continue;
			char *real = NULL;
			if (asprintf(&real, "%s%s%s", path != m->v[i] ? "!" : "", p->real,
			             path + strlen(p->path)) < 0)
				return -ENOMEM;
			free(m->v[i]);
			m->v[i] = real;
			break;
		}
	return 0;
}

static int make_list(struct sup *u, const struct rd_rule *rule, const char *home,
                     struct rd_strv *out)
{
	int r = rd_mask_list(u->s->cfg, u->s->prof, rule, home, u->mk.home_uid, out);
	if (r >= 0)
		r = add_control_masks(u, out);
	if (r >= 0)
		r = resolve_pinned(u, out);
	if (r < 0)
		rd_strv_free(out);
	return r;
}

static int copy_list(const struct rd_strv *from, struct rd_strv *out)
{
	*out = (struct rd_strv){0};
	if (!(out->v = calloc(from->n + 1, sizeof(*out->v))))
		return -ENOMEM;
	for (; out->n < from->n; out->n++)
		if (!(out->v[out->n] = strdup(from->v[out->n]))) {
			rd_strv_free(out);
			return -ENOMEM;
		}
	return 0;
}

/* Making the list (each masked path expanded, and looked for among those before it) took about
 * 18 us an exec; a copy of the last one made takes 2. */
int sup_masks_for(struct sup *u, const struct rd_rule *rule, const char *home, struct rd_strv *out)
{
	struct masks *m = &u->mk;
	if (m->last.valid && m->last.rule == rule && m->last.uid == m->home_uid &&
	    strcmp(m->last.home, home) == 0)
		return copy_list(&m->last.list, out);
	int r = make_list(u, rule, home, out);
	if (r < 0 || !m->pinned)
		return r;
	rd_strv_free(&m->last.list);
	free(m->last.home);
	m->last.rule = rule;
	m->last.uid = m->home_uid;
	m->last.home = strdup(home);
	m->last.valid = m->last.home && copy_list(out, &m->last.list) == 0;
	return 0;
}

/* The directory path is in, stat'ed (symlinks on the way followed, as the mask's lookup does). */
static int dir_of(const char *path, struct stat *st)
{
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX];
	if (!slash || (size_t)(slash - path) >= sizeof(dir))
		return -ENAMETOOLONG;
	snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	return stat(dir, st) < 0 ? -errno : 0;
}

void sup_masks_pin(struct sup *u)
{
	struct masks *m = &u->mk;
	struct rd_strv all = {0};
	const char *home = sup_masks_home(u, getuid());
	const struct rd_profile *prof = u->s->prof;
	if (!home || sup_masks_for(u, NULL, home, &all) < 0)
		return;
	size_t extra = 0;
	for (size_t r = 0; r < prof->n_rules; r++)
		extra += prof->rules[r].box.list[RD_BOX_MASK].n;
	m->pins = calloc(all.n + extra + 1, sizeof(*m->pins));
	for (size_t r = 0; m->pins && r <= prof->n_rules; r++) {
		struct rd_strv list = {0};
		if (r < prof->n_rules) {
			struct rd_config none = {0};
			struct rd_profile bare = {0};
			if (rd_mask_list(&none, &bare, &prof->rules[r], home, getuid(), &list) < 0)
				continue;
		} else {
			list = all;
			all = (struct rd_strv){0};
		}
		for (size_t i = 0; i < list.n; i++) {
			struct stat st, lst, dir;
			/* "!path": an exception to a mask, not a mask to pin. */
			if (list.v[i][0] != '/' || stat(list.v[i], &st) < 0)
				continue;
			char *real = lstat(list.v[i], &lst) == 0 && S_ISLNK(lst.st_mode)
			                 ? realpath(list.v[i], NULL)
			                 : NULL;
			/* Without its directory, it is pinned to nothing: any change refuses. */
			if (dir_of(real ? real : list.v[i], &dir) < 0)
				dir = (struct stat){0};
			m->pins[m->n_pins++] = (struct pin){.path = strdup(list.v[i]),
			                                    .real = real,
			                                    .dev = st.st_dev,
			                                    .ino = st.st_ino,
			                                    .type = st.st_mode & S_IFMT,
			                                    .dir_dev = dir.st_dev,
			                                    .dir_ino = dir.st_ino};
		}
		rd_strv_free(&list);
	}
	rd_strv_free(&all);
	m->pinned = true;
}

/* Is the pinned p where it was (see the top of this file)? A file of its kind that replaced
 * it in the same directory is pinned in its place. */
static bool still_there(struct pin *p)
{
	const char *at = p->real ? p->real : p->path;
	struct stat st, dir;
	if (p->real) {
		/* The symlink that led to what is masked: leading there still, or gone (nothing
		 * reaches it by that name), or dangling with what it led to gone. */
		char *now = realpath(p->path, NULL);
		bool same = now && strcmp(now, p->real) == 0;
		free(now);
		if (!same && lstat(p->path, &st) == 0 &&
		    !(stat(p->path, &st) < 0 && errno == ENOENT && lstat(p->real, &st) < 0 &&
		      errno == ENOENT))
			return false;
	}
	if (dir_of(at, &dir) < 0 || dir.st_ino != p->dir_ino || dir.st_dev != p->dir_dev ||
	    !p->dir_ino)
		return false;
	if (lstat(at, &st) < 0)
		return errno == ENOENT;
	if (S_ISLNK(st.st_mode) || (st.st_mode & S_IFMT) != p->type)
		return false;
	p->dev = st.st_dev;
	p->ino = st.st_ino;
	return true;
}

const char *sup_masks_tampered(struct sup *u, const struct rd_strv *masks)
{
	struct masks *m = &u->mk;
	for (size_t i = 0; i < masks->n; i++)
		for (size_t k = 0; k < m->n_pins; k++) {
			struct pin *p = &m->pins[k];
			if (!p->path || (strcmp(p->path, masks->v[i]) != 0 &&
			                 (!p->real || strcmp(p->real, masks->v[i]) != 0)))
				continue;
			if (!still_there(p))
				return masks->v[i];
		}
	return NULL;
}

void sup_masks_free(struct sup *u)
{
	for (size_t i = 0; i < u->mk.n_pins; i++) {
		free(u->mk.pins[i].path);
		free(u->mk.pins[i].real);
	}
	free(u->mk.pins);
	free(u->mk.home);
	rd_strv_free(&u->mk.last.list);
	free(u->mk.last.home);
}
