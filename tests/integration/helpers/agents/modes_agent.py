"""An agent on a terminal that checks its terminal's modes around two ends of a command: one
that makes its terminal raw and dies by SIGKILL, and one whose runnerd is SIGKILLed meanwhile
(the test kills runnerd once it reads "sleeping"). Prints what it found."""
import subprocess
import sys
import termios

before = termios.tcgetattr(0)
subprocess.run(["bash", "-c", "stty raw -echo; kill -KILL $$"])
print("after the kill:", "same" if termios.tcgetattr(0) == before else "changed", flush=True)
# Said by the command itself: its stub relays its terminal (raw) by the time the test reads it.
subprocess.run(["sh", "-c", "echo sleeping; exec sleep 30"])
print("after runnerd died:", "same" if termios.tcgetattr(0) == before else "changed",
      flush=True)
print("all done", flush=True)
