#!/usr/bin/env bash
# What one exec costs under runnerd, next to plain fork+exec, unshare and bwrap, on this machine.
#
#   bench/run.sh [BUILD_DIR]        (BUILD_DIR defaults to build/ of this repo)
#
# Needs BUILD_DIR/bin/runnerd and BUILD_DIR/bin/execbench (if execbench is missing it is compiled
# from bench/execbench.c into a temporary directory). Environment knobs:
#   ROUNDS=5 ITERS=200 WARMUP=20     rounds; timed runs per variant per round; untimed first runs
#   RUNNERD_CONFIG=FILE              default BUILD_DIR/etc/runnerd/runner.json, else ./runner.json
#   PROFILE=generic                  the profile runnerd runs the agent with
#   MEM_N=64 MEM_SECONDS=2           the memory run: that many commands at once, each that long
#   FDS=1000                         the fds the caller holds in the "fds open" variants
#   BASE=DIR                         another build (DIR/bin/runnerd, DIR/etc/runnerd) timed in the
#                                    same rounds, for a before/after comparison in one run
#   RUNS=5                           the agent sessions' runs, plain and under runnerd each
#
# Last, whole agent sessions (bench/agents.py): each real CLI of tests/e2e, as make test installs
# it into BUILD_DIR/npm-agents, with one tool call against its loopback stand-in, plain and under
# runnerd alternating; the ratio of the medians.
#
# The last variant pins runnerd, the agent and every command to CPU 0: the handoff is a chain of
# wake-ups, which cost more when they cross CPUs (notably in a VM, where waking an idle vCPU is an
# IPI and a VM exit).
#
# Every variant runs ITERS times in each round, in an order that rotates from round to round;
# the table gives the median, p10 and p90 (nearest rank) of all ROUNDS x ITERS samples, in
# microseconds, each sample being one fork..waitpid seen from the process that starts the
# command. Under runnerd, execbench is the agent: runnerd's own startup is not in any sample.
# Nothing here asserts a timing: the script fails only if a variant cannot run at all.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$repo/build}
case $build in /*) ;; *) build=$PWD/$build ;; esac
ROUNDS=${ROUNDS:-5}
ITERS=${ITERS:-200}
WARMUP=${WARMUP:-20}
PROFILE=${PROFILE:-generic}
MEM_N=${MEM_N:-64}
MEM_SECONDS=${MEM_SECONDS:-2}
FDS=${FDS:-1000}

case $build$repo in *[[:space:]]*)
	echo "bench: paths with white space are not supported: $repo, $build" >&2
	exit 1
	;;
esac
runnerd=$build/bin/runnerd
cfg=${RUNNERD_CONFIG:-$build/etc/runnerd/runner.json}
[ -f "$cfg" ] || cfg=$repo/runner.json
if [ ! -x "$runnerd" ]; then
	echo "bench: $runnerd not found: build first (make build)" >&2
	exit 1
fi

tmp=$(mktemp -d /tmp/runnerd-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

eb=$build/bin/execbench
if [ ! -x "$eb" ]; then
	eb=$tmp/execbench
	echo "bench: $build/bin/execbench not found: compiling bench/execbench.c into $eb"
	${CC:-cc} -O2 -Wall -Wextra -Werror -D_GNU_SOURCE -o "$eb" "$repo/bench/execbench.c"
fi

# Installs a Debian package when its program is missing, if we can; never fails the run.
need() {
	local prog=$1 pkg=$2
	[ -x "$prog" ] && return 0
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		echo "bench: $prog missing: apt-get install -y $pkg"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$pkg" >"$tmp/apt.log" 2>&1 ||
			tail -n 3 "$tmp/apt.log" >&2 || true
	fi
	[ -x "$prog" ]
}

bwrap=$(command -v bwrap || echo /usr/bin/bwrap)
unshare=$(command -v unshare || echo /usr/bin/unshare)
taskset=$(command -v taskset || echo /usr/bin/taskset)
busybox=/bin/busybox
need "$bwrap" bubblewrap || true
need "$busybox" busybox-static || true

true_cmd=(/bin/true)
bb_cmd=("$busybox" true)
unshare_cmd=("$unshare" --pid --fork --mount-proc /bin/true)
bwrap_cmd=("$bwrap" --ro-bind / / --dev /dev --unshare-pid --proc /proc /bin/true)
rd=("$runnerd" --config "$cfg" --profile "$PROFILE" --)

# The argv of a variant, from its template: expand TEMPLATE OUT N WARMUP
expand() {
	local t=${1//@OUT@/$2}
	t=${t//@N@/$3}
	echo "${t//@W@/$4}"
}

# id|label|argv (words; the command's own arguments have no spaces)
variants=(
	"plain|plain fork+exec /bin/true|$eb -o @OUT@ -w @W@ fork @N@ ${true_cmd[*]}"
	"plain_spawn|plain posix_spawn /bin/true|$eb -o @OUT@ -w @W@ posix_spawn @N@ ${true_cmd[*]}"
	"plain_static|plain fork+exec busybox true (static)|$eb -o @OUT@ -w @W@ fork @N@ ${bb_cmd[*]}"
	"unshare|unshare --pid --fork --mount-proc /bin/true|$eb -o @OUT@ -w @W@ fork @N@ ${unshare_cmd[*]}"
	"bwrap|bwrap --unshare-pid --proc /proc /bin/true|$eb -o @OUT@ -w @W@ fork @N@ ${bwrap_cmd[*]}"
	"rd|runnerd fork+exec /bin/true|${rd[*]} $eb -o @OUT@ -w @W@ fork @N@ ${true_cmd[*]}"
	"rd_spawn|runnerd posix_spawn /bin/true|${rd[*]} $eb -o @OUT@ -w @W@ posix_spawn @N@ ${true_cmd[*]}"
	"rd_static|runnerd fork+exec busybox true (static)|${rd[*]} $eb -o @OUT@ -w @W@ fork @N@ ${bb_cmd[*]}"
	"rd_1cpu|runnerd fork+exec /bin/true, taskset -c 0|$taskset -c 0 ${rd[*]} $eb -o @OUT@ -w @W@ fork @N@ ${true_cmd[*]}"
	"plain_tty|plain fork+exec, stdio a terminal|$eb -o @OUT@ -w @W@ -t fork @N@ ${true_cmd[*]}"
	"rd_tty|runnerd fork+exec, stdio a terminal|${rd[*]} $eb -o @OUT@ -w @W@ -t fork @N@ ${true_cmd[*]}"
	"plain_fds|plain fork+exec, $FDS fds open (cloexec)|$eb -o @OUT@ -w @W@ -f $FDS fork @N@ ${true_cmd[*]}"
	"rd_fds|runnerd fork+exec, $FDS fds open (cloexec)|${rd[*]} $eb -o @OUT@ -w @W@ -f $FDS fork @N@ ${true_cmd[*]}"
)
if [ -n "${BASE:-}" ]; then
	base_rd=("$BASE/bin/runnerd" --config "$BASE/etc/runnerd/runner.json" --profile "$PROFILE" --)
	variants+=(
		"base|BASE runnerd fork+exec /bin/true|${base_rd[*]} $eb -o @OUT@ -w @W@ fork @N@ ${true_cmd[*]}"
		"base_1cpu|BASE runnerd fork+exec, taskset -c 0|$taskset -c 0 ${base_rd[*]} $eb -o @OUT@ -w @W@ fork @N@ ${true_cmd[*]}"
		"base_fds|BASE runnerd fork+exec, $FDS fds open|${base_rd[*]} $eb -o @OUT@ -w @W@ -f $FDS fork @N@ ${true_cmd[*]}"
	)
fi

declare -A label argv status why
order=()
for v in "${variants[@]}"; do
	IFS='|' read -r id lab cmd <<<"$v"
	order+=("$id")
	label[$id]=$lab
	argv[$id]=$cmd
	status[$id]=ok
	: >"$tmp/$id.all"
done

# One untimed run of each variant first: what cannot run here is n/a, with the reason.
for id in "${order[@]}"; do
	read -r -a probe <<<"$(expand "${argv[$id]}" "$tmp/probe" 1 0)"
	if ! "${probe[@]}" >"$tmp/probe.out" 2>&1; then
		status[$id]=n/a
		why[$id]=$(grep -v '^execbench: .* exited with status' "$tmp/probe.out" | tail -n 2 |
			tr '\n' ' ')
		[ -n "${why[$id]}" ] || why[$id]=$(tail -n 2 "$tmp/probe.out" | tr '\n' ' ')
	fi
done

# Percent of all CPUs busy over half a second, from /proc/stat: what else runs on the machine.
busy_pct() {
	local a b
	a=$(head -n 1 /proc/stat)
	sleep 0.5
	b=$(head -n 1 /proc/stat)
	printf '%s\n%s\n' "$a" "$b" | awk '{ idle = $5 + $6; tot = 0; for (i = 2; i <= NF; i++) tot += $i
		if (NR == 1) { i0 = idle; t0 = tot } else if (tot > t0)
			printf "%.0f", 100 * (1 - (idle - i0) / (tot - t0)); else printf "0" }'
}
busy=$(busy_pct)

echo "runnerd exec benchmark: $(uname -srm), $(nproc) CPUs," \
	"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "runnerd: $runnerd ($("$runnerd" --version 2>/dev/null | head -n 1)), config $cfg," \
	"profile $PROFILE"
echo "$ROUNDS rounds x $ITERS runs per variant (+$WARMUP warm-up each); before the start the" \
	"CPUs were $busy% busy (load average $(cut -d' ' -f1-3 /proc/loadavg))"
if [ "$busy" -ge 10 ]; then
	echo "bench: WARNING: something else uses $busy% of the CPUs: the numbers will be noisy" >&2
fi

start=$SECONDS
nv=${#order[@]}
for ((r = 0; r < ROUNDS; r++)); do
	for ((i = 0; i < nv; i++)); do
		id=${order[$(((i + r) % nv))]}
		[ "${status[$id]}" = ok ] || continue
		read -r -a cmd <<<"$(expand "${argv[$id]}" "$tmp/$id.$r" "$ITERS" "$WARMUP")"
		if "${cmd[@]}" >"$tmp/$id.$r.log" 2>&1; then
			cat "$tmp/$id.$r" >>"$tmp/$id.all"
		else
			status[$id]=failed
			why[$id]="round $((r + 1)): $(tail -n 2 "$tmp/$id.$r.log" | tr '\n' ' ')"
		fi
	done
done

# n median p10 p90 of a file of samples, nearest rank like execbench.
stats() {
	sort -n "$1" | awk '{ s[NR] = $1 }
		function at(p,  r) { r = int((p * NR + 99) / 100); if (r < 1) r = 1; return s[r] }
		END { if (NR) printf "%d %.1f %.1f %.1f\n", NR, at(50), at(10), at(90) }'
}
declare -A med p10 p90
for id in "${order[@]}"; do
	if [ "${status[$id]}" = ok ] && [ -s "$tmp/$id.all" ]; then
		read -r _ "med[$id]" "p10[$id]" "p90[$id]" < <(stats "$tmp/$id.all")
	fi
done
ratio() { # a b: a/b with two decimals, or n/a
	if [ -n "${1:-}" ] && [ -n "${2:-}" ]; then
		awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'
	else
		echo n/a
	fi
}

echo
printf '%-44s %9s %9s %9s %8s %8s\n' variant 'median us' 'p10 us' 'p90 us' '/plain' '/bwrap'
for id in "${order[@]}"; do
	if [ -z "${med[$id]:-}" ]; then
		printf '%-44s %9s %9s %9s %8s %8s  (%s)\n' "${label[$id]}" n/a n/a n/a n/a n/a \
			"${status[$id]}"
		continue
	fi
	printf '%-44s %9s %9s %9s %8s %8s\n' "${label[$id]}" "${med[$id]}" "${p10[$id]}" \
		"${p90[$id]}" "$(ratio "${med[$id]}" "${med[plain]:-}")" \
		"$(ratio "${med[$id]}" "${med[bwrap]:-}")"
done
for id in "${order[@]}"; do
	case $id:${status[$id]} in
	*:ok) ;;
	bwrap:n/a) echo "bwrap cannot create its namespaces on this machine, so n/a: ${why[$id]:-}" ;;
	*:n/a) echo "${label[$id]}: cannot run here: ${why[$id]:-}" ;;
	*) echo "${label[$id]}: ${status[$id]} ${why[$id]:-}" ;;
	esac
done
echo
echo "runnerd/plain = $(ratio "${med[rd]:-}" "${med[plain]:-}") (target <= 2.0)"
echo "runnerd/bwrap = $(ratio "${med[rd]:-}" "${med[bwrap]:-}") (target < 1.0)"
diff_us() { # a b: a-b, or n/a
	if [ -n "${1:-}" ] && [ -n "${2:-}" ]; then
		awk -v a="$1" -v b="$2" 'BEGIN { printf "%+.0f us", a - b }'
	else
		echo n/a
	fi
}
echo "runnerd adds per exec (median minus plain median): fork+exec" \
	"$(diff_us "${med[rd]:-}" "${med[plain]:-}"), posix_spawn" \
	"$(diff_us "${med[rd_spawn]:-}" "${med[plain_spawn]:-}"), static" \
	"$(diff_us "${med[rd_static]:-}" "${med[plain_static]:-}")"
echo "stdio a terminal (a pseudo-terminal of the command's own, relayed): runnerd" \
	"$(diff_us "${med[rd_tty]:-}" "${med[rd]:-}") over its pipe path, plain" \
	"$(diff_us "${med[plain_tty]:-}" "${med[plain]:-}"); runnerd/plain" \
	"$(ratio "${med[rd_tty]:-}" "${med[plain_tty]:-}")"
echo "a caller with $FDS fds open / with none: runnerd $(ratio "${med[rd_fds]:-}" "${med[rd]:-}")" \
	"(goal <= 1.10), plain $(ratio "${med[plain_fds]:-}" "${med[plain]:-}"); runnerd adds" \
	"$(diff_us "${med[rd_fds]:-}" "${med[rd]:-}") for them"
echo "runnerd on one CPU (everything pinned to CPU 0) / runnerd free to use all CPUs =" \
	"$(ratio "${med[rd_1cpu]:-}" "${med[rd]:-}")"
if [ -n "${BASE:-}" ]; then
	echo "BASE is $BASE: this build / BASE = $(ratio "${med[rd]:-}" "${med[base]:-}")," \
		"on one CPU $(ratio "${med[rd_1cpu]:-}" "${med[base_1cpu]:-}"), with $FDS fds" \
		"$(ratio "${med[rd_fds]:-}" "${med[base_fds]:-}")"
fi
echo "timing took $((SECONDS - start)) s; right after it the CPUs were $(busy_pct)% busy"

# --- Memory: MEM_N commands at once --------------------------------------------------------

# Children of PID (all its threads).
kids() {
	cat /proc/"$1"/task/*/children 2>/dev/null || true
}
# "count rss_kib pss_kib" summed over the given pids (those that still exist).
mem_of() {
	local files=() p
	for p in "$@"; do
		files+=("/proc/$p/status" "/proc/$p/smaps_rollup")
	done
	[ $# -gt 0 ] || {
		echo "0 0 0"
		return
	}
	cat "${files[@]}" 2>/dev/null |
		awk '/^VmRSS:/ { n++; rss += $2 } /^Pss:/ { pss += $2 }
			END { printf "%d %d %d\n", n, rss, pss }'
}
hwm_of() {
	awk '/^VmHWM:/ { print $2 }' "/proc/$1/status" 2>/dev/null || true
}
max() {
	echo $(($1 > $2 ? $1 : $2))
}

