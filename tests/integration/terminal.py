#!/usr/bin/env python3
"""Commands on a terminal, on the real kernel: everything a person or a pty-spawning caller does
on a terminal works under runnerd as it does without it.

- an interactive bash in tmux as the agent, driven by keys, plainly and under runnerd: input,
  ^C, ^Z with jobs and fg, a /dev/tty password prompt, less, a window resize; the panes must
  read the same; closing the terminal ends the agent, its command and runnerd;
- callers that start their command on a fresh pseudo-terminal (Python's pty.fork, pexpect,
  node-pty): the command has a terminal, /dev/tty, the foreground, the window size and its
  changes, the input, ^C, and its stdout and stderr in order, as without runnerd;
- a line a command types into its terminal (TIOCSTI) stays there, out of the agent's shell;
- the caller's terminal modes come back when a command dies by a signal and when runnerd is
  killed under it.

Environment: RUNNERD, RUNNERD_MUST_WORK, NODE_PTY (a directory whose node_modules has
node-pty; without it the node-pty caller is skipped, loudly). Prints one line per check and
"N passed, M failed".
"""
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import termios
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import common  # noqa: E402
from common import check, runnerd_cmd  # noqa: E402

RUN = ".%d" % os.getpid()


def env(**more):
    e = common.base_env()
    e["TERM"] = "xterm"
    e.update(more)
    return e


def bash_argv(tmp):
    """An interactive bash whose prompt is "$ ", from an rc file: PS1 itself is not a name
    runnerd passes to the agent."""
    rc = os.path.join(tmp, "bashrc")
    with open(rc, "w") as f:
        # No history file: a shell hung up writes it as it goes, maybe as the test cleans up.
        f.write("PS1='$ '\nunset HISTFILE\n")
    return ["bash", "--noprofile", "--rcfile", rc, "-i"]


# --- tmux ----------------------------------------------------------------------------------

class Tmux:
    """A tmux server of this test's own, one window running argv. Its socket is in a directory
    of its own (-S), not in /tmp/tmux-UID, which security.py makes and removes meanwhile."""

    def __init__(self, argv, environ, width=100, height=30):
        self.dir = tempfile.mkdtemp(prefix="rd-tmux")
        self.base = ["tmux", "-S", os.path.join(self.dir, "sock"), "-f", "/dev/null"]
        cmd = " ".join("'%s'" % a.replace("'", "'\\''") for a in argv)
        envs = " ".join("%s='%s'" % kv for kv in environ.items())
        subprocess.run(self.base + ["new-session", "-d", "-s", "t", "-x", str(width), "-y",
                                    str(height), "env -i %s %s" % (envs, cmd)], check=True)
        subprocess.run(self.base + ["set-option", "-g", "remain-on-exit", "off"])

    def keys(self, *keys):
        subprocess.run(self.base + ["send-keys", "-t", "t"] + list(keys), check=True)

    def pane(self):
        p = subprocess.run(self.base + ["capture-pane", "-p", "-t", "t"], capture_output=True,
                           text=True)
        return p.stdout

    def wait(self, pattern, seconds=15):
        """The pane once pattern (a regex) matches it, or None."""
        return common.wait_for(lambda: re.search(pattern, self.pane(), re.M) and self.pane(),
                               seconds, 0.05)

    def resize(self, w, h):
        subprocess.run(self.base + ["resize-window", "-t", "t", "-x", str(w), "-y", str(h)])

    def kill(self):
        subprocess.run(self.base + ["kill-server"], capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)


