#!/usr/bin/env bash
# The demo of "make run": an operator shell with a fake key of every vendor and the usual cloud
# secrets; the same demo agent runs without and with runnerd, side by side. Values are fake, and
# the agent prints only names, counts and "set".
set -euo pipefail
rd=${1:-build/bin/runnerd}
here=$(cd "$(dirname "$0")" && pwd)
planted=(
	PATH="$PATH" HOME="$HOME" USER="${USER:-dev}" LANG=C.UTF-8 TERM="${TERM:-xterm}"
	ANTHROPIC_API_KEY=sk-ant-demo-not-a-real-key OPENAI_API_KEY=sk-demo GEMINI_API_KEY=demo
	DATABASE_URL=postgres://demo:demo@db/app AWS_SECRET_ACCESS_KEY=demo GITHUB_TOKEN=ghp_demo
)
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "runnerd check"
"$rd" check

say "The demo agent, without runnerd (left) and with runnerd --profile claude (right)"
plain=$(env -i "${planted[@]}" "$here/demo-agent.sh" 2>&1 || true)
under=$(env -i "${planted[@]}" "$rd" --profile claude -- "$here/demo-agent.sh" 2>&1 || true)
pr -m -t -w 110 <(printf '%s\n' "WITHOUT runnerd" "---------------" "$plain") \
	<(printf '%s\n' "WITH runnerd" "------------" "$under")

say "What the Claude agent itself gets (runnerd explain --profile claude --agent)"
env -i "${planted[@]}" "$rd" explain --profile claude --agent
