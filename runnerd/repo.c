#include "runnerd/repo.h"
#include "lib/git.h"
#include "lib/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

char *rd_repo_hooks_dir(const char *workspace)
{
	int out[2];
	if (pipe2(out, O_CLOEXEC) < 0)
		return NULL;
	posix_spawn_file_actions_t fa;
	pid_t pid = -1;
	char *argv[] = {
	    "git",   "-C", (char *)workspace, "rev-parse", "--path-format=absolute", "--git-path",
	    "hooks", NULL};
	if (posix_spawn_file_actions_init(&fa) == 0) {
		if (posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0) == 0 &&
		    posix_spawn_file_actions_adddup2(&fa, out[1], 1) == 0 &&
		    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0) == 0 &&
		    posix_spawnp(&pid, "git", &fa, NULL, argv, environ) != 0)
			pid = -1;
		posix_spawn_file_actions_destroy(&fa);
	}
	close(out[1]);
	char buf[PATH_MAX + 1];
	size_t n = 0;
	for (ssize_t r; pid > 0 && n < sizeof(buf) - 1 &&
	                (r = read(out[0], buf + n, sizeof(buf) - 1 - n)) != 0;) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			break;
		n += (size_t)r;
	}
	close(out[0]);
	int status = 1;
	while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (pid <= 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || n == 0 ||
	    n >= sizeof(buf) - 1 || buf[n - 1] != '\n' || buf[0] != '/')
		return NULL;
	buf[n - 1] = '\0';
	if (memchr(buf, '\n', n - 1) || memchr(buf, '\0', n - 1))
		return NULL;
	return strdup(buf);
}

void rd_repo_start(const char *workspace, struct rd_repo_start *start)
{
	*start = (struct rd_repo_start){0};
	char git[PATH_MAX];
	if ((size_t)snprintf(git, sizeof(git), "%s/.git",
	                     strcmp(workspace, "/") ? workspace : "") >= sizeof(git))
		return;
	_cleanup_close_ int dir = open(git, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dir >= 0 && !rd_git_head_valid(dir, "HEAD", start->head, sizeof(start->head)))
		start->head[0] = '\0';
	start->bare_shaped = rd_git_bare_shaped(workspace);
}

/* HEAD moved aside (a free name of its own: a command could have taken the first) and
 * written again with text. The name it was moved to in aside; false if it could not be. */
static bool restore_head(int dir, const char *text, const char *session, char *aside, size_t n)
{
	bool moved = false;
	errno = 0;
	for (int k = 0; !moved && k < 100; k++) {
		if (k)
			snprintf(aside, n, "HEAD.runnerd-%s-%d", session, k);
		else
			snprintf(aside, n, "HEAD.runnerd-%s", session);
		moved = renameat2(dir, "HEAD", dir, aside, RENAME_NOREPLACE) == 0;
		if (!moved && errno == ENOENT) {
			aside[0] = '\0';
			moved = true;
		} else if (!moved && errno != EEXIST) {
			return false;
		}
	}
	if (!moved)
		return false;
	int fd = openat(dir, "HEAD", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return false;
	size_t len = strlen(text);
	bool ok = write(fd, text, len) == (ssize_t)len;
	return close(fd) == 0 && ok;
}

void rd_repo_end(const char *workspace, const struct rd_repo_start *start, struct rd_audit *audit,
                 const char *session)
{
	char git[PATH_MAX], aside[128];
	if ((size_t)snprintf(git, sizeof(git), "%s/.git",
	                     strcmp(workspace, "/") ? workspace : "") >= sizeof(git))
		return;
	_cleanup_close_ int dir = open(git, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (start->head[0] && dir >= 0 && !rd_git_head_valid(dir, "HEAD", NULL, 0)) {
		_cleanup_close_ int wdir = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		bool ok =
		    wdir >= 0 && restore_head(wdir, start->head, session, aside, sizeof(aside));
		char moved[PATH_MAX + 160] = "";
		if (ok && aside[0])
			snprintf(moved, sizeof(moved), "%s/%s", git, aside);
		if (ok)
			fprintf(
			    stderr,
			    "runnerd: %s/HEAD was left in a form git does not take, so that git "
			    "would look further up (at the workspace as a bare repository a "
			    "command could have made): written again as it was at the start%s%s\n",
			    git, moved[0] ? "; what was there is now " : "", moved);
		else
			fprintf(
			    stderr,
			    "runnerd: %s/HEAD was left in a form git does not take, so that git "
			    "would look further up (at the workspace as a bare repository a "
			    "command could have made), and cannot be written again (%s): write "
			    "it before git runs there; it was: %s",
			    git, strerror(errno), start->head);
		(void)rd_audit(audit, "git_head_restored",
		               json_pack("{s:o, s:b, s:o}", "path", rd_json_bytes(git), "restored",
		                         ok, "moved_to",
		                         moved[0] ? rd_json_bytes(moved) : json_null()));
	}
	if (!start->bare_shaped && rd_git_bare_shaped(workspace)) {
		fprintf(stderr,
		        "runnerd: %s was made a bare git repository's shape during this session "
		        "(HEAD, objects, refs), where commands could write: git takes it, with its "
		        "configuration (%s/config), where it finds no .git first; check it, and "
		        "remove them if they are not yours\n",
		        workspace, strcmp(workspace, "/") ? workspace : "");
		(void)rd_audit(audit, "bare_repository_made",
		               json_pack("{s:o}", "path", rd_json_bytes(workspace)));
	}
}
