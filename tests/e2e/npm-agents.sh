#!/usr/bin/env bash
# The agent CLIs the end-to-end tests run, from npm, pinned, each installed once into a
# directory of its own under DIR (its own .installed marker):
#   npm-agents.sh DIR        DIR/claude: Claude Code, DIR/codex: Codex, DIR/gemini: Gemini CLI,
#                            DIR/qwen: Qwen Code
# Claude Code's package is a launcher whose postinstall links bin/claude.exe to the native
# program of its platform package (an optionalDependency); Codex's launcher, codex.js, starts
# the native program of its own (@openai/codex-linux-x64); Gemini CLI and Qwen Code (0.15.10,
# the last for node 20) are bundled JavaScript.
# Each install counts once CLI --version runs. First, DIR/node: the node they run on, pinned
# too (npm's "node" package, a node binary from the registry): Debian 12's own is 18, older
# than Gemini CLI's and Qwen Code's minimum of 20, and the launchers are #!/usr/bin/env node.
# The tests put DIR/node/node_modules/.bin first on PATH (tests/e2e/agentrun.py).
set -uo pipefail
deps=$(dirname "$0")/../integration/npm-deps.sh
"$deps" "$1/node" "node@20.20.2" node
# npm's node package fetches the binary by a version range of its installer: the binary itself
# is pinned here, by the sha256 it had when this version was chosen.
node_sha256=6295488653f0d93b0a157841746fef7e72cc4328cfb60c4bbe0ca2668a836ffd
nb=$1/node/node_modules/node/bin/node
if [ -e "$nb" ] && [ "$(sha256sum "$nb" | cut -d' ' -f1)" != "$node_sha256" ]; then
	echo "npm-agents: $nb is not the pinned node 20.20.2 (sha256 $node_sha256): removed;" \
		"the end-to-end tests skip" >&2
	rm -rf "$1/node"
fi
if [ -x "$1/node/node_modules/.bin/node" ]; then
	PATH=$(cd "$1/node/node_modules/.bin" && pwd):$PATH
	export PATH
fi
"$deps" "$1/claude" "@anthropic-ai/claude-code@2.1.331" claude
"$deps" "$1/codex" "@openai/codex@0.169.0" codex
"$deps" "$1/gemini" "@google/gemini-cli@0.61.0" gemini
"$deps" "$1/qwen" "@qwen-code/qwen-code@0.15.10" qwen
