#!/usr/bin/env bash
# The runnerd CLI as a user runs it: check and explain against the shipped config (found by the
# default search beside the binary) and the invalid fixtures. Usage: test_cli.sh RUNNERD SRC BUILD
set -uo pipefail
rd=$1 src=$2 build=$3
fixtures=$src/tests/fixtures
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
# expect CODE CMD...: runs CMD with stdout/stderr to $tmp/out, $tmp/err; checks the exit code.
expect() {
	local want=$1; shift
	"$@" >"$tmp/out" 2>"$tmp/err"
	local got=$?
	if [ "$got" -eq "$want" ]; then ok; else
		bad "exit $got, want $want: $*"; sed 's/^/  err: /' "$tmp/err" | head -5; fi
}
contains() { if grep -qE -- "$2" "$1"; then ok; else bad "$1 lacks /$2/"; fi; }
lacks() { if grep -qE -- "$2" "$1"; then bad "$1 has /$2/: $(grep -E -- "$2" "$1" | head -2)"; else ok; fi; }

# The operator's shell, with a fake key of every vendor and the usual cloud secrets.
planted=(
	PATH=/usr/bin:/bin HOME=/home/dev USER=dev LANG=C.UTF-8 TERM=xterm
	ANTHROPIC_API_KEY=sk-ant-canary1 ANTHROPIC_BASE_URL=https://a.example
	OPENAI_API_KEY=sk-canary2 GEMINI_API_KEY=canary3 GOOGLE_API_KEY=canary4
	PERPLEXITY_API_KEY=pplx-canary5 XAI_API_KEY=xai-canary6
	DATABASE_URL=postgres://u:canary7@db/x AWS_SECRET_ACCESS_KEY=canary8
	GITHUB_TOKEN=ghp_canary9 NODE_OPTIONS=--require=/tmp/canary10.js JRUN_ID=run-1
	CLAUDE_CODE_CLIENT_KEY_PASSPHRASE=canary11
)

# --help, --version, usage errors
expect 0 "$rd" --help; contains "$tmp/out" '^Usage: runnerd'
expect 0 "$rd" --version; contains "$tmp/out" '^runnerd [0-9]+\.[0-9]+\.[0-9]+$'
expect 2 "$rd"
expect 2 "$rd" frobnicate; contains "$tmp/err" 'unknown command "frobnicate"'
expect 2 "$rd" explain --agent; contains "$tmp/err" 'profile is required'
expect 2 "$rd" explain --profile claude; contains "$tmp/err" 'give --agent or -- CMD'
expect 2 "$rd" explain --profile claude --agent -- ls; contains "$tmp/err" 'not both'

# check: the default search finds build/etc/runnerd/runner.json beside build/bin/runnerd
expect 0 "$rd" -v check
contains "$tmp/out" "^runnerd: $build/etc/runnerd/runner.json OK, 9 profiles OK: aider amp claude codex gemini generic perplexity qwen xai$"
contains "$tmp/err" 'config .*runner.json \(default search\)'
expect 0 "$rd" check --config "$src/runner.json" --profile codex
contains "$tmp/out" 'OK, 1 profile OK: codex$'
expect 1 "$rd" check --config "$tmp/none.json"
contains "$tmp/err" "^runnerd: $tmp/none.json: cannot open: No such file or directory$"
expect 1 "$rd" check --profile nosuch
contains "$tmp/err" '^runnerd: profile "nosuch" not found in .*/profiles: .*nosuch.json: cannot open'