def shell_session(argv, tmp):
    """Drives an interactive bash through the everyday sequence; returns the pane's lines, or
    the pane so far and where it stuck."""
    text = os.path.join(tmp, "pages.txt")
    with open(text, "w") as f:
        f.writelines("line %d of the pages\n" % i for i in range(200))
    t = Tmux(argv, env(HOME=tmp))
    steps = [
        # Keys typed before a command reads its terminal are the test's race, not runnerd's
        # (a shell's line editor may take them): the command says when it is there.
        (["sh -c 'echo ready; exec cat'", "Enter"], r"^ready$"),
        (["hello", "Enter"], r"^hello\n^hello"),
        (["C-c"], r"^\^C\n\$ ?$"),
        (["echo status $?", "Enter"], r"^status 130"),
        (["sh -c 'echo sleeping; exec sleep 30'", "Enter"], r"^sleeping$"),
        (["C-z"], r"Stopped +sh -c"),
        (["jobs", "Enter"], r"^\[1\]\+ +Stopped +sh -c 'echo sleeping; exec sleep 30'\n\$ ?$"),
        (["fg", "Enter"], r"^sh -c 'echo sleeping; exec sleep 30'\n"),
        (["C-c"], r"^\^C\n\$ ?$"),
        (["echo after $?", "Enter"], r"^after 130"),
        (["bash -c 'read -s -p \"pw: \" x </dev/tty; echo; echo \"got [$x]\"'", "Enter"],
         r"^pw:"),
        (["secret", "Enter"], r"^got \[secret\]"),
        (["less -X " + text, "Enter"], r"^line 20 of the pages"),
        (["q"], r"^\$ ?$"),
        (["stty size", "Enter"], r"^30 100"),
        (["RESIZE"], None),
        (["stty size", "Enter"], r"^20 80"),
        (["echo done", "Enter"], r"^done\n\$ ?$"),
    ]
    try:
        if not t.wait(r"^\$ ?$"):
            return None, "no prompt: " + t.pane()
        for keys, want in steps:
            if keys == ["RESIZE"]:
                t.resize(80, 20)
                # tmux's own view first: the pane resized before the shell is asked.
                common.wait_for(lambda: "20 80" in subprocess.run(
                    t.base + ["display-message", "-p", "-t", "t", "#{pane_height} #{pane_width}"],
                    capture_output=True, text=True).stdout, 10, 0.05)
                time.sleep(0.1)
                continue
            t.keys(*keys)
            if want and not t.wait(want):
                return None, "stuck after %r: %s" % (keys, t.pane())
        return [l.rstrip() for l in t.pane().rstrip("\n").split("\n")], None
    finally:
        t.kill()


def test_interactive_shell(tmp):
    bash = bash_argv(tmp)
    plain, why = shell_session(bash, tmp)
    if plain is None:
        check("tmux: the sequence runs without runnerd (the test's own check)", False, why)
        return
    under, why = shell_session(runnerd_cmd("generic", bash), tmp)
    check("tmux: an interactive shell under runnerd: input, ^C, ^Z/jobs/fg, a /dev/tty "
          "prompt, less, a resize", under is not None, why or "")
    if under is not None:
        check("tmux: the pane reads as without runnerd", under == plain,
              "\n".join(common.unified_diff(plain, under, "plain", "runnerd")))


def test_hangup(tmp):
    """Closing the terminal (the tmux window) mid-command ends the command, the agent and
    runnerd, as it ends a shell and its job without runnerd."""
    marker = "9871" + RUN
    bash = bash_argv(tmp)
    t = Tmux(runnerd_cmd("generic", bash), env(HOME=tmp))
    try:
        ok = t.wait(r"^\$ ?$")
        t.keys("sleep " + marker, "Enter")
        running = common.wait_for(lambda: common.running("sleep\x00" + marker), 10)
        check("hangup: the command runs", ok and running, t.pane())
    finally:
        t.kill()
    check("hangup: the command is gone once the terminal closes",
          common.gone_within("sleep\x00" + marker, 5), "sleep still running")
    check("hangup: runnerd and the agent are gone too",
          common.gone_within(bash[-2] + "\x00-i", 5), "bash or runnerd still running")


def typed_in(argv, tmp):
    """An interactive shell (argv) runs a command that types a line into its terminal; returns
    the pane once the shell is back, and whether the typed line ran in the shell."""
    t = Tmux(argv, env(HOME=tmp))
    try:
        if not t.wait(r"^\$ ?$"):
            return "no prompt: " + t.pane(), None
        t.keys("%s %s; echo probe ended" % (common.PY, common.agent("tiocsti_type.py")), "Enter")
        if not t.wait(r"^probe ended"):
            return "stuck: " + t.pane(), None
        time.sleep(0.5)
        t.keys("echo last", "Enter")
        pane = t.wait(r"^last\n\$ ?$") or t.pane()
        return pane, re.search(r"^INJECTED$", pane, re.M) is not None
    finally:
        t.kill()


