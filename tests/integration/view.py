#!/usr/bin/env python3
"""The command's view of the machine, attacked by a command as a prompt-injected agent would
run it (docs/threat-model.md, "The command's view of the machine"):

- no real root: a root command writes /proc/sys/kernel/core_pattern = "|payload" and crashes a
  process; the kernel would run the payload as root of the machine. The probe tries it for
  real; the test restores core_pattern, whatever happened. /proc/sysrq-trigger, /sys: read-only.
  The command is in a user namespace that is not the machine's, also when runnerd is root.
- its own /dev: a few device nodes, its own devpts (a terminal outside, held open by the test,
  is out of reach), its own /dev/shm (a POSIX shm file outside is out of reach), and
  /dev/.runnerd with runnerd's gits alone, read-only;
- its own System V IPC: a shared memory segment and a message queue made outside, each with a
  canary, are out of reach.

Run as root and, by unprivileged.sh, as an unprivileged user (where the kernel's own checks
already refuse a part of it). Environment: RUNNERD, RUNNERD_CONFIG, HELPERS, RUNNERD_MUST_WORK.
"""
import ctypes
import hashlib
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import common  # noqa: E402
from common import agent_json, check, runnerd_cmd  # noqa: E402

CANARY = "canary-view-5d1e"
CORE_PATTERN = "/proc/sys/kernel/core_pattern"


def libc():
    c = ctypes.CDLL(None, use_errno=True)
    c.shmat.restype = ctypes.c_void_p
    c.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
    return c


class Outside:
    """What a process of the user outside the sandbox holds: a System V shm segment and a
    message queue, a POSIX shm file, each with the canary, and a pseudo-terminal."""

    def __init__(self):
        self.c = libc()
        base = 0x52440000 + (os.getpid() % 0x8000) * 2
        self.shm_key, self.msg_key = base, base + 1
        self.shmid = self.c.shmget(self.shm_key, 4096, 0o1000 | 0o600)  # IPC_CREAT
        self.msqid = self.c.msgget(self.msg_key, 0o1000 | 0o600)
        if self.shmid < 0 or self.msqid < 0:
            raise OSError(ctypes.get_errno(), "System V IPC for the test")
        addr = self.c.shmat(self.shmid, None, 0)
        ctypes.memmove(addr, CANARY.encode() + b"\0", len(CANARY) + 1)
        self.c.shmdt(ctypes.c_void_p(addr))
        msg = ctypes.create_string_buffer(8 + len(CANARY))
        ctypes.memmove(msg, (1).to_bytes(8, sys.byteorder) + CANARY.encode(), 8 + len(CANARY))
        if self.c.msgsnd(self.msqid, msg, len(CANARY), 0o4000) < 0:
            raise OSError(ctypes.get_errno(), "msgsnd")
        self.posix = "rd-view-%d" % os.getpid()
        with open("/dev/shm/" + self.posix, "w") as f:
            f.write(CANARY)
        self.master, self.slave = os.openpty()
        self.tty = os.ttyname(self.slave)

    def close(self):
        self.c.shmctl(self.shmid, 0, None)  # IPC_RMID
        self.c.msgctl(self.msqid, 0, None)
        os.unlink("/dev/shm/" + self.posix)
        os.close(self.master)
        os.close(self.slave)


def test_view(tmp):
    """Every attack of the probe (helpers/agents/view_probe.py), run as a command by bash."""
    os.chmod(tmp, 0o755)
    marker = os.path.join(tmp, "payload-ran")
    payload = os.path.join(tmp, "payload")
    with open(payload, "w") as f:
        f.write("#!/bin/sh\nid > %s\n" % marker)
    os.chmod(payload, 0o755)
    saved = open(CORE_PATTERN).read()
    outside = Outside()
    try:
        probe = "%s %s %s %d %d %s %s; true" % (
            common.PY, common.agent("view_probe.py"), tmp, outside.shm_key, outside.msg_key,
            outside.posix, outside.tty)
        out = subprocess.run(runnerd_cmd("generic", ["bash", "-c", probe]),
                             env=common.base_env(), capture_output=True, text=True,
                             timeout=60)
        time.sleep(0.5)  # the kernel runs a core_pattern program asynchronously
    finally:
        outside.close()
        if open(CORE_PATTERN).read() != saved:
            # Only root could have changed it; only root can write it back.
            with open(CORE_PATTERN, "w") as f:
                f.write(saved)
    got = agent_json("view: the probe reports", out.stdout, out.stderr)
    if got is None:
        return
    root = os.geteuid() == 0
    check("view: core_pattern cannot be written (%s)" % got["core_pattern"],
          got["core_pattern"] in (("EROFS",) if root else ("EROFS", "EACCES")))
    check("view: no core_pattern program ran as root of the machine",
          not os.path.exists(marker),
          open(marker).read() if os.path.exists(marker) else "")
    # ENOENT: a kernel without magic SysRq has none.
    check("view: /proc/sysrq-trigger cannot be opened for writing (%s)" % got["sysrq"],
          got["sysrq"] in (("EROFS", "ENOENT") if root else ("EROFS", "EACCES", "ENOENT")))
    # Their files check the writer's uid and mode alone (/proc/scsi/scsi removes a disk): as
    # root, each there is read-only to commands, as container runtimes make them.
    there = [d for d in ("/proc/fs", "/proc/acpi", "/proc/scsi", "/proc/asound")
             if os.path.isdir(d)]
    check("view: %s read-only as root" % ", ".join(there),
          not root or (sorted(got["proc_readonly"]) == sorted(there) and
                       all(got["proc_readonly"].values())), repr(got["proc_readonly"]))
    check("view: /sys is read-only (%s)" % got["sys_write"],
          got["sys_readonly"] is True and got["sys_write"] == "EROFS")
    check("view: the command's user namespace is not its caller's (%s)" % got["userns"],
          got["userns"] != os.readlink("/proc/self/ns/user"))
    want = {"null", "zero", "full", "random", "urandom", "ptmx", "fd", "stdin", "stdout",
            "stderr", "pts", "shm", ".empty", ".runnerd"} | \
        ({"tty"} if os.path.exists("/dev/tty") else set())
    check("view: /dev holds only the sandbox's own", set(got["dev"]) == want,
          "extra %s, missing %s" % (sorted(set(got["dev"]) - want),
                                    sorted(want - set(got["dev"]))))
    check("view: nothing can be made in /dev (%s)" % got["dev_write"],
          got["dev_write"] == "EROFS")
    check("view: /dev/.runnerd holds runnerd's two gits alone, and where a granted program's "
          "git is bound, read-only (%s, %s)" % (got["dev/.runnerd_write"],
                                                 got["dev_bin_git_write"]),
        got["dev_bin"] == ["gate", "git", "real"] and got["dev/.runnerd_write"] == "EROFS" and
        got["dev_bin_git_write"] == "EROFS", repr(got["dev_bin"]))
    check("view: /dev/pts is the sandbox's own devpts", got["pts"] == ["ptmx"], repr(got["pts"]))
    check("view: a terminal outside is out of reach (%s)" % got["tty"], got["tty"] == "ENOENT")
    check("view: the device nodes work", got["devices"] == [16, 16, 16], repr(got["devices"]))
    check("view: /dev/shm is the sandbox's own, and writable",
          got["dev_shm"] == "ok" and got["posix_shm"] == "ENOENT",
          "%s, %s" % (got["dev_shm"], got["posix_shm"]))
    check("view: System V shm of a process outside is out of reach (%s)" % got["sysv_shm"],
          got["sysv_shm"] == "ENOENT")
    check("view: a System V message queue outside is out of reach (%s)" % got["sysv_msg"],
          got["sysv_msg"] == "ENOENT")
    check("view: no canary reached the command", CANARY not in out.stdout, out.stdout)


# The stores the shipped profiles' agents keep, under the caller's home (from the password
# database, which is what "~/" masks follow).
HOME_STORES = [".gemini/oauth_creds.json", ".gemini/.env", ".gemini/mcp-oauth-tokens.json",
               ".qwen/oauth_creds.json", ".local/share/amp/secrets.json",
               ".config/github-copilot/hosts.json", ".copilot/config.json", ".aider.conf.yml",
               ".env", ".claude.json", ".bash_history"]


class Planted:
    """Canary files at paths that did not exist, removed again with every directory made for
    them; a path that exists already is left as it is (and only checked to read empty)."""

    def __init__(self):
        self.files, self.dirs, self.paths = [], [], []

    def add(self, path):
        self.paths.append(path)
        if os.path.lexists(path):
            return
        parent = os.path.dirname(path)
        made = []
        while not os.path.isdir(parent):
            made.append(parent)
            parent = os.path.dirname(parent)
        for d in reversed(made):
            os.mkdir(d, 0o755)
            self.dirs.append(d)
        with open(path, "w") as f:
            f.write("secret " + CANARY + "\n")
        self.files.append(path)

    def remove(self):
        for f in self.files:
            os.unlink(f)
        # With what else came to be in them meanwhile (runnerd makes its control directory
        # in a /run/user/UID the test made).
        for d in reversed(self.dirs):
            shutil.rmtree(d, ignore_errors=True)