# check: every invalid fixture is refused with exactly its expected message
n=0
for f in "$fixtures"/invalid/*.json; do
	want="$tmp/want"
	sed "s#^FILE#runnerd: $f#" "${f%.json}.expected" >"$want"
	case $(basename "$f") in
	config-*) expect 1 "$rd" check --config "$f" ;;
	*) expect 1 "$rd" check --profile "$f" ;;
	esac
	if diff -u "$want" "$tmp/err" >"$tmp/diff"; then ok; else bad "message for $f"; cat "$tmp/diff"; fi
	n=$((n + 1))
done
[ "$n" -ge 15 ] && ok || bad "only $n invalid fixtures"
# a broken profile in profiles_dir fails "check" of the whole set, naming the file
mkdir -p "$tmp/cfg/profiles"
cp "$src/runner.json" "$tmp/cfg/"
cp "$src/profiles/claude.json" "$tmp/cfg/profiles/"
cp "$fixtures/invalid/unknown-key.json" "$tmp/cfg/profiles/"
expect 1 "$rd" check --config "$tmp/cfg/runner.json"
contains "$tmp/err" "^runnerd: $tmp/cfg/profiles/unknown-key.json:7:5: \"env_alow\" is not a known key"

# explain --agent: the claude agent gets its own names only, and each stripped one says why
expect 0 env -i "${planted[@]}" "$rd" explain --profile claude --agent
contains "$tmp/out" '^passed +ANTHROPIC_API_KEY +profile +ANTHROPIC_API_KEY$'
contains "$tmp/out" '^passed +ANTHROPIC_BASE_URL +profile'
contains "$tmp/out" '^passed +JRUN_ID +internal'
contains "$tmp/out" '^passed +PATH +base +PATH$'
for k in OPENAI_API_KEY GEMINI_API_KEY GOOGLE_API_KEY PERPLEXITY_API_KEY XAI_API_KEY AWS_SECRET_ACCESS_KEY GITHUB_TOKEN; do
	contains "$tmp/out" "^stripped +$k +denied:secret-pattern +[^ ]+$"
done
contains "$tmp/out" '^stripped +DATABASE_URL +denied:secret-pattern +DATABASE_URL$'
contains "$tmp/out" '^stripped +NODE_OPTIONS +denied:hard +NODE_OPTIONS$'
contains "$tmp/out" '^stripped +CLAUDE_CODE_CLIENT_KEY_PASSPHRASE +denied:secret-pattern'
contains "$tmp/out" '^summary: 8 names passed, 10 stripped'
lacks "$tmp/out" 'canary'

# explain -- CMD: a command gets no API key at all, not even the agent's own
expect 0 env -i "${planted[@]}" "$rd" explain --profile claude -- sh -c env
contains "$tmp/out" '^level: command: sh -c env$'
contains "$tmp/out" '^stripped +ANTHROPIC_API_KEY +denied:secret-pattern'
contains "$tmp/out" '^stripped +ANTHROPIC_BASE_URL +not-allowed'
contains "$tmp/out" '^stripped +CLAUDE_CODE_CLIENT_KEY_PASSPHRASE +denied:secret-pattern'
lacks "$tmp/out" '^passed .*(API_KEY|TOKEN|DATABASE_URL|AWS_)'
lacks "$tmp/out" 'canary'

# explain -- CMD shows the rule that matches, and applies its grants
expect 0 env -i "${planted[@]}" "$rd" explain --profile "$fixtures/valid/full.json" -- git push origin main
contains "$tmp/out" '^rule: commands.rules\[0\], path \*/git -> allow$'
contains "$tmp/out" '^passed +GITHUB_TOKEN +rule +GITHUB_TOKEN$'
expect 0 env -i "${planted[@]}" "$rd" explain --profile "$fixtures/valid/full.json" -- git pull
contains "$tmp/out" '^rule: commands.rules\[2\] -> allow$'
contains "$tmp/out" '^stripped +GITHUB_TOKEN +denied:secret-pattern'
expect 0 env -i "${planted[@]}" "$rd" explain --profile claude -- ls
contains "$tmp/out" '^rule: none matches -> allow \(commands.default\)$'
# ... and the sandbox the command would get: the shipped masks under the caller's home
contains "$tmp/out" '^sandbox: network host, seccomp default, timeout none$'
contains "$tmp/out" "^mask: $(getent passwd "$(id -u)" | cut -d: -f6)/.aws$"
expect 0 env -i "${planted[@]}" "$rd" explain --config "$src/tests/integration/config/runner.json" --profile rules -- rm -rf x
contains "$tmp/out" '^rule: commands.rules\[2\], path rm -> ask$'
contains "$tmp/out" '^ask: the caller waits up to 1 s for runnerd approve'
# runnerd approve needs an ID; a malformed one is refused before any socket is touched
expect 2 "$rd" approve; contains "$tmp/err" 'which request'
expect 2 "$rd" deny x-y; contains "$tmp/err" 'is not a request ID'

# --json: machine-readable and the same verdicts; a nameless entry never shows its text
expect 0 env -i "${planted[@]}" "$rd" explain --json --profile codex --agent
python3 - "$tmp/out" <<'PY' && ok || bad "explain --json for codex"
import json, sys
d = json.load(open(sys.argv[1]))
env = {v["name"]: v for v in d["env"]}
assert d["level"] == "agent" and d["profile"] == "codex", d
assert env["OPENAI_API_KEY"]["passed"] and env["OPENAI_API_KEY"]["reason"] == "profile"
for k in ("ANTHROPIC_API_KEY", "GEMINI_API_KEY", "PERPLEXITY_API_KEY", "XAI_API_KEY"):
    assert not env[k]["passed"] and env[k]["reason"] == "denied:secret-pattern", k
assert d["passed"] + d["stripped"] == len(d["env"])
assert "canary" not in open(sys.argv[1]).read()
PY

# a block over max_keys: the command would fail with E2BIG, and explain says which limit
sed 's/"max_keys": 4096/"max_keys": 3/' "$src/runner.json" >"$tmp/cfg/runner.json"
expect 1 env -i "${planted[@]}" "$rd" explain --config "$tmp/cfg/runner.json" --profile claude --agent
contains "$tmp/err" 'environment has 8 variables, over max_keys 3 \(runner.json env\)'
contains "$tmp/err" 'the agent would not start: Argument list too long'

# a stub others could have rewritten is refused before anything runs
mkdir -p "$tmp/inst/bin" "$tmp/inst/etc"
cp "$rd" "$(dirname "$rd")/runnerd-stub" "$tmp/inst/bin/"
cp -r "$build/etc/runnerd" "$tmp/inst/etc/"
chmod o+w "$tmp/inst/bin/runnerd-stub"
expect 125 "$tmp/inst/bin/runnerd" --profile generic -- true
contains "$tmp/err" 'runnerd-stub: must be a regular file owned by root or by you and not writable by others'
chmod o-w "$tmp/inst/bin/runnerd-stub"
expect 0 "$tmp/inst/bin/runnerd" --profile generic -- true

echo "cli: $pass checks passed, $fail failed"
[ "$fail" -eq 0 ]
