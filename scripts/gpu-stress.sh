#!/usr/bin/env bash
# gpu-stress.sh [SECONDS] runs the randomized differential tests of the
# engines (each draws a fresh seed per run and compares every engine with a
# model) over and over, the packages side by side, for SECONDS (default
# 270) on a GPU machine, from the test binaries scripts/pack-gpu.sh put in
# .gpu/tests. It is the long randomized run that CI has no time for: a
# session-20 suite met, once, a livelock that only such repetition finds.
#
# Each run's output (failures only: no -test.v) goes to a temporary file;
# a failed run's is kept as <log dir>/stress-<package>-<run>.log (the log
# dir is $WARPKV_LOG_DIR, else $OUT, else .gpu/logs), and its failing
# tests and seed lines, which say how to replay it (WARPKV_TEST_SEED=...),
# are printed at once. A run
# that the time limit cuts is counted as cut, not failed. The last lines
# give each package's runs, failures and cuts; the exit status is non-zero
# when a run failed. WARPKV_REQUIRE_GPU=1 unless the environment sets it.
set -uo pipefail

budget=${1:-270}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tests=$root/.gpu/tests
log_dir=${WARPKV_LOG_DIR:-${OUT:-$root/.gpu/logs}}
mkdir -p "$log_dir" || exit 1
export WARPKV_REQUIRE_GPU=${WARPKV_REQUIRE_GPU-1}
status_dir=$(mktemp -d)
trap 'rm -rf "$status_dir"' EXIT

# The randomized differential tests: package name, source directory, tests.
suites=(
	"stm stm TestEnginesAgreeWithSerialRuns$|TestSmallLogValidatesInTurnGPU$|TestDirectCommitGPU$"
	"btree btree TestDifferential$"
	"art art TestRandomSequences$"
	"hashindex hashindex TestEnginesAgree$|TestStagedAgree$"
	"mpt mpt TestEdgeCases$"
)

# loop NAME DIR REGEX runs the tests until the budget is spent and writes
# "NAME: R runs, F failed, C cut" to the status folder; F > 0 marks failure.
loop() {
	local name=$1 dir=$2 re=$3 runs=0 failed=0 cut=0 end=$((SECONDS + budget)) left rc out
	out=$(mktemp)
	if [[ ! -x $tests/$name.test || ! -d $root/$dir ]]; then
		echo "$name: missing $tests/$name.test or $root/$dir (run scripts/pack-gpu.sh)" >"$status_dir/$name"
		echo 1 >"$status_dir/$name.failed"
		return
	fi
	while left=$((end - SECONDS)) && ((left > 5)); do
		(cd "$root/$dir" && exec timeout "$left" "$tests/$name.test" -test.run "$re") </dev/null >"$out" 2>&1
		rc=$?
		runs=$((runs + 1))
		if ((rc == 124)); then
			cut=$((cut + 1))
		elif ((rc != 0)); then
			failed=$((failed + 1))
			cp "$out" "$log_dir/stress-$name-$runs.log"
			grep -E -- '--- FAIL|^panic:|WARPKV_TEST_SEED|enginetest\.go:[0-9]+: case' "$out" | head -n 12 | sed "s/^/$name run $runs: /"
		fi
	done
	rm -f "$out"
	echo "$name: $runs runs, $failed failed, $cut cut by the time limit" >"$status_dir/$name"
	echo "$failed" >"$status_dir/$name.failed"
}

echo "gpu-stress: ${budget}s, the packages side by side; failed runs' logs in $log_dir"
for s in "${suites[@]}"; do
	read -r name dir re <<<"$s"
	loop "$name" "$dir" "$re" &
done
wait
bad=0
for s in "${suites[@]}"; do
	read -r name _ <<<"$s"
	cat "$status_dir/$name"
	(($(cat "$status_dir/$name.failed") > 0)) && bad=1
done
exit $bad
