"""The pty_agent.py conversation with tty_probe.py, driven by pexpect (which forks onto a
pty as pty.fork does). argv: the probe's command line."""
import sys

import pexpect

child = pexpect.spawn(sys.argv[1], sys.argv[2:], dimensions=(24, 80), encoding="utf-8",
                      timeout=15)
out = []
child.expect_exact("resize me")
out.append(child.before + child.after)
child.setwinsize(33, 101)
child.expect_exact("type a line")
out.append(child.before + child.after)
child.sendline("hello there")
child.expect_exact("now ^C")
out.append(child.before + child.after)
child.sendintr()
child.expect(pexpect.EOF)
out.append(child.before)
child.close()
ended = ("signal %d" % child.signalstatus if child.signalstatus is not None
         else "status %d" % child.exitstatus)
sys.stdout.write("".join(out).replace("\r\n", "\n") + "ended: " + ended + "\n")
