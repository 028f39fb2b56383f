#!/usr/bin/env bash
# The integration suites again, as an unprivileged user: the laptop case, where runnerd works
# through a user namespace. Run as root (as CI does), it creates the user runnerd-ci if it is
# missing and runs the callers, the security checks and the end-to-end tests as that user, from
# a copy of the build the user can read. Run by anyone else, the whole suite already ran
# unprivileged: skip (77).
# Usage: unprivileged.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
user=runnerd-ci

if [ "$(id -u)" != 0 ]; then
	echo "SKIP: not root: every suite of this run already ran as uid $(id -u)"
	[ "${RUNNERD_MUST_WORK:-0}" = 1 ] && { echo "RUNNERD_MUST_WORK=1: a skip is a failure"; exit 1; }
	exit 77
fi
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3)
if ! id "$user" >/dev/null 2>&1; then
	useradd --create-home --shell /bin/bash "$user"
	echo "created the user $user for this run"
fi
home=$(getent passwd "$user" | cut -d: -f6)

work=$(mktemp -d /tmp/runnerd-unpriv.XXXXXX)
# The user's /run/user/UID, as a login makes it, if there is none (and /run/user too, which a
# container without systemd lacks): masked as a whole, with exceptions (view.py). Removed again
# at the end if this run made them.
run_user=/run/user/$(id -u "$user") made_run_user= made_run_dir=
if [ ! -e /run/user ]; then
	mkdir -m 755 /run/user && made_run_dir=/run/user
fi
if [ -d /run/user ] && [ ! -e "$run_user" ]; then
	mkdir -m 700 "$run_user" && chown "$user:" "$run_user" && made_run_user=$run_user
fi
trap 'rm -rf "$work"; [ -n "$made_run_user" ] && rm -rf "$made_run_user"
	[ -n "$made_run_dir" ] && rmdir "$made_run_dir"; true' EXIT
mkdir -p "$work/build/tests/integration" "$work/src/tests"
cp -a "$build/bin" "$build/etc" "$work/build/"
cp -a "$build/tests/integration/helpers" "$work/build/tests/integration/"
[ -d "$build/npm" ] && cp -a "$build/npm" "$work/build/"
cp -a "$src/tests/integration" "$src/tests/e2e" "$work/src/tests/"
chmod -R a+rX "$work"
chmod 755 "$work"

# The agent CLIs of the end-to-end tests, where they are if the user can run them there (they
# are large), else copied.
agents=$build/npm-agents
clis="claude codex gemini qwen" # npm-agents.sh installs each into $agents/CLI
runnable=1
for cli in $clis; do
	[ -f "$agents/$cli/.installed" ] &&
		! su -s /bin/bash "$user" -c "test -x '$agents/$cli/node_modules/.bin/$cli'" 2>/dev/null &&
		runnable=0
done
if [ "$runnable" = 0 ]; then
	cp -a "$agents" "$work/build/"
	chmod -R a+rX "$work/build/npm-agents"
	agents=$work/build/npm-agents
fi

# The user's runtime directory, as a login would make it: where control sockets go.
mkdir -m 700 "$work/run"
chown "$user" "$work/run"
run() {
	su -s /bin/bash "$user" -c "cd '$work' && env -i PATH=/usr/local/bin:/usr/bin:/bin \
		HOME='$home' LANG=C.UTF-8 RUNNERD='$work/build/bin/runnerd' XDG_RUNTIME_DIR='$work/run' \
		HELPERS='$work/build/tests/integration/helpers' RUNNERD_MUST_WORK=1 $*"
}
echo "== as $user (uid $(id -u "$user")): callers"
run "$py '$work/src/tests/integration/harness.py'" | grep -Ev '^ok ' 
echo "== as $user: security"
run "$py '$work/src/tests/integration/security.py'" | grep -Ev '^ok ' 
echo "== as $user: the command's view of the machine"
run "$py '$work/src/tests/integration/view.py'" | grep -Ev '^ok '
echo "== as $user: approvals"
run "$py '$work/src/tests/integration/ask.py'" | grep -Ev '^ok '
echo "== as $user: sessions, signals and lifetimes"
run "$py '$work/src/tests/integration/lifetime.py'" | grep -Ev '^ok '
echo "== as $user: churn and limits"
run "$py '$work/src/tests/integration/robustness.py'" | grep -Ev '^ok '
echo "== as $user: container conditions"
run "$py '$work/src/tests/integration/container.py'" | grep -Ev '^ok '
echo "== as $user: terminals"
run "NODE_PTY='$work/build/npm' $py '$work/src/tests/integration/terminal.py'" | grep -Ev '^ok '
for cli in $clis; do
	if [ -f "$agents/$cli/.installed" ]; then
		echo "== as $user: $cli end to end"
		run "NPM_AGENTS='$agents' $py '$work/src/tests/e2e/$cli.py'" | grep -Ev '^ok '
	else
		# npm-agents.sh said why; e2e.$cli skips too.
		echo "SKIP as $user: $cli end to end: nothing installed in $agents/$cli"
		if [ "${RUNNERD_MUST_WORK:-0}" = 1 ]; then
			echo "RUNNERD_MUST_WORK=1: a skip is a failure"
			exit 1
		fi
	fi
done
