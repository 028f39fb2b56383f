#include "runnerd/agent_env.h"
#include "lib/syscalls.h"
#include "lib/util.h"
#include "policy/dotenv.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Bigger than any .env an agent reads: the file is left unread. */
#define ENV_FILE_MAX (1 << 20)

static const char *env_get(char *const *env, const char *name, size_t len)
{
	for (char *const *e = env; e && *e; e++)
		if (strncmp(*e, name, len) == 0 && (*e)[len] == '=')
			return *e + len + 1;
	return NULL;
}

/* An absolute entry ("~/...", "${NAME}/...", "${NAME:-~}/...") as a path in buf; false when it
 * makes none (the variable or HOME unset or not absolute). */
static bool absolute_entry(const char *e, char *const *env, char *buf, size_t size)
{
	const char *home = env_get(env, "HOME", 4);
	const char *base = NULL, *rest = NULL;
	if (strncmp(e, "~/", 2) == 0) {
		base = home, rest = e + 1;
	} else {
		size_t n = strspn(
		    e + 2, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_");
		const char *close = e + 2 + n;
		base = env_get(env, e + 2, n);
		if (close[0] == ':') { /* "${NAME:-~}/" */
			if (!base || !*base)
				base = home;
			rest = close + 4;
		} else {
			rest = close + 1;
		}
	}
	if (!base || base[0] != '/')
		return false;
	int n = snprintf(buf, size, "%s%s", strcmp(base, "/") ? base : "", rest);
	return n > 0 && (size_t)n < size;
}

/* The agent's env file (agent.env_files): the first that exists, into buf; false if none. */
static bool find_env_file(const struct rd_strv *files, const char *cwd, char *const *env, char *buf,
                          size_t size)
{
	struct stat st;
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", cwd);
	for (bool last = false; !last && dir[0] == '/';) {
		for (size_t i = 0; i < files->n; i++) {
			const char *e = files->v[i];
			if (e[0] == '~' || e[0] == '$')
				continue;
			int n = snprintf(buf, size, "%s/%s", strcmp(dir, "/") ? dir : "", e);
			if (n > 0 && (size_t)n < size && stat(buf, &st) == 0)
				return true;
		}
		char *slash = strrchr(dir, '/');
		last = slash == dir;
		slash[slash == dir] = '\0';
	}
	for (size_t i = 0; i < files->n; i++) {
		const char *e = files->v[i];
		if ((e[0] == '~' || e[0] == '$') && absolute_entry(e, env, buf, size) &&
		    stat(buf, &st) == 0)
			return true;
	}
	return false;
}

/* Whether a command could write path or put another file in its place. */
static bool commands_write(const struct rd_view_paths *view, const char *path)
{
	_cleanup_free_ char *real = realpath(path, NULL);
	if (!real || rd_view_writable_root(view, real))
		return true;
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (!slash)
		return true;
	*slash = '\0';
	_cleanup_free_ char *real_dir = realpath(slash == dir ? "/" : dir, NULL);
	char entry[PATH_MAX];
	int n = real_dir ? snprintf(entry, sizeof(entry), "%s/%s",
	                            strcmp(real_dir, "/") ? real_dir : "", slash + 1)
	                 : -1;
	return n < 0 || (size_t)n >= sizeof(entry) || rd_view_entry_replaceable(view, entry);
}

/* The file's text (malloc'd, *len bytes), or NULL: not a regular file, too big, unreadable,
 * or (served) not readable by uid. */
static char *read_env_file(const char *path, bool served, uid_t uid, size_t *len)
{
	/* runnerd serve is root of the machine, with the machine's /proc in its view: no
	 * symlink the container's files hold (to /proc/1/root/..., say) is followed. */
	struct open_how how = {.flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY,
	                       .resolve = served ? RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS : 0};
	int fd = rd_openat2(AT_FDCWD, path, &how);
	struct stat st;
	char *text = NULL;
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= ENV_FILE_MAX &&
	    (!served || (st.st_uid == uid && (st.st_mode & S_IRUSR)) || (st.st_mode & S_IROTH)) &&
	    (text = malloc((size_t)st.st_size + 1))) {
		ssize_t n = read(fd, text, (size_t)st.st_size);
		if (n < 0) {
			free(text);
			text = NULL;
		} else {
			*len = (size_t)n;
		}
	}
	close(fd);
	return text;
}

int rd_agent_env_guard(const struct rd_profile *prof, const struct rd_view_paths *view,
                       const char *cwd, bool served, uid_t uid, char ***env, struct rd_strv *notes)
{
	const struct rd_strv *guard = &prof->agent_env_guard;
	if (!guard->n)
		return 0;
	char path[PATH_MAX];
	size_t len = 0;
	char *text = NULL;
	bool unsafe = false;
	if (find_env_file(&prof->agent_env_files, cwd ? cwd : "/", *env, path, sizeof(path))) {
		unsafe = commands_write(view, path);
		text = read_env_file(path, served, uid, &len);
	}
	size_t n_env = 0;
	while ((*env)[n_env])
		n_env++;
	int r = 0;
	for (size_t i = 0; r == 0 && i < guard->n; i++) {
		const char *name = guard->v[i];
		if (env_get(*env, name, strlen(name)))
			continue;
		char *value = NULL;
		int got = text ? rd_dotenv_value(text, len, name, &value) : 0;
		if (got < 0) {
			r = got;
			break;
		}
		if (got && unsafe) {
			char *note = NULL;
			r = asprintf(
			        &note,
			        "%s sets %s, but commands can write it: the agent (profile %s) "
			        "is given %s empty and does not take it from there; set it in "
			        "the environment runnerd starts with, or in a file commands "
			        "cannot write",
			        path, name, prof->name, name) < 0
			        ? -ENOMEM
			        : rd_strv_take(notes, note);
		}
		char *entry = NULL;
		if (r == 0 && asprintf(&entry, "%s=%s", name, got && !unsafe ? value : "") < 0)
			r = -ENOMEM;
		if (value) {
			explicit_bzero(value, strlen(value));
			free(value);
		}
		char **grown = r == 0 ? realloc(*env, (n_env + 2) * sizeof(char *)) : NULL;
		if (!grown) {
			free(entry);
			r = -ENOMEM;
			break;
		}
		*env = grown;
		grown[n_env++] = entry;
		grown[n_env] = NULL;
	}
	if (text) {
		explicit_bzero(text, len);
		free(text);
	}
	return r;
}