def test_typed_into_terminal(tmp):
    """TIOCSTI from a command (with "seccomp": "none", so that its filter does not refuse the
    ioctl): without runnerd the line lands in the agent's shell and runs there, outside any
    sandbox; under runnerd it lands in the command's own terminal, and ends with it."""
    bash = bash_argv(tmp)
    pane, ran = typed_in(bash, tmp)
    if ran is None:
        check("TIOCSTI: the shell runs the probe without runnerd", False, pane)
        return
    if not ran:
        common.skip_part("TIOCSTI: the kernel refuses it here (dev.tty.legacy_tiocsti=0?), so "
                       "there is nothing to show: %s" % pane[-300:])
        return
    # With legacy_tiocsti=0, only CAP_SYS_ADMIN may type (root without runnerd, not a
    # command, which has no capabilities): the line then lands nowhere.
    try:
        legacy = open("/proc/sys/dev/tty/legacy_tiocsti").read().strip() != "0"
    except OSError:
        legacy = True
    prof = common.write_profile(tmp, "nofilter", {"default": "allow", "seccomp": "none"})
    pane, ran = typed_in(runnerd_cmd(prof, bash), tmp)
    check("TIOCSTI: a command's typed line stays in its own terminal, out of the agent's shell",
          ran is False and ("typed" in pane or not legacy), pane)


def read_master(master, timeout):
    """What a pseudo-terminal's master gives within timeout seconds: b"" if nothing came,
    None once the terminal is gone (EOF, or EIO as Linux says it)."""
    r, _, _ = select.select([master], [], [], timeout)
    if not r:
        return b""
    try:
        return os.read(master, 4096) or None
    except OSError:
        return None


def on_pty(argv, environ, typed=b"hunter2\r", at=1.0, seconds=15):
    """argv on a fresh pseudo-terminal (a session of its own, the terminal its controlling
    one), typed at `at` seconds; its output, once it has ended."""
    pid, master = pty.fork()
    if pid == 0:
        os.execvpe(argv[0], argv, environ)
    out, t0, sent = b"", time.monotonic(), False
    while time.monotonic() - t0 < seconds:
        if not sent and time.monotonic() - t0 >= at:
            os.write(master, typed)
            sent = True
        chunk = read_master(master, 0.05)
        if chunk is None:
            break
        out += chunk
    else:
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    os.close(master)
    return out.decode(errors="replace").replace("\r\n", "\n")


def tty_case(tmp, mode, under):
    """tty_cases.py MODE, plainly or under runnerd: (its output, what its background reader
    got)."""
    d = os.path.join(tmp, mode + ("-rd" if under else "-plain"))
    os.mkdir(d)
    os.chmod(d, 0o777)
    argv = [common.PY, common.agent("tty_cases.py"), mode, d]
    text = on_pty(runnerd_cmd("generic", argv) if under else argv, env())
    got = os.path.join(d, "got")
    return text, open(got, "rb").read().decode(errors="replace") if os.path.exists(got) else None


def test_terminal_stays_the_users(tmp):
    """What is typed in the agent's terminal is not a command's to read, however the agent holds
    its terminal, and the terminal's modes stay the agent's."""
    for mode, what in (("devtty", "its fd 0 opened as /dev/tty"),
                       ("highfd", "the terminal on fd 5 only")):
        plain, plain_got = tty_case(tmp, mode, False)
        text, got = tty_case(tmp, mode, True)
        if plain_got is None or "hunter2" not in plain_got:
            check("%s: without runnerd, the background reader gets the line (the test's own "
                  "check)" % mode, False, repr(plain) + repr(plain_got))
            continue
        check("%s: an agent with %s: a command's background process does not read what is "
              "typed" % (mode, what), got is not None and "hunter2" not in got and "ran 0" in text,
              repr(text) + " got " + repr(got))
    plain, _ = tty_case(tmp, "notinput", False)
    text, _ = tty_case(tmp, "notinput", True)
    check("notinput: a command whose stdin is not the terminal takes nothing typed there; the "
          "agent reads it", "agent read 'hunter2\\n'" in text and
          "agent read 'hunter2\\n'" in plain, repr(text) + " plain " + repr(plain))
    plain, _ = tty_case(tmp, "agentraw", False)
    text, _ = tty_case(tmp, "agentraw", True)
    check("agentraw: the raw mode the agent set while its command ran stays after the command",
          "still raw True" in text and "still raw True" in plain,
          repr(text) + " plain " + repr(plain))
    plain, _ = tty_case(tmp, "writer", False)
    text, _ = tty_case(tmp, "writer", True)
    check("writer: a command that leaves a process writing to its terminal ends for its "
          "caller at once", "status 3, at once" in text and "status 3, at once" in plain,
          repr(text[-200:]) + " plain " + repr(plain[-200:]))


