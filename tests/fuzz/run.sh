#!/usr/bin/env bash
# Builds the libFuzzer targets with clang in their own tree and runs each for a few seconds,
# seeded with the shipped config, the profiles and the fixtures. A crash, a leak or a timeout
# fails. Without clang it skips loudly (77), which RUNNERD_MUST_WORK=1 turns into a failure.
# Usage: run.sh SOURCE_DIR FUZZ_BUILD_DIR [SECONDS]
set -euo pipefail
src=$1 build=$2 seconds=${3:-15}

skip() {
	echo "SKIP: $*"
	[ "${RUNNERD_MUST_WORK:-0}" = 1 ] && { echo "RUNNERD_MUST_WORK=1: a skip is a failure"; exit 1; }
	exit 77
}
command -v clang >/dev/null || skip "clang is not installed (apt-get install clang libclang-rt-14-dev)"

cmake -S "$src" -B "$build" -DCMAKE_C_COMPILER=clang -DRUNNERD_FUZZ=ON \
	-DCMAKE_BUILD_TYPE=Debug >"$build.log" 2>&1 || { cat "$build.log"; exit 1; }
cmake --build "$build" -j "$(nproc)" --target fuzz_config fuzz_jsonpos fuzz_reader >>"$build.log" 2>&1 ||
	{ tail -n 40 "$build.log"; exit 1; }

corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
for t in fuzz_config fuzz_jsonpos fuzz_reader; do
	mkdir -p "$corpus/$t"
	[ "$t" = fuzz_reader ] ||
		cp "$src"/runner.json "$src"/profiles/*.json "$src"/tests/fixtures/*/*.json "$corpus/$t"/
	echo "fuzz: $t for ${seconds}s"
	"$build/bin/$t" -max_total_time="$seconds" -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 "$corpus/$t" 2>"$corpus/$t.log" || {
		tail -n 60 "$corpus/$t.log"
		echo "fuzz: $t FAILED"
		exit 1
	}
	grep -E 'stat::number_of_executed_units' "$corpus/$t.log" | sed "s/^/fuzz: $t /"
done
echo "fuzz: all targets ran clean"
