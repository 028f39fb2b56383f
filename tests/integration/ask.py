#!/usr/bin/env python3
"""Approvals ("ask" rules) on the real kernel, end to end.

An agent (Python, whose subprocess uses vfork) runs commands that a profile sends for approval
while this script answers them as the operator would, with `runnerd pending`, `runnerd approve`
and `runnerd deny`, and once on a terminal (--prompt, through a pty). Checked:
- the caller is handed to the stub at once: the agent runs other commands while one waits;
- approved -> the command runs, with the caller's stdio and exit status;
- denied or timed out -> one line on the caller's stderr, exit status 126;
- one answer wins: a late answer is refused, naming the first;
- a signal to the waiting caller, or its death, withdraws the ask;
- the agent itself, and its commands, cannot answer: the socket is refused to them and hidden
  from the sandbox;
- the control socket is 0600 in a 0700 directory; the audit has every decision and who made it.

Environment: RUNNERD (binary), RUNNERD_MUST_WORK. As a non-root user, XDG_RUNTIME_DIR must be
set (the control socket lives there). Prints one line per check and "N passed, M failed" last.
The agent programs it runs are in helpers/agents/; the helpers all the scripts share in
common.py.
"""
import errno
import json
import os
import pty
import select
import signal
import socket
import stat
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import common  # noqa: E402
from common import (ITEST_CONFIG, PY, RUNNERD, agent_json, base_env, check,  # noqa: E402
                    control_dir, runnerd_cmd, wait_file, wait_for, write_profile)


def cli(*args):
    return subprocess.run([RUNNERD] + list(args), env=base_env(), capture_output=True, text=True,
                          timeout=30)


def pending(session):
    """The pending asks of one session (by its id), as runnerd pending --json gives them."""
    p = cli("pending", "--json")
    if p.returncode != 0:
        return None
    for s in json.loads(p.stdout):
        if s["session"] == session:
            return s["pending"]
    return []


def full_id(session, n):
    """A request's ID as runnerd pending prints it."""
    return "%s-%d" % (session[:8], n)


def reap(proc):
    """A session the test gave up on does not outlive it."""
    if proc.poll() is None:
        proc.kill()
        proc.communicate()


