#!/usr/bin/env python3
"""Codex end to end: the real CLI from npm, run as its users run it,

    runnerd --profile codex -- codex exec --skip-git-repo-check -s danger-full-access PROMPT

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

Not covered: Codex's own sandbox (the default, -s workspace-write or read-only). It wraps each
command in bubblewrap, which needs a new user namespace, and runnerd's seccomp profile for
commands refuses that (unshare/clone with CLONE_NEWUSER), so under runnerd the command would
fail; -s danger-full-access leaves the sandboxing to runnerd. codex exec asks for no approval
(its default policy there is "never").

The agent's environment has canary secrets (AWS_SECRET_ACCESS_KEY, GITHUB_TOKEN, and
CODEX_API_KEY itself, the agent's own key, which Codex passes on to its commands) and the home
a canary at ~/.aws/credentials (planted, removed after). Checked: the session ends with 0; the
audit shows Codex's binary as the agent and the command's bash as a command; the command ran
under runnerd (its marker); no canary reached the command (nor the model); the agent sent its
own key; the result reached the model; nothing went elsewhere than the stand-in. The same
session without runnerd is the control: there, the canaries do reach the command. Printed only:
the execs runnerd trapped per session, and the session's wall time with and without runnerd.

Environment: RUNNERD, NPM_AGENTS (where tests/e2e/npm-agents.sh installed the CLI: make test
does), RUNNERD_MUST_WORK. Run as root and, by unprivileged.sh, as an unprivileged user.
"""
import json
import os
import pwd
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import common  # noqa: E402
from common import check, runnerd_cmd  # noqa: E402
from responses_api import ResponsesAPI  # noqa: E402

VERSION = "0.169.0"
PACKAGE = "@openai/codex@" + VERSION
CANARY = "canary-e2e-c0d3"
TEST_KEY = "sk-proj-" + CANARY + "-key"
CANARY_ENV = {"CODEX_API_KEY": TEST_KEY, "AWS_SECRET_ACCESS_KEY": "aws-" + CANARY,
              "GITHUB_TOKEN": "ghp_" + CANARY + "-gh"}
FILE_CANARY = "file-" + CANARY
MASKED = ".aws/credentials"  # under the home; runner.json masks ~/.aws
MARKER = "MARKER-42"
COMMAND = ('echo "== env"; env; echo "== file=[$(cat ~/%s 2>&1)]"; echo MARKER-$((6*7))'
           % MASKED)
PROMPT = "Run the command that prints the environment, then tell me what it printed."
# Sessions timed with and without runnerd (the first of each is also checked).
TIMED_RUNS = 3
SESSION_TIMEOUT = 60


CONFIG = """model = "gpt-5.1-codex"
openai_base_url = "%s/v1"

[analytics]
enabled = false

[features]
plugins = false
"""


def codex_bin():
    """The pinned CLI, or None after a loud skip of the whole script."""
    d = os.environ.get("NPM_AGENTS")
    if not d:
        common.skip("NPM_AGENTS is not set (make test sets it)")
    d = os.path.join(os.path.abspath(d), "codex")
    try:
        with open(os.path.join(d, ".installed")) as f:
            installed = f.read().strip()
    except OSError:
        installed = None
    if installed != PACKAGE:
        common.skip("%s is not installed in %s (tests/e2e/npm-agents.sh installs it; npm or the "
                    "registry was unreachable?)" % (PACKAGE, d))
    path = os.path.join(d, "node_modules", ".bin", "codex")
    if not os.access(path, os.X_OK):
        common.skip("%s is not executable by uid %d" % (path, os.getuid()))
    return path


class Planted:
    """A canary file at HOME/rel; the directories made for it are removed with it. A path
    that exists already is left alone: then the file canary is not part of the test."""

    def __init__(self, home, rel):
        self.path = os.path.join(home, rel)
        self.made = []
        self.planted = False
        if os.path.lexists(self.path):
            return
        parent = os.path.dirname(self.path)
        while not os.path.isdir(parent):
            self.made.append(parent)
            parent = os.path.dirname(parent)
        for d in reversed(self.made):
            os.mkdir(d, 0o700)
        with open(self.path, "w") as f:
            f.write("[default]\naws_secret_access_key = %s\n" % FILE_CANARY)
        self.planted = True

    def remove(self):
        if self.planted:
            os.unlink(self.path)
        for d in self.made:
            os.rmdir(d)


