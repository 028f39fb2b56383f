#!/usr/bin/env bash
# An npm package the tests use, pinned, installed into DIR once:
#   npm-deps.sh DIR [PACKAGE@VERSION [BIN]]
# PACKAGE defaults to node-pty@1.1.0 (the integration tests' pseudo-terminals); with BIN, the
# install counts only if node_modules/.bin/BIN --version runs. Readable by all: unprivileged.sh
# runs the tests as another user. Without npm or a reachable registry it says so and exits 0:
# the tests that need the package then skip loudly (77), which RUNNERD_MUST_WORK=1 turns into a
# failure.
set -uo pipefail
dir=$1
want=${2:-node-pty@1.1.0}
bin=${3:-}
mkdir -p "$dir"
# Absolute: node takes require('build/...') for a module name.
dir=$(cd "$dir" && pwd)
if [ -f "$dir/.installed" ] && [ "$(cat "$dir/.installed")" = "$want" ]; then
	exit 0
fi
# npm (and g++, which node-pty's build needs on Linux) come with make test-deps.
if ! command -v npm >/dev/null 2>&1; then
	echo "npm-deps: npm is not installed (make test-deps installs it): the tests that need" \
		"$want skip" >&2
	exit 0
fi
echo "npm-deps: installing $want into $dir"
rm -f "$dir/.installed"
# --prefix: into DIR even when a directory above it holds a node_modules or a package.json.
# The --version probe in a HOME of its own: an agent CLI writes its state there.
probe_home=$(mktemp -d)
trap 'rm -rf "$probe_home"' EXIT
if (cd "$dir" && npm install --prefix . --no-audit --no-fund --no-save --loglevel=error \
	"$want") &&
	{ [ -z "$bin" ] || HOME=$probe_home "$dir/node_modules/.bin/$bin" --version >/dev/null; }; then
	echo "$want" >"$dir/.installed"
	chmod -R a+rX "$dir"
else
	# Say which node the package wants, when it says: Debian 12's is 18, older than some CLIs'.
	pkg=${want%@*}
	engines=$(node -p "(require('$dir/node_modules/$pkg/package.json').engines||{}).node||''" \
		2>/dev/null)
	echo "npm-deps: $want could not be installed or run (node $(node --version 2>/dev/null);" \
		"it wants node ${engines:-of any version}): the tests that need it skip" >&2
fi
exit 0
