#!/usr/bin/env bash
# The agent CLIs the end-to-end tests run, from npm, pinned, installed into DIR once:
#   npm-agents.sh DIR
# Claude Code's package is a launcher whose postinstall links bin/claude.exe to the native
# program of its platform package (an optionalDependency). Readable by all: unprivileged.sh
# runs the tests as another user. Without npm or a reachable registry it says so and exits 0:
# the tests that need a package then skip loudly (77), which RUNNERD_MUST_WORK=1 turns into a
# failure.
set -uo pipefail
dir=$1
want="@anthropic-ai/claude-code@2.1.331"
mkdir -p "$dir"
if [ -f "$dir/.installed" ] && [ "$(cat "$dir/.installed")" = "$want" ]; then
	exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
	echo "npm-agents: npm is not installed (make test-deps installs it): the tests that need" \
		"$want skip" >&2
	exit 0
fi
echo "npm-agents: installing $want into $dir"
rm -f "$dir/.installed"
if (cd "$dir" && npm install --no-audit --no-fund --no-save --loglevel=error "$want") &&
	"$dir/node_modules/.bin/claude" --version >/dev/null; then
	echo "$want" >"$dir/.installed"
	chmod -R a+rX "$dir"
else
	echo "npm-agents: npm could not install $want: the tests that need it skip" >&2
fi
exit 0