def test_stores(tmp):
    """The stores the agents keep are masked: under the home, and where the agents' own
    variables move them (CODEX_HOME, CLAUDE_CONFIG_DIR, GOOGLE_APPLICATION_CREDENTIALS,
    XDG_CONFIG_HOME, GH_CONFIG_DIR, KUBECONFIG with two files, TMUX_TMPDIR); the user's
    runtime directory, /run/user/UID, as a whole (gpg-agent's and tmux's sockets are there). A
    command cats each (one command a path: each is trapped and sandboxed). Before, each printed
    its canary."""
    os.chmod(tmp, 0o755)
    uid = os.getuid()
    home = pwd.getpwuid(uid).pw_dir
    env = common.base_env()
    moved = {
        "CODEX_HOME": ("codex", "auth.json"), "CLAUDE_CONFIG_DIR": ("claude", ".credentials.json"),
        "XDG_CONFIG_HOME": ("xdg", "gh/hosts.yml"), "GH_CONFIG_DIR": ("ghdir", "hosts.yml"),
        "TMUX_TMPDIR": ("tmuxdir", "tmux-%d/default" % uid),
    }
    planted = Planted()
    try:
        for rel in HOME_STORES:
            planted.add(os.path.join(home, rel))
        for var, (d, rel) in moved.items():
            env[var] = os.path.join(tmp, d)
            planted.add(os.path.join(tmp, d, rel))
        env["GOOGLE_APPLICATION_CREDENTIALS"] = os.path.join(tmp, "gcp", "sa.json")
        planted.add(env["GOOGLE_APPLICATION_CREDENTIALS"])
        env["KUBECONFIG"] = "%s:%s" % (os.path.join(tmp, "k1"), os.path.join(tmp, "k2"))
        planted.add(os.path.join(tmp, "k1"))
        planted.add(os.path.join(tmp, "k2"))
        run_user = "/run/user/%d" % uid
        if os.path.isdir(run_user) or (uid == 0 and os.path.isdir("/run/user")):
            planted.add(os.path.join(run_user, "gnupg", "S.gpg-agent-canary"))
        for p in planted.files:
            os.chmod(p, 0o644)
        for d in planted.dirs:
            os.chmod(d, 0o755)
        script = "".join("echo \"%s=[$(cat '%s' 2>&1)]\";" % (p, p) for p in planted.paths)
        out = subprocess.run(runnerd_cmd("generic", ["bash", "-c", script]), env=env,
                             capture_output=True, text=True, timeout=60)
    finally:
        planted.remove()
    got = dict(l.split("=", 1) for l in out.stdout.splitlines() if "=[" in l)
    for p in planted.paths:
        v = got.get(p)
        # A masked file reads empty; a file under a masked directory is not there.
        check("stores: %s is masked" % p.replace(home, "~").replace(tmp, "$TMP"),
              v is not None and CANARY not in v and (v == "[]" or "No such file" in v),
              repr(v) + out.stderr[-300:])
    check("stores: the command ran", "=[" in out.stdout, out.stdout + out.stderr)


def test_run_user_exceptions(tmp):
    """/run/user/UID is masked as a whole, with named exceptions: a profile's unmask of a
    path inside it shows that path, the real one, and nothing else of the directory; an
    exception that is a symlink (a command could plant one to show another path) is left
    out. Before, an unmask inside a masked directory did nothing."""
    os.chmod(tmp, 0o755)
    uid = os.getuid()
    run_user = "/run/user/%d" % uid
    if not (os.path.isdir(run_user) or (uid == 0 and os.path.isdir("/run/user"))):
        # unprivileged.sh makes it for its user, as a login would.
        common.skip_part("run_user: no %s" % run_user)
        return
    planted = Planted()
    shown_dir = os.path.join(run_user, "rdtest-shown")
    shown_file = os.path.join(run_user, "rdtest-file")
    hidden = os.path.join(run_user, "gnupg", "S.gpg-agent-canary")
    link = os.path.join(run_user, "rdtest-link")
    secret = os.path.join(tmp, "elsewhere")
    # And a masked directory that is a symlink at the start: masked where it leads, with its
    # exception.
    real_dir, link_dir = os.path.join(tmp, "realdir"), os.path.join(tmp, "linkdir")
    os.makedirs(real_dir)
    for n in ("shown.txt", "secret.txt"):
        with open(os.path.join(real_dir, n), "w") as f:
            f.write("secret " + CANARY + "\n")
    os.symlink(real_dir, link_dir)
    prof = common.write_profile(tmp, "runuser", {
        "default": "allow", "mask": [link_dir],
        "unmask": ["/run/user/{uid}/rdtest-shown", "/run/user/{uid}/rdtest-file",
                   "/run/user/{uid}/rdtest-link", link_dir + "/shown.txt"]})
    try:
        planted.add(os.path.join(shown_dir, "f"))
        planted.add(shown_file)
        planted.add(hidden)
        with open(secret, "w") as f:
            f.write("secret " + CANARY + "\n")
        os.chmod(secret, 0o644)
        os.symlink(secret, link)
        for p in planted.files:
            os.chmod(p, 0o644)
        for d in planted.dirs:
            os.chmod(d, 0o755)
        script = ("echo \"dir=[$(cat %s/f)]\"; echo \"file=[$(cat %s)]\"; "
                  "echo \"hidden=[$(cat %s 2>&1)]\"; echo \"link=[$(cat %s 2>&1)]\"; "
                  "echo \"ls=[$(ls -A %s | tr '\\n' ' ')]\"; "
                  "sh -c 'echo x > %s/w' 2>/dev/null; echo \"write_rc=$?\"; "
                  "echo \"lshown=[$(cat %s/shown.txt 2>&1)]\"; "
                  "echo \"lsecret=[$(cat %s/secret.txt 2>&1)]\""
                  % (shown_dir, shown_file, hidden, link, run_user, run_user, link_dir,
                     link_dir))
        out = subprocess.run(runnerd_cmd(prof, ["bash", "-c", script]), cwd=tmp,
                             env=common.base_env(), capture_output=True, text=True, timeout=60)
    finally:
        if os.path.lexists(link):
            os.unlink(link)
        planted.remove()
    got = dict(l.split("=", 1) for l in out.stdout.splitlines() if "=" in l)
    check("run_user: an unmasked directory inside /run/user/UID is shown, the real one",
          CANARY in got.get("dir", ""), repr(got) + out.stderr[-300:])
    check("run_user: an unmasked file inside it is shown", CANARY in got.get("file", ""),
          repr(got))
    check("run_user: the rest stays hidden (gnupg)", "hidden" in got and
          CANARY not in got["hidden"], repr(got.get("hidden")))
    check("run_user: an exception that is a symlink is left out", "link" in got and
          CANARY not in got["link"], repr(got.get("link")))
    check("run_user: the directory shows the exceptions alone",
          sorted(got.get("ls", "").strip("[] ").split()) == ["rdtest-file", "rdtest-shown"],
          repr(got.get("ls")))
    check("run_user: the masked directory is read-only", got.get("write_rc") not in (None, "0"),
          repr(got))
    check("run_user: a masked directory that was a symlink keeps its exception",
          CANARY in got.get("lshown", ""), repr(got.get("lshown")))
    check("run_user: and hides the rest", "lsecret" in got and CANARY not in got["lsecret"],
          repr(got.get("lsecret")))


def test_cwd_hidden(tmp):
    """A caller whose working directory is at or under a masked path, or in the machine's
    /dev, is refused (EACCES for a mask), audited: before, "cd ~/.codex; cat auth.json" read
    the real file through the directory's fd."""
    os.chmod(tmp, 0o755)
    store = os.path.join(tmp, "ghdir")
    os.makedirs(os.path.join(store, "sub"))
    for path, text in (("hosts.yml", CANARY), ("sub/x", CANARY)):
        with open(os.path.join(store, path), "w") as f:
            f.write(text)
    os.chmod(store, 0o755)
    os.chmod(os.path.join(store, "sub"), 0o755)
    audit = os.path.join(tmp, "audit.jsonl")
    env = common.base_env()
    env["GH_CONFIG_DIR"] = store
    script = ("cd %s && cat hosts.yml; echo \"at=$?\"; cd sub && cat x; echo \"under=$?\"; "
              "cd /dev/pts && ls; echo \"dev=$?\"" % store)
    out = subprocess.run(runnerd_cmd("generic", ["bash", "-c", script], audit=audit), env=env,
                         capture_output=True, text=True, timeout=60)
    got = dict(l.split("=", 1) for l in out.stdout.splitlines() if "=" in l)
    check("cwd: nothing of the masked directory reached a command", CANARY not in out.stdout,
          out.stdout)
    check("cwd: at a masked directory: refused with EACCES (126)", got.get("at") == "126" and
          "Permission denied" in out.stderr, repr(got) + out.stderr[-300:])
    check("cwd: under a masked directory: refused", got.get("under") == "126", repr(got))
    check("cwd: in the machine's /dev: refused", got.get("dev") == "126", repr(got))
    lines = [json.loads(l) for l in open(audit)] if os.path.exists(audit) else []
    why = [str(l) for l in lines if "hidden from commands" in json.dumps(l)]
    check("cwd: the refusal is audited, with its reason", len(why) >= 2, repr(lines)[-600:])


