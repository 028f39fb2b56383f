#!/usr/bin/env bash
# Every C source and header of the project is clang-format clean (the repo's .clang-format).
set -euo pipefail
cd "$1"
command -v clang-format >/dev/null || {
	echo "SKIP: clang-format is not installed"
	[ "${RUNNERD_MUST_WORK:-0}" = 1 ] && exit 1
	exit 77
}
mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.c' '*.h' 2>/dev/null ||
	find runnerd intercept sandbox tests bench -name '*.[ch]')
clang-format --dry-run --Werror "${files[@]}"
echo "clang-format: ${#files[@]} files clean"