# mem_watch TOP AGENT_IS_CHILD: samples about every 0.1 s while TOP runs. With AGENT_IS_CHILD=1
# TOP is runnerd: its child execbench is the agent, its other children the sandboxes' pid 1
# (the reapers), the agent's children the stubs. Otherwise TOP is the agent itself. Peaks of
# runnerd and of the agent are the largest sample; the reapers and the agent's children are
# taken from the last sample with the most of them (all started, the handoffs done: an agent's
# child counts once it is no longer a copy of execbench).
mem_watch() {
	local top=$1 under=$2 agent="" k c n rss pss h side kids_done
	pk_top_rss=0 pk_top_pss=0 pk_top_hwm=0 pk_agent_rss=0
	pk_side_n=0 pk_side_rss=0 pk_side_pss=0 pk_kid_n=0 pk_kid_rss=0 pk_kid_pss=0 samples=0
	while kill -0 "$top" 2>/dev/null; do
		if [ "$under" = 1 ]; then
			side=()
			for k in $(kids "$top"); do
				c=$(cat "/proc/$k/comm" 2>/dev/null || true)
				if [ -z "$agent" ] && [ "$c" = execbench ]; then
					agent=$k
				elif [ "$k" != "$agent" ]; then
					side+=("$k")
				fi
			done
			read -r n rss pss < <(mem_of "$top")
			pk_top_rss=$(max "$pk_top_rss" "$rss")
			pk_top_pss=$(max "$pk_top_pss" "$pss")
			h=$(hwm_of "$top")
			pk_top_hwm=$(max "$pk_top_hwm" "${h:-0}")
			read -r n rss pss < <(mem_of "${side[@]}")
			if [ "$n" -gt 0 ] && [ "$n" -ge "$pk_side_n" ]; then
				pk_side_n=$n pk_side_rss=$rss pk_side_pss=$pss
			fi
		else
			agent=$top
		fi
		if [ -n "$agent" ]; then
			read -r n rss pss < <(mem_of "$agent")
			pk_agent_rss=$(max "$pk_agent_rss" "$rss")
			kids_done=()
			for k in $(kids "$agent"); do
				c=$(cat "/proc/$k/comm" 2>/dev/null || true)
				[ -z "$c" ] || [ "$c" = execbench ] || kids_done+=("$k")
			done
			read -r n rss pss < <(mem_of "${kids_done[@]}")
			if [ "$n" -gt 0 ] && [ "$n" -ge "$pk_kid_n" ]; then
				pk_kid_n=$n pk_kid_rss=$rss pk_kid_pss=$pss
			fi
		fi
		samples=$((samples + 1))
		sleep 0.1
	done
}

