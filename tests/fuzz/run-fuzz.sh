#!/usr/bin/env bash
# Runs the mailbox libFuzzer target for a bounded time (a make test script).
#
# Usage: tests/fuzz/run-fuzz.sh [TARGET [SECONDS]]
#   TARGET   defaults to $FUZZ_TARGET, else ${BUILD:-build}/fuzz/fuzz_mailbox
#   SECONDS  defaults to $FUZZ_SECONDS, else 20
# Exit: 0 no finding, 77 skipped (no fuzzer binary: clang/libFuzzer missing),
# anything else: the fuzzer found a crash or a failed check (the reproducer
# is saved under build/fuzz/artifacts/).
set -u
target=${1:-${FUZZ_TARGET:-${BUILD:-build}/fuzz/fuzz_mailbox}}
secs=${2:-${FUZZ_SECONDS:-20}}
if [ ! -x "$target" ]; then
	echo "skip: $target not built (needs clang with -fsanitize=fuzzer)"
	exit 77
fi
dir=$(dirname "$target")
name=$(basename "$target")
corpus="$dir/corpus-$name"
seeds="$dir/seeds-$name"
artifacts="$dir/artifacts/"
mkdir -p "$corpus" "$seeds" "$artifacts"

# Seeds: small operation programs (see the header of fuzz_mailbox.c).
# op 1 = framed request (type, body length, capacity index, body, time),
# op 2 = events, op 3 = POLL + page reads, op 0 = raw request.
seed() { printf "$2" > "$seeds/$1"; }
seed hello       '\x01\x01\x00\x0f\x10\x00'
seed stats       '\x01\x05\x00\x0f\x10\x00'
seed reset       '\x01\x06\x00\x0f\x10\x00'
seed poll_read   '\x02\x04\x00\x05\x00\x64\x00\x01\x00\x10\x00\x00\x00\x02\x03\x00\x10\x00\x00\x03\x00\x01\x02'
seed configure   '\x01\x02\x14\x0f\x40\x1f\x00\x00\x00\xca\x9a\x3b\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x10\x00'
seed raw_hello   '\x00\x0c\x00\x0f\x50\x4c\x01\x01\x0c\x00\x01\x00\x00\x00\x00\x00\x05\x00'
seed events_many '\x02\x1f\x01\x34\x12\x05\xff\x00\x20\x00\x10\x00\x09\x00\xff\xff\x10\x00\x06\x00\x00\x00\x01\x00\x01\x00\x01\x03\x00\x00\x00\x00\x00\x00'

log="$dir/$name.log"
echo "fuzzing $target for ${secs}s (corpus $corpus)"
"$target" -max_total_time="$secs" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
	-artifact_prefix="$artifacts" "$corpus" "$seeds" >"$log" 2>&1
rc=$?
grep -v '^"' "$log" | tail -n 12
if [ "$rc" -ne 0 ]; then
	echo "$name: FAILED (exit $rc); reproducer (run: $target FILE):"
	ls -t "$artifacts" | head -n 3 | sed "s|^|  $artifacts|"
	exit 1
fi
if ! grep -q '^Done [0-9]* runs' "$log"; then
	echo "$name: no run summary in $log"
	exit 1
fi
exit 0
