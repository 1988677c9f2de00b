#!/usr/bin/env bash
# Runs every test program and test script, then prints one summary line.
#
# Usage: tests/run-tests.sh PROG... -- SCRIPT...
# PROGs are cmocka binaries: their own "[  PASSED  ] N test(s)." and
# "[  FAILED  ] N test(s)" lines are added up. SCRIPTs count as one test each
# (exit 0 passes, 77 skips, anything else fails).
set -u
passed=0 failed=0 skipped=0
failures=()
mode=prog
log_dir=${TEST_LOG_DIR:-build/test-logs}
mkdir -p "$log_dir"

run_one() {
	local kind=$1; shift
	local name=$1
	local log="$log_dir/$(echo "$name" | tr '/ ' '__').log"
	local start=$SECONDS
	"$@" >"$log" 2>&1
	local rc=$?
	local secs=$((SECONDS - start))
	if [ "$kind" = prog ]; then
		local p f
		p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test(s)\..*/\1/p' "$log" | tail -n 1)
		f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test(s).*/\1/p' "$log" | tail -n 1)
		p=${p:-0}; f=${f:-0}
		if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
		passed=$((passed + p)); failed=$((failed + f))
		if [ "$f" -ne 0 ]; then
			failures+=("$name"); printf 'FAIL  %-60s %3ss (%s passed, %s failed)\n' "$name" "$secs" "$p" "$f"
			tail -n 30 "$log" | sed 's/^/    | /'
		else
			printf 'ok    %-60s %3ss (%s tests)\n' "$name" "$secs" "$p"
		fi
	else
		if [ $rc -eq 0 ]; then
			passed=$((passed + 1)); printf 'ok    %-60s %3ss\n' "$name" "$secs"
		elif [ $rc -eq 77 ]; then
			skipped=$((skipped + 1)); printf 'skip  %-60s %3ss: %s\n' "$name" "$secs" "$(tail -n 1 "$log")"
		else
			failed=$((failed + 1)); failures+=("$name")
			printf 'FAIL  %-60s %3ss (exit %s)\n' "$name" "$secs" "$rc"
			tail -n 30 "$log" | sed 's/^/    | /'
		fi
	fi
}

for arg in "$@"; do
	if [ "$arg" = "--" ]; then mode=script; continue; fi
	run_one "$mode" "$arg"
done

echo
if [ ${#failures[@]} -gt 0 ]; then
	echo "Failed: ${failures[*]}"
	echo "Logs: $log_dir/"
fi
echo "tests: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
