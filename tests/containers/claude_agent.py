"""Run inside a container by engines.py (test_daemon_claude): the real Claude Code through
runnerd-intercept and the host's runnerd serve, against a loopback stand-in of the Anthropic
Messages API running here, in the container, beside it (the container has no network).

    python3 claude_agent.py E2E_DIR CLAUDE CANARY

E2E_DIR: tests/e2e (read-only), for the stand-in; CLAUDE: the CLI's executable; CANARY: a
string that must not reach the command, in the agent's environment (its own key among them) and
in a file at a masked path. The stand-in answers the first request with a Bash tool call whose
command prints its environment, that file, the name of its pid 1 (runnerd's reaper in a
sandbox) and a marker. Prints one JSON object: the session's
status and output, the tool results the stand-in got, and the API keys the CLI sent."""
import json
import os
import subprocess
import sys
import tempfile

e2e, claude, canary = sys.argv[1:4]
sys.path.insert(0, e2e)
sys.dont_write_bytecode = True
from messages_api import MessagesAPI  # noqa: E402

home = os.environ["HOME"]
aws = os.path.join(home, ".aws")
os.makedirs(aws, exist_ok=True)
with open(os.path.join(aws, "credentials"), "w") as f:
    f.write("file-%s\n" % canary)
command = ('echo "== env"; env; echo "== file=["; cat %s 2>&1; echo "]"; '
           'echo "pid1=$(cat /proc/1/comm)"; printf MARKER-; expr 6 \\* 7') % os.path.join(
               aws, "credentials")
scratch = tempfile.mkdtemp(prefix="claude-")
api = MessagesAPI(command).start()
env = dict(os.environ, ANTHROPIC_BASE_URL=api.url, TMPDIR=scratch,
           CLAUDE_CODE_TMPDIR=scratch, CLAUDE_CONFIG_DIR=os.path.join(scratch, "config"),
           CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_TELEMETRY="1",
           DISABLE_AUTOUPDATER="1", DISABLE_ERROR_REPORTING="1", DISABLE_BUG_COMMAND="1",
           ANTHROPIC_API_KEY="sk-ant-api03-%s-key" % canary,
           AWS_SECRET_ACCESS_KEY="aws-" + canary, GITHUB_TOKEN="ghp_%s-gh" % canary)
try:
    r = subprocess.run(["runnerd-intercept", "--profile", "claude", "--", claude, "-p",
                        "Run the command that prints the environment, then tell me what it "
                        "printed.", "--allowedTools", "Bash"],
                       env=env, capture_output=True, text=True, timeout=120)
    status, out, err = r.returncode, r.stdout, r.stderr
except subprocess.TimeoutExpired as e:
    status, out, err = None, str(e.stdout or ""), str(e.stderr or "")
api.stop()
msgs = [q for q in api.requests if q["path"] == "/v1/messages"]
print(json.dumps({"status": status, "out": out[-3000:], "err": err[-3000:],
                  "results": api.tool_results, "turns": len(msgs),
                  "keys": sorted({q["headers"].get("x-api-key") or "" for q in msgs}),
                  "unknown": api.unknown}))
