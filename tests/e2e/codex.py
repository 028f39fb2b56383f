#!/usr/bin/env python3
"""Codex end to end: the real CLI from npm, run as its users run it,

    runnerd --profile codex -- codex exec --skip-git-repo-check [-s MODE] PROMPT

against a loopback stand-in of the OpenAI Responses API (responses_api.py). CODEX_HOME is a
directory of the test's, whose config.toml points openai_base_url at the stand-in (Codex 0.169.0
ignores OPENAI_BASE_URL) and CODEX_API_KEY is the test's key (sent as a bearer token; with
OPENAI_API_KEY alone, codex exec sends none). The stand-in answers the first turn with an
exec_command call whose command prints its environment and a canary file at a masked path, and
computes a marker; Codex runs the command (its native binary, started by codex.js, is the agent
under runnerd: profile codex, agent.programs; the command it starts, through its own
/proc/self/exe --codex-run-as-process-setup helper, is trapped and sandboxed) and sends the
result back, which the stand-in records. Codex talks to the stand-in as to the real API: over
its websocket transport (after a prewarm), which the stand-in speaks.

config.toml also sets: model "gpt-5.1-codex", a model this version has no metadata for (it warns
and uses its fallback), whose tools include exec_command itself (its default model offers only
a JavaScript "exec" tool that calls the others); analytics off (else it posts to
ab.chatgpt.com); features.plugins off (else it fetches from github.com, api.github.com and
chatgpt.com). Measured through the stand-in as the session's HTTPS_PROXY.

Each session is run in three of Codex's sandbox modes: its default for codex exec (read-only)
and workspace-write, where it wraps each command in bubblewrap (a user namespace of the command's
own, which runnerd's default seccomp profile allows: the exec runnerd traps is bwrap's, and the
command's bash runs inside both sandboxes), and danger-full-access, which leaves the sandboxing
to runnerd. As root the first two are not run: the kernel lets no command's user namespace map
uid 0 (it takes CAP_SETFCAP, which a command never has; docs/threat-model.md), so bubblewrap
fails there, as it does in an unprivileged container. codex exec asks for no approval (its
default policy there is "never").

The agent's environment has canary secrets (AWS_SECRET_ACCESS_KEY, GITHUB_TOKEN, and
CODEX_API_KEY itself, the agent's own key, which Codex passes on to its commands) and the home
a canary at ~/.aws/rd-e2e-canary (planted, removed after). Checked: the session ends with 0; the
audit shows Codex's binary as the agent and the command's bash as a command; the command ran
under runnerd (its marker); no canary reached the command (nor the model); the agent sent its
own key; the result reached the model; nothing went elsewhere than the stand-in. The same
session without runnerd is the control: there, the canaries do reach the command. Printed only:
the execs runnerd trapped per session, and the session's wall time with and without runnerd.

Two more sessions under runnerd, in danger-full-access: the same one with the CLI's stdio on a
terminal of its own, and one whose first call starts a server in the background that the
second one reaches (agentrun.background_test).

Environment: RUNNERD, NPM_AGENTS (where tests/e2e/npm-agents.sh installed the CLI: make test
does), RUNNERD_MUST_WORK. Run as root and, by unprivileged.sh, as an unprivileged user.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import common  # noqa: E402
from common import check  # noqa: E402
import agentrun  # noqa: E402
from agentrun import COMMAND, PROMPT  # noqa: E402
from responses_api import ResponsesAPI  # noqa: E402

VERSION = "0.169.0"
PACKAGE = "@openai/codex@" + VERSION
CANARY = "canary-e2e-c0d3"
TEST_KEY = "sk-proj-" + CANARY + "-key"
CANARY_ENV = {"CODEX_API_KEY": TEST_KEY, "AWS_SECRET_ACCESS_KEY": "aws-" + CANARY,
              "GITHUB_TOKEN": "ghp_" + CANARY + "-gh"}
FILE_CANARY = "file-" + CANARY


CONFIG = """model = "gpt-5.1-codex"
openai_base_url = "%s/v1"

[analytics]
enabled = false

