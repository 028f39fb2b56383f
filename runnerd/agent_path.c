#include "runnerd/agent_path.h"

#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

char *rd_agent_which(const char *name, const char *path_env)
{
	if (strchr(name, '/'))
		return strdup(name);
	const char *p = path_env && *path_env ? path_env : "/usr/local/bin:/usr/bin:/bin";
	for (;;) {
		size_t len = strcspn(p, ":");
		char *cand = NULL;
		if (asprintf(&cand, "%.*s/%s", (int)len, len ? p : ".", name) < 0)
			return NULL;
		struct stat st;
		if (stat(cand, &st) == 0 && S_ISREG(st.st_mode) && access(cand, X_OK) == 0)
			return cand;
		free(cand);
		if (!p[len])
			return NULL;
		p += len + 1;
	}
}

/* The kernel's view of a "#!" line: the interpreter, then at most one argument (the rest of
 * the line, trimmed). Returns false if the file does not start with "#!". */
static bool read_shebang(const char *path, char *interp, size_t isz, char *arg, size_t asz)
{
	char buf[257];
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (n < 3 || buf[0] != '#' || buf[1] != '!')
		return false;
	buf[n] = '\0';
	char *nl = strchr(buf, '\n');
	if (nl)
		*nl = '\0';
	char *p = buf + 2;
	p += strspn(p, " \t");
	size_t il = strcspn(p, " \t");
	if (il == 0 || il >= isz)
		return false;
	memcpy(interp, p, il);
	interp[il] = '\0';
	p += il;
	p += strspn(p, " \t");
	size_t al = strlen(p);
	while (al && (p[al - 1] == ' ' || p[al - 1] == '\t' || p[al - 1] == '\r'))
		al--;
	if (al >= asz)
		return false;
	memcpy(arg, p, al);
	arg[al] = '\0';
	return true;
}

static void free_argv(char **argv)
{
	for (char **a = argv; a && *a; a++)
		free(*a);
	free(argv);
}

int rd_agent_resolve_env_shebang(char **path, char ***argv, const char *path_env,
                                 struct rd_error *err)
{
	for (int level = 0; level < 4; level++) {
		char interp[256], arg[256];
		if (!read_shebang(*path, interp, sizeof(interp), arg, sizeof(arg)))
			return 0;
		if (strcmp(interp, "/usr/bin/env") != 0 && strcmp(interp, "/bin/env") != 0)
			return 0; /* the kernel runs a direct interpreter itself, within the exec */
		/* env's words: "NAME", or "-S NAME ARGS" split on blanks. Anything else (-i, -u,
		 * NAME=VALUE) is left to env itself. */
		char *words[32];
		size_t nw = 0;
		bool split = strncmp(arg, "-S", 2) == 0 && (arg[2] == ' ' || arg[2] == '\t');
		char *s = split ? arg + 3 : arg;
		if (!split && strpbrk(s, " \t"))
			return 0;
		for (char *tok = strtok(s, " \t"); tok && nw < ARRAY_SIZE(words);
		     tok = strtok(NULL, " \t"))
			words[nw++] = tok;
		if (nw == 0 || words[0][0] == '-' || strchr(words[0], '='))
			return 0;
		char *resolved = rd_agent_which(words[0], path_env);
		if (!resolved)
			return rd_error_set(err, ENOENT,
			                    "%s: its interpreter \"%s\" (#!%s %s) is not on PATH",
			                    *path, words[0], interp, split ? "-S ..." : words[0]);

		size_t argc = 0;
		while ((*argv)[argc])
			argc++;
		char **nv = calloc(nw + argc + 2, sizeof(char *));
		size_t k = 0;
		bool ok = nv != NULL;
		for (size_t i = 0; ok && i < nw; i++)
			ok = (nv[k++] = strdup(words[i])) != NULL;
		if (ok)
			ok = (nv[k++] = strdup(*path)) != NULL;
		for (size_t i = 1; ok && i < argc; i++)
			ok = (nv[k++] = strdup((*argv)[i])) != NULL;
		if (!ok) {
			free_argv(nv);
			free(resolved);
			return rd_error_set(err, ENOMEM, "out of memory");
		}
		free_argv(*argv);
		*argv = nv;
		free(*path);
		*path = resolved;
	}
	return 0;
}

/* 1: added; 0: no such file, or one already added; 2: left out, as commands can write it.
 * The path of each file added goes to paths. */
