#!/usr/bin/env python3
"""Gemini CLI end to end: the real CLI from npm, run as its users run it,

    runnerd --profile gemini -- gemini -p PROMPT --approval-mode yolo --skip-trust

against a loopback stand-in of the Gemini API (gemini_api.py). GEMINI_API_KEY is the test's
key (sent as x-goog-api-key), GOOGLE_GEMINI_BASE_URL the stand-in, and GEMINI_CLI_HOME a
directory of the test's (the user's ~/.gemini is not touched) whose .gemini/settings.json
selects the API-key auth: with GOOGLE_GEMINI_BASE_URL set and no auth selected, 0.61.0 picks
its "gateway" auth, which -p refuses ("Invalid auth method selected."). It also turns the usage
statistics off: else the CLI posts them to play.googleapis.com (measured through the stand-in
as the session's HTTPS_PROXY). --approval-mode yolo runs the tool call without asking, and
--skip-trust trusts the workspace (else 0.61.0 falls back to asking: "the current folder is
not trusted").

The stand-in answers the first turn with a run_shell_command call whose command prints its
environment and a canary file at a masked path, and computes a marker (without command
substitution, which the CLI refuses to run); the CLI runs it (bash -c: trapped by runnerd, run
in a sandbox) and sends the result back, which the stand-in records. Its router's side
question before the first turn (a complexity score, as JSON) is answered too. The CLI starts
itself again at once, as node --max-old-space-size=N gemini ARGS (GEMINI_CLI_NO_RELAUNCH is
left unset, as users leave it): that node is the agent under runnerd (profile gemini,
agent.interpreter_options), and the CLI's own git calls are commands.

The agent's environment has canary secrets (AWS_SECRET_ACCESS_KEY, GITHUB_TOKEN, and
GEMINI_API_KEY itself, the agent's own key, which the CLI passes on to its commands) and the
home a canary at ~/.aws/rd-e2e-canary (planted, removed after). Checked: the session ends with 0;
the audit shows the relaunched node as the agent and the command's bash as a command; the
command ran under runnerd (its marker); no canary reached the command (nor the model); the
agent sent its own key; the result reached the model; nothing went elsewhere than the
stand-in. The same session without runnerd is the control: there, the canaries do reach the
command. Printed only: the execs runnerd trapped per session, and the session's wall time with
and without runnerd.

Two more sessions under runnerd: the same one with the CLI's stdio on a terminal of its own,
and one whose first call starts a server in the background that the second one reaches
(agentrun.background_test).

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
from gemini_api import GeminiAPI  # noqa: E402

VERSION = "0.61.0"
PACKAGE = "@google/gemini-cli@" + VERSION
CANARY = "canary-e2e-6e31"
TEST_KEY = "AIzaSy-" + CANARY + "-key"
CANARY_ENV = {"GEMINI_API_KEY": TEST_KEY, "AWS_SECRET_ACCESS_KEY": "aws-" + CANARY,
              "GITHUB_TOKEN": "ghp_" + CANARY + "-gh"}
FILE_CANARY = "file-" + CANARY

SETTINGS = {"security": {"auth": {"selectedType": "gemini-api-key"}},
            "privacy": {"usageStatisticsEnabled": False}}


def session_env(tmp, n, api, home):
    """The environment a user's shell would give the CLI: the stand-in as endpoint and as the
    proxy for everything else; GEMINI_CLI_HOME with the settings; the canaries; scratch files
    in a directory of their own."""
    env = agentrun.base_env()
    scratch = os.path.join(tmp, "tmp-%d" % n)
    cli_home = os.path.join(tmp, "gemini-home-%d" % n)
    os.mkdir(scratch)
    os.makedirs(os.path.join(cli_home, ".gemini"))
    with open(os.path.join(cli_home, ".gemini", "settings.json"), "w") as f:
        json.dump(SETTINGS, f)
    env.update(HOME=home, TMPDIR=scratch, GEMINI_CLI_HOME=cli_home,
               GOOGLE_GEMINI_BASE_URL=api.url,
               HTTPS_PROXY=api.url, HTTP_PROXY=api.url, NO_PROXY="127.0.0.1,localhost")
    env.update(CANARY_ENV)
    return env


def test_gemini(tmp, tty=False):
    gemini = agentrun.npm_bin("gemini", PACKAGE, "gemini")
    home = agentrun.session_home(tmp)
    ws = os.path.join(tmp, "workspace")
    os.mkdir(ws)
    api = GeminiAPI(COMMAND).start()
    planted = agentrun.Planted(FILE_CANARY)
    try:
        argv = [gemini, "-p", PROMPT, "--approval-mode", "yolo", "--skip-trust"]
        runs = agentrun.sessions(tmp, ws, api, argv, "gemini",
                                 lambda n: session_env(tmp, n, api, home),
                                 lambda api: api.function_outputs, tty=tty,
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
    turns = [r for r in under["requests"] if r["path"].endswith(":streamGenerateContent")]
    check("runnerd: the CLI asked the stand-in (two turns at least)", len(turns) >= 2,
          agentrun.describe_requests(under["requests"]))
    keys = {r["headers"].get("x-goog-api-key") for r in under["requests"]}
    check("runnerd: the agent sent its own key (x-goog-api-key)", keys == {TEST_KEY},
          "x-goog-api-key values: %r" % sorted(k[:12] + "..." if k else k for k in keys))
    check("runnerd: no key in a query, no bearer token instead",
          not any("key=" in r["query"] or r["headers"].get("authorization")
                  for r in under["requests"]), agentrun.describe_requests(under["requests"]))
    agentrun.check_command(under, plain, CANARY_ENV, FILE_CANARY)
    execs = agentrun.command_execs(under, "GEMINI_API_KEY")
    # node [--max-old-space-size=N] gemini ARGS: the option only where half the memory is
    # more than node's default heap
    agent = [e for e in execs if gemini in e.get("argv", [])[1:3]
             and all(a.startswith("--max-old-space-size=")
                     for a in e["argv"][1:e["argv"].index(gemini)])]
    check("runnerd: the audit has the CLI's relaunch (node --max-old-space-size=N gemini) as "
          "the agent", len(agent) == 1 and agent[0].get("action") == "agent",
          json.dumps(execs)[:2000])
    starts = [e for e in under["audit"] if e.get("event") == "session_start"]
    check("runnerd: the audit's session is gemini's (node running the CLI)",
          len(starts) == 1 and starts[0].get("profile") == "gemini"
          and starts[0].get("argv", [])[1:2] == [gemini], json.dumps(starts)[:1000])
    agentrun.report(runs, execs)


def test_gemini_terminal(tmp):
    """The session with its stdio on a terminal of its own."""
    test_gemini(tmp, tty=True)


def test_gemini_background(tmp):
    """A server that one run_shell_command call starts in the background, reached by the
    next."""
    gemini = agentrun.npm_bin("gemini", PACKAGE, "gemini")
    home = agentrun.session_home(tmp)
    ws = os.path.join(tmp, "workspace")
    os.mkdir(ws)
    argv = [gemini, "-p", agentrun.BG_PROMPT, "--approval-mode", "yolo", "--skip-trust"]
    agentrun.background_test(tmp, ws, GeminiAPI, lambda api: api.function_outputs, argv,
                             "gemini", lambda api: session_env(tmp, 1, api, home))


def test_gemini_project_env(tmp):
    """Gemini CLI loads the first .env it finds from its working directory up (then one in its
    home) into its environment at its start, never replacing a variable it has. The user keeps
    the endpoint in their own $GEMINI_CLI_HOME/.gemini/.env; a command of one session writes
    the project's .env with GOOGLE_GEMINI_BASE_URL at a listener of its own. The next session
    in that project would send its key there (the build before: it did). runnerd gives the
    agent the guarded names that a file commands can write would set empty (profile gemini,
    agent.env_guard), and says so: the next session sends nothing to the command's listener,
    and goes to Gemini's own endpoint (through its proxy, the stand-in, which refuses it). The
    first session, whose .env file is the user's, takes the endpoint from it."""
    gemini = agentrun.npm_bin("gemini", PACKAGE, "gemini")
    home = agentrun.session_home(tmp)
    ws = os.path.join(tmp, "workspace")
    os.mkdir(ws)
    evil = GeminiAPI("true").start()
    plant = "printf 'GOOGLE_GEMINI_BASE_URL=%s\\n' > .env; echo planted=$?" % evil.url
    api = GeminiAPI(plant).start()
    config = agentrun.protecting_config(tmp)
    runs = []
    try:
        for n in (1, 2):
            api.reset()
            env = session_env(tmp, n, api, home)
            del env["GOOGLE_GEMINI_BASE_URL"]
            with open(os.path.join(env["GEMINI_CLI_HOME"], ".gemini", ".env"), "w") as f:
                f.write("GOOGLE_GEMINI_BASE_URL=%s\n" % api.url)
            argv = common.runnerd_cmd("gemini", [gemini, "-p", PROMPT, "--approval-mode",
                                                 "yolo", "--skip-trust"], config=config,
                                      audit=os.path.join(tmp, "audit-%d.jsonl" % n))
            # The second session's CLI retries an endpoint it cannot reach for a minute;
            # what it sent where is known within seconds.
            status, out, err, _ = agentrun.run_session(argv, env, ws,
                                                       timeout=60 if n == 1 else 20)
            runs.append((status, err, list(api.requests), list(api.function_outputs),
                         list(api.proxied)))
    finally:
        api.stop()
        evil.stop()
    keys = {r["headers"].get("x-goog-api-key") for r in runs[0][2]}
    check("project .env: the first session took the endpoint from the user's .env, with its "
          "key", runs[0][0] == 0 and keys == {TEST_KEY},
          "status %s, %d requests: %s" % (runs[0][0], len(runs[0][2]), runs[0][1][-600:]))
    check("project .env: a command of the first session wrote it",
          any("planted=0" in o for o in runs[0][3]), "results: %r" % runs[0][3][-1:])
    check("project .env: the next session sent nothing to the command's listener",
          not evil.requests, agentrun.describe_requests(evil.requests))
    check("project .env: runnerd named the file and the variable it did not let the agent "
          "take", "/.env sets GOOGLE_GEMINI_BASE_URL, but commands can write it" in runs[1][1],
          runs[1][1][-800:])
    check("project .env: the next session went to Gemini's own endpoint instead",
          any("generativelanguage.googleapis.com" in p for p in runs[1][4]),
          "proxied: %r; status %s" % (runs[1][4], runs[1][0]))


def main():
    common.require_runnerd()
    agentrun.npm_bin("gemini", PACKAGE, "gemini")
    tests = [test_gemini, test_gemini_terminal, test_gemini_background,
             test_gemini_project_env]
    sys.exit(common.run_tests(tests, "rd-e2e-gemini-", enter=False))


if __name__ == "__main__":
    main()
