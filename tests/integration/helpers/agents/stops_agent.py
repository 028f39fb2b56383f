"""An agent whose command stops itself (SIGSTOP), in two ways; prints JSON: how it ended, and
the stops it saw. argv: MODE [N].

- inside: the command stops, and a process of its own continues it 0.3 s later; the agent
  just waits (subprocess.run), as most do.
- flood N: the command stops N times, and the agent continues it each time, as a shell's job
  control would; then it leaves a process behind for 30 s and exits 3.
- forge: the command queues runnerd's old marks (a timeout's, a kill's) to its pid 1 with
  rt_sigqueueinfo and exits 0.
- drown DIR: a process of the command's sends its pid 1 SIGUSR1, then SIGTERM, without end,
  so that runnerd's own signals to it merge with theirs. The agent sends its command SIGUSR1
  (to be passed on), then kills the caller of a second one outright (its command's main
  process must die with it, before it writes DIR/survived)."""
import ctypes
import json
import os
import signal
import subprocess
import sys
import time

mode = sys.argv[1]
t0 = time.monotonic()
if mode == "inside":
    r = subprocess.run(["/bin/sh", "-c", "(sleep 0.3; kill -CONT $$) & kill -STOP $$; "
                        "echo resumed; exit 7"], capture_output=True, text=True, timeout=20)
    print(json.dumps({"status": r.returncode, "out": r.stdout}))
elif mode == "drown":
    d = sys.argv[2]
    flood = ("%s -c 'import os, sys\nwhile True: os.kill(1, int(sys.argv[1]))' %%d & " %
             sys.executable)
    p = subprocess.Popen(["/bin/sh", "-c", flood % signal.SIGUSR1 + "exec sleep 30"])
    time.sleep(1.0)
    os.kill(p.pid, signal.SIGUSR1)
    try:
        passed_on = p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        passed_on = "still running"
        p.kill()
        p.wait()
    survived = os.path.join(d, "survived")
    p = subprocess.Popen(["/bin/sh", "-c", flood % signal.SIGTERM +
                          "sleep 3; echo > %s" % survived])
    time.sleep(1.0)
    p.kill()
    p.wait()
    time.sleep(4.0)
    print(json.dumps({"passed on": passed_on, "survived": os.path.exists(survived)}))
elif mode == "flood":
    n = int(sys.argv[2])
    p = subprocess.Popen(["/bin/sh", "-c", "i=0; while [ $i -lt %d ]; do kill -STOP $$; "
                          "i=$((i+1)); done; sleep 30 & exit 3" % n])
    stops = 0
    while True:
        _, st = os.waitpid(p.pid, os.WUNTRACED)
        if os.WIFSTOPPED(st):
            stops += 1
            os.kill(p.pid, signal.SIGCONT)
            continue
        break
    took = time.monotonic() - t0
    print(json.dumps({"status": os.waitstatus_to_exitcode(st), "stops": stops,
                      "before the background process": took < 25}))
elif mode == "forge":
    forge = ("import ctypes, sys\n"
             "libc = ctypes.CDLL(None, use_errno=True)\n"
             "class SI(ctypes.Structure):\n"
             "    _fields_ = [('signo', ctypes.c_int), ('errno', ctypes.c_int),\n"
             "                ('code', ctypes.c_int), ('pad', ctypes.c_int),\n"
             "                ('pid', ctypes.c_int), ('uid', ctypes.c_int),\n"
             "                ('val', ctypes.c_long), ('rest', ctypes.c_byte * 96)]\n"
             "for mark in (0x74696d65, 0x6b696c6c, 0x656e6473):\n"
             "    si = SI(signo=15, code=-1, pid=0, uid=0, val=mark)\n"
             "    libc.syscall(129, 1, 15, ctypes.byref(si))\n"
             "import time; time.sleep(0.5); print('after')\n")
    r = subprocess.run([sys.executable, "-c", forge], capture_output=True, text=True,
                       timeout=20)
    print(json.dumps({"status": r.returncode, "out": r.stdout}))