static int add_file(struct rd_agent_files *out, const struct rd_view_paths *view, const char *path,
                    struct rd_strv *paths)
{
	struct stat st;
	char *real = realpath(path, NULL);
	if (!real || stat(real, &st) < 0 || !S_ISREG(st.st_mode)) {
		free(real);
		return 0;
	}
	if (rd_view_writable_root(view, real)) {
		free(real);
		return 2;
	}
	for (size_t i = 0; i < out->n_files; i++)
		if (out->files[i].dev == st.st_dev && out->files[i].ino == st.st_ino) {
			free(real);
			return 0;
		}
	struct rd_file_id *f = realloc(out->files, (out->n_files + 1) * sizeof(*f));
	if (!f) {
		free(real);
		return -ENOMEM;
	}
	out->files = f;
	if (rd_strv_take(paths, real) < 0)
		return -ENOMEM;
	out->files[out->n_files++] = (struct rd_file_id){st.st_dev, st.st_ino};
	return 1;
}

__attribute__((format(printf, 2, 3))) static int note(struct rd_strv *notes, const char *fmt, ...)
{
	char *line = NULL;
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(&line, fmt, ap);
	va_end(ap);
	return n < 0 ? -ENOMEM : rd_strv_take(notes, line);
}

int rd_agent_take_files(const char *launched, const char *run, const struct rd_profile *prof,
                        const struct rd_view_paths *view, struct rd_agent_files *out,
                        struct rd_strv *paths, struct rd_strv *notes)
{
	*out = (struct rd_agent_files){0};
	char *script = realpath(launched, NULL);
	if (!script)
		return 0; /* nothing to name: the launcher's exec will say why */
	int r = 0;
	/* The interpreter: the one runnerd execs for an env script, or the script's own; and
	 * the script, which it runs as the agent when given it again. */
	char interp[256], arg[256];
	const char *in =
	    strcmp(launched, run) != 0 ? run
	    : read_shebang(script, interp, sizeof(interp), arg, sizeof(arg)) && interp[0] == '/'
	        ? interp
	        : NULL;
	struct stat st, sst;
	if (in && rd_view_writable_root(view, script))
		r = note(notes,
		         "the agent's script %s lies where commands can write: its interpreter "
		         "started on it again runs as a command",
		         script);
	else if (in && stat(in, &st) == 0 && stat(script, &sst) == 0) {
		out->interp = (struct rd_file_id){st.st_dev, st.st_ino};
		out->script = (struct rd_file_id){sst.st_dev, sst.st_ino};
		r = rd_strv_add(paths, script);
	}
	/* The package: the nearest directory above the script with a package.json. */
	char *package = NULL;
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", script);
	char *slash;
	while (r >= 0 && !package && (slash = strrchr(dir, '/')) && slash != dir) {
		*slash = '\0';
		char pj[PATH_MAX + 16];
		snprintf(pj, sizeof(pj), "%s/package.json", dir);
		if (access(pj, F_OK) == 0 && !(package = strdup(dir)))
			r = -ENOMEM;
	}
	for (size_t i = 0; r >= 0 && i < prof->agent_programs.n; i++) {
		const char *e = prof->agent_programs.v[i];
		char *path = NULL;
		if (strncmp(e, "{package}/", 10) == 0) {
			if (!package) {
				r = note(
				    notes,
				    "agent.programs %s: the agent (%s) lies in no npm package (no "
				    "package.json above it): left out",
				    e, script);
				continue;
			}
			if (asprintf(&path, "%s/%s", package, e + 10) < 0)
				r = -ENOMEM;
		} else if (!(path = strdup(e))) {
			r = -ENOMEM;
		}
		glob_t g;
		int found = 0;
		if (path && glob(path, GLOB_NOSORT, NULL, &g) == 0) {
			for (size_t k = 0; r >= 0 && k < g.gl_pathc; k++) {
				r = add_file(out, view, g.gl_pathv[k], paths);
				if (r > 0)
					found++;
				if (r == 2)
					r = note(notes,
					         "agent.programs: %s lies where commands can "
					         "write: left "
					         "out, it runs as a command",
					         g.gl_pathv[k]);
			}
			globfree(&g);
		}
		if (r >= 0 && path && !found)
			r = note(notes, "agent.programs %s: no file at %s that runs as the agent",
			         e, path);
		free(path);
	}
	free(package);
	free(script);
	return r < 0 ? r : 0;
}
