#!/bin/sh
# pulse-evgen: option handling, determinism, and that its streams contain
# what they claim (checked by reading the records back with od, independently
# of the generator's code).
set -u
BUILD=${BUILD:-build}
EVGEN=$BUILD/bin/pulse-evgen
fail() {
	echo "evgen: FAIL: $*"
	exit 1
}
[ -x "$EVGEN" ] || fail "$EVGEN is missing; run 'make'"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pulse-evgen.XXXXXX") || fail mktemp
trap 'rm -rf "$tmp"' EXIT

"$EVGEN" --help | grep -q '^Usage: pulse-evgen' || fail "--help prints no usage"
for bad in "" "--flows" "--flows x -o $tmp/x" "--duty-pct 0 -o $tmp/x" "--threads 300 -o $tmp/x" \
	"--bogus -o $tmp/x" "--flows -3 -o $tmp/x" "-o /nonexistent-dir/x"; do
	# shellcheck disable=SC2086
	"$EVGEN" $bad >"$tmp/err" 2>&1 && fail "'pulse-evgen $bad' succeeded"
	grep -q '^pulse-evgen: ' "$tmp/err" || fail "'pulse-evgen $bad' gave no clear error"
done

opts="--flows 8 --duration-ms 4500 --duty-pct 20 --poll-ms 100"
"$EVGEN" -q -o "$tmp/a" $opts --seed 5 || fail "generate a"
"$EVGEN" -q -o "$tmp/b" $opts --seed 5 || fail "generate b"
"$EVGEN" -q -o "$tmp/c" $opts --seed 6 || fail "generate c"
cmp -s "$tmp/a" "$tmp/b" || fail "same seed, different bytes"
cmp -s "$tmp/a" "$tmp/c" && fail "different seeds, same bytes"
[ "$(head -c 8 "$tmp/a")" = PULSEEVS ] || fail "bad magic"
size=$(wc -c <"$tmp/a")
[ $(((size - 32) % 16)) -eq 0 ] || fail "file size $size is not header + whole records"

# records as 4 u32 words: kind|thread<<8|pkts<<16, qpn (or poll ts), ts, units
scan() {
	od -An -v -j32 -w16 -tu4 "$1" | awk '
	{ kind = $1 % 256; units = $4 % 65536 }
	kind == 1 {
		tx++
		if (have && prev - $3 > 2147483648) wraps++
		else if (have && $3 < prev) back++
		if (have && $3 - prev > 1000000000 && $3 - prev < 2147483648) jump++
		prev = $3; have = 1
		if ($2 == 0) q0++
		if ($2 == 16777215) qmax++
		if ($2 > 16777215) qwide++
		if (units == 0) zero++
		if (units == 65535) clip++
		if (units > 128) coal++
	}
	kind == 2 { polls++ }
	END { printf "tx=%d polls=%d wraps=%d back=%d jump=%d q0=%d qmax=%d qwide=%d zero=%d clip=%d coal=%d\n",
		tx, polls, wraps, back, jump, q0, qmax, qwide, zero, clip, coal }'
}
s=$(scan "$tmp/a")
echo "normal: $s"
case $s in *" polls=45 "*) ;; *) fail "expected 45 polls in 4.5 s at 100 ms: $s" ;; esac
for k in q0 qmax qwide zero clip; do
	echo "$s" | grep -q " $k=0\( \|$\)" || fail "normal stream has bad input ($k): $s"
done
echo "$s" | grep -q " wraps=[1-9]" || fail "4.5 s of NIC time did not wrap the 32-bit clock: $s"
echo "$s" | grep -q " coal=[1-9]" || fail "no coalesced events: $s"

"$EVGEN" -q -o "$tmp/d" $opts --seed 5 --bad --bad-permille 100 || fail "generate bad"
s=$(scan "$tmp/d")
echo "bad:    $s"
for k in q0 qmax qwide zero clip back jump; do
	echo "$s" | grep -q " $k=[1-9]" || fail "bad stream lacks $k: $s"
done
echo "evgen: PASS"
