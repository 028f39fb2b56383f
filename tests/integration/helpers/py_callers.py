#!/usr/bin/env python3
"""Python as the caller: each sub-case starts commands the way Python programs do and prints
what it observed. Usage: py_callers.py CASE [HELPERS_DIR]. Stdlib only; runs on any Python 3.8+.

Every child Python is sys.executable, so the test does not depend on a python3 on PATH.
"""
import errno
import hashlib
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

PY = sys.executable
CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


def tmpdir():
    return tempfile.mkdtemp(prefix="rd-itest-py.")


def write_file(path, text, mode):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


def describe_error(e):
    """The parts of an exec failure a caller can see, without the temp path."""
    return "%s errno=%s(%s)" % (type(e).__name__, e.errno, errno.errorcode.get(e.errno, "?"))


@case
def run_capture():
    r = subprocess.run(["sh", "-c", "echo out; echo err >&2; exit 3"], capture_output=True)
    print("returncode", r.returncode, "stdout", r.stdout, "stderr", r.stderr)
    print("check_output", subprocess.check_output(["echo", "hello"]))
    try:
        subprocess.run(["sh", "-c", "exit 5"], check=True)
    except subprocess.CalledProcessError as e:
        print("CalledProcessError returncode", e.returncode)
    r = subprocess.run(["sh", "-c", "exit 255"])
    print("exit 255 ->", r.returncode)
    r = subprocess.run(["/bin/echo", "inherited stdout"])
    print("inherited returncode", r.returncode)


