#include "runnerd/agent_path.h"

#include <fcntl.h>
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