def wheel(path):
    """A wheel of a one-module package, made by hand (no network, no build backend)."""
    import base64
    import zipfile
    files = {"rdprobe/__init__.py": b"VALUE = 42\n",
             "rdprobe-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: rdprobe\n"
                                              b"Version: 1.0\n",
             "rdprobe-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: runnerd-test\n"
                                           b"Root-Is-Purelib: true\nTag: py3-none-any\n"}
    record = ""
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
        record += "%s,sha256=%s,%d\n" % (name, digest.decode(), len(data))
    record += "rdprobe-1.0.dist-info/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
        z.writestr("rdprobe-1.0.dist-info/RECORD", record)


def test_writes(tmp):
    """Writes are confined: the home (~/.bashrc, ~/.claude/settings.json, where a command
    would plant code or point the agent at its own listener), the system, the project's
    .git/hooks and the agents' project configuration (.codex, .gemini, .claude, .vscode,
    missing in the project: the build before let a command make them) are read-only (EROFS);
    the project, /tmp and the caches are not, so that git
    commit, npm install of a local package, pip install of a local wheel into a venv in the
    project, and cargo build (if present) work. The agent (bash) is started in the project."""
    os.chmod(tmp, 0o755)
    ws = os.path.join(tmp, "project")
    os.makedirs(os.path.join(ws, "pkg"))
    subprocess.run(["git", "init", "-q", ws], check=True)
    # A per-worktree config, as git sparse-checkout turns it on: git reads it as .git/config.
    subprocess.run(["git", "-C", ws, "config", "extensions.worktreeConfig", "true"], check=True)
    open(os.path.join(ws, ".git", "config.worktree"), "w").close()
    with open(os.path.join(ws, "package.json"), "w") as f:
        f.write('{"name": "project", "version": "1.0.0"}\n')
    with open(os.path.join(ws, "pkg", "package.json"), "w") as f:
        f.write('{"name": "localpkg", "version": "1.0.0", "main": "index.js"}\n')
    with open(os.path.join(ws, "pkg", "index.js"), "w") as f:
        f.write("module.exports = 42;\n")
    wheel(os.path.join(ws, "rdprobe-1.0-py3-none-any.whl"))
    common.open_to_all(tmp)
    home = pwd.getpwuid(os.getuid()).pw_dir
    probe = os.path.join(tmp, "probe.py")
    text = ("import os, sys\n"
             "for p in sys.argv[1:]:\n"
             "    try:\n"
             "        os.makedirs(os.path.dirname(p), exist_ok=True)\n"
             "        os.close(os.open(p, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644))\n"
             "        print(p + '=written')\n"
             "    except OSError as e:\n"
             "        print(p + '=' + os.strerror(e.errno))\n")
    with open(probe, "w") as f:
        f.write(text)
    os.chmod(probe, 0o644)
    # The project's agent configuration (missing: runnerd makes the directories, empty; every
    # profile but claude's holds the whole .claude; the claude profile's .claude/settings.json
    # placeholder is e2e/claude.py's). The build before let a command of another agent's
    # session write .claude/settings.json, which the next Claude Code session reads.
    project = [os.path.join(ws, d, f) for d, f in ((".codex", "config.toml"),
                                                   (".gemini", "settings.json"),
                                                   (".claude", "settings.json"),
                                                   (".claude", "settings.local.json"),
                                                   (".vscode", "settings.json"))]
    targets = [os.path.join(home, ".bashrc"), os.path.join(home, ".claude", "settings.json"),
               os.path.join(ws, ".git", "hooks", "pre-push"), "/etc/runnerd-probe",
               os.path.join(ws, ".git", "config.worktree")] + project + \
        [os.path.join(ws, "ok"), os.path.join(tmp, "ok")]
    existed = {t: os.path.exists(t) for t in targets}
    py = common.PY
    steps = [
        "%s %s %s" % (py, probe, " ".join(targets)),
        "git -c user.name=t -c user.email=t@x commit -q --allow-empty -m m && echo git=ok",
        "npm install --no-audit --no-fund --offline ./pkg >/dev/null 2>&1 && "
        "node -e 'process.exit(require(\"localpkg\") === 42 ? 0 : 1)' && echo npm=ok",
        "%s -m venv .venv && .venv/bin/pip install -q --no-index rdprobe-1.0-py3-none-any.whl "
        "&& .venv/bin/python -c 'import rdprobe' && echo pip=ok" % py,
    ]
    cargo = shutil.which("cargo")
    if cargo:
        steps.append("cargo new -q --vcs none hello && (cd hello && cargo build -q --offline) "
                     "&& ./hello/target/debug/hello >/dev/null && echo cargo=ok")
    # Last: .git renamed away and made anew, with a hook of the command's (a protected path
    # moves with its parent unless the parent cannot move).
    steps.append("sh -c 'mv .git .moved && mkdir -p .git/hooks && echo x > .git/hooks/pre-commit"
                 " && echo planted=yes' 2>/dev/null; true")
    env = common.base_env()
    if cargo:
        env["PATH"] = os.path.dirname(cargo) + ":" + env["PATH"]
    try:
        out = subprocess.run(runnerd_cmd("generic", ["bash", "-c", "; ".join(steps)]), env=env,
                             cwd=ws, capture_output=True, text=True, timeout=300)
    finally:
        for t in targets:
            if not existed[t] and os.path.exists(t) and not t.startswith(tmp):
                os.unlink(t)  # the build before let it through
    got = dict(l.split("=", 1) for l in out.stdout.splitlines() if "=" in l)
    erofs = os.strerror(30)
    for t in targets[:-2]:
        check("writes: %s is read-only (EROFS)" % t.replace(home, "~").replace(ws, "$PROJECT"),
              got.get(t) == erofs, "%r %s" % (got.get(t), out.stderr[-300:]))
    status = subprocess.run(["git", "-C", ws, "status", "--porcelain", "--untracked-files=all"],
                            capture_output=True, text=True).stdout
    check("writes: the directories runnerd made show in no git status",
          not any(d in status for d in (".codex", ".gemini", ".claude", ".vscode")), status)
    for t in targets[-2:]:
        check("writes: %s is writable" % t.replace(ws, "$PROJECT").replace(tmp, "$TMP"),
              got.get(t) == "written", repr(got.get(t)))
    check("writes: .git cannot be renamed away to plant a hook in a new one",
          got.get("planted") is None and os.path.isdir(os.path.join(ws, ".git", "objects")),
          repr(got.get("planted")))
    for tool in ["git", "npm", "pip"] + (["cargo"] if cargo else []):
        check("writes: %s works in the project" % tool, got.get(tool) == "ok",
              out.stdout[-400:] + out.stderr[-600:])


def test_protected_created(tmp):
    """A protected file missing at the start (the project's .mcp.json) cannot be held
    read-only: a command makes it. runnerd names it when the session ends, on stderr and in
    the audit log, and the next session's commands cannot write it. The build before said
    nothing after the session."""
    ws = os.path.join(tmp, "project")
    os.makedirs(ws)
    os.chmod(tmp, 0o755)
    os.chmod(ws, 0o777)
    audit = os.path.join(tmp, "audit.jsonl")
    mcp = os.path.join(ws, ".mcp.json")
    plant = "sh -c 'echo {} > .mcp.json'; echo made=$?"
    out = subprocess.run(runnerd_cmd("generic", ["sh", "-c", plant], audit=audit),
                         env=common.base_env(), cwd=ws, capture_output=True, text=True,
                         timeout=60)
    events = [json.loads(l) for l in open(audit) if l.strip()] if os.path.exists(audit) else []
    made = [e for e in events if e.get("event") == "protected_created"]
    check("protected created: the command made the missing .mcp.json",
          "made=0" in out.stdout and os.path.exists(mcp), out.stdout + out.stderr[-300:])
    check("protected created: named on stderr when the session ends",
          "%s was made during this session" % mcp in out.stderr, out.stderr[-500:])
    check("protected created: in the audit log, after session_end",
          [e.get("path") for e in made] == [mcp] and events.index(made[0]) > max(
              i for i, e in enumerate(events) if e.get("event") == "session_end"),
          json.dumps(events[-3:]))
    out = subprocess.run(runnerd_cmd("generic", ["sh", "-c", "sh -c 'echo x >> .mcp.json' "
                                                 "2>/dev/null; echo again=$?"]),
                         env=common.base_env(), cwd=ws, capture_output=True, text=True,
                         timeout=60)
    check("protected created: the next session's commands cannot write it",
          "again=" in out.stdout and "again=0" not in out.stdout, out.stdout + out.stderr)
    # A symlink a command planted there: no sandbox could hold it, and the session does not
    # start, saying why (before: every command failed with ELOOP).
    os.unlink(mcp)
    os.symlink("/etc/hostname", mcp)
    out = subprocess.run(runnerd_cmd("generic", ["true"]), env=common.base_env(), cwd=ws,
                         capture_output=True, text=True, timeout=60)
    check("protected created: a symlink at a protected path stops the session, naming it",
          out.returncode == 125 and "%s is a symlink" % mcp in out.stderr, out.stderr)


