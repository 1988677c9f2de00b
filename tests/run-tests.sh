#!/usr/bin/env bash
# Runs every test program and test script, then prints one summary line.
#
# Usage: tests/run-tests.sh PROG... -- SCRIPT...
# PROGs are cmocka binaries: their own "[  PASSED  ] N test(s)." and
# "[  FAILED  ] N test(s)" lines are added up. SCRIPTs count as one test each
# (exit 0 passes, 77 skips, anything else fails).
# TEST_TIMEOUT=S: a test still running after S seconds (default 900; the
# longest takes about 3 minutes on 2 cores) is killed with its children and
# fails, so that one hang cannot eat a CI run.
set -u
passed=0 failed=0 skipped=0
failures=()
mode=prog
log_dir=${TEST_LOG_DIR:-build/test-logs}
test_timeout=${TEST_TIMEOUT:-900}
mkdir -p "$log_dir"

# The simulated runs need room (make test leaves about 1.5 GB under build/);
# a full disk otherwise shows as tests failing with empty logs.
free_mb() { df -Pm "$log_dir" 2>/dev/null | awk 'NR == 2 { print $4 }'; }
disk_note() {
	local f
	f=$(free_mb)
	[ -n "$f" ] && [ "$f" -lt 100 ] && echo "    | (the disk under $log_dir is full: $f MB free)"
}
start_free=$(free_mb)
if [ -n "$start_free" ] && [ "$start_free" -lt 3000 ]; then
	echo "tests: warning: $start_free MB free under $log_dir; make test needs about 2 GB"
fi

run_one() {
	local kind=$1; shift
	local name=$1
	local log="$log_dir/$(echo "$name" | tr '/ ' '__').log"
	local start=$SECONDS
	timeout --kill-after=30 "$test_timeout" "$@" >"$log" 2>&1
	local rc=$?
	local secs=$((SECONDS - start))
	if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		echo "run-tests.sh: killed after ${test_timeout} s (TEST_TIMEOUT)" >>"$log"
	fi
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
			disk_note
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
			disk_note
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
