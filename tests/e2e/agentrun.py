"""What the end-to-end tests of the agent CLIs share: the pinned CLI as npm-agents.sh installed
it, a canary file in the home, one session run and its audit log, and the canaries found in a
text. Each CLI's test (claude.py, codex.py, gemini.py) says what differs: its API's stand-in,
its argv, its environment, and the checks that name its own key and programs."""
import fcntl
import json
import os
import re
import select
import signal
import socket
import statistics
import struct
import subprocess
import termios
import time

import common

import pwd

# The canary file: in the home from the password database, where runnerd's "~/" masks are
# (runner.json masks ~/.aws as a whole), under a name of the tests' own, so that a real
# ~/.aws/credentials is never read, nor one left behind by a killed run ever in the way.
PW_HOME = pwd.getpwuid(os.getuid()).pw_dir
MASKED = ".aws/rd-e2e-canary"
# No command substitution ($(...), backticks): Gemini CLI refuses to run a command with one.
COMMAND = ('echo "== env"; env; echo "== file=["; cat %s 2>&1; echo "]"; '
           'printf MARKER-; expr 6 \\* 7') % os.path.join(PW_HOME, MASKED)
MARKER = "MARKER-42"
PROMPT = "Run the command that prints the environment, then tell me what it printed."
SESSION_TIMEOUT = 60


def base_env():
    """common.base_env, with the node npm-agents.sh pinned ($NPM_AGENTS/node) first on PATH
    when it is there: the CLIs' launchers are #!/usr/bin/env node scripts, and the system's
    node may be older than they need (Debian 12's is 18)."""
    d = os.environ.get("NPM_AGENTS")
    node_bin = os.path.join(os.path.abspath(d), "node", "node_modules", ".bin") if d else ""
    if node_bin and os.access(os.path.join(node_bin, "node"), os.X_OK):
        return common.base_env(path=node_bin + ":" + common.PATH)
    return common.base_env()


def npm_bin(agent, package, name):
    """DIR/agent/node_modules/.bin/name of the pinned package in $NPM_AGENTS, or a loud skip of
    the whole script."""
    d = os.environ.get("NPM_AGENTS")
    if not d:
        common.skip("NPM_AGENTS is not set (make test sets it)")
    node = os.path.join(os.path.abspath(d), "node", "node_modules", ".bin", "node")
    if not os.access(node, os.X_OK):
        common.skip("the pinned node is not installed at %s (tests/e2e/npm-agents.sh installs "
                    "it; npm or the registry was unreachable?)" % node)
    d = os.path.join(os.path.abspath(d), agent)
    try:
        with open(os.path.join(d, ".installed")) as f:
            installed = f.read().strip()
    except OSError:
        installed = None
    if installed != package:
        common.skip("%s is not installed in %s (tests/e2e/npm-agents.sh installs it; npm or the "
                    "registry was unreachable?)" % (package, d))
    path = os.path.join(d, "node_modules", ".bin", name)
    if not os.access(path, os.X_OK):
        common.skip("%s is not executable by uid %d" % (path, os.getuid()))
    return path


class Planted:
    """A canary file at PW_HOME/MASKED holding value (one a killed run left is replaced); the
    directories made for it are removed with it."""

    def __init__(self, value):
        self.path = os.path.join(PW_HOME, MASKED)
        self.made = []
        parent = os.path.dirname(self.path)
        while not os.path.isdir(parent):
            self.made.append(parent)
            parent = os.path.dirname(parent)
        for d in reversed(self.made):
            os.mkdir(d, 0o700)
        with open(self.path, "w") as f:
            f.write("[default]\naws_secret_access_key = %s\n" % value)

    def remove(self):
        os.unlink(self.path)
        for d in self.made:
            os.rmdir(d)


def session_home(tmp):
    """The HOME of the sessions: a directory of the test's, so that the CLIs keep their state
    out of the user's real home (runnerd's "~/" paths are the password database's, not
    HOME)."""
    home = os.path.join(tmp, "home")
    os.makedirs(home, exist_ok=True)
    return home


