"""The case table of the runnerd integration tests (imported by harness.py).

Each case is run twice, plainly and under runnerd, and the listed observations must match. A
case is a dict made by case() with:

  name       unique, used by -k
  argv       the caller to run; "@HELPERS@" is the directory of the compiled C helpers,
             "@SRC@" this directory, "@PY@" the Python running the harness
  compare    what must be equal: any of "status", "stdout", "stderr"
  env        variables added to the harness's fixed environment (PATH, HOME, LANG); names the
             test profile passes are the base list and RD_TEST_*
  stdin      bytes fed to the caller's stdin (default: /dev/null)
  timeout    seconds per run (default 60)
  normalize  function(stream, text) -> text, applied to both sides before comparing, for
             values that differ from run to run (pids, pipe inodes)
  needs      prerequisites: "node", "dash", "busybox", "helper:NAME"; @HELPERS@/NAME anywhere
             in argv adds that helper
  expect     what the plain run itself must show, so that a case cannot pass by both sides
             being equally broken: {"status": int, "stdout": str, "stderr": str} for exact
             values (after normalizing) or {"stdout_has": [str, ...]} for substrings

Every case runs in a fresh, empty working directory (the same path on both sides), so files a
case creates in "." do not leak between runs. The differences runnerd is allowed to make (the
commands' environment is filtered, they have their own pid namespace and /proc) are kept out
of the outputs: cases print only names the profile passes, and pids are normalized away.
"""
import re

CASES = []


def case(name, argv, compare=("status", "stdout"), env=None, stdin=None, timeout=None,
         normalize=None, needs=(), expect=None):
    CASES.append({
        "name": name, "argv": list(argv), "compare": tuple(compare), "env": dict(env or {}),
        "stdin": stdin, "timeout": timeout, "normalize": normalize, "needs": tuple(needs),
        "expect": dict(expect or {}),
    })


def bash(name, script, **kw):
    case(name, ["bash", "-c", script], **kw)


def _inherited_ignored():
    """Signals 32 and 33 are glibc's own: no program using glibc can change their disposition,
    so whatever the harness inherited (ctest's parent ignores them) every caller inherits
    too. The expectations of the plain run include them; runnerd must copy them exactly."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("SigIgn:"):
                return int(line.split()[1], 16) & ((1 << 31) | (1 << 32))
    return 0


def sig_ign(bits):
    return "SigIgn=%016x\n" % (bits | _inherited_ignored())


# --- normalizers ----------------------------------------------------------------------------

def bash_job_pids(stream, text):
    """bash reports a job killed by a signal with its pid: "bash: line 1: 1234 Segmentation..."."""
    return re.sub(r"^(bash: (?:line \d+: )?) *\d+ ", r"\1<PID> ", text, flags=re.M)


def probe_output(stream, text):
    """The probe's pid and ppid are the pid namespace's (an allowed difference), and pipe and
    socket inode numbers change on every run. Everything else, the env_names line included,
    must match: the cases start the probe with an environment of names the profile passes."""
    text = re.sub(r"^(pid|ppid)=\d+$", r"\1=N", text, flags=re.M)
    # Commands run with no_new_privs and no capabilities, whatever the caller had: a
    # difference runnerd must make (tests/integration/security.py asserts it).
    text = re.sub(r"^(NoNewPrivs|CapEff|CapPrm|CapBnd|CapAmb|CapInh)=\S*$", r"\1=N", text,
                  flags=re.M)
    return re.sub(r"(pipe|socket|anon_inode):\[\d+\]", r"\1:[N]", text)


# --- bash -----------------------------------------------------------------------------------

bash("bash_exit_status", 'sh -c "exit 7"; echo $?', expect={"stdout": "7\n"})
bash("bash_false_subshell",
     "false; echo $?; (exit 3); echo $?; /bin/false; echo $?; /bin/true; echo $?",
     expect={"stdout": "1\n3\n1\n0\n"})
bash("bash_exit_codes",
     'for c in 0 1 2 100 126 127 128 200 255; do sh -c "exit $c"; printf "%s " $?; done; echo',
     expect={"stdout": "0 1 2 100 126 127 128 200 255 \n"})
bash("bash_pipeline", "seq 1 100000 | sort -rn | head -3",
     expect={"stdout": "100000\n99999\n99998\n"})
# sort still has most of its output to write when head exits: it dies of SIGPIPE (141), and the
# caller must see exactly that.
bash("bash_pipestatus_sigpipe", 'seq 1 100000 | sort -rn | head -1; echo "${PIPESTATUS[@]}"',
     expect={"stdout": "100000\n0 141 0\n"})
bash("bash_command_not_found", "nonexistent-cmd-xyz; echo $?",
     compare=("status", "stdout", "stderr"),
     expect={"stdout": "127\n", "stderr": "bash: line 1: nonexistent-cmd-xyz: command not found\n"})
bash("bash_permission_denied",
     'printf "echo hi\\n" > noexec; chmod 644 noexec; ./noexec; echo $?',
     compare=("status", "stdout", "stderr"),
     expect={"stdout": "126\n", "stderr": "bash: line 1: ./noexec: Permission denied\n"})
# A script runs under the very name its caller gave, "//" and "/./" included: $0 shows it.
bash("bash_script_name_kept",
     "printf '#!/bin/sh\\necho \"$0\"\\n' > n.sh; chmod +x n.sh\n"
     "\"$PWD//n.sh\" | sed \"s|^$PWD|W|\"; \"$PWD/./n.sh\" | sed \"s|^$PWD|W|\"",
     expect={"stdout": "W//n.sh\nW/./n.sh\n"})
bash("bash_shebang_script",
     r"""printf '#!/bin/sh\necho "script: [$1] $#"\nexit 4\n' > s.sh; chmod +x s.sh
