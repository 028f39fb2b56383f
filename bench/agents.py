#!/usr/bin/env python3
"""What a real agent session costs under runnerd: the session of each end-to-end test (one tool
call, against the CLI's loopback stand-in, tests/e2e/), run plain and under runnerd with the
same environment, alternating, RUNS times each; the median wall time of each and their ratio.

    bench/agents.py BUILD_DIR [CLI...]      (CLI: claude codex gemini; default all)

Needs BUILD_DIR/bin/runnerd and the pinned CLIs in BUILD_DIR/npm-agents
(tests/e2e/npm-agents.sh installs them); a CLI that is not installed is reported n/a with the
reason. Codex runs in danger-full-access as root (its own sandbox cannot run as root inside
runnerd's: docs/threat-model.md), in its default read-only mode otherwise. RUNS=5.
Nothing here asserts a timing."""
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
E2E = os.path.join(HERE, "..", "tests", "e2e")
sys.path.insert(0, E2E)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree

if len(sys.argv) < 2:
    sys.exit("usage: bench/agents.py BUILD_DIR [CLI...]")
BUILD = os.path.abspath(sys.argv[1])
os.environ["RUNNERD"] = os.path.join(BUILD, "bin", "runnerd")
os.environ.setdefault("NPM_AGENTS", os.path.join(BUILD, "npm-agents"))
RUNS = int(os.environ.get("RUNS", "5"))

import agentrun  # noqa: E402
import claude  # noqa: E402
import codex  # noqa: E402
import gemini  # noqa: E402
from agentrun import PROMPT  # noqa: E402
from gemini_api import GeminiAPI  # noqa: E402
from messages_api import MessagesAPI  # noqa: E402
from responses_api import ResponsesAPI  # noqa: E402

CODEX_MODE = ["-s", "danger-full-access"] if os.getuid() == 0 else []

# name, module, stand-in, argv after the CLI's path, what the tool returned to the model
CLIS = [
    ("claude", claude, MessagesAPI, ["-p", PROMPT, "--allowedTools", "Bash"],
     lambda api: api.tool_results),
    ("codex", codex, ResponsesAPI, ["exec", "--skip-git-repo-check"] + CODEX_MODE + [PROMPT],
     lambda api: api.tool_outputs),
    ("gemini", gemini, GeminiAPI, ["-p", PROMPT, "--approval-mode", "yolo", "--skip-trust"],
     lambda api: api.function_outputs),
]


def installed(name, mod):
    """The CLI's path, or why there is none."""
    d = os.path.join(os.environ["NPM_AGENTS"], name)
    try:
        with open(os.path.join(d, ".installed")) as f:
            if f.read().strip() != mod.PACKAGE:
                return None, "%s is not installed in %s" % (mod.PACKAGE, d)
    except OSError:
        return None, "nothing installed in %s (tests/e2e/npm-agents.sh installs it)" % d
    return os.path.join(d, "node_modules", ".bin", name), None


def bench(name, mod, api_class, args, results):
    path, why = installed(name, mod)
    if not path:
        return "n/a: " + why
    with tempfile.TemporaryDirectory(prefix="runnerd-bench-agent-") as tmp:
        home = agentrun.session_home(tmp)
        ws = os.path.join(tmp, "workspace")
        os.mkdir(ws)
        api = api_class(agentrun.COMMAND).start()
        try:
            runs = agentrun.sessions(tmp, ws, api, [path] + args, name,
                                     lambda n: mod.session_env(tmp, n, api, home), results,
                                     times=RUNS)
        finally:
            api.stop()
    bad = [(k, r) for k in runs for r in runs[k] if r["status"] != 0 or
           agentrun.MARKER not in "\n".join(r["results"])]
    if bad:
        kind, r = bad[0]
        return "failed (%d runs, the first %s): status %s, %s" % (
            len(bad), kind, r["status"], (r["err"] or r["out"])[-300:].replace("\n", " "))
    plain = statistics.median(r["secs"] for r in runs["plain"])
    under = statistics.median(r["secs"] for r in runs["runnerd"])
    return "plain %.3f s, runnerd %.3f s: runnerd/plain = %.2f (goal <= 1.05)" % (
        plain, under, under / plain)


def main():
    want = sys.argv[2:] or [c[0] for c in CLIS]
    print("agent sessions: one tool call each, against the CLI's loopback stand-in; the median "
          "of %d runs each, plain and under runnerd alternating" % RUNS)
    failed = False
    for name, mod, api_class, args, results in CLIS:
        if name not in want:
            continue
        line = bench(name, mod, api_class, args, results)
        failed |= line.startswith("failed")
        print("  %-7s %s" % (name, line), flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