def kill_group(pgid):
    """What a session left behind in its process group (a plain run's helpers)."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def run_session(argv, env, cwd, tty=False, timeout=SESSION_TIMEOUT):
    """(exit status, stdout, stderr, seconds) of one session, killed after timeout seconds;
    with tty, its stdin, stdout and stderr are a new pseudo-terminal of 120x40, its
    controlling terminal, and what came out of it (escape sequences and carriage returns taken
    out) is the stdout and the stderr. What the session left in its process group is
    killed."""
    start = time.monotonic()
    if not tty:
        p = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
        out, err = common.finish(p, timeout=timeout)
        kill_group(p.pid)
        return p.returncode, out, err, time.monotonic() - start
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    # setsid(1) makes the session and takes the terminal (-c): no preexec_fn, which may
    # deadlock in a child of a process with threads (the stand-in's).
    p = subprocess.Popen(["setsid", "-c"] + list(argv), env=dict(env, TERM="xterm-256color"),
                         cwd=cwd, stdin=slave, stdout=slave, stderr=slave)
    os.close(slave)
    data, deadline, ended = b"", start + timeout, None
    while True:
        now = time.monotonic()
        if ended is None and p.poll() is not None:
            ended = now  # what is still on its way is read for a moment more
        if ended is None and now > deadline:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            ended = now
        if ended is not None and now > ended + 0.5:
            break
        if select.select([master], [], [], 0.1)[0]:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every end of the terminal is closed
                chunk = b""
            if not chunk:
                break
            data += chunk
    if ended is None:
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
    os.close(master)
    text = re.sub(r"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[()][0-9A-B]|"
                  r"\x1b[=>78]|\r", "", data.decode("utf-8", "replace"))
    kill_group(p.pid)
    return p.wait(), text, text, time.monotonic() - start  # one stream: both


def read_audit(path):
    try:
        with open(path) as f:
            return [json.loads(line) for line in f if line.strip()]
    except OSError:
        return []


def leaks(text, canary_env, file_canary):
    """The names of the canaries (canary_env's, and ~/MASKED's value file_canary) found in
    text."""
    values = dict(canary_env)
    values["~/" + MASKED] = file_canary
    return [name for name, v in values.items() if v in text]


def describe_requests(requests):
    paths = {}
    for r in requests:
        key = "%s %s%s" % (r["method"], r["path"], "?" + r["query"] if r["query"] else "")
        paths[key] = paths.get(key, 0) + 1
    return ", ".join("%s x%d" % kv for kv in sorted(paths.items())) or "none"


TIMED_RUNS = 3  # sessions timed with and without runnerd (the first of each is also checked)


def protecting_config(tmp):
    """The shipped configuration, with $NPM_AGENTS protected: a user's agent CLI lies where
    commands cannot write (a global npm install), and runnerd runs an agent program that lies
    in a writable root (a clone under /tmp) as a command. Written into tmp."""
    cfg = common.shipped_config()
    cfg["sandbox"]["protect"] = (cfg["sandbox"].get("protect", []) +
                                 [os.path.abspath(os.environ["NPM_AGENTS"])])
    path = os.path.join(tmp, "runner.json")
    with open(path, "w") as f:
        json.dump(cfg, f)
    return path


def sessions(tmp, cwd, api, argv, profile, session_env, results, tty=False, times=TIMED_RUNS):
    """Each kind of session ("plain", "runnerd": the same argv under runnerd --profile profile,
    with an audit log) times times, alternating: for each, its status, output, time, and what
    the stand-in api recorded (results(api): what the tool returned to the model).
    session_env(n) is the environment of session n; tty: run_session's."""
    runs = {"plain": [], "runnerd": []}
    config = protecting_config(tmp)
    n = 0
    for _ in range(times):
        for kind in ("plain", "runnerd"):
            n += 1
            api.reset()
            env = session_env(n)
            audit = os.path.join(tmp, "audit-%d.jsonl" % n)
            a = (common.runnerd_cmd(profile, argv, config=config, audit=audit)
                 if kind == "runnerd" else argv)
            status, out, err, secs = run_session(a, env, cwd, tty)
            with api.lock:
                rec = {"status": status, "out": out, "err": err, "secs": secs,
                       "requests": list(api.requests), "results": list(results(api)),
                       "unknown": list(api.unknown), "proxied": list(api.proxied),
                       "audit": read_audit(audit)}
            runs[kind].append(rec)
    return runs