def test_worktree_dotgit(tmp):
    """A workspace that is a linked worktree: its .git is a file naming the repository git
    takes, hooks and all. A command rewrote it to name a copy with a hook of its own, which the
    user's next git commit ran (the build before). It stays read-only (EROFS)."""
    os.chmod(tmp, 0o755)
    main = os.path.join(tmp, "main")
    wt = os.path.join(tmp, "wt")
    who = ["-c", "user.name=t", "-c", "user.email=t@x"]
    subprocess.run(["git", "init", "-q", main], check=True)
    subprocess.run(["git"] + who + ["-C", main, "commit", "-q", "--allow-empty", "-m", "a"],
                   check=True)
    subprocess.run(["git", "-C", main, "worktree", "add", "-q", wt], check=True)
    common.open_to_all(tmp)
    before = open(os.path.join(wt, ".git")).read()
    plant = "sh -c 'echo gitdir: /tmp > .git' 2>/dev/null; echo rc=$?; touch ok && echo ok=yes"
    out = subprocess.run(runnerd_cmd("generic", ["sh", "-c", plant]), env=common.base_env(),
                         cwd=wt, capture_output=True, text=True, timeout=60)
    check("worktree: the workspace's .git file is read-only to commands",
          "rc=" in out.stdout and "rc=0" not in out.stdout
          and open(os.path.join(wt, ".git")).read() == before, out.stdout + out.stderr[-300:])
    check("worktree: the worktree stays writable", "ok=yes" in out.stdout, out.stdout)


def test_hooks_path(tmp):
    """A repository whose hooks git takes from the workspace (husky's core.hooksPath,
    .husky/_, which husky keeps out of git status with a .gitignore of "*"): a command that
    rewrote a hook there, or added one, had the user's own git run it, outside any sandbox (the
    build before). Commands now write that directory through a layer of the session's: they
    see what they wrote (their own git commit runs it, in the sandbox), the user's files stay
    as they were. Where the directory is missing (hooksPath set, husky not run yet), runnerd
    makes it empty, and the same holds."""
    os.chmod(tmp, 0o755)
    who = ["-c", "user.name=t", "-c", "user.email=t@x"]
    plant = ("sh -c 'mkdir -p .husky/_ && echo \"echo planted-hook\" > .husky/_/pre-commit; chmod +x "
             ".husky/_/pre-commit; echo x > .husky/_/post-checkout' 2>/dev/null; echo rc=$?; "
             "sh -c 'git %s commit -q --allow-empty -m m'" % " ".join(who))
    for case in ("present", "missing"):
        ws = os.path.join(tmp, case)
        subprocess.run(["git", "init", "-q", ws], check=True)
        subprocess.run(["git", "-C", ws, "config", "core.hooksPath", ".husky/_"], check=True)
        hooks = os.path.join(ws, ".husky", "_")
        os.makedirs(hooks if case == "present" else os.path.dirname(hooks))
        if case == "present":
            with open(os.path.join(hooks, "pre-commit"), "w") as f:
                f.write("#!/bin/sh\necho user-hook\n")
            os.chmod(os.path.join(hooks, "pre-commit"), 0o777)
        common.open_to_all(ws, files=0o777)
        before = {f: open(os.path.join(hooks, f)).read() for f in os.listdir(hooks)} \
            if os.path.isdir(hooks) else {}
        out = subprocess.run(runnerd_cmd("generic", ["sh", "-c", plant]), env=common.base_env(),
                             cwd=ws, capture_output=True, text=True, timeout=60)
        after = {f: open(os.path.join(hooks, f)).read() for f in os.listdir(hooks)} \
            if os.path.isdir(hooks) else {}
        check("hooks path (%s): the command wrote the hooks, and its own git commit ran "
              "its hook" % case, "rc=0" in out.stdout and "planted-hook" in out.stdout + out.stderr,
              out.stdout + out.stderr[-300:])
        check("hooks path (%s): the user's hooks are as they were" % case, after == before,
              "before %r, after %r" % (before, after))
        user = subprocess.run(["git", "-C", ws] + who + ["commit", "-q", "--allow-empty",
                                                         "-m", "u"],
                              capture_output=True, text=True)
        check("hooks path (%s): the user's git commit runs no hook of the command's" % case,
              "planted-hook" not in user.stdout + user.stderr, user.stdout + user.stderr)
    # The layer's parent renamed away, with the layer, and made anew with a hook of the
    # command's on the real file system: the build before let it (a review's repro).
    ws = os.path.join(tmp, "present")
    moved = ("sh -c 'mv .husky .husky.old' 2>/dev/null; echo mv_rc=$?; sh -c 'mkdir -p "
             ".husky2/_ && echo \"echo moved-hook\" > .husky2/_/pre-commit' 2>/dev/null")
    out = subprocess.run(runnerd_cmd("generic", ["sh", "-c", moved]), env=common.base_env(),
                         cwd=ws, capture_output=True, text=True, timeout=60)
    check("hooks path: the hooks' parent directory cannot be renamed away",
          "mv_rc=" in out.stdout and "mv_rc=0" not in out.stdout
          and os.path.isdir(os.path.join(ws, ".husky", "_")), out.stdout + out.stderr[-300:])


def test_git_head(tmp):
    """A command garbles .git/HEAD and shapes the workspace as a bare repository (HEAD,
    objects, refs, and a config with an origin and a core.sshCommand of its own): the user's
    next git fetch there, outside runnerd, took the workspace as the repository and ran the
    command's sshCommand (the build before). runnerd writes HEAD again as it was at the start when the
    session ends, moves the garbled one aside, and names both on stderr and in the audit log;
    the user's git fetch runs nothing of the command's."""
    os.chmod(tmp, 0o755)
    ws = os.path.join(tmp, "project")
    subprocess.run(["git", "init", "-q", ws], check=True)
    subprocess.run(["git", "-C", ws, "-c", "user.name=t", "-c", "user.email=t@x", "commit",
                    "-q", "--allow-empty", "-m", "m"], check=True)
    common.open_to_all(ws)
    start = open(os.path.join(ws, ".git", "HEAD")).read()
    mark = os.path.join(tmp, "fsmonitor-ran")
    plant = ("sh -c 'echo garbage > .git/HEAD && mkdir -p objects refs && "
             "echo ref: refs/heads/x > HEAD && printf \"[core]\\n\\tsshCommand = touch %s; "
             "false\\n[remote \\\"origin\\\"]\\n\\turl = ssh://h/r\\n\" > config' && "
             "echo planted=yes" % mark)
    audit = os.path.join(tmp, "audit.jsonl")
    out = subprocess.run(runnerd_cmd("generic", ["sh", "-c", plant], audit=audit),
                         env=common.base_env(), cwd=ws, capture_output=True, text=True,
                         timeout=60)
    check("git head: the command garbled .git/HEAD and shaped the workspace",
          "planted=yes" in out.stdout, out.stdout + out.stderr[-300:])
    events = [json.loads(l) for l in open(audit) if l.strip()] if os.path.exists(audit) else []
    restored = [e for e in events if e.get("event") == "git_head_restored"]
    check("git head: HEAD is as it was at the start, the garbled one moved aside",
          open(os.path.join(ws, ".git", "HEAD")).read() == start and len(restored) == 1
          and restored[0].get("restored") is True and restored[0].get("moved_to")
          and open(restored[0]["moved_to"]).read() == "garbage\n", json.dumps(restored))
    check("git head: said on stderr, with the workspace's bare shape",
          "HEAD was left in a form git does not take" in out.stderr
          and "was made a bare git repository's shape" in out.stderr
          and any(e.get("event") == "bare_repository_made" for e in events),
          out.stderr[-800:])
    subprocess.run(["git", "-C", ws, "fetch"], capture_output=True, text=True)
    check("git head: the user's git fetch ran nothing of the command's",
          not os.path.exists(mark), "the command's core.sshCommand ran")
    # git also skips a .git without objects or refs it may search: a command renames
    # .git/refs away, or takes its mode, and shapes the workspace with a config that names
    # the workspace as its work tree (objects and refs executable files, which git's test
    # takes): the user's git status ran its fsmonitor (the build before).
    ws2 = os.path.join(tmp, "project2")
    subprocess.run(["git", "init", "-q", ws2], check=True)
    subprocess.run(["git", "-C", ws2, "-c", "user.name=t", "-c", "user.email=t@x", "commit",
                    "-q", "--allow-empty", "-m", "m"], check=True)
    common.open_to_all(ws2)
    mark2 = os.path.join(tmp, "fsmonitor-ran-2")
    plant = ("mv .git/refs .git/refs.x 2>/dev/null; echo mv_rc=$?; chmod 000 .git/objects; "
             "touch objects refs && chmod 755 objects refs && echo ref: refs/heads/x > HEAD && "
             "printf \"[core]\\n\\trepositoryformatversion = 0\\n\\tbare = false\\n\\tworktree = %s\\n\\tfsmonitor = touch %s\\n\" > "
             "config && echo planted=yes" % (ws2, mark2))
    out = subprocess.run(runnerd_cmd("generic", ["sh", "-c", "sh -c '%s'" % plant]),
                         env=common.base_env(), cwd=ws2, capture_output=True, text=True,
                         timeout=60)
    got = dict(l.split("=", 1) for l in out.stdout.splitlines() if "=" in l)
    check("git head: .git/refs cannot be renamed away", got.get("mv_rc") not in (None, "0")
          and got.get("planted") == "yes" and os.path.isdir(os.path.join(ws2, ".git", "refs")),
          repr(got) + out.stderr[-300:])
    check("git head: .git/objects has its mode back, the workspace's HEAD is moved aside",
          (os.stat(os.path.join(ws2, ".git", "objects")).st_mode & 0o777) == 0o777
          and not os.path.exists(os.path.join(ws2, "HEAD")), out.stderr[-600:])
    subprocess.run(["git", "-C", ws2, "status"], capture_output=True, text=True)
    check("git head: the user's git status ran nothing of the command's",
          not os.path.exists(mark2), "the command's core.fsmonitor ran")


