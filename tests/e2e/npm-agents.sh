#!/usr/bin/env bash
# The agent CLIs the end-to-end tests run, from npm, pinned, installed into DIR once:
#   npm-agents.sh DIR
# Claude Code's package is a launcher whose postinstall links bin/claude.exe to the native
# program of its platform package (an optionalDependency): the install counts once
# claude --version runs.
set -uo pipefail
exec "$(dirname "$0")/../integration/npm-deps.sh" "$1" "@anthropic-ai/claude-code@2.1.331" claude