def check_control(plain, canary_env, file_canary):
    """Without runnerd, the canaries do reach the command: they are live."""
    check = common.check
    check("plain: the session exits 0", plain["status"] == 0,
          "status %s: %s" % (plain["status"], plain["err"][-2000:]))
    result = "\n".join(plain["results"])
    found = leaks(result, canary_env, file_canary)
    for name in list(canary_env) + ["~/" + MASKED]:
        check("plain: %s reaches the command (the canary is live)" % name, name in found,
              result[-2000:])


def check_command(under, plain, canary_env, file_canary, proxy=True):
    """Under runnerd: the command ran, its result reached the model, and no canary did."""
    check = common.check
    result = "\n".join(under["results"])
    check("runnerd: the tool's result reached the model (the marker)", MARKER in result,
          result[-2000:] or "no tool result recorded")
    check("runnerd: the command's output came back through the CLI", MARKER in under["out"],
          under["out"][-2000:])
    check("runnerd: the command listed its environment", "\nPATH=" in "\n" + result, result)
    # The last one: a CLI may show the command itself before its output (Qwen Code does).
    listed = result.rsplit("== file=[", 1)[-1].split("]", 1)[0] if "== file=[" in result else ""
    check("runnerd: the command read the masked file, and found nothing there",
          "No such file or directory" in listed, result)
    for name, v in canary_env.items():
        check("runnerd: %s does not reach the command" % name, v not in result,
              "in: " + " | ".join(l for l in result.splitlines() if v in l))
    check("runnerd: ~/%s does not reach the command (masked)" % MASKED,
          file_canary not in result,
          "in: " + " | ".join(l for l in result.splitlines() if file_canary in l))
    bodies = json.dumps([r["body"] for r in under["requests"]])
    found = leaks(bodies, canary_env, file_canary)
    check("runnerd: no canary in anything the model received", not found, "found: %s" % found)
    if not proxy:
        print("(no proxy catches requests to other hosts for this CLI)")
        return
    check("runnerd: nothing was sent elsewhere (the proxy saw no request)",
          not under["proxied"] and not plain["proxied"],
          "runnerd: %s; plain: %s" % (under["proxied"], plain["proxied"]))


def command_execs(under, key):
    """The audit's execs, and that of the command, checked: allowed, not by the agent's own
    process, key not passed to it. The command is the one exec runnerd traps, not the agent's,
    whose argv holds COMMAND: bash running it, or the agent's own sandbox (bwrap,
    codex-linux-sandbox) around it, inside which nothing is trapped."""
    check = common.check
    execs = [e for e in under["audit"] if e.get("event") == "exec"]
    ran = [e for e in execs if e.get("action") != "agent"
           and any("printf MARKER-" in a for a in e.get("argv", []))]
    check("runnerd: the audit has the command's exec (allowed, not the agent)",
          len(ran) == 1 and ran[0].get("action") == "allow" and not ran[0]["caller_is_agent"],
          json.dumps(execs)[:2000])
    if ran:
        env_names = {x["name"]: x for x in ran[0].get("env", [])}
        check("runnerd: the audit shows %s stripped from the command" % key,
              key in env_names and not env_names[key]["passed"],
              json.dumps(env_names)[:1000])
    return execs


def env_names(run):
    """The names of the variables the command listed (between "== env" and "== file")."""
    text = "\n".join(run["results"])
    listed = text.rsplit("== env", 1)[-1].split("== file", 1)[0]
    return {l.split("=", 1)[0] for l in listed.splitlines()
            if re.match(r"[A-Za-z_][A-Za-z0-9_]*=", l)}


def report(runs, execs):
    """Printed only: the execs trapped per session, the variables the command received without
    runnerd but not with it (docs/profiles.md says why each is stripped), and the wall times;
    and every timed session exits 0."""
    plain, under = env_names(runs["plain"][0]), env_names(runs["runnerd"][0])
    print("variables the command gets without runnerd, not with it: %s" %
          (" ".join(sorted(plain - under)) or "none"))
    print("variables the command gets with runnerd only: %s" %
          (" ".join(sorted(under - plain)) or "none"))
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
    common.check("every timed session exits 0", not bad, "%s" % bad)


