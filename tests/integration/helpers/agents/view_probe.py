"""Run as a command: what it sees of the machine, and what it can change, as JSON on stdout.

argv: a directory of the test's; the System V shm key and message queue key a process outside
made, each with a canary in it; the name of a POSIX shm file outside; the path of a terminal
outside (the master of a pseudo-terminal the test holds opened it). It tries the attacks of a
hostile command and reports what happened:
- core_pattern: it writes "|DIR/payload" there and crashes a child, which would have the
  kernel run the payload as root of the machine (the test restores the value either way);
- sysrq: opens /proc/sysrq-trigger for writing (writes nothing);
- proc_readonly: whether /proc/fs, /proc/acpi, /proc/scsi, /proc/asound are read-only;
- /sys, /dev: whether it can write, what is there, whether the device nodes work;
- System V shm and message queues, POSIX shm, the terminal: whether it reaches them.
"""
import ctypes
import errno
import json
import os
import signal
import sys

tmp, shm_key, msg_key, posix_shm, tty_path = sys.argv[1:6]
out = {}


def err(e):
    return errno.errorcode.get(e.errno, str(e.errno))


path = "/proc/sys/kernel/core_pattern"
try:
    with open(path, "w") as f:
        f.write("|%s/payload %%p\n" % tmp)
    out["core_pattern"] = "written"
    pid = os.fork()
    if pid == 0:
        os.kill(os.getpid(), signal.SIGSEGV)
        os._exit(0)
    os.waitpid(pid, 0)
except OSError as e:
    out["core_pattern"] = err(e)
try:
    os.close(os.open("/proc/sysrq-trigger", os.O_WRONLY))
    out["sysrq"] = "opened"
except OSError as e:
    out["sysrq"] = err(e)
for name in ("sys", "dev", "dev/.runnerd"):
    try:
        open("/%s/runnerd-probe" % name, "w").close()
        out[name + "_write"] = "written"
    except OSError as e:
        out[name + "_write"] = err(e)
out["sys_readonly"] = bool(os.statvfs("/sys").f_flag & os.ST_RDONLY)
# /proc's directories whose files the machine's root may write by mode alone: read-only?
out["proc_readonly"] = {d: bool(os.statvfs(d).f_flag & os.ST_RDONLY)
                        for d in ("/proc/fs", "/proc/acpi", "/proc/scsi", "/proc/asound")
                        if os.path.isdir(d)}
out["dev"] = sorted(os.listdir("/dev"))
out["dev_bin"] = sorted(os.listdir("/dev/.runnerd")) if os.path.isdir("/dev/.runnerd") else None
try:
    open("/dev/.runnerd/git", "a").close()
    out["dev_bin_git_write"] = "written"
except OSError as e:
    out["dev_bin_git_write"] = err(e)
out["pts"] = sorted(os.listdir("/dev/pts"))
try:
    with open("/dev/null", "wb") as f:
        f.write(b"x")
    out["devices"] = [len(open(p, "rb").read(16)) for p in
                      ("/dev/zero", "/dev/urandom", "/dev/random")]
except OSError as e:
    out["devices"] = err(e)
try:
    with open("/dev/shm/probe", "w") as f:
        f.write("x")
    os.unlink("/dev/shm/probe")
    out["dev_shm"] = "ok"
except OSError as e:
    out["dev_shm"] = err(e)
try:
    out["posix_shm"] = open("/dev/shm/" + posix_shm).read()
except OSError as e:
    out["posix_shm"] = err(e)
try:
    fd = os.open(tty_path, os.O_RDWR | os.O_NOCTTY)
    os.close(fd)
    out["tty"] = "opened"
except OSError as e:
    out["tty"] = err(e)

libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
shmid = libc.shmget(int(shm_key), 0, 0)
if shmid < 0:
    out["sysv_shm"] = errno.errorcode.get(ctypes.get_errno(), "?")
else:
    addr = libc.shmat(shmid, None, 0o10000)  # SHM_RDONLY
    out["sysv_shm"] = ctypes.string_at(addr, 64).split(b"\0")[0].decode(errors="replace") \
        if addr not in (None, ctypes.c_void_p(-1).value) else "attach failed"
qid = libc.msgget(int(msg_key), 0)
if qid < 0:
    out["sysv_msg"] = errno.errorcode.get(ctypes.get_errno(), "?")
else:
    buf = ctypes.create_string_buffer(128)
    n = libc.msgrcv(qid, buf, 64, 0, 0o4000)  # IPC_NOWAIT
    out["sysv_msg"] = buf.raw[8:8 + max(n, 0)].decode(errors="replace") if n >= 0 else \
        "receive failed: " + errno.errorcode.get(ctypes.get_errno(), "?")
out["userns"] = os.readlink("/proc/self/ns/user")
print(json.dumps(out))