def test_gitlink_config(tmp):
    """A repository entered in the workspace's index as a gitlink: the user's git status at
    the root looks into it, and runs what its configuration's core.fsmonitor names. Commands
    can make one (an embedded repository and its gitlink) or change the configuration of a
    submodule (.git/modules/NAME/config), both where they may write. runnerd names each such
    configuration made or changed during the session when it ends, on stderr and in the audit
    log; an untouched submodule is not named (the build before named none)."""
    os.chmod(tmp, 0o755)
    ws = os.path.join(tmp, "project")
    g = ["git", "-c", "user.name=t", "-c", "user.email=t@x", "-c", "protocol.file.allow=always"]
    lib = os.path.join(tmp, "lib")
    for repo in (ws, lib):
        subprocess.run(["git", "init", "-q", repo], check=True)
        subprocess.run(g + ["-C", repo, "commit", "-q", "--allow-empty", "-m", "m"], check=True)
    for name in ("kept", "changed"):
        subprocess.run(g + ["-C", ws, "submodule", "-q", "add", lib, name], check=True,
                       capture_output=True)
    subprocess.run(g + ["-C", ws, "commit", "-q", "-m", "subs"], check=True)
    common.open_to_all(tmp)
    plant = ("sh -c 'git init -q made && git -C made -c user.name=t -c user.email=t@x commit -q "
             "--allow-empty -m s && git -C made config core.fsmonitor \"touch ran; false\" && "
             "git update-index --add --cacheinfo 160000,$(git -C made rev-parse HEAD),made && "
             "git -C changed config core.fsmonitor \"touch ran; false\" && echo planted=yes'")
    audit = os.path.join(tmp, "audit.jsonl")
    out = subprocess.run(runnerd_cmd("generic", ["sh", "-c", plant], audit=audit),
                         env=common.base_env(), cwd=ws, capture_output=True, text=True,
                         timeout=60)
    check("gitlink config: the command made a gitlinked repository and changed a submodule's "
          "configuration", "planted=yes" in out.stdout, out.stdout + out.stderr[-400:])
    events = [json.loads(l) for l in open(audit) if l.strip()] if os.path.exists(audit) else []
    named = {os.path.basename(e.get("path", "")): e.get("new") for e in events
             if e.get("event") == "gitlink_config"}
    check("gitlink config: both named in the audit log (made, changed), the untouched one not",
          named == {"made": True, "changed": False}, repr(named))
    check("gitlink config: and on stderr",
          "%s/made is a repository entered in the workspace's index" % ws in out.stderr and
          "%s/changed is a repository entered" % ws in out.stderr and
          "%s/kept is" % ws not in out.stderr, out.stderr[-800:])


def test_nested_repos(tmp):
    """A command makes git repositories inside the workspace, with what the user's git runs
    when it works there (a shell prompt, an editor scanning the folder): a core.fsmonitor, a
    hook, a pager; through a .git symlink, a .git file whose path holds a newline, a symlink
    to a .git file, a hooks directory that is a symlink, or a directory shaped as a bare
    repository. When the session ends, runnerd moves each aside and names it (the build before
    left them all). A repository that was there at the start and whose configuration changed
    is named, not moved (its other keys may be the user's). What git init, clone, worktree add, submodule add and a
    user's pull.rebase write, and the user's untouched repository, are left."""
    os.chmod(tmp, 0o755)
    ws = os.path.join(tmp, "project")
    src = os.path.join(tmp, "src")
    evil = os.path.join(tmp, "evil.git")
    nl = os.path.join(tmp, "g\nx")
    hooks = os.path.join(tmp, "hk")
    g = ["git", "-c", "user.name=t", "-c", "user.email=t@x"]
    for repo in (ws, src):
        subprocess.run(["git", "init", "-q", repo], check=True)
        subprocess.run(g + ["-C", repo, "commit", "-q", "--allow-empty", "-m", "m"], check=True)
    for bare in (evil, nl):
        subprocess.run(["git", "init", "-q", "--bare", bare], check=True)
        with open(os.path.join(bare, "config"), "a") as f:
            f.write("[core]\n\tpager = touch ran\n")
    os.makedirs(hooks)
    with open(os.path.join(hooks, "post-index-change"), "w") as f:
        f.write("#!/bin/sh\ntouch ran\n")
    # The user's own: one with a hook of theirs, left alone; one a command changes; a clone
    # with a key of the user's, where the agent sets a branch to track.
    for mine in ("mine", "mine-changed"):
        subprocess.run(["git", "init", "-q", os.path.join(ws, mine)], check=True)
    subprocess.run(["git", "clone", "-q", src, os.path.join(ws, "mine-clone")], check=True)
    subprocess.run(["git", "-C", os.path.join(ws, "mine-clone"), "config", "core.editor", "vi"],
                   check=True)
    hook = os.path.join(ws, "mine", ".git", "hooks", "pre-commit")
    with open(hook, "w") as f:
        f.write("#!/bin/sh\nexit 0\n")
    os.chmod(hook, 0o755)
    common.open_to_all(tmp)
    time.sleep(0.05)
    plant = "; ".join([
        "git init -q fsmon && git -C fsmon config core.fsmonitor 'touch ran; false'",
        "mkdir -p deep/a && git init -q deep/a/b && printf '#!/bin/sh\\ntouch ran\\n' > "
        "deep/a/b/.git/hooks/pre-commit && chmod 755 deep/a/b/.git/hooks/pre-commit",
        "mkdir lnk && ln -s %s lnk/.git" % evil,
        "mkdir nlfile && printf 'gitdir: %s\\n' > nlfile/.git" % nl.replace("\n", "\\n"),
        "mkdir files lnkfile && printf 'gitdir: %s\\n' > files/gf && ln -s ../files/gf "
        "lnkfile/.git" % evil,
        "git init -q hooklink && rm -rf hooklink/.git/hooks && ln -s %s hooklink/.git/hooks"
        % hooks,
        "git init -q --bare tools/proj && git -C tools/proj config core.fsmonitor 'touch ran'",
        "git -C mine-changed config core.pager 'touch ran'",
        "git -C mine-clone checkout -q -b feat --track origin/master",
        "git init -q plain",
        "git clone -q %s cloned 2>/dev/null && git -C cloned config user.email me@x && "
        "git -C cloned config pull.rebase true && git -C cloned worktree add -q ../cwt" % src,
        "git worktree add -q wt 2>/dev/null",
        "git -c protocol.file.allow=always submodule add -q %s sm 2>/dev/null" % src,
        "echo planted=yes",
    ])
    audit = os.path.join(tmp, "audit.jsonl")
    out = subprocess.run(runnerd_cmd("generic", ["sh", "-c", plant], audit=audit),
                         env=common.base_env(), cwd=ws, capture_output=True, text=True,
                         timeout=60)
    check("nested repos: the command made them", "planted=yes" in out.stdout,
          out.stdout + out.stderr[-600:])
    moved = {"fsmon", "deep/a/b", "lnk", "nlfile", "lnkfile", "hooklink"}
    # The user's, changed: named (in the clone, its configuration now judged whole, the
    # user's core.editor with it), never moved.
    changed = {"mine-changed", "mine-clone"}
    kept = {"mine", "plain", "cloned", "cwt", "wt", "sm"}
    events = [json.loads(l) for l in open(audit) if l.strip()] if os.path.exists(audit) else []
    named = {os.path.relpath(os.path.dirname(e.get("path", "")), ws): e.get("new")
             for e in events if e.get("event") == "repository_made"}
    want = dict({d: True for d in moved | {"tools/proj"}}, **{d: False for d in changed})
    check("nested repos: each with what git runs named in the audit log (new, or the user's "
          "changed), and no other", named == want, repr(named))
    gone = {d for d in moved | changed | kept if not os.path.lexists(os.path.join(ws, d, ".git"))}
    check("nested repos: those made moved aside, the rest left", gone == moved, repr(gone))
    check("nested repos: the bare repository's shape, its HEAD moved aside",
          not os.path.lexists(os.path.join(ws, "tools", "proj", "HEAD")), repr(named))
    asides = [n for d in moved for n in os.listdir(os.path.join(ws, d))
              if n.startswith(".git.runnerd-")]
    check("nested repos: kept beside, under a name of their own", len(asides) == len(moved),
          repr(asides))
    check("nested repos: said on stderr",
          all("%s/.git is a git repository made during" % os.path.join(ws, d) in out.stderr
              for d in moved) and "%s/mine-changed/.git is a git repository that was there"
          % ws in out.stderr, out.stderr[-1500:])
    check("nested repos: a submodule added as git does it is not named as a gitlink",
          "%s/sm is a repository entered" % ws not in out.stderr, out.stderr[-1200:])


