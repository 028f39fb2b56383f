"""What the integration scripts (harness.py, security.py, ask.py, cpython_subprocess.py) share:
the runnerd binary and its command line, the environment they start it with, checks and their
count, skipping, the agent programs under helpers/agents, waiting for files and processes.

Imported from the scripts' own directory (sys.path[0] when run as python3 .../X.py).
Python 3 standard library only.
"""
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
# The agent programs the scripts run (under runnerd, or as commands an agent runs).
AGENTS = os.path.join(HERE, "helpers", "agents")
# The integration config: a copy of the shipped one with the test profiles.
ITEST_CONFIG = os.path.join(HERE, "config", "runner.json")
SKIP_EXIT = 77
MUST_WORK = os.environ.get("RUNNERD_MUST_WORK", "0") == "1"
PATH = "/usr/local/bin:/usr/bin:/bin"
# The Python that runs agents where the script does not say otherwise: the system's.
PY = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable


def _find_runnerd():
    """$RUNNERD as an absolute path (a bare name is looked up in PATH): the scripts run it
    from other directories."""
    path = os.environ.get("RUNNERD")
    if path and "/" not in path:
        path = shutil.which(path) or path
    return os.path.abspath(path) if path else None


RUNNERD = _find_runnerd()


def runnerd_missing():
    """Why RUNNERD cannot be run, or None."""
    if not RUNNERD:
        return "RUNNERD is not set"
    if not (os.path.isfile(RUNNERD) and os.access(RUNNERD, os.X_OK)):
        return "RUNNERD=%s is not an executable file" % RUNNERD
    return None


def skip(why):
    """Ends the script as skipped (77), or failed under RUNNERD_MUST_WORK=1."""
    print("SKIP: " + why)
    sys.exit(1 if MUST_WORK else SKIP_EXIT)


def require_runnerd():
    why = runnerd_missing()
    if why:
        skip(why)


def agent(name):
    """The path of an agent program under helpers/agents."""
    return os.path.join(AGENTS, name)


def itest_config(var="RUNNERD_CONFIG"):
    """The config named by $var, else the integration config."""
    return os.path.abspath(os.environ.get(var) or ITEST_CONFIG)


def pinned_copy(tmp, prog="cat"):
    """A copy of prog in a directory of tmp's own (for a profile to protect), and its sha256,
    for a rule that grants a secret to it pinned by its hash: (directory, path, sha256)."""
    own = os.path.join(tmp, "own")
    os.makedirs(own, exist_ok=True)
    os.chmod(own, 0o755)
    path = os.path.join(own, "rd" + prog)
    shutil.copy(os.path.realpath(shutil.which(prog)), path)
    with open(path, "rb") as f:
        return own, path, hashlib.sha256(f.read()).hexdigest()


def open_to_all(top, files=0o666):
    """Every directory under top (and top) 0777, every file files: a tree the test made as
    root that the unprivileged run's agent, and its commands, must write too. Symlinks are
    left as they are (chmod would change what they lead to)."""
    for root, dirs, names in os.walk(top):
        for n in dirs + names:
            p = os.path.join(root, n)
            if not os.path.islink(p):
                os.chmod(p, 0o777 if n in dirs else files)
    os.chmod(top, 0o777)


