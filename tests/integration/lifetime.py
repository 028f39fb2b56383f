#!/usr/bin/env python3
"""The command's session, process group and lifetime, on the real kernel:

- signals: nothing a command does with kill reaches a process outside its sandbox (its own
  group, -1, every group it can name); the agent's group signals to a stub reach the command;
- background processes outlive the command that started them and are reached by later
  commands, also after the agent killed the command; the session's end leaves nothing;
  "lifetime": "command" ends them with their
  command; timeout_s ends the whole sandbox; a session's live sandboxes are bounded;
- a command's stops: continued from inside its sandbox, or by its caller many times over;
  runnerd's marks to a sandbox's pid 1 cannot be forged from inside;
- runnerd ps lists the user's sessions and their live sandboxes; runnerd kill ends a session,
  its agent, the agent's orphans and every sandbox, at once, audited with who asked;
- execs_per_second bounds the commands a session starts: EAGAIN beyond it, said once;
- the command's cwd is one the kernel reports as reachable (a static musl program's getcwd).

Environment: RUNNERD, RUNNERD_MUST_WORK. Prints one line per check and "N passed, M failed".
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import common  # noqa: E402
from common import check, runnerd_cmd  # noqa: E402

RUN = ".%d" % os.getpid()


def start_session(argv, profile="generic", config=None, audit=None, **kw):
    """runnerd in a session of its own: a command that signals its process group must not be
    able to reach this script through it, whatever runnerd does."""
    return subprocess.Popen(runnerd_cmd(profile, argv, config=config, audit=audit),
                            env=common.base_env(), start_new_session=True, **kw)


def test_signals(tmp):
    p = start_session([common.PY, common.agent("signals_agent.py")], stdout=subprocess.PIPE,
                      stderr=subprocess.PIPE, text=True)
    out, err = common.finish(p)
    check("signals: runnerd survives its commands' kill(0), kill(-1), kill(-PGID)",
          p.returncode == 0, "status %s: %s" % (p.returncode, err[-400:]))
    res = common.agent_json("signals: the agent reports", out, err)
    if res is None:
        return
    check("signals: no signal of a command reaches the agent", res["got"] == [],
          repr(res["got"]))
    check("signals: the agent's killpg of a command's session reaches the command",
          res["group"] == ["ready", "TERM", 7], repr(res["group"]))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def background(tmp, profile, wait, name):
    """bg_agent.py under profile: a server left in the background by one command, tried by the
    next ones. Returns its report, and whether the server is gone once runnerd is."""
    serve = os.path.join(tmp, "served" + RUN)
    os.mkdir(serve)
    p = start_session([common.PY, common.agent("bg_agent.py"), str(free_port()), serve,
                       str(wait)], profile=profile, audit=os.path.join(tmp, name + ".jsonl"),
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = common.finish(p, timeout=90)
    res = common.agent_json(name + ": the agent reports", out, err)
    gone = common.gone_within(serve, 10)
    return res, gone, p.returncode


def test_background(tmp):
    res, gone, rc = background(tmp, "generic", 0.5, "background")
    if res:
        check("background: a server a command left behind is reached by the next command",
              res["start"] == [0, "started"] and res["first"] == "200", repr(res))
        check("background: ... and by a command a while later", res["last"] == "200",
              repr(res))
    check("background: runnerd exits with the agent", rc == 0, str(rc))
    check("background: the session's end leaves nothing running", gone, "server still running")
    events = [json.loads(l) for l in open(os.path.join(tmp, "background.jsonl"))]
    server = [e["id"] for e in events if e["event"] == "exec" and e["argv"][0] == "sh"]
    ends = [(e["id"], e["reason"]) for e in events if e["event"] == "sandbox_end"]
    check("background: the audit has the end of the sandbox that outlived its command, and "
          "only that one", ends == [(server[0] if server else -1, "the agent exited")],
          repr(ends))


def killed_command(tmp, name, argv_of, wait_gone):
    """kill_agent.py, started by argv_of(agent argv): its report, whether the command's main
    process was gone after the kill, and whether the server is gone once it all ends."""
    serve = os.path.join(tmp, name + RUN)
    os.mkdir(serve)
    secs = "4%d%d" % (len(name), os.getpid() % 100000)
    p = subprocess.Popen(argv_of([common.PY, common.agent("kill_agent.py"), str(free_port()),
                                  serve, secs]), env=common.base_env(), start_new_session=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        common.wait_file(os.path.join(serve, "killed"), 60)
        main_gone = common.gone_within("sleep\x00" + secs, 5)
        open(os.path.join(serve, "stop"), "w").close()
        out, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        main_gone = False
    res = common.agent_json("killed: the agent reports", out, err)
    gone = common.gone_within(serve, wait_gone)
    if not gone:
        subprocess.run(["pkill", "-f", serve])
    return res, main_gone, gone


def test_killed_command(tmp):
    """The agent SIGKILLs its command (its stub): the command's main process dies, what it
    left in the background runs on, as without runnerd (before, the whole sandbox went)."""
    plain, _, _ = killed_command(tmp, "plain", lambda argv: argv, 0)  # its server left: killed
    res, main_gone, gone = killed_command(tmp, "runnerd",
                                          lambda argv: runnerd_cmd("generic", argv), 10)
    if not plain or not res:
        return
    check("killed: without runnerd, the background server outlives its killed parent "
          "(the test's own check)", plain == {"rc": -9, "before": "200", "after": "200"},
          repr(plain))
    check("killed: the caller sees its command killed; the server it left runs on",
          res == plain, "runnerd %r, plain %r" % (res, plain))
    check("killed: the command's main process is gone", main_gone, "sleep still running")
    check("killed: the session's end leaves nothing running", gone, "server still running")


def stops(mode, *args, under=True):
    argv = [common.PY, common.agent("stops_agent.py"), mode] + list(args)
    p = subprocess.Popen(runnerd_cmd("generic", argv) if under else argv,
                         env=common.base_env(), start_new_session=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = common.finish(p, timeout=90)
    return common.agent_json("stops %s: the agent reports" % mode, out, err)


def test_stops(tmp):
    """A command's stops are its caller's to see, and its own to get out of: a command continued
    by a process of its sandbox goes on for its caller too (before, the stub stayed stopped
    and the caller hung); a flood of stops, each continued by the caller, ends as without
    runnerd, and at once though something of it lives on (before, the end was lost in the
    stub's full queue until the background process ended)."""
    plain, under = stops("inside", under=False), stops("inside")
    check("stops: a command continued from inside its sandbox goes on, for its caller too",
          under is not None and under == plain and plain["status"] == 7,
          "runnerd %r, plain %r" % (under, plain))
    plain, under = stops("flood", "500", under=False), stops("flood", "500")
    check("stops: 500 stops, each continued by the caller, then an end at once",
          under is not None and under == plain and plain["stops"] == 500,
          "runnerd %r, plain %r" % (under, plain))


def test_marks_unforgeable(tmp):
    """A command queues to its pid 1 the SIGTERMs runnerd once marked with a value (a
    timeout's, a kill's, the session's end): none of them ends it or changes what its caller
    sees (before, its caller saw 124, the timeout's status)."""
    res = stops("forge")
    check("marks: a command cannot pass for runnerd's timeout or kill",
          res == {"status": 0, "out": "after\n"}, repr(res))


def test_marks_not_drowned(tmp):
    """A process of the command signals its pid 1 without end: runnerd's requests still get
    through (before, runnerd's signal merged with a pending one from inside, which pid 1
    dropped: a forwarded SIGUSR1 never reached the command, and a command whose caller was
    killed lived on)."""
    os.chmod(tmp, 0o777)
    res = stops("drown", tmp)
    if res:
        check("marks: a signal passed on reaches the command, its pid 1 flooded with it",
              res["passed on"] == -signal.SIGUSR1, repr(res))
        check("marks: a command whose caller was killed dies, its pid 1 flooded with SIGTERM",
              res["survived"] is False, repr(res))


def test_lifetime_command(tmp):
    prof = common.write_profile(tmp, "oneshot", {"default": "allow", "lifetime": "command"})
    res, gone, rc = background(tmp, prof, 0.5, "lifetime command")
    if res:
        check("lifetime command: what a command leaves behind ends with it",
              res["start"] == [0, "started"] and res["first"] != "200" and
              res["last"] != "200", repr(res))
    check("lifetime command: nothing left", gone, "server still running")


def test_timeout_ends_sandbox(tmp):
    # 5 s: the server (a Python) must answer first, on a loaded machine too.
    prof = common.write_profile(tmp, "timed", {"default": "allow", "timeout_s": 5,
                                               "kill_grace_s": 1})
    res, gone, rc = background(tmp, prof, 7, "timeout")
    if res:
        check("timeout: the server runs at first", res["first"] == "200", repr(res))
        check("timeout: timeout_s ends the sandbox, background processes included",
              res["last"] not in ("200", ""), repr(res))
    check("timeout: nothing left", gone, "server still running")


def test_ps_and_limit(tmp):
    """runnerd ps lists the sandboxes background processes keep; a session with as many as
    its max_sandboxes allows gets EAGAIN for the next command, and one line saying why."""
    prof = common.write_profile(tmp, "few", {"default": "allow", "max_sandboxes": 3})
    mark = "9." + str(os.getpid())
    p = start_session([common.PY, common.agent("ps_agent.py"), tmp, mark], profile=prof,
                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        ready = common.wait_file(os.path.join(tmp, "ready"), 30)
        check("ps: the agent left three sandboxes", ready)
        ps = subprocess.run([common.RUNNERD, "ps", "--json"], env=common.base_env(),
                            capture_output=True, text=True, timeout=30)
        mine = []
        try:
            for sess in json.loads(ps.stdout):
                if sess.get("pid") == p.pid:
                    mine = sess["sandboxes"]
        except ValueError:
            pass
        check("ps: runnerd ps --json lists them, each ended with its sleep left",
              len(mine) == 3 and all(s["state"] == "ended" and s["status"] == 0 and
                                     s["processes"] == 1 and s["argv"][0] == "sh"
                                     for s in mine), ps.stdout + ps.stderr)
        text = subprocess.run([common.RUNNERD, "ps"], env=common.base_env(),
                              capture_output=True, text=True, timeout=30).stdout
        check("ps: runnerd ps says the same in words",
              text.count("ended (status 0), 1 process left") >= 3 and
              "$ sh -c 'sleep 60%s & echo started'" % mark in text, text)
        open(os.path.join(tmp, "go"), "w").close()
        common.wait_file(os.path.join(tmp, "report"), 30)
        try:
            last = json.load(open(os.path.join(tmp, "report")))["last"]
        except (OSError, ValueError):
            last = "(no report)"
        check("limit: the next command fails with EAGAIN", last == "errno 11", last)
    finally:
        _, err = common.finish(p, os.path.join(tmp, "go"))
    check("limit: runnerd says once why (three commands refused)",
          err.count("max_sandboxes allows") == 1, err)
    check("limit: the session's end leaves nothing", common.gone_within("sleep\x0060" + mark, 10),
          "a sleep is left")


def pid_alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def test_kill(tmp):
    """runnerd kill SESSION (a prefix of its ID, as ps shows it): the agent, a command still
    running, a background process left in a sandbox and an orphan of the agent's all end at
    once, runnerd exits as its killed agent did, and the audit says who asked."""
    mark = "8." + str(os.getpid())
    audit = os.path.join(tmp, "audit.jsonl")
    orphan = 0
    p = start_session([common.PY, common.agent("session_kill_agent.py"), tmp, mark],
                      audit=audit, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        ready = common.wait_file(os.path.join(tmp, "ready"), 30)
        check("kill: the agent has a background sandbox, a running command and an orphan",
              ready)
        if ready:
            orphan = int(open(os.path.join(tmp, "orphan")).read() or 0)
        ps = subprocess.run([common.RUNNERD, "ps", "--json"], env=common.base_env(),
                            capture_output=True, text=True, timeout=30)
        mine = {}
        try:
            mine = [s for s in json.loads(ps.stdout) if s.get("pid") == p.pid][0]
        except (ValueError, IndexError):
            pass
        check("kill: runnerd ps shows the session, its agent and what it started",
              mine.get("agent_running") is True and mine.get("commands_started") == 2 and
              mine.get("sandboxes_live") == 2 and mine.get("uptime_s", -1) >= 0 and
              mine.get("where", "").startswith(("on ", "in ")) and
              os.path.basename(mine.get("agent", "")).startswith("python3"),
              ps.stdout + ps.stderr)
        text = subprocess.run([common.RUNNERD, "ps"], env=common.base_env(),
                              capture_output=True, text=True, timeout=30).stdout
        sid = mine.get("session", "")
        check("kill: runnerd ps says it in words",
              ("session %s  profile generic" % sid[:8]) in text and
              "2 commands started, 2 sandboxes alive" in text, text)
        k = subprocess.run([common.RUNNERD, "kill", sid[:6] or "none"],
                           env=common.base_env(), capture_output=True, text=True, timeout=30)
        check("kill: runnerd kill SESSION says what it ended",
              k.returncode == 0 and "killed session %s: SIGKILL to 3 processes of the "
              "agent's and 2 sandboxes" % sid[:8] in k.stdout, k.stdout + k.stderr)
        try:
            rc = p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            rc = None
        check("kill: runnerd ends as its agent did, by SIGKILL", rc in (-9, 137), repr(rc))
        # before finish(), which would signal the session runnerd was started in
        check("kill: the agent's orphan (a session of its own) is gone",
              orphan > 0 and
              common.wait_for(lambda: not pid_alive(orphan), 10, 0.02) is not None,
              "pid %d" % orphan)
    finally:
        _, err = common.finish(p)
        if orphan > 0 and pid_alive(orphan):
            os.kill(orphan, signal.SIGKILL)  # failed above; nothing is left behind
    check("kill: runnerd says who ended the session",
          "killed by runnerd kill from uid %d" % os.getuid() in err, err)
    check("kill: the background sleep and the running command are gone",
          common.gone_within("sleep\x00300" + mark, 10) and
          common.gone_within("sleep\x00301" + mark, 10), "a sleep is left")
    events = [json.loads(line) for line in open(audit)] if os.path.exists(audit) else []
    kills = [e for e in events if e.get("event") == "session_kill"]
    check("kill: audited with who asked",
          len(kills) == 1 and kills[0]["by_uid"] == os.getuid() and
          kills[0]["by_comm"] == "runnerd" and kills[0]["sandboxes"] == 2 and
          kills[0]["processes"] == 3, repr(kills))
    again = subprocess.run([common.RUNNERD, "kill", sid[:6] or "none"], env=common.base_env(),
                           capture_output=True, text=True, timeout=30)
    check("kill: a session that has ended is no longer found",
          again.returncode == 1 and "no running session" in again.stderr,
          again.stdout + again.stderr)


def test_rate(tmp):
    """execs_per_second: a burst beyond it fails with EAGAIN (each refusal audited, said once on
    stderr); a second later commands run again."""
    prof = common.write_profile(tmp, "rate", {"default": "allow", "execs_per_second": 5})
    audit = os.path.join(tmp, "audit.jsonl")
    script = ("import subprocess, time\n"
              "n = 0\n"
              "for i in range(12):\n"
              "    try:\n"
              "        n += subprocess.run(['/bin/true']).returncode == 0\n"
              "    except BlockingIOError:\n"
              "        pass\n"
              "print('ran', n)\n"
              "time.sleep(1.2)\n"
              "print('again' if subprocess.run(['/bin/true']).returncode == 0 else 'no')\n")
    r = subprocess.run(runnerd_cmd(prof, [common.PY, "-c", script], audit=audit),
                       env=common.base_env(), capture_output=True, text=True, timeout=60)
    check("rate: 5 of a burst of 12 run, then after a second commands run again",
          r.stdout == "ran 5\nagain\n", r.stdout + r.stderr)
    check("rate: runnerd says once why",
          r.stderr.count("faster than its execs_per_second (5) allows") == 1, r.stderr)
    events = [json.loads(line) for line in open(audit)] if os.path.exists(audit) else []
    refused = [e for e in events if e.get("event") == "refused" and e.get("errno") == "EAGAIN"]
    check("rate: each refusal is audited with EAGAIN and the reason",
          len(refused) == 7 and all("execs_per_second" in e["reason"] for e in refused),
          repr(refused[:2]))


GETCWD_C = r"""
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
int main(void)
{
	char buf[4096];
	if (!getcwd(buf, sizeof(buf))) {
		printf("getcwd: %s\n", strerror(errno));
		return 1;
	}
	printf("%s\n", buf);
	return 0;
}
"""


def test_cwd_musl(tmp):
    """A static musl program's getcwd: musl fails where the kernel reports the cwd as
    "(unreachable)", as it did for a cwd entered by an fd of runnerd's mount namespace."""
    cc = shutil.which("musl-gcc")
    if not cc:
        common.skip_part("cwd: musl-gcc is not installed (apt-get install musl-tools)")
        return
    src, exe = os.path.join(tmp, "getcwd.c"), os.path.join(tmp, "getcwd")
    with open(src, "w") as f:
        f.write(GETCWD_C)
    subprocess.run([cc, "-static", "-O2", "-o", exe, src], check=True)
    work = os.path.join(tmp, "some dir")
    os.mkdir(work)
    os.chmod(tmp, 0o755)
    os.chmod(work, 0o755)
    out = subprocess.run(runnerd_cmd("generic", ["sh", "-c", exe]), env=common.base_env(),
                         cwd=work, capture_output=True, text=True, timeout=60)
    check("cwd: a musl program's getcwd gives the caller's cwd", out.stdout == work + "\n",
          repr(out.stdout + out.stderr))


def main():
    common.require_runnerd()
    tests = (test_signals, test_background, test_killed_command, test_stops,
             test_marks_unforgeable, test_marks_not_drowned, test_lifetime_command,
             test_timeout_ends_sandbox, test_ps_and_limit, test_kill, test_rate,
             test_cwd_musl)
    return common.run_tests(tests, "rd-life-")


if __name__ == "__main__":
    sys.exit(main())