[features]
plugins = false
"""


def session_env(tmp, n, api, home):
    """The environment a user's shell would give the CLI: CODEX_HOME with the config that
    points it at the stand-in; the stand-in as the proxy for everything else; the canaries;
    scratch files in a directory of their own (not holding CODEX_HOME: Codex refuses to put
    its helper links under the temporary directory)."""
    env = agentrun.base_env()
    scratch = os.path.join(tmp, "tmp-%d" % n)
    codex_home = os.path.join(tmp, "codex-home-%d" % n)
    os.mkdir(scratch)
    os.mkdir(codex_home)
    with open(os.path.join(codex_home, "config.toml"), "w") as f:
        f.write(CONFIG % api.url)
    env.update(HOME=home, TMPDIR=scratch, CODEX_HOME=codex_home,
               HTTPS_PROXY=api.url, HTTP_PROXY=api.url, NO_PROXY="127.0.0.1,localhost")
    env.update(CANARY_ENV)
    return env


# Codex's sandbox modes, as given to codex exec (the first is its default), and whether it
# runs its own sandbox in them.
MODES = [("sandbox read-only", [], True),
         ("sandbox workspace-write", ["-s", "workspace-write"], True),
         ("sandbox danger-full-access", ["-s", "danger-full-access"], False)]


def test_codex(tmp, mode, tty=False):
    codex = agentrun.npm_bin("codex", PACKAGE, "codex")
    home = agentrun.session_home(tmp)
    ws = os.path.join(tmp, "workspace")
    os.mkdir(ws)
    api = ResponsesAPI(COMMAND).start()
    planted = agentrun.Planted(FILE_CANARY)
    try:
        argv = [codex, "exec", "--skip-git-repo-check"] + mode + [PROMPT]
        runs = agentrun.sessions(tmp, ws, api, argv, "codex",
                                 lambda n: session_env(tmp, n, api, home),
                                 lambda api: api.tool_outputs, tty=tty,
                                 times=1 if tty else agentrun.TIMED_RUNS)
    finally:
        planted.remove()
        api.stop()

    plain, under = runs["plain"][0], runs["runnerd"][0]
    print("the CLI's requests (runnerd session): " +
          agentrun.describe_requests(under["requests"]))
    print("unknown endpoints: %s" % (under["unknown"] + plain["unknown"] or "none"))
    agentrun.check_control(plain, CANARY_ENV, FILE_CANARY)
    check("runnerd: the session exits 0", under["status"] == 0,
          "status %s: %s" % (under["status"], under["err"][-2000:]))
    turns = [r for r in under["requests"] if r["path"] == "/v1/responses"
             and r["method"] in ("POST", "WS") and isinstance(r["body"], dict)
             and r["body"].get("generate") is not False]
    check("runnerd: the CLI asked the stand-in (two turns at least)", len(turns) >= 2,
          agentrun.describe_requests(under["requests"]))
    auths = {r["headers"].get("authorization") for r in under["requests"]}
    check("runnerd: the agent sent its own key (Authorization: Bearer)",
          auths == {"Bearer " + TEST_KEY},
          "authorization values: %r" % sorted(a[:16] + "..." if a else a for a in auths))
    agentrun.check_command(under, plain, CANARY_ENV, FILE_CANARY)
    execs = agentrun.command_execs(under, "CODEX_API_KEY")
    native = os.path.join("vendor", "x86_64-unknown-linux-musl", "bin", "codex")
    agent = [e for e in execs if (e.get("resolved") or "").endswith(native)
             and e.get("argv", [""])[1:2] == ["exec"]]
    check("runnerd: the audit has Codex's binary, started by codex.js, as the agent",
          len(agent) == 1 and agent[0].get("action") == "agent", json.dumps(execs)[:2000])
    starts = [e for e in under["audit"] if e.get("event") == "session_start"]
    check("runnerd: the audit's session is codex's (node running codex.js)",
          len(starts) == 1 and starts[0].get("profile") == "codex"
          and starts[0].get("argv", [])[1:2] == [codex], json.dumps(starts)[:1000])
    agentrun.report(runs, execs)


def test_codex_terminal(tmp):
    """The session with its stdio on a terminal of its own, danger-full-access (the one mode
    that runs as root too)."""
    test_codex(tmp, ["-s", "danger-full-access"], tty=True)


def test_codex_background(tmp):
    """A server that one exec_command call starts in the background, reached by the next; in
    danger-full-access, since Codex's own sandbox keeps its commands off the network."""
    codex = agentrun.npm_bin("codex", PACKAGE, "codex")
    home = agentrun.session_home(tmp)
    ws = os.path.join(tmp, "workspace")
    os.mkdir(ws)
    argv = [codex, "exec", "--skip-git-repo-check", "-s", "danger-full-access",
            agentrun.BG_PROMPT]
    agentrun.background_test(tmp, ws, ResponsesAPI, lambda api: api.tool_outputs, argv,
                             "codex", lambda api: session_env(tmp, 1, api, home))


def main():
    common.require_runnerd()
    agentrun.npm_bin("codex", PACKAGE, "codex")
    tests = agentrun.mode_tests("codex exec", MODES, test_codex)
    tests += [test_codex_terminal, test_codex_background]
    sys.exit(common.run_tests(tests, "rd-e2e-codex-", enter=False))


if __name__ == "__main__":
    main()
