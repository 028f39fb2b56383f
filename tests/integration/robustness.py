#!/usr/bin/env python3
"""runnerd under churn and at its limits, on the real kernel:

- callers killed in the middle of their handoff, hundreds of times: runnerd holds no fd more
  than before, says nothing about ptrace (a caller gone is not ptrace forbidden), audits no
  command that ran as refused, and the next command runs;
- a sandbox that could not be made ahead of time for a while (runnerd out of fds) is made
  again once it can be, rather than never for the rest of the session;
- a caller with many fds to pass on, under a low limit, has its commands; at runnerd's fd
  limit the caller gets the kernel's errno (EMFILE), not EPERM, and runnerd
  says so once, not once per exec;
- the stub that stands in for a command is named as the command (its comm), as a child that
  exec'd the command would be.

Environment: RUNNERD, RUNNERD_MUST_WORK. Prints one line per check and "N passed, M failed".
"""
import json
import os
import shutil
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import common  # noqa: E402
from common import check, runnerd_cmd  # noqa: E402

RUN = ".%d" % os.getpid()


def fd_count(pid):
    try:
        return len(os.listdir("/proc/%d/fd" % pid))
    except OSError:
        return -1


def test_churn(tmp):
    log = os.path.join(tmp, "audit.jsonl")
    p = subprocess.Popen(runnerd_cmd("generic", [common.PY, common.agent("churn_agent.py"), tmp,
                                                 "300"], audit=log),
                         env=common.base_env(), stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        check("churn: the first command runs", common.wait_file(os.path.join(tmp, "started"), 30))
        common.wait_for(lambda: len(spares(p.pid)) >= 1, 10)  # the spare made after it
        time.sleep(0.3)  # and the first command's sandbox back, if it comes back
        before, waiting = fd_count(p.pid), len(spares(p.pid))
        open(os.path.join(tmp, "go"), "w").close()
        common.wait_file(os.path.join(tmp, "report"), 120)
        try:
            rep = json.load(open(os.path.join(tmp, "report")))
        except (OSError, ValueError):
            rep = {}
        ran_on = rep.get("last") == [0, "alive"]
        try:
            where = open(os.path.join(tmp, "progress")).read()
        except OSError:
            where = "not started"
        # The sandboxes of the killed callers reaped, and the spare made again. Up to two
        # sandboxes wait for the next command (one made ahead of time, one whose command ended
        # alone), each with at most 4 fds of runnerd's (pidfd, plan socket, status and setup
        # pipes): one more than before may hold that many more.
        def settled():
            extra = max(0, len(spares(p.pid)) - waiting)
            return 0 < fd_count(p.pid) <= before + 4 * extra and 1 <= len(spares(p.pid)) <= 2
        common.wait_for(settled, 10)
        after = fd_count(p.pid) - 4 * max(0, len(spares(p.pid)) - waiting)
    finally:
        _, err = common.finish(p, os.path.join(tmp, "done"))
    check("churn: after 300 callers killed mid-handoff the next command runs", ran_on,
          "report %r; the agent was at: %s; runnerd said: %s" % (rep, where, err[-600:]))
    check("churn: runnerd holds no more fds than before the churn (%d, then %d, less the "
          "sandboxes waiting beyond the %d before)" % (before, after, waiting),
          before > 0 and after <= before, "")
    check("churn: no word of ptrace being forbidden (a caller gone is not that)",
          "cannot ptrace" not in err, err[-600:])
    events = [json.loads(l) for l in open(log)] if os.path.exists(log) else []
    caught = [e for e in events if e.get("event") in ("gone", "handoff_failed")]
    check("churn: some callers were killed between their trap and their handoff's end (%d)" %
          len(caught), caught, "the churn tested nothing: no gone or handoff_failed in the audit")
    ran = {e["id"] for e in events if e.get("event") == "exit" and "status" in e}
    wrong = [e for e in events if e.get("event") == "refused" and e.get("id") in ran]
    check("churn: no command that ran is audited as refused", not wrong, repr(wrong[:3]))
    bogus = [e for e in events if e.get("event") == "refused" and
             "cannot be traced" in e.get("reason", "")]
    check("churn: no refusal says the caller cannot be traced", not bogus, repr(bogus[:3]))


def test_comm(tmp):
    argv = [common.PY, common.agent("comm_agent.py")]
    plain = subprocess.run(argv, env=common.base_env(), capture_output=True, text=True,
                           timeout=60).stdout
    under = subprocess.run(runnerd_cmd("generic", argv), env=common.base_env(),
                           capture_output=True, text=True, timeout=60).stdout
    check("comm: the stub is named as the command, by path and by fd (as without runnerd)",
          under == plain and "by path: sleep" in plain, "plain %r, runnerd %r" % (plain, under))


def test_emfile(tmp):
    """runnerd out of fds (a low RLIMIT_NOFILE, a caller with many to pass on): the caller
    gets EMFILE, the kernel's errno for it, and runnerd says so once."""
    prlimit = shutil.which("prlimit")
    if not prlimit:
        check("emfile: prlimit (util-linux) is there", False)
        return
    # 52 of the agent's own 64: room for its pipes, not for runnerd's copies of them all.
    argv = [prlimit, "--nofile=64:64"] + runnerd_cmd(
        "generic", [common.PY, common.agent("emfile_agent.py"), "52"])
    out = subprocess.run(argv, env=common.base_env(), capture_output=True,
                         text=True, timeout=60)
    res = common.agent_json("emfile: the agent reports", out.stdout, out.stderr)
    if res is None:
        return
    check("emfile: commands fail with EMFILE while runnerd is out of fds, then run",
          res == ["errno 24", "errno 24", "errno 24", "ran 0"], repr(res))
    check("emfile: runnerd says so once, not once a command",
          out.stderr.count("Too many open files") == 1, out.stderr)


def test_near_limit(tmp):
    """A caller with half of runnerd's fd limit open to pass on: its commands run. The fds
    are put at their numbers in place (before, each was copied above the highest first, so
    the sandbox needed twice as many and the exec failed)."""
    prlimit = shutil.which("prlimit")
    if not prlimit:
        check("near limit: prlimit (util-linux) is there", False)
        return
    argv = [prlimit, "--nofile=64:64"] + runnerd_cmd(
        "generic", [common.PY, common.agent("emfile_agent.py"), "30"])
    out = subprocess.run(argv, env=common.base_env(), capture_output=True, text=True,
                         timeout=60)
    res = common.agent_json("near limit: the agent reports", out.stdout, out.stderr)
    if res is not None:
        check("near limit: a caller with 30 fds to pass on under a limit of 64 has its commands",
              res == ["ran 0"] * 4, repr(res) + out.stderr[-400:])


def spares(pid):
    """Sandboxes made ahead of time: runnerd's live children named runnerd with no process in
    them (a sandbox in use has its command's; one ending is a zombie)."""
    return [k for k in common.children(pid)
            if common.comm(k) == "runnerd" and common.alive(k) and not common.children(k)]


def test_spare_comes_back(tmp):
    """runnerd out of fds for a while (a low RLIMIT_NOFILE, and commands running that it holds
    a few for each), so the sandbox made ahead of time for the next command cannot be made.
    Once the commands end and the fds are free, one is made again, with no exec to prompt it
    (before, spares stayed off for the rest of the session)."""
    prlimit = shutil.which("prlimit")
    if not prlimit:
        check("spare: prlimit (util-linux) is there", False)
        return
    # Sandboxes that end with their commands: none comes back to wait for the next command,
    # which would stand for the spare made again.
    prof = common.write_profile(tmp, "fill", {"default": "allow", "lifetime": "command"})
    p = subprocess.Popen([prlimit, "--nofile=64:64"] +
                         runnerd_cmd(prof, [common.PY, common.agent("fill_agent.py"), tmp]),
                         env=common.base_env(), stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        full = os.path.join(tmp, "full")
        ok = common.wait_file(full, 60)
        n, err = open(full).read().split() if ok else ("0", "-")
        check("spare: commands ran until runnerd was out of fds, then EMFILE",
              int(n) > 0 and err == "24", "%s ran, errno %s" % (n, err))
        time.sleep(0.5)
        check("spare: none is there while runnerd is out of fds", not spares(p.pid),
              repr(spares(p.pid)))
        open(os.path.join(tmp, "free"), "w").close()
        common.wait_file(os.path.join(tmp, "freed"), 60)
        check("spare: one is made again once it can be, by itself",
              common.wait_for(lambda: len(spares(p.pid)) == 1, 70), repr(spares(p.pid)))
        open(os.path.join(tmp, "run"), "w").close()
        ok = common.wait_file(os.path.join(tmp, "ran"), 30)
        rc = open(os.path.join(tmp, "ran")).read() if ok else "(none)"
        check("spare: the next command runs", rc == "0", rc)
    finally:
        _, err = common.finish(p, os.path.join(tmp, "stop"))
    check("spare: runnerd said once that none could be made, and why",
          err.count("could not be made ahead of time (") == 1 and
          err.count("Too many open files") == 2, err)


def main():
    common.require_runnerd()
    tests = (test_churn, test_comm, test_emfile, test_near_limit, test_spare_comes_back)
    return common.run_tests(tests, "rd-robust-")


if __name__ == "__main__":
    sys.exit(main())