def test_fifo_index(tmp):
    """A command made the workspace's .git/index a FIFO (it is not protected) and a repository
    of its own with a core.fsmonitor: runnerd's own git (git ls-files, for the gitlinks, when
    the session ends) waited on the FIFO for ever, and runnerd with it, so that the repository
    was never moved aside (the build before; the test's timeout ended it). Now runnerd's git
    is stopped after 10 s, runnerd says so, and the end goes on."""
    os.chmod(tmp, 0o755)
    ws = os.path.join(tmp, "project")
    subprocess.run(["git", "init", "-q", ws], check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@x", "-C", ws, "commit",
                    "-q", "--allow-empty", "-m", "m"], check=True)
    common.open_to_all(tmp)
    plant = ("rm -f .git/index && mkfifo .git/index && git init -q fsmon && "
             "git -C fsmon config core.fsmonitor 'touch ran; false' && echo planted=yes")
    try:
        out = subprocess.run(runnerd_cmd("generic", ["sh", "-c", plant]), env=common.base_env(),
                             cwd=ws, capture_output=True, text=True, timeout=45)
    except subprocess.TimeoutExpired:
        check("fifo index: runnerd ends within 45 s", False, "it waited on the FIFO")
        subprocess.run(["pkill", "-KILL", "-f", "ls-files --stage -z"])
        return
    finally:
        # Whatever waits on the FIFO is let go.
        subprocess.run(["rm", "-f", os.path.join(ws, ".git", "index")])
    check("fifo index: the command made them", "planted=yes" in out.stdout,
          out.stdout + out.stderr[-600:])
    check("fifo index: runnerd says its git was stopped",
          "did not finish within 10 s" in out.stderr, out.stderr[-600:])
    check("fifo index: the repository made is moved aside all the same",
          not os.path.lexists(os.path.join(ws, "fsmon", ".git")), out.stderr[-600:])


def test_aider_config(tmp):
    """aider reads the project's .env, .aider.conf.yml and model settings at its start, and
    lets them replace what its environment has (OPENAI_API_BASE: where its key goes), so
    guarding names as for Gemini CLI does not hold. The aider profile protects them: an
    existing .env is read-only to commands (the build before let a command rewrite it), and
    one missing at the start that a command makes is named when the session ends."""
    os.chmod(tmp, 0o755)
    ws = os.path.join(tmp, "project")
    os.makedirs(ws)
    with open(os.path.join(ws, ".env"), "w") as f:
        f.write("OPENAI_API_BASE=https://api.openai.com/v1\n")
    common.open_to_all(ws)
    plant = ("sh -c 'echo OPENAI_API_BASE=http://127.0.0.1:9/v1 > .env' 2>/dev/null; "
             "echo env_rc=$?; sh -c 'echo openai-api-base: http://127.0.0.1:9/v1 > "
             ".aider.conf.yml'; echo conf_rc=$?")
    out = subprocess.run(runnerd_cmd("aider", ["sh", "-c", plant]), env=common.base_env(),
                         cwd=ws, capture_output=True, text=True, timeout=60)
    got = dict(l.split("=", 1) for l in out.stdout.splitlines() if "=" in l)
    check("aider config: the project's .env is read-only to commands",
          got.get("env_rc") not in (None, "0")
          and "127.0.0.1" not in open(os.path.join(ws, ".env")).read(),
          repr(got) + out.stderr[-300:])
    check("aider config: a .aider.conf.yml a command made is named when the session ends",
          "%s/.aider.conf.yml was made during this session" % ws in out.stderr,
          repr(got) + out.stderr[-500:])


def test_git_init_made(tmp):
    """A workspace with no repository at the start, where a command makes one. A plain git
    init (hook templates, git init's own config) is the agent's new project: nothing named,
    nothing moved. But a config that passes for git init's with a NUL in it (git reads past
    it: the build before counted it inert), or a .git that is a file naming a repository
    elsewhere (git init --separate-git-dir: the build before saw none of it), is named and
    moved aside when the session ends, and the user's git status runs nothing of it."""
    os.chmod(tmp, 0o755)
    cases = {
        "plain": "git init -q .",
        "nul": "git init -q . && printf \"[core]\\n\\tbare = false\\0\\n\\tfsmonitor = "
               "touch %s\\n\" > .git/config",
        "gitfile": "git init -q --separate-git-dir=$PWD/.hidden . && "
                   "git config core.fsmonitor \"touch %s\"",
    }
    for name, cmd in cases.items():
        ws = os.path.join(tmp, name)
        os.makedirs(ws)
        os.chmod(ws, 0o777)
        mark = os.path.join(tmp, name + "-ran")
        out = subprocess.run(runnerd_cmd("generic", ["sh", "-c", "sh -c '%s' && echo made=yes"
                                                     % (cmd % mark if "%s" in cmd else cmd)]),
                             env=common.base_env(), cwd=ws, capture_output=True, text=True,
                             timeout=60)
        subprocess.run(["git", "-C", ws, "status"], capture_output=True, text=True)
        if name == "plain":
            check("git init made: a plain git init is left as it is, nothing said",
                  "made=yes" in out.stdout and "was made during this session" not in out.stderr
                  and os.path.isfile(os.path.join(ws, ".git", "config"))
                  and os.path.isdir(os.path.join(ws, ".git", "hooks")),
                  out.stdout + out.stderr[-400:])
            continue
        check("git init made (%s): named and moved aside when the session ends" % name,
              "made=yes" in out.stdout and "was made during this session" in out.stderr,
              out.stdout + out.stderr[-400:])
        check("git init made (%s): the user's git status ran nothing of it" % name,
              not os.path.exists(mark), "it ran")


def test_workspace_option(tmp):
    """The project need not be where runnerd starts: --workspace DIR, or sandbox.workspace in
    runner.json ("~/..." allowed), makes DIR the writable workspace (its agent configuration
    protected) for an agent started elsewhere; without either, the directory runnerd starts in
    is. The workspace here lies in the home, outside every other writable root. The build
    before knew neither (an unknown option, an unknown key)."""
    home = pwd.getpwuid(os.getuid()).pw_dir
    ws = tempfile.mkdtemp(prefix="rd-ws-", dir=home)
    try:
        cfg = common.shipped_config()
        cfg["sandbox"]["workspace"] = "~/" + os.path.basename(ws)
        config = os.path.join(tmp, "runner.json")
        with open(config, "w") as f:
            json.dump(cfg, f)
        probe = ("sh -c 'touch %s/made-$0' $0 2>/dev/null; echo file=$?; "
                 "sh -c 'touch %s/.codex/x' 2>/dev/null; echo codex=$?" % (ws, ws))
        runs = {
            "--workspace": runnerd_cmd("generic", ["sh", "-c", probe, "a"],
                                       options=["--workspace", ws]),
            "sandbox.workspace": runnerd_cmd("generic", ["sh", "-c", probe, "b"], config=config),
            "none": runnerd_cmd("generic", ["sh", "-c", probe, "c"]),
        }
        got = {}
        for name, argv in runs.items():
            out = subprocess.run(argv, env=common.base_env(), cwd=tmp, capture_output=True,
                                 text=True, timeout=60)
            got[name] = (dict(l.split("=", 1) for l in out.stdout.splitlines() if "=" in l),
                         out.stderr[-300:])
        for name in ("--workspace", "sandbox.workspace"):
            res, err = got[name]
            check("workspace: with %s, a command writes in it" % name,
                  res.get("file") == "0", repr(res) + err)
            check("workspace: with %s, its .codex is made and read-only" % name,
                  res.get("codex") not in (None, "0")
                  and os.path.isdir(os.path.join(ws, ".codex")), repr(res) + err)
        res, err = got["none"]
        check("workspace: without either, a directory elsewhere stays read-only",
              res.get("file") not in (None, "0"), repr(res) + err)
        out = subprocess.run(runnerd_cmd("generic", ["true"], options=["--workspace",
                                                                       ws + "/missing"]),
                             env=common.base_env(), cwd=tmp, capture_output=True, text=True,
                             timeout=60)
        check("workspace: a missing one is an error that names it",
              out.returncode != 0 and "--workspace" in out.stderr
              and "missing" in out.stderr, out.stderr)
    finally:
        shutil.rmtree(ws, ignore_errors=True)