def start_session(tmp, prof, agent_argv):
    """Start runnerd on the agent's command line with an audit log in tmp; returns the
    process and the log's path."""
    log = os.path.join(tmp, "audit.jsonl")
    proc = subprocess.Popen(runnerd_cmd(prof, agent_argv, config=ITEST_CONFIG, audit=log),
                            env=base_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    return proc, log


def session_of(log):
    def get():
        try:
            for line in open(log):
                e = json.loads(line)
                if e["event"] == "session_start":
                    return e["session"]
        except (OSError, ValueError):
            return None
    return wait_for(get)


def listed_without(session, n):
    """True once the session's pending list was read and request n is not in it (a list that
    could not be read proves nothing)."""
    entries = pending(session)
    return entries is not None and not any(e["id"] == n for e in entries)


def waiting(session, argv):
    """The pending entry whose argv is argv, once it shows."""
    def get():
        for e in pending(session) or []:
            if e["argv"] == argv:
                return e
    return wait_for(get)


def marker(tmp, name):
    """True once tmp/name exists (within 15 s)."""
    return wait_file(os.path.join(tmp, name), 15)


def asks_profile(tmp):
    return write_profile(tmp, "asks", {"default": "allow", "rules": [
        {"description": "arithmetic needs a human",
         "match": {"path": "expr", "args": ["**"]}, "action": "ask"},
        {"match": {"path": "seq", "args": ["**"]}, "action": "ask", "ask_timeout_s": 1}]})


def test_answers(tmp):
    prof = asks_profile(tmp)
    proc, log = start_session(tmp, prof, [PY, common.agent("ask_agent.py"), tmp,
                                          control_dir()])
    try:
        session = session_of(log)
        check("ask: the session starts", session is not None, "")
        sock = os.path.join(control_dir(), session + ".sock")
        st = os.stat(sock) if os.path.exists(sock) else None
        dst = os.stat(control_dir())
        check("ask: the control socket is 0600 in a 0700 directory, both runnerd's",
              st is not None and stat.S_IMODE(st.st_mode) == 0o600 and
              stat.S_IMODE(dst.st_mode) == 0o700 and st.st_uid == os.geteuid() and
              dst.st_uid == os.geteuid(), repr(st))

        e = waiting(session, ["expr", "6", "*", "7"])
        check("ask: the waiting command is listed with its path, cwd and rule",
              e is not None and e["resolved"].endswith("/expr") and e["rule"] == 0 and
              e["description"] == "arithmetic needs a human" and e["cwd"] == os.getcwd() and
              0 < e["expires_in_s"] <= 60, repr(e))
        check("ask: the caller is handed off at once: the agent runs other commands meanwhile",
              marker(tmp, "during-done"), "")
        # The ID as pending prints it.
        text = cli("pending").stdout
        sid = full_id(session, e["id"]) if e else "?"
        check("ask: runnerd pending prints SESSION-N and the command line, each word as a "
              "shell reads it back", sid in text and "$ expr 6 '*' 7" in text, text)
        a = cli("approve", sid)
        check("ask: runnerd approve answers", a.returncode == 0 and "approved " + sid in a.stdout,
              a.stdout + a.stderr)

        d = waiting(session, ["expr", "1", "+", "1"])
        deny = cli("deny", str(d["id"])) if d else None
        check("ask: runnerd deny answers (N alone, with one session running)",
              deny is not None and deny.returncode == 0, deny.stderr if deny else "")
        marker(tmp, "denied-done")
        late = cli("approve", full_id(session, d["id"])) if d else None
        check("ask: a late answer is refused, naming the first one",
              late is not None and late.returncode == 1 and "already answered" in late.stderr
              and "denied by uid %d" % os.geteuid() in late.stderr,
              (late.stdout + late.stderr) if late else "")
        unknown = cli("approve", full_id(session, 999))
        check("ask: an unknown request is refused clearly",
              unknown.returncode == 1 and "no request 999" in unknown.stderr, unknown.stderr)
        open(os.path.join(tmp, "late-done"), "w").close()

        t = waiting(session, ["expr", "9"])
        open(os.path.join(tmp, "term-now"), "w").close()
        gone = wait_for(lambda: t and listed_without(session, t["id"]))
        check("ask: a signal to the waiting caller withdraws the ask", gone is not None, "")
        k = waiting(session, ["expr", "8"])
        open(os.path.join(tmp, "kill-now"), "w").close()
        gone = wait_for(lambda: k and listed_without(session, k["id"]))
        check("ask: the caller's death withdraws the ask", gone is not None, "")

        s = waiting(session, ["expr", "5"])
        with open(os.path.join(tmp, "self-id"), "w") as f:
            f.write(str(s["id"] if s else 0))
        open(os.path.join(tmp, "self-now"), "w").close()
        # The agent tries on its own first; then the operator denies.
        tried = marker(tmp, "self-tried")
        still = pending(session) or []
        check("ask: the agent's own answer changed nothing",
              tried and s is not None and any(x["id"] == s["id"] for x in still),
              repr(still))
        if s:
            cli("deny", full_id(session, s["id"]))
        out_text, err_text = proc.communicate(timeout=60)
    finally:
        reap(proc)
    out = agent_json("ask: the agent ran to its end", out_text, err_text)
    if out is None:
        return
    check("ask: an approved command runs with the caller's stdout and status",
          out["approved"] == [0, "42"], repr(out["approved"]))
    check("ask: a command not matched by the rule ran while the other waited",
          out["during"][:2] == [0, "meanwhile"], repr(out["during"]))
    check("ask: denied -> exit 126 and one line on the caller's stderr",
          out["denied"][0] == 126 and out["denied"][1] == "" and
          out["denied"][2].startswith("runnerd: ") and "denied by uid" in out["denied"][2] and
          "\n" not in out["denied"][2], repr(out["denied"]))
    check("ask: no answer within ask_timeout_s -> exit 126, the reason is the timeout",
          out["timeout"][0] == 126 and "no answer within 1 s" in out["timeout"][2],
          repr(out["timeout"]))
    check("ask: a caller terminated while waiting dies by its signal",
          out["terminated"] == -signal.SIGTERM, repr(out["terminated"]))
    check("ask: a caller killed while waiting is just dead", out["killed"] == -signal.SIGKILL,
          repr(out["killed"]))
    # Every session has a control socket (runnerd ps): sockets of sessions that are gone
    # (runnerd killed, unable to remove its own) refuse the connection.
    live = [r for r in out["self"] if r.get("oserror") != errno.ECONNREFUSED]
    check("ask: the agent cannot answer its own ask on the socket",
          live and all(not r.get("ok", False) and
                       "from outside the session" in r.get("error", "") for r in live),
          repr(out["self"]))
    check("ask: ... and the operator's deny still counts", out["self_result"][0] == 126,
          repr(out["self_result"]))
    check("ask: a command sees no control socket (the directory is masked)",
          out["command_sees"][:2] == [0, "0"], repr(out["command_sees"]))

    events = [json.loads(l) for l in open(log)]
    dec = {}
    for ev in events:
        if ev["event"] == "decision":
            dec.setdefault(ev["id"], []).append(ev)
    answers = [d[-1].get("answer") for d in dec.values() if d[0].get("action") == "ask"]
    check("ask: the audit has a decision for every ask, pending then its answer",
          sorted(answers) == sorted(["approve", "deny", "timeout", "withdrawn", "withdrawn",
                                     "deny"]) and
          all(d[0].get("state") == "pending" for d in dec.values() if d[0]["action"] == "ask"),
          repr(answers))
    by = [d[-1] for d in dec.values() if d[-1].get("answer") == "approve"]
    check("ask: the approval names who answered (uid, pid) and when it was asked",
          by and by[0]["by"]["via"] == "socket" and by[0]["by"]["uid"] == os.geteuid() and
          by[0]["by"]["pid"] > 0 and by[0]["asked_at"].endswith("Z") and
          by[0]["waited_ms"] > 0, repr(by))
    withdrawn = sorted(d[-1].get("reason", "") for d in dec.values()
                       if d[-1].get("answer") == "withdrawn")
    check("ask: withdrawals say why", withdrawn == ["the caller died", "the caller got SIGTERM"],
          repr(withdrawn))
    allows = [d for d in dec.values() if d[0].get("action") == "allow"]
    check("ask: allowed commands get a decision event too", len(allows) >= 2, repr(allows))
    refused = [ev for ev in events if ev["event"] == "control_refused"]
    check("ask: the refused connection is audited", len(refused) >= 1 and
          "outside the session" in refused[0]["reason"], repr(refused))
    check("ask: the socket is gone when the session ends",
          not os.path.exists(os.path.join(control_dir(), session + ".sock")), "")


def test_node(tmp):
    """Node's child_process (libuv) as the caller: its event loop runs while the ask waits."""
    node = "/usr/bin/node" if os.access("/usr/bin/node", os.X_OK) else None
    if not node:
        check("node: /usr/bin/node is installed (make test installs nodejs)", False, "")
        return
    prof = asks_profile(tmp)
    proc, log = start_session(tmp, prof, [node, common.agent("ask_node_agent.js"), tmp])
    try:
        session = session_of(log)
        e = waiting(session, ["expr", "3", "+", "4"]) if session else None
        ticking = marker(tmp, "node-ticking")
        check("node: the agent's event loop runs while its spawn waits for approval",
              e is not None and ticking, repr(e))
        if e:
            cli("approve", full_id(session, e["id"]))
        out, err = proc.communicate(timeout=60)
    finally:
        reap(proc)
    try:
        res = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        res = {}
    check("node: the approved command's output and status reach the agent",
          res.get("code") == 0 and res.get("out") == "7" and res.get("ticks", 0) >= 5,
          out + err)


def test_prompt(tmp):
    """--prompt: the ask shows on the terminal; y runs it, anything else denies; a command line
    too long to show whole can only be denied there; the agent cannot type the answer."""
    prof = asks_profile(tmp)
    agent = common.agent("prompt_agent.py")
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(tmp)  # where a "touch pwned" that ran would leave its file
        os.execve(RUNNERD, runnerd_cmd(prof, [PY, agent], config=ITEST_CONFIG,
                                       options=["--prompt"]), base_env())
    seen = b""
    # (what must have shown, how many times, what the operator types then). The first answer
    # comes twice, as a double Enter would: the second line must not answer the next prompt.
    script = [(b"[y/N]", 1, b"y\ry\r"), (b"[y/N]", 2, b"nope\r"),
              (b"too long to check here", 1, b"y\r"),
              (b"not all of it was shown", 1, b"n\r")]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        r, _, _ = select.select([fd], [], [], 0.5)
        if not r:
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
        if script and seen.count(script[0][0]) >= script[0][1]:
            os.write(fd, script.pop(0)[2])
    os.waitpid(pid, 0)
    text = seen.decode(errors="replace")
    check("prompt: the agent cannot type into the terminal (TIOCSTI gets EPERM)",
          "TIOCSTI errno 1" in text, text[:400])
    check("prompt: the terminal shows the command, the program that runs, its cwd and the rule",
          "$ expr 2 + 3" in text and "program: /usr/bin/expr" in text and
          ("in: " + tmp) in text and "arithmetic needs a human" in text, text[-800:])
    check("prompt: a line typed before a prompt showed does not answer it",
          "RESULT 0 8" not in text and "RESULT 126" in text, text[-800:])
    check("prompt: y runs it", "RESULT 0 5" in text, text[-800:])
    check("prompt: any other answer denies (126)", "RESULT 126" in text and
          "denied on the terminal" in text, text[-800:])
    check("prompt: a command line too long to show whole cannot be approved there",
          "more bytes not shown" in text and "not all of it was shown" in text and
          text.count("RESULT 126") == 2 and not os.path.exists(os.path.join(tmp, "pwned")),
          text[-600:])
    check("prompt: the caller's bytes never reach the terminal raw", "\x1b[2J" not in text
          and "\\x1b[2J" in text, repr(text[-300:]))


def test_control_hardening(tmp):
    """The control socket under pressure: the agent's refused connections, an idle client,
    a caller's argv full of terminal controls or too big to list, a peer in other namespaces."""
    prof = asks_profile(tmp)
    proc, log = start_session(tmp, prof, [PY, common.agent("harden_agent.py"), tmp,
                                          control_dir()])
    try:
        session = session_of(log)
        marker(tmp, "asked")
        both = wait_for(lambda: len(pending(session) or []) == 2)
        check("hardening: the operator lists asks while the agent holds 30 connections",
              both is not None, repr(pending(session)))
        text = cli("pending")
        check("hardening: pending prints no terminal control from the caller's argv",
              "\x1b" not in text.stdout and "\u202e" not in text.stdout and
              "\\x1b]52" in text.stdout and "\\xe2\\x80\\xae" in text.stdout,
              repr(text.stdout))
        entries = pending(session) or []
        big = [e for e in entries if e["argv"][0] == "expr" and e["argv"][1].startswith("xxx")]
        check("hardening: a 120 KB argument is listed cut short, and says so",
              big and len(big[0]["argv"][1]) == 512 and big[0]["argv_truncated"],
              repr([len(a) for e in entries for a in e["argv"]]))
        idle = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        idle.connect(os.path.join(control_dir(), session + ".sock"))
        idle.settimeout(10)  # runnerd's deadline is 2 s: the answer must come before this
        try:
            got = json.loads(idle.recv(65536))
        except (OSError, ValueError) as e:
            got = {"error": repr(e)}
        check("hardening: a connection that sends nothing is answered and dropped in seconds",
              "no request within" in got.get("error", ""),
              repr(got))
        idle.close()
        if entries:
            # Unmapped, it is no uid runnerd knows inside: point it at the directory.
            ns_env = dict(base_env(), XDG_RUNTIME_DIR=os.path.dirname(control_dir()))
            ns = subprocess.run(["unshare", "--user", "--pid", "--fork", RUNNERD, "approve",
                                 full_id(session, entries[0]["id"])], env=ns_env,
                                capture_output=True, text=True, timeout=30)
            check("hardening: a peer in other namespaces (as every sandbox is) is refused",
                  ns.returncode == 1 and "other namespaces" in ns.stderr, ns.stderr)
        for e in entries:
            cli("deny", full_id(session, e["id"]))
        out, err = proc.communicate(timeout=60)
    finally:
        reap(proc)
    check("hardening: both asks end denied", "RESULTS 126 126" in out, out + err)
    refused = [json.loads(l) for l in open(log) if '"control_refused"' in l]
    check("hardening: refused connections are audited, a bounded number of times",
          0 < len(refused) <= 21, str(len(refused)))


def test_prompt_tiocsti(tmp):
    """--prompt with a rule whose commands have no seccomp profile: they could type the answer
    (TIOCSTI), so runnerd refuses to start unless the kernel keeps TIOCSTI from them."""
    path = write_profile(tmp, "notiocsti", {"default": "allow", "rules": [
        {"match": {"path": "strace"}, "action": "allow", "seccomp": "none"},
        {"match": {"path": "rm"}, "action": "ask"}]})
    try:
        legacy = open("/proc/sys/dev/tty/legacy_tiocsti").read().strip()
    except OSError:
        legacy = "1"
    p = subprocess.run(runnerd_cmd(path, ["true"], config=ITEST_CONFIG, options=["--prompt"]),
                       env=base_env(), capture_output=True, text=True, timeout=30)
    if legacy == "0":
        check("prompt: seccomp none is fine where the kernel refuses TIOCSTI",
              "TIOCSTI" not in p.stderr, p.stderr)
    else:
        check("prompt: refused with a rule whose commands could type into the terminal",
              p.returncode == 125 and "commands.rules[0]" in p.stderr and "TIOCSTI" in
              p.stderr, p.stderr)


def test_no_control_dir(tmp):
    """Not root and no XDG_RUNTIME_DIR (su, a container, a service): the control socket goes
    to /run/user/UID/runnerd if that is the user's, else /tmp/runnerd-UID (0700, the user's),
    and a profile that asks runs; runnerd pending, without XDG_RUNTIME_DIR too, finds it."""
    if os.geteuid() == 0:
        return
    prof = asks_profile(tmp)
    e = base_env()
    e.pop("XDG_RUNTIME_DIR", None)
    uid = os.geteuid()
    run_user = "/run/user/%d" % uid
    own = os.path.isdir(run_user) and os.stat(run_user).st_uid == uid
    where = run_user + "/runnerd" if own else "/tmp/runnerd-%d" % uid
    p = subprocess.Popen(runnerd_cmd(prof, ["sh", "-c", "expr 6 \\* 7"], config=ITEST_CONFIG),
                         env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        listed = common.wait_for(lambda: subprocess.run(
            [common.RUNNERD, "pending", "--json"], env=e, capture_output=True,
            text=True).stdout.count('"expr"'), 20)
        st = os.stat(where)
        check("ask: without XDG_RUNTIME_DIR the socket is in %s, the user's, 0700" % where,
              st.st_uid == uid and (st.st_mode & 0o777) == 0o700, oct(st.st_mode))
        check("ask: ... and runnerd pending finds the ask there", listed)
    finally:
        p.kill()
        p.communicate()


def main():
    common.require_runnerd()
    # Each test runs in its own temporary directory, made 0755, as the working directory.
    return common.run_tests((test_answers, test_node, test_prompt, test_control_hardening,
                             test_prompt_tiocsti, test_no_control_dir), "runnerd-ask.",
                            enter=True)


if __name__ == "__main__":
    sys.exit(main())