def mode_tests(cli, modes, test):
    """The tests of one CLI, one per mode: modes holds (label, mode, own_sandbox), and each
    runs test(tmp, mode). A mode in which the CLI runs its own sandbox (bubblewrap) is not run
    as root, and says so: the kernel lets no command's user namespace map uid 0 (it takes
    CAP_SETFCAP, which a command never has; docs/threat-model.md)."""
    tests = []
    for label, mode, own_sandbox in modes:
        if own_sandbox and os.getuid() == 0:
            print("== %s, %s: not run as root (bubblewrap cannot map uid 0 in a command's "
                  "user namespace)" % (cli, label))
            continue

        def t(tmp, label=label, mode=mode):
            print("== %s, %s" % (cli, label))
            test(tmp, mode)
        t.__name__ = "%s, %s" % (cli, label)
        tests.append(t)
    return tests



# --- a server that one tool call starts in the background and the next one reaches ----------

BG_PROMPT = "Start a web server in the background, then fetch a file from it."
BG_CLIENT = """import sys, time, urllib.request as u
opener = u.build_opener(u.ProxyHandler({}))
for _ in range(100):
    try:
        url = "http://127.0.0.1:%s/bg-served.txt" % sys.argv[1]
        print("served: " + opener.open(url, timeout=2).read().decode().strip())
        break
    except OSError:
        time.sleep(0.1)
else:
    print("served: nothing, the server is unreachable")
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_open(port):
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def kill_servers(port):
    """Any process left serving on port (a server that outlived its session: a failure)."""
    needle = b"http.server\0%d\0" % port
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                if needle in f.read():
                    os.kill(int(pid), signal.SIGKILL)
        except OSError:
            pass


def background_test(tmp, ws, api_class, results, argv, profile, env_of):
    """One session under runnerd whose first tool call starts python3's HTTP server on the
    workspace in the background (its own session, its output to /dev/null, so that the call
    returns at once) and whose second fetches a file through it. Not run without runnerd: there
    the server would outlive the session. Checked: the session exits 0; the second call got the
    file from the server, which lived on in the first command's sandbox after that command had
    returned; the audit has both as sandboxed commands; the sandbox ended with the session
    ("the agent exited"), and the port is closed once runnerd has exited. api_class(commands)
    is the CLI's stand-in, results(api) what the tool returned to the model, env_of(api) the
    session's environment."""
    check = common.check
    port, token = free_port(), "BG-OK-%d-%d" % (os.getpid(), time.monotonic_ns() % 10**6)
    with open(os.path.join(ws, "bg-served.txt"), "w") as f:
        f.write(token + "\n")
    with open(os.path.join(ws, "bg-client.py"), "w") as f:
        f.write(BG_CLIENT)
    commands = ["nohup setsid python3 -m http.server %d --bind 127.0.0.1 >/dev/null 2>&1 & "
                "echo started" % port, "python3 bg-client.py %d" % port]
    api = api_class(commands).start()
    audit_path = os.path.join(tmp, "audit-bg.jsonl")
    try:
        a = common.runnerd_cmd(profile, argv, config=protecting_config(tmp), audit=audit_path)
        status, out, err, secs = run_session(a, env_of(api), ws)
        closed = common.wait_for(lambda: not port_open(port), seconds=5)
        with api.lock:
            got = list(results(api))
    finally:
        api.stop()
        kill_servers(port)
    audit = read_audit(audit_path)
    print("background server session: %.2f s, tool results %s" % (secs, [g[:60] for g in got]))
    check("background: the session exits 0", status == 0,
          "status %s: %s" % (status, (err or out)[-2000:]))
    check("background: the second call got the file from the server the first one started",
          any("served: " + token in g for g in got), "tool results: %r" % got)
    execs = [e for e in audit if e.get("event") == "exec"]
    server = [e for e in execs if e.get("action") == "allow"
              and "http.server" in " ".join(e.get("argv", []))]
    client = [e for e in execs if e.get("action") == "allow"
              and "bg-client.py" in " ".join(e.get("argv", []))]
    check("background: the audit has the server and the client as sandboxed commands",
          len(server) == 1 and len(client) == 1, json.dumps(execs)[:2000])
    ends = [e for e in audit if e.get("event") == "sandbox_end"
            and server and e.get("id") == server[0].get("id")]
    check("background: the server's sandbox lived until the agent exited",
          len(ends) == 1 and ends[0].get("reason") == "the agent exited",
          json.dumps([e for e in audit if e.get("event") in ("exit", "sandbox_end")])[:2000])
    check("background: nothing serves on the port once runnerd has exited", closed, "")