# --- callers on a pseudo-terminal ----------------------------------------------------------

def transcript(argv, environ):
    p = subprocess.run(argv, env=environ, capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def compare_pty_caller(name, agent_argv, environ):
    probe = [common.PY, common.agent("tty_probe.py")]
    rc, plain, err = transcript(agent_argv + probe, environ)
    if rc != 0 or "ended:" not in plain:
        check("%s: the conversation runs without runnerd (the test's own check)" % name,
              False, plain + err)
        return
    rc2, under, err2 = transcript(runnerd_cmd("generic", agent_argv + probe), environ)
    want = ["tty: True True True, name True, /dev/tty ok, foreground True, size 24x80",
            "winch 33x101", "read [hello there]", "out0\nerr0\nout1\nerr1\nout2\nerr2",
            "ended: signal 2"]
    missing = [w for w in want if w not in under]
    check("%s: the command has its terminal, /dev/tty, the foreground, the size and its "
          "change, the input, stdout and stderr in order, ^C" % name,
          rc2 == 0 and not missing, "missing %r in:\n%s%s" % (missing, under, err2))
    check("%s: the conversation reads as without runnerd" % name, under == plain,
          "\n".join(common.unified_diff(plain.split("\n"), under.split("\n"), "plain",
                                        "runnerd")))


def test_pty_fork(tmp):
    compare_pty_caller("pty.fork", [common.PY, common.agent("pty_agent.py")], env())


def test_pexpect(tmp):
    try:
        subprocess.run([common.PY, "-c", "import pexpect"], check=True, capture_output=True)
    except subprocess.CalledProcessError:
        common.skip_part("pexpect: python3-pexpect is not installed")
        return
    compare_pty_caller("pexpect", [common.PY, common.agent("pexpect_agent.py")], env())


def test_node_pty(tmp):
    where = os.environ.get("NODE_PTY")
    node = shutil.which("node")
    if not node or not where or not os.path.isdir(os.path.join(where, "node_modules",
                                                                "node-pty")):
        common.skip_part("node-pty: NODE_PTY does not name an installation of node-pty "
                       "(tests/integration/npm-deps.sh makes one with npm)")
        return
    compare_pty_caller("node-pty", [node, common.agent("node_pty_agent.js"),
                                    os.path.join(where, "node_modules", "node-pty")], env())


# --- the caller's terminal modes -----------------------------------------------------------

def test_modes_restored(tmp):
    """A command that makes its terminal raw and dies by SIGKILL, and a command whose runnerd
    is SIGKILLed: the caller's terminal has its modes back each time."""
    agent = common.agent("modes_agent.py")
    pid, master = pty.fork()
    if pid == 0:
        # A shell leads the terminal's session, as it would: killing runnerd then hangs up
        # nothing, and the agent, runnerd's child, goes on.
        # It stays until the agent is done: a session leader that exits hangs up its terminal.
        os.execvpe("sh", ["sh", "-c", '"$@"; echo runnerd ended; sleep 3', "sh"] +
                   runnerd_cmd("generic", [common.PY, agent]), env())
    out = b""
    deadline = time.monotonic() + 30
    killed = False
    while time.monotonic() < deadline:
        chunk = read_master(master, 0.2)
        if chunk is None:
            break
        out += chunk
        if not killed and b"sleeping" in out:
            time.sleep(0.3)
            for child in common.children(pid):  # runnerd
                os.kill(child, signal.SIGKILL)
            killed = True
        if b"all done" in out:
            break
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
    text = out.decode(errors="replace")
    check("modes: the caller's terminal is as it was after its command died by SIGKILL",
          "after the kill: same" in text, text)
    check("modes: ... and after runnerd was SIGKILLed under a running command",
          "after runnerd died: same" in text, text)


def main():
    common.require_runnerd()
    if not shutil.which("tmux"):
        common.skip("tmux is not installed (apt-get install tmux)")
    tests = (test_interactive_shell, test_hangup, test_typed_into_terminal,
             test_terminal_stays_the_users, test_pty_fork,
             test_pexpect, test_node_pty, test_modes_restored)
    return common.run_tests(tests, "rd-term-", enter=True)


if __name__ == "__main__":
    sys.exit(main())