echo
echo "memory: $MEM_N commands at once (execbench parallel $MEM_N /bin/sleep $MEM_SECONDS)"
mem_cmd=("$eb" parallel "$MEM_N" /bin/sleep "$MEM_SECONDS")

per() { # total count: total/count, or 0
	[ "$2" -gt 0 ] && echo $(($1 / $2)) || echo 0
}

"${mem_cmd[@]}" >"$tmp/mem_plain.out" 2>&1 &
top=$!
mem_watch "$top" 0
plain_rc=0
wait "$top" || plain_rc=$?
if [ "$plain_rc" = 0 ]; then
	echo "  plain:   agent (execbench) VmRSS peak $pk_agent_rss KiB;" \
		"its $pk_kid_n commands: $pk_kid_rss KiB RSS, $pk_kid_pss KiB Pss"
else
	echo "  plain:   failed (exit $plain_rc): $(tail -n 2 "$tmp/mem_plain.out" | tr '\n' ' ')"
fi

"${rd[@]}" "${mem_cmd[@]}" >"$tmp/mem_rd.out" 2>&1 &
top=$!
mem_watch "$top" 1
rd_rc=0
wait "$top" || rd_rc=$?
if [ "$rd_rc" = 0 ]; then
	echo "  runnerd: runnerd VmRSS peak $pk_top_rss KiB, VmHWM $pk_top_hwm KiB," \
		"Pss peak $pk_top_pss KiB ($samples samples)"
	echo "           agent (execbench) VmRSS peak $pk_agent_rss KiB"
	echo "           $pk_side_n other children of runnerd (each sandbox's pid-1 reaper, the spare, the zygote):" \
		"$pk_side_rss KiB RSS, $pk_side_pss KiB Pss" \
		"($(per "$pk_side_rss" "$pk_side_n") / $(per "$pk_side_pss" "$pk_side_n") KiB each)"
	echo "           $pk_kid_n stubs (the agent's children): $pk_kid_rss KiB RSS," \
		"$pk_kid_pss KiB Pss ($(per "$pk_kid_rss" "$pk_kid_n") /" \
		"$(per "$pk_kid_pss" "$pk_kid_n") KiB each)"
	echo "           runnerd + reapers + stubs: $((pk_top_pss + pk_side_pss + pk_kid_pss)) KiB Pss"
else
	echo "  runnerd: failed (exit $rd_rc): $(tail -n 2 "$tmp/mem_rd.out" | tr '\n' ' ')"
fi

# Whole agent sessions: the real CLIs of the end-to-end tests, plain and under runnerd
# (bench/agents.py); a CLI that is not installed is n/a, with the reason.
echo
agents_rc=0
py=$(command -v python3 || true)
if [ -n "$py" ]; then
	"$py" "$repo/bench/agents.py" "$build" || agents_rc=$?
else
	echo "agent sessions: n/a: no python3"
fi

fail=0
[ "$agents_rc" = 0 ] || fail=1
for id in "${order[@]}"; do
	case $id:${status[$id]} in
	bwrap:n/a | rd_1cpu:n/a | *:ok) ;;
	*) fail=1 ;;
	esac
done
[ "$rd_rc" = 0 ] && [ "$plain_rc" = 0 ] || fail=1
exit $fail
