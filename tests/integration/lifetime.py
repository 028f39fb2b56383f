#!/usr/bin/env python3
"""The command's session, process group and lifetime, on the real kernel:

- signals: nothing a command does with kill reaches a process outside its sandbox (its own
  group, -1, every group it can name); the agent's group signals to a stub reach the command;
- background processes outlive the command that started them and are reached by later
  commands; the session's end leaves nothing; "lifetime": "command" ends them with their
  command; timeout_s ends the whole sandbox; a session's live sandboxes are bounded;
- runnerd ps lists the live sandboxes of the user's sessions;
- the command's cwd is one the kernel reports as reachable (a static musl program's getcwd).

Environment: RUNNERD, RUNNERD_MUST_WORK. Prints one line per check and "N passed, M failed".
"""
import json
import os
import signal
import socket
import subprocess
import sys
import time

import common
from common import check, runnerd_cmd

RUN = ".%d" % os.getpid()


def start_session(argv, profile="generic", config=None, **kw):
    """runnerd in a session of its own: a command that signals its process group must not be
    able to reach this script through it, whatever runnerd does."""
    return subprocess.Popen(runnerd_cmd(profile, argv, config=config), env=common.base_env(),
                            start_new_session=True, **kw)


def test_signals(tmp):
    p = start_session([common.PY, common.agent("signals_agent.py")], stdout=subprocess.PIPE,
                      stderr=subprocess.PIPE, text=True)
    try:
        out, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
    check("signals: runnerd survives its commands' kill(0), kill(-1), kill(-PGID)",
          p.returncode == 0, "status %s: %s" % (p.returncode, err[-400:]))
    res = common.agent_json("signals: the agent reports", out, err)
    if res is None:
        return
    check("signals: no signal of a command reaches the agent", res["got"] == [],
          repr(res["got"]))
    check("signals: the agent's killpg of a command's session reaches the command",
          res["group"] == ["ready", "TERM", 7], repr(res["group"]))


def main():
    common.require_runnerd()
    tests = (test_signals,)
    return common.run_tests(tests, "rd-life-")


if __name__ == "__main__":
    sys.exit(main())