@case
def communicate_4m():
    data = bytes(range(256)) * (4 * 1024 * 1024 // 256)
    p = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    out, _ = p.communicate(data)
    print("in", len(data), hashlib.sha256(data).hexdigest())
    print("out", len(out), hashlib.sha256(out).hexdigest())
    print("returncode", p.returncode)


def eof_within(f, seconds):
    """Whether every writer of the pipe f is gone within the time: a killed command must not
    survive its stub holding the pipe open."""
    deadline = time.monotonic() + seconds
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return "pipe still open after %ss" % seconds
        r, _, _ = select.select([f], [], [], left)
        if r and os.read(f.fileno(), 4096) == b"":
            return "eof"


@case
def kill_sleep():
    p = subprocess.Popen(["sleep", "30"], stdout=subprocess.PIPE)
    p.kill()
    print("returncode", p.wait())
    print("stdout", eof_within(p.stdout, 5))


@case
def terminate_sleep():
    p = subprocess.Popen(["sh", "-c", "echo ready; exec sleep 30"], stdout=subprocess.PIPE)
    print("child says", p.stdout.readline())
    p.terminate()
    print("returncode", p.wait())
    print("stdout", eof_within(p.stdout, 5))


@case
def send_signal_handled():
    # The command traps SIGUSR1 and exits 12 from the trap: the signal must reach the command
    # itself, not just kill whatever stands in for it.
    p = subprocess.Popen(
        ["sh", "-c",
         "trap 'echo got-usr1; exit 12' USR1; echo ready; while :; do sleep 0.05; done"],
        stdout=subprocess.PIPE,
    )
    print("child says", p.stdout.readline())
    p.send_signal(signal.SIGUSR1)
    print("returncode", p.wait(timeout=20))
    print("rest", p.stdout.read())


@case
def pass_fds():
    r, w = os.pipe()
    other_r, other_w = os.pipe()  # not passed: must not reach the command
    script = (
        "echo via-fd >&%d; "
        "if [ -e /proc/self/fd/%d ]; then echo other-fd-open; else echo other-fd-closed; fi"
        % (w, other_w)
    )
    p = subprocess.Popen(["sh", "-c", script], pass_fds=(w,))
    os.close(w)
    with os.fdopen(r, "rb") as f:
        got = f.read()
    print("read from fd", got)
    print("returncode", p.wait())
    os.close(other_r)
    os.close(other_w)


@case
def preexec_umask():
    r = subprocess.run(["sh", "-c", "umask"], preexec_fn=lambda: os.umask(0o027),
                       capture_output=True)
    print("preexec_fn umask ->", r.stdout, r.returncode)
    if sys.version_info >= (3, 9):
        r = subprocess.run(["sh", "-c", "umask"], umask=0o077, capture_output=True)
        print("umask= ->", r.stdout, r.returncode)
    else:
        print("umask= ->", b"0077\n", 0)


@case
def cwd_arg():
    r = subprocess.run(["/bin/pwd"], cwd="/tmp", capture_output=True)
    print("cwd=/tmp ->", r.stdout)
    d = tmpdir()
    try:
        write_file(os.path.join(d, "prog.sh"),
                   '#!/bin/sh\n[ "$(/bin/pwd -P)" = "$1" ] && echo ran-in-cwd || echo wrong-cwd\n',
                   0o755)
        r = subprocess.run(["./prog.sh", os.path.realpath(d)], cwd=d, capture_output=True)
        print("relative ./prog.sh with cwd ->", r.stdout, r.returncode)
    finally:
        shutil.rmtree(d)


@case
def env_arg():
    env = {"PATH": "/usr/bin:/bin", "LANG": "C", "RD_TEST_VAR": "value with spaces"}
    script = 'echo "LANG=$LANG RD_TEST_VAR=$RD_TEST_VAR"; env | cut -d= -f1 | sort'
    r = subprocess.run(["sh", "-c", script], env=env, capture_output=True)
    print(r.stdout.decode(), end="")
    r = subprocess.run(["/usr/bin/env"], env={}, capture_output=True)
    print("empty env ->", r.stdout, r.returncode)


@case
def new_session():
    code = "import os; print(os.getsid(0) == os.getpid(), os.getpgid(0) == os.getpid())"
    for kw in ({}, {"start_new_session": True}):
        r = subprocess.run([PY, "-c", code], capture_output=True, **kw)
        print(kw, "-> sid_is_pid, pgid_is_pid:", r.stdout.decode().strip())
    if sys.version_info >= (3, 11):
        r = subprocess.run([PY, "-c", code], capture_output=True, process_group=0)
        print("process_group=0 -> sid_is_pid, pgid_is_pid:", r.stdout.decode().strip())
    else:
        print("process_group=0 -> sid_is_pid, pgid_is_pid: False True")


@case
def exec_errors():
    d = tmpdir()
    try:
        plain = os.path.join(d, "plain")
        write_file(plain, "#!/bin/sh\necho should-not-run\n", 0o644)
        for label, argv in (("missing", ["rd-no-such-command-xyz"]),
                            ("missing_abs", ["/nonexistent-rd/prog"]),
                            ("not_executable", [plain]),
                            ("directory", [d])):
            try:
                subprocess.run(argv)
                print(label, "-> ran")
            except OSError as e:
                print(label, "->", describe_error(e))
    finally:
        shutil.rmtree(d)


@case
def shell_true():
    print("exit 42 ->", subprocess.run("exit 42", shell=True).returncode)
    r = subprocess.run("echo $0; false || echo fallback", shell=True, capture_output=True)
    print("shell ->", r.stdout, r.returncode)
    print("os.system ->", os.system("exit 3"))
    print("os.system signal ->", os.system('kill -TERM $$'))


@case
def path_search():
    d = tmpdir()
    try:
        dirs = [os.path.join(d, n) for n in ("a", "b", "c")]
        for x in dirs:
            os.mkdir(x)
        path = ":".join(dirs)
        env = {"PATH": path, "LANG": "C.UTF-8"}

        def attempt(label):
            try:
                r = subprocess.run(["rd-prog", "arg"], env=env, capture_output=True)
                print(label, "->", r.stdout, r.returncode)
            except OSError as e:
                print(label, "->", describe_error(e))

        attempt("nowhere")
        write_file(os.path.join(dirs[2], "rd-prog"), '#!/bin/sh\necho "in c: $1"\n', 0o755)
        attempt("only last dir")
        write_file(os.path.join(dirs[0], "rd-prog"), "#!/bin/sh\necho in a\n", 0o644)
        attempt("non-executable first, executable last")
        os.unlink(os.path.join(dirs[2], "rd-prog"))
        attempt("only a non-executable")
        os.mkdir(os.path.join(dirs[1], "rd-prog"))
        attempt("non-executable and a directory")
    finally:
        shutil.rmtree(d)


@case
def os_exec_family():
    pid = os.posix_spawn("/bin/sh", ["sh", "-c", "exit 4"], {"PATH": "/usr/bin:/bin"})
    print("posix_spawn ->", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
    pid = os.posix_spawnp("sh", ["sh", "-c", "echo spawnp; exit 6"], os.environ)
    print("posix_spawnp ->", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
    try:
        os.posix_spawnp("rd-no-such-command-xyz", ["x"], os.environ)
    except OSError as e:
        print("posix_spawnp missing ->", describe_error(e))
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        try:
            os.execvp("sh", ["sh", "-c", "echo execvp-child; exit 8"])
        finally:
            os._exit(127)
    print("fork+execvp ->", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))


@case
def probe_state():
    """The probe started with state the caller set up: umask, blocked and ignored signals, an
    extra fd, rlimits, cwd, a new session and a chosen environment."""
    helpers = sys.argv[2]
    r, w = os.pipe()

    def setup():
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR2, signal.SIGWINCH})
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        import resource
        resource.setrlimit(resource.RLIMIT_NOFILE, (512, 1024))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/", "RD_TEST_PROBE": "1"}
    out = subprocess.run([os.path.join(helpers, "probe")], preexec_fn=setup, pass_fds=(w,),
                         cwd="/", umask=0o027, env=env, start_new_session=True,
                         stdout=subprocess.PIPE).stdout
    os.close(w)
    os.close(r)
    sys.stdout.write(out.decode().replace("fd%d=" % w, "fdW="))


def main():
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(line_buffering=True)
    if len(sys.argv) < 2 or sys.argv[1] not in CASES:
        print("usage: py_callers.py CASE [HELPERS]; cases: " + " ".join(sorted(CASES)),
              file=sys.stderr)
        return 2
    CASES[sys.argv[1]]()
    return 0


if __name__ == "__main__":
    sys.exit(main())