def test_cache_layers(tmp):
    """The caches (~/.cache and the like) are written through a layer of the session's: a
    command sees the user's files there and what earlier commands of the session wrote; the
    user's cache itself is never written (a command could plant code in a crate's source or a
    build cache that a build outside runs later: the build before wrote it), and the layer
    goes with the session. A command a rule grants a secret sees the cache as the user has it,
    without what commands wrote."""
    os.chmod(tmp, 0o755)
    home = pwd.getpwuid(os.getuid()).pw_dir
    os.makedirs(os.path.join(home, ".cache"), exist_ok=True)
    probe = tempfile.mkdtemp(prefix="rd-cache-", dir=os.path.join(home, ".cache"))
    try:
        with open(os.path.join(probe, "seen"), "w") as f:
            f.write("users\n")
        own, cat, pin = common.pinned_copy(tmp)
        prof = os.path.join(tmp, "layers.json")
        with open(prof, "w") as f:
            json.dump({"version": 1, "name": "layers", "agent": {"env_allow": ["GH_TOKEN"]},
                       "commands": {"default": "allow", "env_allow": [], "protect": [own],
                                    "rules": [{"match": {"path": cat}, "action": "allow",
                                               "env_allow": ["GH_TOKEN"], "sha256": pin}]}},
                      f)
        new = os.path.join(probe, "new")
        script = "; ".join([
            "sh -c 'cat %s/seen && echo planted > %s && echo wrote=$?'" % (probe, new),
            "sh -c 'echo later=$(cat %s)'" % new,
            "echo granted=$(%s %s 2>/dev/null || echo none)" % (cat, new),
            "echo granted_seen=$(%s %s/seen)" % (cat, probe),
        ])
        env = common.base_env()
        env["GH_TOKEN"] = "ghp_layers_canary"
        out = subprocess.run(runnerd_cmd(prof, ["bash", "-c", script]), env=env, cwd=tmp,
                             capture_output=True, text=True, timeout=60)
        got = dict(l.split("=", 1) for l in out.stdout.splitlines() if "=" in l)
        check("cache layers: a command reads the user's cache and writes over it",
              "users" in out.stdout and got.get("wrote") == "0", out.stdout + out.stderr[-400:])
        check("cache layers: a later command of the session sees what it wrote",
              got.get("later") == "planted", repr(got))
        check("cache layers: the user's cache was not written",
              not os.path.exists(new), "%s exists" % new)
        check("cache layers: a granted command sees the user's cache, not the layer",
              got.get("granted") == "none" and got.get("granted_seen") == "users", repr(got))
        layers = os.path.join(home, ".local", "state", "runnerd", "layers")
        left = os.listdir(layers) if os.path.isdir(layers) else []
        # Another session's (a test running beside this one) has a live runnerd.
        mine = [n for n in left if not os.path.exists("/proc/" + n.split("-")[0])]
        check("cache layers: the session's layer is gone when it ends", not mine, repr(mine))
    finally:
        shutil.rmtree(probe, ignore_errors=True)


LAYER_AGENT = r"""import os, subprocess, sys, time
probe, tmp = sys.argv[1], sys.argv[2]
def command(script):
    return subprocess.run(["sh", "-c", script], capture_output=True, text=True).stdout.strip()
open(tmp + "/wrote", "w").write(command("echo mine > %s/x && echo wrote" % probe))
while not os.path.exists(tmp + "/go"):
    time.sleep(0.05)
open(tmp + "/read", "w").write(command("cat %s/x && echo two > %s/y && cat %s/y 2>&1"
                                       % (probe, probe, probe)))
"""


