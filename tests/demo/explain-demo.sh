#!/usr/bin/env bash
# The demo of "make run": an operator shell holding a fake key of every vendor and the usual
# cloud secrets, and what runnerd's policy gives the Claude agent and a command it runs.
# The values are fake; runnerd prints names only, never a value.
set -euo pipefail
rd=${1:-build/bin/runnerd}

planted=(
	PATH="$PATH" HOME="$HOME" USER="${USER:-dev}" LANG=C.UTF-8 TERM="${TERM:-xterm}"
	ANTHROPIC_API_KEY=sk-ant-demo-not-a-real-key ANTHROPIC_BASE_URL=https://api.anthropic.com
	OPENAI_API_KEY=sk-demo GEMINI_API_KEY=demo PERPLEXITY_API_KEY=pplx-demo XAI_API_KEY=xai-demo
	DATABASE_URL=postgres://demo:demo@db/app AWS_SECRET_ACCESS_KEY=demo GITHUB_TOKEN=ghp_demo
	BASH_ENV=/tmp/not-there.sh JRUN_ID=demo-run
)

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "runnerd check: the shipped runner.json and every profile"
"$rd" check

say "The operator's shell holds these names (fake values):"
printf '  %s\n' "${planted[@]%%=*}"

say "runnerd explain --profile claude --agent: what the Claude agent itself gets"
env -i "${planted[@]}" "$rd" explain --profile claude --agent

say "runnerd explain --profile claude -- sh -c env: what a command the agent runs gets"
env -i "${planted[@]}" "$rd" explain --profile claude -- sh -c env
