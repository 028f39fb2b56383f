#include "lib/passwd.h"

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>

int rd_home_of(uid_t uid, bool files_only, char *buf, size_t n)
{
	char line[4096];
	struct passwd pw, *res = NULL;
	if (!files_only) {
		if (getpwuid_r(uid, &pw, line, sizeof(line), &res) != 0)
			res = NULL;
	} else {
		FILE *f = fopen("/etc/passwd", "re");
		while (f && fgetpwent_r(f, &pw, line, sizeof(line), &res) == 0 && res &&
		       res->pw_uid != uid)
			res = NULL;
		if (f)
			fclose(f);
	}
	if (!res || !res->pw_dir || res->pw_dir[0] != '/')
		return -ENOENT;
	if ((size_t)snprintf(buf, n, "%s", res->pw_dir) >= n)
		return -ENAMETOOLONG;
	return 0;
}