def test_cache_layers_apart(tmp):
    """A session in a pid namespace of its own (a container that shares the home) has its
    caches' layers under ~/.local/state/runnerd/layers too, named by its pid there, which
    names another process here or none. The build before took them for a gone session's when
    another session started, and removed them under it: what its commands had written to a
    cache could not be written any more ("Directory nonexistent": its layer's upper directory
    was gone; as root, where its pid named no process here). Now a session's layers go only
    once no one holds the lock beside them."""
    os.chmod(tmp, 0o755)
    home = pwd.getpwuid(os.getuid()).pw_dir
    os.makedirs(os.path.join(home, ".cache"), exist_ok=True)
    probe = tempfile.mkdtemp(prefix="rd-apart-", dir=os.path.join(home, ".cache"))
    agent = os.path.join(tmp, "layer_agent.py")
    with open(agent, "w") as f:
        f.write(LAYER_AGENT)
    os.chmod(agent, 0o755)
    cmd = common.apart(runnerd_cmd("generic", [common.PY, agent, probe, tmp]), tmp)
    if not cmd:
        common.skip_part("cache layers apart: unshare (util-linux) is not installed")
        shutil.rmtree(probe, ignore_errors=True)
        return
    first = subprocess.Popen(cmd, env=common.base_env(), cwd=tmp, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
    try:
        wrote = common.wait_file(os.path.join(tmp, "wrote"), 30)
        second = subprocess.run(runnerd_cmd("generic", ["true"]), env=common.base_env(),
                                cwd=tmp, capture_output=True, text=True, timeout=60)
        open(os.path.join(tmp, "go"), "w").close()
        first.wait(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
        shutil.rmtree(probe, ignore_errors=True)
    said = {n: open(os.path.join(tmp, n)).read() for n in ("wrote", "read")
            if os.path.exists(os.path.join(tmp, n))}
    check("cache layers apart: a session in a pid namespace of its own writes its cache's "
          "layer", wrote and said.get("wrote") == "wrote" and second.returncode == 0,
          repr(said) + first.stderr.read()[-300:] + second.stderr[-300:])
    check("cache layers apart: after another session started, its commands still read what "
          "they wrote there, and write more", said.get("read") == "mine\ntwo", repr(said))


def test_rule_view(tmp):
    """A rule's own "write" and "protect": tee may write a directory of the home that is
    read-only to every other command (touch), but not a path the profile protects in it; cp
    may not write a directory of /tmp that every other command may, nor make a protected
    directory written with a "/" at its end that is missing at the start (runnerd makes it,
    empty; the build before did not, and cp made it and wrote in it), also one named with
    "{uid}" or lying in the rule's own root (for which a later build before refused every cp,
    126, as it found them missing)."""
    os.chmod(tmp, 0o755)
    home = pwd.getpwuid(os.getuid()).pw_dir
    d = os.path.join(home, ".rdtest-rule-" + os.urandom(4).hex())
    d2, d3 = d + "-2", d + "-3"
    os.makedirs(d2)
    os.makedirs(d3)
    locked = os.path.join(d, "locked")
    prot = os.path.join(tmp, "prot")
    os.makedirs(locked)
    os.makedirs(prot)
    os.chmod(prot, 0o777)
    tee, cp, dd = (os.path.realpath(shutil.which(n)) for n in ("tee", "cp", "dd"))
    prof = common.write_profile(tmp, "ruleview", {
        "default": "allow", "protect": [locked, d2 + "/autostart"],
        "rules": [{"match": {"path": tee}, "action": "allow", "write": [d]},
                  {"match": {"path": cp}, "action": "allow", "write": [d3],
                   "protect": [prot, os.path.join(tmp, "gh") + "/",
                               os.path.join(tmp, "gh-{uid}") + "/", d3 + "/sub/"]},
                  # A protected path missing in the rule's root: the command could make it.
                  {"match": {"path": dd}, "action": "allow", "write": [d2]}]})
    uid_dir = os.path.join(tmp, "gh-%d" % os.getuid())
    steps = [
        "echo a | tee %s/f >/dev/null && echo tee=written" % d,
        "touch %s/g 2>/dev/null; echo \"touch_rc=$?\"" % d,
        "echo a | tee %s/f >/dev/null 2>&1; echo \"locked_rc=$?\"" % locked,
        "cp /etc/hostname %s/x 2>/dev/null; echo \"cp_rc=$?\"" % prot,
        "cp -r %s %s 2>/dev/null; echo \"cpdir_rc=$?\"" % (prot, os.path.join(tmp, "gh")),
        "cp -r %s %s 2>/dev/null; echo \"cpuid_rc=$?\"" % (prot, uid_dir),
        "cp -r %s %s/sub 2>/dev/null; echo \"cpown_rc=$?\"" % (prot, d3),
        "sh -c 'echo y > %s/y' && echo sh=written" % prot,
        "dd if=/dev/null of=%s/autostart 2>/dev/null; echo \"dd_rc=$?\"" % d2,
    ]
    try:
        # Started in tmp: the workspace, not the home.
        out = subprocess.run(runnerd_cmd(prof, ["bash", "-c", "; ".join(steps)]), cwd=tmp,
                             env=common.base_env(), capture_output=True, text=True, timeout=60)
        tee_wrote = os.path.exists(os.path.join(d, "f"))
        touched = os.path.exists(os.path.join(d, "g"))
        in_locked = os.path.exists(os.path.join(locked, "f"))
        made = os.path.exists(os.path.join(d2, "autostart"))
        own = os.path.join(d3, "sub")
        own_made = os.path.isdir(own) and not os.listdir(own)
    finally:
        for x in (d, d2, d3):
            shutil.rmtree(x, ignore_errors=True)
    got = dict(l.split("=", 1) for l in out.stdout.splitlines() if "=" in l)
    check("rule view: a rule's \"write\" makes a directory of the home writable to it",
          got.get("tee") == "written" and tee_wrote, repr(got) + out.stderr[-400:])
    check("rule view: other commands still find it read-only",
          got.get("touch_rc") not in (None, "0") and not touched, repr(got))
    check("rule view: a path the profile protects stays read-only inside the rule's root",
          got.get("locked_rc") not in (None, "0") and not in_locked, repr(got))
    check("rule view: a rule's \"protect\" makes a writable directory read-only to it",
          got.get("cp_rc") not in (None, "0") and not os.path.exists(os.path.join(prot, "x")),
          repr(got))
    check("rule view: other commands may still write there", got.get("sh") == "written",
          repr(got) + out.stderr[-300:])
    check("rule view: a missing directory a rule protects is made, empty, and read-only to it",
          got.get("cpdir_rc") not in (None, "0") and os.path.isdir(os.path.join(tmp, "gh"))
          and not os.listdir(os.path.join(tmp, "gh")), repr(got))
    check("rule view: so is one named with {uid}, and one in the rule's own root; the rule's "
          "command runs (the build before refused it, 126, for those missing)",
          got.get("cpuid_rc") == "1" and os.path.isdir(uid_dir) and not os.listdir(uid_dir)
          and got.get("cpown_rc") == "1" and own_made, repr(got))
    check("rule view: a rule whose root holds a missing protected path is refused (126)",
          got.get("dd_rc") == "126" and not made, repr(got))


# Root-level services that would do anything a command asks, as root: their sockets are masked
# (a read-only mount does not stop a connect()).
ROOT_SOCKETS = ["/run/docker.sock", "/run/containerd/containerd.sock", "/run/podman/podman.sock",
                "/run/systemd/private", "/run/dbus/system_bus_socket"]


def test_root_sockets(tmp):
    """A command cannot connect to the root-level deputies' sockets. As root, the test listens
    at each path that is free (and removes it after); a path the machine has is checked as it
    is."""
    import socket
    made, dirs = [], []
    try:
        for path in ROOT_SOCKETS:
            if os.path.exists(path) or os.geteuid() != 0:
                continue
            if not os.path.isdir(os.path.dirname(path)):
                os.mkdir(os.path.dirname(path), 0o755)
                dirs.append(os.path.dirname(path))
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(path)
            s.listen(8)
            made.append((path, s))
        paths = [p for p in ROOT_SOCKETS if os.path.exists(p)]
        if not paths:
            # Unprivileged, on a machine that runs none of these services: nothing to reach.
            print("n/a  root sockets: none exists, and only root can make them")
            return
        probe = ("import socket, sys\n"
                 "for p in sys.argv[1:]:\n"
                 "    s = socket.socket(socket.AF_UNIX)\n"
                 "    try:\n"
                 "        s.connect(p)\n"
                 "        print(p + '=connected')\n"
                 "    except OSError as e:\n"
                 "        print(p + '=' + type(e).__name__)\n")
        probe_file = os.path.join(tmp, "connect.py")
        with open(probe_file, "w") as f:
            f.write(probe)
        os.chmod(tmp, 0o755)
        os.chmod(probe_file, 0o644)
        # The probe is a command: the agent (bash) runs it.
        cmd = "%s %s %s; true" % (common.PY, probe_file, " ".join(paths))
        out = subprocess.run(runnerd_cmd("generic", ["bash", "-c", cmd]),
                             env=common.base_env(), capture_output=True, text=True, timeout=60)
    finally:
        for path, s in made:
            s.close()
            os.unlink(path)
        for d in reversed(dirs):
            os.rmdir(d)
    got = dict(l.split("=", 1) for l in out.stdout.splitlines() if "=" in l)
    for p in paths:
        check("root sockets: %s is out of reach (%s)" % (p, got.get(p)),
              got.get(p) not in (None, "connected"), out.stdout + out.stderr[-300:])


def test_config_in_workspace(tmp):
    """A config file kept in the project (runnerd --config ./runner.json): the file stays
    read-only to commands, the project around it writable. The build before protected the
    config's whole directory: every write in the project failed with EROFS."""
    ws = os.path.join(tmp, "project")
    os.makedirs(ws)
    os.chmod(tmp, 0o755)
    os.chmod(ws, 0o777)
    cfg = common.shipped_config()
    path = os.path.join(ws, "runner.json")
    with open(path, "w") as f:
        json.dump(cfg, f)
    os.chmod(path, 0o644)
    out = subprocess.run(
        runnerd_cmd("generic", ["sh", "-c", "touch made && echo made=0; "
                                "sh -c 'echo x >> runner.json' 2>/dev/null; echo cfg=$?"],
                    config=path),
        env=common.base_env(), cwd=ws, capture_output=True, text=True, timeout=60)
    check("config in the workspace: the project stays writable", "made=0" in out.stdout
          and os.path.exists(os.path.join(ws, "made")), out.stdout + out.stderr[-300:])
    check("config in the workspace: the config file stays read-only",
          "cfg=0" not in out.stdout and "cfg=" in out.stdout, out.stdout)


def test_proc_hidden(tmp):
    """Where the sandbox's uid 0 is the machine's root, what /proc shows of the machine beyond
    the sandbox's pid namespace reads empty to a command: its timers with their processes' pids
    and names (/proc/timer_list), its users' keys and key counts (/proc/keys, /proc/key-users).
    Before, root's commands read all three. Elsewhere the files stay, for a command's own
    sandbox to mount a /proc of its own (the kernel refuses one while a file of /proc is
    covered): as an unprivileged user, unshare --mount-proc works in a command, which failed
    while the files were covered in every sandbox."""
    if os.geteuid() == 0:
        files = [f for f in ("/proc/timer_list", "/proc/keys", "/proc/key-users")
                 if os.path.exists(f)]
        script = "; ".join("echo %s $(cat %s 2>/dev/null | wc -c)" % (f, f) for f in files)
        out = subprocess.run(runnerd_cmd("generic", ["sh", "-c", script]),
                             env=common.base_env(), capture_output=True, text=True, timeout=60)
        got = dict(l.split() for l in out.stdout.splitlines() if len(l.split()) == 2)
        check("proc: %s read nothing in a root command" % ", ".join(files),
              files and sorted(got) == sorted(files) and all(v == "0" for v in got.values()),
              out.stdout + out.stderr)
        return
    script = "unshare -Urpf --mount-proc sh -c 'echo pid=$$ $(ls /proc | grep -c ^[0-9])'"
    out = subprocess.run(runnerd_cmd("generic", ["sh", "-c", script]), env=common.base_env(),
                         capture_output=True, text=True, timeout=60)
    check("proc: a command mounts a /proc of its own (unshare --mount-proc)",
          out.returncode == 0 and "pid=1 " in out.stdout, out.stdout + out.stderr)


def main():
    common.require_runnerd()
    return common.run_tests((test_view, test_stores, test_run_user_exceptions, test_cwd_hidden,
                             test_writes, test_protected_created, test_worktree_dotgit,
                             test_hooks_path, test_git_head, test_gitlink_config,
                             test_nested_repos, test_fifo_index, test_aider_config, test_git_init_made,
                             test_workspace_option, test_cache_layers, test_cache_layers_apart,
                             test_rule_view, test_root_sockets,
                             test_config_in_workspace, test_proc_hidden), "rd-view-")


if __name__ == "__main__":
    sys.exit(main())