def apart(cmd, tmp, logged_out=False):
    """cmd (runnerd's command line) in a pid namespace of its own, as in a container or an
    orchestrator's sandbox: the argv to run, or None without unshare (util-linux). As root,
    runnerd's pid there is one no process has here (the namespace's next pid set near
    pid_max), so that it names no process here either; not root, in a user namespace of its
    own too (mapped to the user), running a copy of runnerd's install that is the user's (root's
    files are nobody's there, and runnerd takes its helpers only from root or the user), and
    with logged_out, with no /run/user/UID (as under su or cron before the user logs in: an
    empty /run/user in a mount namespace of its own, its capabilities there dropped before
    runnerd starts)."""
    unshare = shutil.which("unshare")
    if not unshare:
        return None
    ns = [unshare, "--pid", "--fork", "--mount-proc"]
    cmd = list(cmd)
    if os.geteuid() != 0:
        ns[1:1] = ["--user", "--map-current-user"]
        install = os.path.join(tmp, "apart-install")
        if not os.path.isdir(install):
            top = os.path.dirname(os.path.dirname(os.path.realpath(RUNNERD)))
            for d in ("bin", "etc"):
                shutil.copytree(os.path.join(top, d), os.path.join(install, d), symlinks=True)
        cmd[0] = os.path.join(install, "bin", os.path.basename(RUNNERD))
        if logged_out:
            ns[1:1] = ["--keep-caps"]
            cmd = ["sh", "-c", "mount -t tmpfs -o mode=755 none /run/user && exec setpriv "
                   '--inh-caps=-all --ambient-caps=-all -- "$@"', "sh"] + cmd
        return ns + cmd
    pid_max = int(open("/proc/sys/kernel/pid_max").read())
    last = next(n for n in range(pid_max - 2, 300, -1) if not os.path.exists("/proc/%d" % (n + 1)))
    return ns + ["sh", "-c", 'echo %d > /proc/sys/kernel/ns_last_pid && "$@"; exit $?' % last,
                 "sh"] + cmd


def runnerd_cmd(profile, argv, config=None, audit=None, options=()):
    """runnerd's command line running argv (a list) under profile (a name or a file), with
    config (default: $RUNNERD_CONFIG, and without it none: runnerd's own default, the shipped
    config next to the binary), an audit log, and more options before the "--"."""
    if config is None:
        config = os.environ.get("RUNNERD_CONFIG")
    cmd = [RUNNERD]
    if config:
        cmd += ["--config", os.path.abspath(config)]
    cmd += ["--profile", profile]
    if audit:
        cmd += ["--audit", audit]
    return cmd + list(options) + ["--"] + list(argv)


def shipped_config():
    """The configuration installed next to runnerd (etc/runnerd/runner.json), as a dict, its
    profiles_dir made absolute: for a test that writes a variant of it elsewhere."""
    shipped = os.path.join(os.path.dirname(os.path.realpath(RUNNERD)), "..", "etc", "runnerd",
                           "runner.json")
    with open(shipped) as f:
        cfg = json.load(f)
    cfg["profiles_dir"] = os.path.join(os.path.dirname(os.path.abspath(shipped)),
                                       cfg["profiles_dir"])
    return cfg


def base_env(path=PATH, runtime_dir=True):
    """The environment runnerd or a plain run starts with: PATH, HOME, LANG, and with
    runtime_dir XDG_RUNTIME_DIR where it is set (where a control socket goes)."""
    env = {"PATH": path, "HOME": os.environ.get("HOME") or "/root", "LANG": "C.UTF-8"}
    if runtime_dir and "XDG_RUNTIME_DIR" in os.environ:
        env["XDG_RUNTIME_DIR"] = os.environ["XDG_RUNTIME_DIR"]
    return env


def write_profile(tmp, name, commands, agent_env_allow=()):
    """Writes the profile tmp/NAME.json with the names the agent is passed and the commands
    section; returns its path."""
    path = os.path.join(tmp, name + ".json")
    with open(path, "w") as f:
        json.dump({"version": 1, "name": name, "agent": {"env_allow": list(agent_env_allow)},
                   "commands": commands}, f)
    return path


def control_dir():
    """Where runnerd puts the control sockets of the sessions of this user."""
    if os.geteuid() == 0:
        return "/run/runnerd"
    return os.path.join(os.environ["XDG_RUNTIME_DIR"], "runnerd")


def sessions_dir():
    """Where runnerd lists the sessions of this user (supervisor/sessions.h): whatever
    XDG_RUNTIME_DIR says."""
    uid = os.geteuid()
    if uid == 0:
        return "/run/runnerd/sessions"
    run_user = "/run/user/%d" % uid
    st = os.lstat(run_user) if os.path.isdir(run_user) else None
    if st and st.st_uid == uid and not os.path.islink(run_user):
        return os.path.join(run_user, "runnerd", "sessions")
    return "/tmp/runnerd-%d/sessions" % uid


