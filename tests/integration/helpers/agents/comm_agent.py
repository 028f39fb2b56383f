"""An agent that reads the name (comm) of its running child, for a path and for an exec by fd
(os.execve of an fd, as fexecve). Prints one line each: the name once the child's exec is done
(its name no longer the agent's, nor that of a file runnerd has not renamed yet), within 5 s."""
import os
import signal
import subprocess
import time

own = open("/proc/self/comm").read().strip()


def name_of(pid):
    end = time.monotonic() + 5
    name = own
    while (name == own or name.startswith("memfd:")) and time.monotonic() < end:
        time.sleep(0.02)
        name = open("/proc/%d/comm" % pid).read().strip()
    return name


p = subprocess.Popen(["sleep", "10"])
print("by path:", name_of(p.pid))
p.kill()
p.wait()
fd = os.open("/bin/sleep", os.O_RDONLY)
pid = os.fork()
if pid == 0:
    os.execve(fd, ["sleep", "10"], {})
print("by fd:", name_of(pid))
os.kill(pid, signal.SIGKILL)
os.waitpid(pid, 0)
