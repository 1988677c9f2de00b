#!/bin/sh
# run_trace on damaged captures (tests/fuzz/corpus/run_trace/: the first 100
# records of ring.pcap with one kind of damage each: timestamps jumping by
# 194 days or 68 years, a jump every 10 records, a nanosecond field past a
# second, a zero timestamp, a huge or inconsistent record length, a cut
# record). Every one must finish within a time and memory bound, with --out,
# and exit 0, 4 or 5 (never a crash, never 1). A corrupted timestamp is
# a warning with the jump's size, exit 4 with --strict, and costs no polls
# of the empty windows it spans.
set -u
BUILD=${BUILD:-build}
bin=$BUILD/bin/pulse-run-trace
if [ ! -x "$bin" ]; then
	echo "run_trace_mutants.sh: $bin not built"
	exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
corpus=tests/fuzz/corpus/run_trace
# 30 s and 2 GiB of address space per run: a run is a fraction of a second
# and ~200 MiB (4 NICs' firmware); one poll per second of a 194-day jump
# took 410 s here before.
run() { # OUT ARGS...
	o=$1
	shift
	(ulimit -v 2097152; timeout 30 "$bin" "$@") >"$o" 2>&1
}
n=0
for f in "$corpus"/*.pcap; do
	n=$((n + 1))
	name=$(basename "$f" .pcap)
	rm -rf "$work/out"
	run "$work/log" --out "$work/out" "$f"
	rc=$?
	case $rc in
	0 | 4 | 5) ok "$name: exit $rc" ;;
	*) bad "$name: exit $rc"; tail -n 5 "$work/log" | sed 's/^/    | /' ;;
	esac
	if [ "$rc" -eq 0 ] && command -v python3 >/dev/null 2>&1; then
		# epochs.json (streamed) is one document and says what epochs.csv says
		if python3 - "$work/out" <<'PY'
import csv, json, sys
d = sys.argv[1]
j = json.load(open(d + "/epochs.json"))
assert j["schema"] == "pulse.epochs.v1" and j["source"] == "run_trace"
rows = list(csv.DictReader(open(d + "/epochs.csv")))
got = sorted((n["nic"], w["window_seq"], f["qpn"], e, b) for n in j["nics"] for w in n["windows"]
             for f in w["flows"] for e, b in zip(f["epochs"], f["bytes"]))
want = sorted((r["nic"], int(r["window_seq"]), int(r["qpn"]), int(r["epoch"]), int(r["bytes"])) for r in rows)
assert got == want, (len(got), len(want))
for n in j["nics"]:
    seqs = [w["window_seq"] for w in n["windows"]]
    assert seqs == sorted(seqs)
PY
		then ok "$name: epochs.json matches epochs.csv"; else bad "$name: epochs.json"; fi
	fi
done
[ "$n" -ge 10 ] && ok "$n mutants" || bad "only $n mutants in $corpus"
# re-reading the file (--replay-mem 0) replays exactly what pass 1's log does
for f in "$corpus"/*.pcap; do
	(ulimit -v 2097152; timeout 30 "$bin" --json "$f") >"$work/a.json" 2>/dev/null
	(ulimit -v 2097152; timeout 30 "$bin" --json --replay-mem 0 "$f") >"$work/b.json" 2>/dev/null
	cmp -s "$work/a.json" "$work/b.json" && ok "$(basename "$f" .pcap): the same from the log and the file" ||
		bad "$(basename "$f" .pcap): --replay-mem 0 differs"
done

# the 194-day jump: a warning with its size, the empty windows skipped
run "$work/log" "$corpus/jump_194d_rest.pcap"
rc=$?
[ "$rc" -eq 0 ] && ok "194-day jump: exit 0" || bad "194-day jump: exit $rc"
grep -q "timestamps jump forward 1 times, by up to 16777216.000 s (first at record 51)" "$work/log" &&
	ok "194-day jump: warned with its size and record" || bad "194-day jump: no warning"
grep -q "16777215 empty windows skipped" "$work/log" && ok "194-day jump: 16777215 windows skipped" ||
	bad "194-day jump: windows skipped"
run "$work/log" --strict "$corpus/jump_194d_rest.pcap"
rc=$?
[ "$rc" -eq 4 ] && ok "194-day jump, --strict: exit 4" || bad "194-day jump, --strict: exit $rc"
# the bytes after the jump are all measured: per QP what the undamaged
# records give, in windows stamped with their own time
(ulimit -v 2097152; timeout 30 "$bin" --json "$corpus/base.pcap") >"$work/base.json" 2>/dev/null
(ulimit -v 2097152; timeout 30 "$bin" --json "$corpus/jump_194d_rest.pcap") >"$work/jump.json" 2>/dev/null
if command -v python3 >/dev/null 2>&1; then
	if python3 -c '
import json, sys
b, j = (json.load(open(p)) for p in sys.argv[1:3])
assert j["packets"]["ts_jumps"] == 1 and j["packets"]["windows_skipped"] == 16777215
m = lambda d: sorted((q["qpn"], q["tx_bytes"], q["measured_bytes"]) for n in d["nics"] for q in n["qps"])
assert m(b) == m(j) and sum(x[2] for x in m(j)) > 0
last = max(q["peak_epoch_ns"] or 0 for n in j["nics"] for q in n["qps"])
assert last >= (1 << 24) * 10**9 + 1700000000 * 10**9, last
' "$work/base.json" "$work/jump.json"; then ok "194-day jump: every QP measured, at its own time"; else bad "194-day jump: measured bytes"; fi
fi
# ten jumps of 100 s with a 1 ms poll: 100 polls' worth each at most... none polled
run "$work/log" --poll 1ms "$corpus/jumps_every_10_records_100s.pcap"
rc=$?
[ "$rc" -eq 0 ] && grep -q "timestamps jump forward 9 times" "$work/log" && ok "nine 100 s jumps at --poll 1ms" ||
	bad "nine 100 s jumps: exit $rc"

echo "run_trace_mutants.sh: $fails failures"
[ "$fails" -eq 0 ]
