#!/usr/bin/env python3
"""The command's view of the machine, attacked by a command as a prompt-injected agent would
run it (docs/threat-model.md, "The command's view of the machine"):

- no real root: a root command writes /proc/sys/kernel/core_pattern = "|payload" and crashes a
  process; the kernel would run the payload as root of the machine. The probe tries it for
  real; the test restores core_pattern, whatever happened. /proc/sysrq-trigger, /sys: read-only.
  The command is in a user namespace that is not the machine's, also when runnerd is root.
- its own /dev: a few device nodes, its own devpts (a terminal outside, held open by the test,
  is out of reach) and its own /dev/shm (a POSIX shm file outside is out of reach);
- its own System V IPC: a shared memory segment and a message queue made outside, each with a
  canary, are out of reach.

Run as root and, by unprivileged.sh, as an unprivileged user (where the kernel's own checks
already refuse a part of it). Environment: RUNNERD, RUNNERD_CONFIG, HELPERS, RUNNERD_MUST_WORK.
"""
import ctypes
import os
import subprocess
import sys
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
    check("view: /sys is read-only (%s)" % got["sys_write"],
          got["sys_readonly"] is True and got["sys_write"] == "EROFS")
    check("view: the command's user namespace is not its caller's (%s)" % got["userns"],
          got["userns"] != os.readlink("/proc/self/ns/user"))
    want = {"null", "zero", "full", "random", "urandom", "ptmx", "fd", "stdin", "stdout",
            "stderr", "pts", "shm"} | ({"tty"} if os.path.exists("/dev/tty") else set())
    check("view: /dev holds only the sandbox's own", set(got["dev"]) == want,
          "extra %s, missing %s" % (sorted(set(got["dev"]) - want),
                                    sorted(want - set(got["dev"]))))
    check("view: nothing can be made in /dev (%s)" % got["dev_write"],
          got["dev_write"] == "EROFS")
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


def main():
    common.require_runnerd()
    return common.run_tests((test_view,), "rd-view-")


if __name__ == "__main__":
    sys.exit(main())