./s.sh "a b" c; echo $?
printf '#!/bin/sh -e\nfalse\necho not-reached\n' > e.sh; chmod +x e.sh; ./e.sh; echo $?""",
     expect={"stdout": "script: [a b] 2\n4\n1\n"})
# No "#!": execve fails with ENOEXEC and bash runs the file itself. A stub that reported any
# other error (or ran something) would change the output.
bash("bash_no_shebang_enoexec",
     r"""printf 'echo "no-shebang ran: $1"\nexit 5\n' > ns; chmod +x ns; ./ns x; echo $?""",
     expect={"stdout": "no-shebang ran: x\n5\n"})
bash("bash_cd_pwd", "cd /tmp; /bin/pwd; pwd; cd /usr/share; /bin/pwd; sh -c pwd",
     expect={"stdout": "/tmp\n/tmp\n/usr/share\n/usr/share\n"})
bash("bash_cwd_relative_exec",
     r"""mkdir -p sub/deeper; cd sub; printf '#!/bin/sh\n/bin/pwd -P | sed "s|.*/||"\n' > p
chmod +x p; ./p; cd deeper; ../p; sh -c 'cd ..; ./p'""",
     expect={"stdout": "sub\ndeeper\nsub\n"})
bash("bash_umask",
     'umask 077; sh -c umask; umask 0002; sh -c "umask; touch f; stat -c %a f"\n'
     "umask 0; sh -c umask",
     expect={"stdout": "0077\n0002\n664\n0000\n"})
bash("bash_redirects", "ls /nonexistent 2>&1 >/dev/null | wc -l", expect={"stdout": "1\n"})
bash("bash_redirect_files",
     'echo a > out; sh -c "echo b" >> out; sh -c "echo c >&2" 2>> out; cat out\n'
     "sh -c cat < out | wc -l",
     expect={"stdout": "a\nb\nc\n3\n"})
# The command reads from the caller's open file description: the offset is shared, so each
# command continues where the previous one stopped.
bash("bash_shared_offset",
     'printf "0123456789\\n" > f; { head -c 3; echo; head -c 3; echo; cat; } < f',
     expect={"stdout": "012\n345\n6789\n"})
bash("bash_stdin_shared",
     'read -r a; echo "bash read: $a"; sh -c \'read -r b; echo "sh read: $b"\'; cat; echo end',
     stdin=b"first line\nsecond line\nthird\nfourth\n",
     expect={"stdout": "bash read: first line\nsh read: second line\nthird\nfourth\nend\n"})
bash("bash_closed_fds", 'sh -c "echo x" >&-; echo $?; cat <&-; echo $?',
     compare=("status", "stdout", "stderr"), expect={"stdout": "1\n1\n"})
bash("bash_kill_term", r'sh -c "kill -TERM \$\$"; echo $?', compare=("status", "stdout", "stderr"),
     normalize=bash_job_pids, expect={"stdout": "143\n"})
# With a piped core_pattern (systemd-coredump) "(core dumped)" follows even at ulimit -c 0.
bash("bash_segv", r'ulimit -c 0; sh -c "kill -SEGV \$\$"; echo $?',
     compare=("status", "stdout", "stderr"), normalize=bash_job_pids,
     expect={"stdout": "139\n", "stderr_has": ["bash: line 1: <PID> Segmentation fault"]})
bash("bash_kill_self_caller", 'echo before; kill -USR1 $$; echo not-reached',
     expect={"status": -10, "stdout": "before\n"})
bash("bash_agent_exit", 'sh -c "exit 3"; exit 42', expect={"status": 42})
# argv and the environment reach the command byte for byte: empty and blank words, newlines,
# UTF-8, leading dashes, many words, a long value.
bash("bash_argv_exact",
     "/usr/bin/printf '[%s]\\n' '' ' ' 'a b' $'x\\ny' 'é€' -- -n '*' '$HOME'\n"
     "sh -c 'echo $#; printf \"%s\\n\" \"$@\" | md5sum' sh $(seq 1 20000)\n"
     "export RD_TEST_BIG=$(head -c 100000 /dev/zero | tr '\\0' x)\n"
     "sh -c 'echo ${#RD_TEST_BIG}; printf %s \"$RD_TEST_BIG\" | md5sum'",
     expect={"stdout_has": ["[]\n[ ]\n[a b]\n[x\ny]\n[é€]\n[--]\n[-n]\n[*]\n[$HOME]\n20000\n",
                            "\n100000\n"]})
# SIGINT to a background job, which is only meaningful with job control: without "set -m",
# bash starts background jobs with SIGINT ignored (and a kill that lands before the child has
# set that up makes the result racy). With "set -m" the result is 130 either way; the second
# variant waits until the command runs, so the signal must go through the stub.
bash("bash_bg_sigint", "set -m; sleep 10 & pid=$!; kill -INT $pid; wait $pid; echo $?",
     compare=("status", "stdout", "stderr"), expect={"stdout": "130\n"}, timeout=20)
bash("bash_bg_sigint_started",
     'set -m; mkfifo ready; sh -c "echo > ready; exec sleep 10" & pid=$!; read < ready\n'
     "kill -INT $pid; wait $pid; echo $?",
     compare=("status", "stdout", "stderr"), expect={"stdout": "130\n"}, timeout=20)
bash("bash_bg_term", "sleep 10 & pid=$!; kill -TERM $pid; wait $pid; echo $?",
     expect={"stdout": "143\n"}, timeout=20)
bash("bash_background_wait",
     "sh -c 'sleep 0.2; exit 3' & a=$!; sh -c 'exit 4' & b=$!; wait $b; echo $?; wait $a; echo $?",
     expect={"stdout": "4\n3\n"})
# Dispositions set to "ignore" survive exec: the command must inherit them.
bash("bash_sigpipe_ignored", 'trap "" PIPE; yes | head -1; echo "${PIPESTATUS[@]}"',
     compare=("status", "stdout", "stderr"),
     expect={"stdout": "y\n1 0\n", "stderr": "yes: standard output: Broken pipe\n"})
bash("bash_sigint_ignored", r'trap "" INT; sh -c "kill -INT \$\$; echo survived"; echo $?',
     expect={"stdout": "survived\n0\n"})
bash("bash_exec_builtin", "exec /bin/echo hi", expect={"stdout": "hi\n"})
bash("bash_exec_argv0", r'exec -a custom-name sh -c "echo \$0"', expect={"stdout": "custom-name\n"})
bash("bash_exec_fd_redirect", 'exec 5>out; sh -c "echo to-fd5 >&5"; exec 5>&-; cat out',
     expect={"stdout": "to-fd5\n"})
bash("bash_command_substitution",
     "n=0; for i in $(seq 1 30); do n=$((n + $(/bin/echo 1))); done; echo $n",
     expect={"stdout": "30\n"})
bash("bash_nested_shells", r'bash -c "sh -c \"exit 3\"; echo inner \$?"; echo outer $?',
     expect={"stdout": "inner 3\nouter 0\n"})
bash("bash_xargs",
     'printf "a\\nb\\nc\\n" | xargs -n1 echo item\n'
     'printf "1\\n0\\n" | xargs -n1 sh -c \'exit $0\'\n'
     "echo $?; printf '1\\n' | xargs -n1 sh -c 'exit 255'; echo $?",
     compare=("status", "stdout", "stderr"),
     expect={"stdout": "item a\nitem b\nitem c\n123\n124\n"})
bash("bash_find_exec",
     "mkdir -p d/a d/b; touch d/a/x d/b/y; find d -type f -exec echo found {} \\; | sort\n"
     "find d -type f -exec sh -c 'echo \"$#\"' sh {} +; find d -name x -exec false \\; ; echo $?\n"
     "find d -name x -exec sh -c 'exit 1' \\; -print; echo $?",
     compare=("status", "stdout", "stderr"),
     expect={"stdout": "found d/a/x\nfound d/b/y\n2\n0\n0\n"})
bash("bash_env_i",
     "env -i /usr/bin/env; echo ---; env -i RD_TEST_A=1 LANG=C /usr/bin/env | sort\n"
     'env -i sh -c \'echo "[$PATH]"\'; env -i /bin/sh -c \'env | cut -d= -f1 | sort\'',
     expect={"stdout_has": ["---\nLANG=C\nRD_TEST_A=1\n"]})
bash("bash_env_u",
     'export RD_TEST_X=1; env -u RD_TEST_X sh -c \'echo "[${RD_TEST_X-unset}]"\'\n'
     'RD_TEST_Y=2 sh -c \'echo "[$RD_TEST_Y]"\'; sh -c \'echo "[$RD_TEST_X]"\'',
     expect={"stdout": "[unset]\n[2]\n[1]\n"})
bash("bash_env_from_harness", 'sh -c \'echo "[$RD_TEST_FROM_HARNESS]"\'',
     env={"RD_TEST_FROM_HARNESS": "x y"}, expect={"stdout": "[x y]\n"})
# The probe after the caller changed what a command inherits; env -i leaves only names the
# profile passes, so the env_names line must match too.
bash("bash_probe",
     "exec 7</dev/null 8>/dev/null; umask 027; ulimit -n 512; ulimit -c 0\n"
     "trap '' USR1 TERM; cd /\n"
     "env -i PATH=/usr/bin:/bin LANG=C.UTF-8 RD_TEST_PROBE=1 @HELPERS@/probe; echo status $?",
     normalize=probe_output,
     expect={"stdout_has": ["umask=0027\n", "cwd=/\n", "fd7=/dev/null\nfd8=/dev/null\n",
                            sig_ign(0x4200), "rlimit_nofile=512:512\n",
                            "env_names=LANG,PATH,RD_TEST_PROBE\n", "status 0\n"]})

# --- dash -----------------------------------------------------------------------------------

case("dash_exit_status", ["dash", "-c", 'sh -c "exit 5"; echo $?'], needs=("dash",),
     expect={"stdout": "5\n"})
case("dash_killed", ["dash", "-c", r'sh -c "kill -KILL \$\$"; echo $?; sh -c "exit 300"; echo $?'],
     needs=("dash",), expect={"stdout": "137\n44\n"})

# --- busybox (static) -----------------------------------------------------------------------

case("busybox_static_caller",
     ["/bin/busybox", "sh", "-c",
      '/bin/busybox true; echo $?; /bin/busybox sh -c "exit 4"; echo $?\n'
      "/bin/busybox false; echo $?"],
     needs=("busybox",), expect={"stdout": "0\n4\n1\n"})
bash("busybox_static_command",
     '/bin/busybox echo static-ok; /bin/busybox sh -c "exit 3"; echo $?\n'
     "echo piped | /bin/busybox wc -l",
     needs=("busybox",), expect={"stdout": "static-ok\n3\n1\n"})

# --- Python callers -------------------------------------------------------------------------


def py(sub, compare=("status", "stdout"), **kw):
    case("py_" + sub, ["@PY@", "@SRC@/helpers/py_callers.py", sub, "@HELPERS@"], compare=compare,
         **kw)


py("run_capture", expect={"stdout_has": ["returncode 3 stdout b'out\\n' stderr b'err\\n'",
                                         "CalledProcessError returncode 5", "exit 255 -> 255"]})
py("communicate_4m", expect={"stdout_has": [
    "out 4194304 2b07811057df887086f06a67edc6ebf911de8b6741156e7a2eb1416a4b8b1b2e"]})
py("kill_sleep", expect={"stdout": "returncode -9\nstdout eof\n"}, timeout=30)
py("terminate_sleep", expect={"stdout": "child says b'ready\\n'\nreturncode -15\nstdout eof\n"},
   timeout=30)
py("send_signal_handled", expect={"stdout_has": ["returncode 12\nrest b'got-usr1\\n'"]}, timeout=30)
py("pass_fds", expect={"stdout": "other-fd-closed\nread from fd b'via-fd\\n'\nreturncode 0\n"})
py("preexec_umask", expect={"stdout": "preexec_fn umask -> b'0027\\n' 0\numask= -> b'0077\\n' 0\n"})
py("cwd_arg", expect={"stdout_has": ["cwd=/tmp -> b'/tmp\\n'", "b'ran-in-cwd\\n' 0"]})
py("env_arg", expect={"stdout_has": ["LANG=C RD_TEST_VAR=value with spaces\n",
                                     "empty env -> b'' 0"]})
py("new_session", expect={"stdout_has": [
    "{'start_new_session': True} -> sid_is_pid, pgid_is_pid: True True"]})
py("exec_errors", expect={"stdout_has": ["missing -> FileNotFoundError errno=2(ENOENT)",
                                         "not_executable -> PermissionError errno=13(EACCES)",
                                         "directory -> PermissionError errno=13(EACCES)"]})
py("shell_true", expect={"stdout_has": ["exit 42 -> 42\n", "os.system signal -> 15\n"]})
py("path_search", expect={"stdout_has": ["nowhere -> FileNotFoundError",
                                         "only last dir -> b'in c: arg\\n' 0"]})
py("os_exec_family", expect={"stdout_has": ["posix_spawn -> 4\n", "fork+execvp -> 8\n"]})
py("probe_state", normalize=probe_output, needs=("helper:probe",),
   expect={"stdout_has": ["umask=0027\n", "cwd=/\n", "SigBlk=0000000008000800\n",
                          sig_ign(0x1), "rlimit_nofile=512:1024\n",
                          "rlimit_core=0:0\n", "sid_is_pid=1\n",
                          "env_names=HOME,LANG,PATH,RD_TEST_PROBE\n", "fdW=pipe:[N]\n"]})

# --- Node callers ---------------------------------------------------------------------------


def node(sub, compare=("status", "stdout"), **kw):
    case("node_" + sub, ["node", "@SRC@/helpers/node_callers.js", sub, "@PY@"], compare=compare,
         needs=("node",), **kw)


node("spawnsync_status", expect={"stdout": "status 9 signal null error undefined\n"
                                           "killed: status null signal SIGKILL\n"
                                           'execFileSync threw: status 3 stdout "partial\\n"\n'})
node("spawnsync_input", expect={"stdout": 'status 0 stdout "HELLO FROM NODE\\n"\n'
                                          "wc of 1 MiB input: 1048576 status 0\n"})
node("spawnsync_inherit", compare=("status", "stdout", "stderr"),
     expect={"stdout": "inherited-out\nstatus 2\n", "stderr": "inherited-err\n"})
node("spawn_2m", expect={"stdout": "bytes 2097152 non-a 0 code 0 signal null\n"})
node("ipc", compare=("status", "stdout", "stderr"),
     expect={"stdout": 'message {"x":1}\nclose 0 null\n'})
node("fork_ipc",
     expect={"stdout": 'message {"echo":{"hello":"child"},"connected":true}\nexit 0 null\n'})
node("exec_shell", expect={"stdout": 'code 4 stdout "/bin/sh\\n" stderr "err\\n"\n'})
node("spawn_missing", expect={"stdout": "error ENOENT -2 spawn rd-no-such-command-xyz "
                                        "rd-no-such-command-xyz\n"
                                        "close -2 null\n"})
node("kill_sigterm", timeout=30, expect={"stdout": 'child says "ready\\n"\nkill returned true\n'
                                                   "exit null SIGTERM\nclose null SIGTERM\n"})
node("kill_immediately", timeout=30, expect={"stdout": "kill returned true\nexit null SIGKILL\n"})
node("detached", expect={"stdout": "detached: sid_is_pid, pgid_is_pid: True True status 0\n"})

# --- C helpers as callers -------------------------------------------------------------------

case("c_posix_spawn", ["@HELPERS@/posix_spawn_caller"], compare=("status", "stdout", "stderr"),
     expect={"stdout": "read=[spawned-out\n]\nstatus=exited 6\nspawn_error=ENOENT\n",
             "stderr": "spawned-err\n"})
case("c_vfork", ["@HELPERS@/vfork_caller"], timeout=20,
     expect={"stdout": "1048576\nwritten=1048576\nstatus=exited 0\n"})
case("c_thread_exec", ["@HELPERS@/thread_exec"], expect={"stdout": "before-exec\nthread-exec\n"})
case("c_fexecve", ["@HELPERS@/fexecve_caller"],
     expect={"stdout": "fexecve-ok fexecve-arg0 [a b]\nfd-open\n"})
case("c_execveat_dirfd", ["@HELPERS@/execveat_dirfd"], expect={"stdout": "execveat-dirfd-ok\n"})
case("c_execveat_empty_path", ["@HELPERS@/execveat_empty_path"],
     expect={"stdout": "empty-path-opath\nchild=exited 0\nempty-path-cloexec\n"})
case("c_proc_self_exe", ["@HELPERS@/proc_self_exe"],
     expect={"stdout": "first\nsecond argv0=proc_self_exe-renamed argc=2\n"})
case("c_script_caller", ["@HELPERS@/script_caller"], compare=("status", "stdout", "stderr"),
     expect={"stdout": "plain: 1 args: a b\nplain=exited 0\nwitharg: x\nwitharg=exited 2\n"
                       "interp: 2 args: nested.sh arg\n  line: first line\n  line: second line\n"
                       "nested=exited 0\nexiting 3\nexit3=exited 3\n"})
case("c_errno_probe", ["@HELPERS@/errno_probe"],
     expect={"stdout_has": ["missing_file=ENOENT\n", "directory=EACCES\n",
                            "not_executable=EACCES\n",
                            "component_is_file=ENOTDIR\n", "garbage_content=ENOEXEC\n",
                            "symlink_loop=ELOOP\n", "empty_path=ENOENT\n", "null_path=EFAULT\n",
                            "argv_bad_pointer=EFAULT\n", "argv_string_too_long=E2BIG\n"]})
# Execs that fail in the kernel after the path resolved, from a caller that goes on: under
# runnerd the failure is known only once the caller's handoff has begun, and it must get its own
# exec back exactly: errno, registers, signal mask, and no fd left behind.
case("c_failed_exec_state", ["@HELPERS@/failed_exec_state"], compare=("status", "stdout", "stderr"),
     expect={"stdout": "enoexec: errno=ENOEXEC rounds=25 wrong_errno=0 regs_bad=0 fds_changed=0 "
                       "mask_changed=0\nmissing_interpreter: errno=ENOENT rounds=25 wrong_errno=0 "
                       "regs_bad=0 fds_changed=0 mask_changed=0\n"})
# Go's case: handlers with SA_RESTART. Every exec runs its command exactly once.
case("c_sigurg_exec", ["@HELPERS@/sigurg_exec", "restart"], timeout=30,
     expect={"status": 0, "stdout": "runs=20 lines=20 bad=0\n"})
# Without SA_RESTART an exec may fail with EINTR before runnerd has received it (the kernel's
# pre-receive wait is interruptible; docs/kernel-notes.md), but never runs twice or fails
# otherwise.
case("c_sigurg_exec_norestart", ["@HELPERS@/sigurg_exec", "norestart"], timeout=30,
     expect={"status": 0, "stdout": "dups=0 other=0 ran=yes\n"})