def session_env(tmp, n, api, home):
    """The environment a user's shell would give the CLI: CODEX_HOME with the config that
    points it at the stand-in; the stand-in as the proxy for everything else; the canaries;
    scratch files in a directory of their own (not holding CODEX_HOME: Codex refuses to put
    its helper links under the temporary directory)."""
    env = common.base_env()
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


def run_session(argv, env, cwd):
    """(exit status, stdout, stderr, seconds) of one session."""
    start = time.monotonic()
    p = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    out, err = common.finish(p, timeout=SESSION_TIMEOUT)
    return p.returncode, out, err, time.monotonic() - start


def read_audit(path):
    try:
        with open(path) as f:
            return [json.loads(line) for line in f if line.strip()]
    except OSError:
        return []


def leaks(text, file_canary):
    """The canaries found in text."""
    values = dict(CANARY_ENV)
    if file_canary:
        values["~/" + MASKED] = FILE_CANARY
    return [name for name, v in values.items() if v in text]


def test_codex(tmp):
    codex = codex_bin()
    home = pwd.getpwuid(os.getuid()).pw_dir
    ws = os.path.join(tmp, "workspace")
    os.mkdir(ws)
    api = ResponsesAPI(COMMAND).start()
    planted = Planted(home, MASKED)
    if not planted.planted:
        common.skip_part("~/%s exists already: the file canary is left out" % MASKED)
    try:
        runs = {"plain": [], "runnerd": []}
        n = 0
        for i in range(TIMED_RUNS):
            for kind in ("plain", "runnerd"):
                n += 1
                api.reset()
                env = session_env(tmp, n, api, home)
                audit = os.path.join(tmp, "audit-%d.jsonl" % n)
                argv = [codex, "exec", "--skip-git-repo-check", "-s", "danger-full-access",
                        PROMPT]
                if kind == "runnerd":
                    argv = runnerd_cmd("codex", argv, audit=audit)
                status, out, err, secs = run_session(argv, env, ws)
                with api.lock:
                    rec = {"status": status, "out": out, "err": err, "secs": secs,
                           "requests": list(api.requests), "results": list(api.tool_outputs),
                           "unknown": list(api.unknown), "proxied": list(api.proxied),
                           "audit": read_audit(audit)}
                runs[kind].append(rec)
    finally:
        planted.remove()
        api.stop()

    plain, under = runs["plain"][0], runs["runnerd"][0]
    print("the CLI's requests (runnerd session): " + describe_requests_of(under["requests"]))
    print("unknown endpoints: %s" % (under["unknown"] + plain["unknown"] or "none"))

    # The control: without runnerd, the canaries do reach the command.
    check("plain: the session exits 0", plain["status"] == 0,
          "status %s: %s" % (plain["status"], plain["err"][-2000:]))
    plain_result = "\n".join(plain["results"])
    found = leaks(plain_result, planted.planted)
    for name in list(CANARY_ENV) + (["~/" + MASKED] if planted.planted else []):
        check("plain: %s reaches the command (the canary is live)" % name, name in found,
              plain_result[-2000:])

    # Under runnerd.
    check("runnerd: the session exits 0", under["status"] == 0,
          "status %s: %s" % (under["status"], under["err"][-2000:]))
    turns = [r for r in under["requests"] if r["path"] == "/v1/responses"
             and r["method"] in ("POST", "WS") and isinstance(r["body"], dict)
             and r["body"].get("generate") is not False]
    check("runnerd: the CLI asked the stand-in (two turns at least)", len(turns) >= 2,
          describe_requests_of(under["requests"]))
    auths = {r["headers"].get("authorization") for r in under["requests"]}
    check("runnerd: the agent sent its own key (Authorization: Bearer)",
          auths == {"Bearer " + TEST_KEY},
          "authorization values: %r" % sorted(a[:16] + "..." if a else a for a in auths))

    result = "\n".join(under["results"])
    check("runnerd: the tool's result reached the model (the marker)", MARKER in result,
          result[-2000:] or "no function_call_output recorded")
    check("runnerd: the command's output came back through the CLI", MARKER in under["out"],
          under["out"][-2000:])
    check("runnerd: the command listed its environment", "\nPATH=" in "\n" + result, result)
    check("runnerd: the command read the masked file", "== file=[" in result, result)
    for name, v in CANARY_ENV.items():
        check("runnerd: %s does not reach the command" % name, v not in result,
              "in: " + " | ".join(l for l in result.splitlines() if v in l))
    if planted.planted:
        check("runnerd: ~/%s does not reach the command (masked)" % MASKED,
              FILE_CANARY not in result,
              "in: " + " | ".join(l for l in result.splitlines() if FILE_CANARY in l))
    bodies = json.dumps([r["body"] for r in under["requests"]])
    check("runnerd: no canary in anything the model received",
          not leaks(bodies, planted.planted), "found: %s" % leaks(bodies, planted.planted))
    check("runnerd: nothing was sent elsewhere (the proxy saw no request)",
          not under["proxied"] and not plain["proxied"],
          "runnerd: %s; plain: %s" % (under["proxied"], plain["proxied"]))

    events = under["audit"]
    execs = [e for e in events if e.get("event") == "exec"]
    native = os.path.join("vendor", "x86_64-unknown-linux-musl", "bin", "codex")
    agent = [e for e in execs if (e.get("resolved") or "").endswith(native)
             and e.get("argv", [""])[1:2] == ["exec"]]
    check("runnerd: the audit has Codex's binary, started by codex.js, as the agent",
          len(agent) == 1 and agent[0].get("action") == "agent", json.dumps(execs)[:2000])
    ran = [e for e in execs if os.path.basename(e.get("resolved") or "") in ("bash", "sh", "dash")
           and any("MARKER-$((6*7))" in a for a in e.get("argv", []))]
    check("runnerd: the audit has the command's exec (bash, allowed, not the agent)",
          len(ran) == 1 and ran[0].get("action") == "allow" and not ran[0]["caller_is_agent"],
          json.dumps(execs)[:2000])
    starts = [e for e in events if e.get("event") == "session_start"]
    check("runnerd: the audit's session is codex's (node running codex.js)",
          len(starts) == 1 and starts[0].get("profile") == "codex"
          and starts[0].get("argv", [])[1:2] == [codex], json.dumps(starts)[:1000])
    if ran:
        env_names = {x["name"]: x for x in ran[0].get("env", [])}
        check("runnerd: the audit shows CODEX_API_KEY stripped from the command",
              "CODEX_API_KEY" not in env_names
              or not env_names["CODEX_API_KEY"]["passed"], json.dumps(env_names)[:1000])

    # Printed only.
    counts = [sum(1 for e in r["audit"] if e.get("event") == "exec") for r in runs["runnerd"]]
    print("execs trapped per session: %s (the first: %s)" % (
        counts, ", ".join("%s %s %s" % (e.get("action"),
                                        os.path.basename(e.get("resolved") or "?"),
                                        " ".join(e.get("argv", [])[1:])[:40].replace("\n", " "))
                          for e in execs)))
    for kind in ("plain", "runnerd"):
        secs = [r["secs"] for r in runs[kind]]
        print("session wall time %-7s median %.2f s (%s)" % (
            kind, statistics.median(secs), ", ".join("%.2f" % s for s in secs)))
    bad = [(k, i) for k in runs for i, r in enumerate(runs[k]) if r["status"] != 0]
    check("every timed session exits 0", not bad, "%s" % bad)


def describe_requests_of(requests):
    paths = {}
    for r in requests:
        key = "%s %s%s" % (r["method"], r["path"], "?" + r["query"] if r["query"] else "")
        paths[key] = paths.get(key, 0) + 1
    return ", ".join("%s x%d" % kv for kv in sorted(paths.items())) or "none"


def main():
    common.require_runnerd()
    codex_bin()
    sys.exit(common.run_tests([test_codex], "rd-e2e-codex-", enter=False))


if __name__ == "__main__":
    main()