# --- checks ---------------------------------------------------------------------------------

results = []


def check(name, ok, detail=""):
    ok = bool(ok)  # a falsy detail ([], None) is a failure too, and counted as one
    results.append(ok)
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else ": " + detail))


def summary(passed, failed, skipped=0):
    """Prints the last line, "N passed, M failed[, K skipped]", and returns the exit status:
    1 if any failed, 77 if some were skipped and none passed, else 0."""
    line = "%d passed, %d failed" % (passed, failed)
    if skipped:
        line += ", %d skipped" % skipped
    print(line)
    if failed:
        return 1
    if skipped and not passed:
        return SKIP_EXIT
    return 0


skipped_parts = []


def skip_part(why):
    """One part of a script could not run here (what it needs is missing): said at the end,
    loudly, and a failure under RUNNERD_MUST_WORK=1."""
    skipped_parts.append(why)


def run_tests(tests, prefix, enter=False):
    """Runs each test(tmp) in a fresh temporary directory (with enter: made 0755 and the
    working directory while the test runs); a test that raises is a failed check, never a
    pass. Returns the exit status, after the summary of the checks and the parts skipped."""
    for t in tests:
        # Past the clock tick in which the test before ended its last session: a file made in
        # it can be stamped (with the tick's coarse time) before that session's end, which
        # runnerd reads from the fine clock, and would count as written by its commands
        # (supervisor/sessions.c), refusing this test's grants there.
        time.sleep(0.03)
        with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
            cwd = os.getcwd()
            if enter:
                os.chmod(tmp, 0o755)
                os.chdir(tmp)
            try:
                t(tmp)
            except Exception as e:
                traceback.print_exc()
                check(t.__name__, False, "%s: %s" % (type(e).__name__, e))
            finally:
                os.chdir(cwd)
    status = summary(results.count(True), results.count(False))
    for why in skipped_parts:
        print("SKIP " + why)
    if skipped_parts and MUST_WORK:
        print("RUNNERD_MUST_WORK=1: a skip is a failure")
        return 1
    return status


def finish(p, mark=None, timeout=60):
    """The output (out, err) of an agent p started in a session of its own, once it has ended:
    first the file mark made, if given (what the agent waits for to end); an agent not done
    within timeout seconds is killed with its whole session."""
    if mark:
        open(mark, "w").close()
    try:
        return p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        return p.communicate()


def agent_json(label, stdout, stderr=""):
    """The JSON an agent printed, or None after a failed check named label."""
    try:
        return json.loads(stdout)
    except ValueError:
        check(label, False, stdout + stderr)
        return None


# --- waiting --------------------------------------------------------------------------------

def wait_for(pred, seconds=15, step=0.05):
    """pred()'s first true value within seconds, or None."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return None


def wait_file(path, seconds=10):
    return wait_for(lambda: os.path.exists(path), seconds, 0.01) is not None


def _running(needle):
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                if needle in f.read():
                    return True
        except OSError:
            pass
    return False


def gone_within(pattern, seconds):
    """True once no process's command line contains pattern as a whole argument's end (the
    NUL after it: "sleep 9874.12" is not "sleep 9874.123" of a concurrent run)."""
    needle = (pattern + "\x00").encode()
    return wait_for(lambda: not _running(needle), seconds, 0.02) is not None


# --- processes ------------------------------------------------------------------------------

def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def alive(pid):
    """Running, not a zombie (whoever adopted it may be slow to reap it)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def comm(pid):
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip()
    except OSError:
        return ""


def unified_diff(a, b, a_name, b_name):
    """The lines of a unified diff of two lists of lines, with two lines of context."""
    import difflib
    return list(difflib.unified_diff(a, b, a_name, b_name, lineterm="", n=2))


def running(pattern):
    """Is a process running whose command line has pattern as a whole argument's end?"""
    return _running((pattern + "\x00").encode())

