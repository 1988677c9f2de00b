#!/bin/sh
# Issue 15's CI test, on one machine: the whole bus path with its failures.
#   - 3 nats-server -js in one cluster (loopback, random ports), the job
#     streams replicated 3 times;
#   - 2 jobs from sim/run_cluster (tests/live/comm_stop.json and
#     comp_slow.json), each published by pulse-host-agent --replay RUN --bus
#     at 5x real time (a process per host);
#   - 3 pulse-analyzer --bus: two for job A (one owns it, one stands by),
#     one for job B; one pulse-sink per job into PostgreSQL (initdb in a
#     temporary folder, run as postgres when root);
#   - before the failures' onsets, kill -9 of job A's owner and of one
#     nats-server.
# Checks, per job: the diagnoses in PostgreSQL equal pulse-analyzer --replay
# of the same run (same class, level, suspects, operator, trigger, onset and
# report data times: tests/bus/diag_compare.py, which proves on the replay
# that it catches a lost, a duplicated and a wrong one), each stored exactly
# once; the final owner ingested every record the agents published; job A's
# lease moved to the standby within its expiry. ASan builds of the agent,
# analyzer and sink; a sanitizer report fails the test. Exits 77 (skip)
# without nats-server, PostgreSQL, curl or python3.
set -u
BUILD=${BUILD:-build}
agent=$BUILD/tests/pulse-host-agent-asan
an=$BUILD/tests/pulse-analyzer-asan
sink=$BUILD/tests/pulse-sink-asan
ref=$BUILD/bin/pulse-analyzer
runc=$BUILD/bin/pulse-run-cluster
T=bus_cluster.sh
for c in curl python3; do command -v $c >/dev/null || { echo "$T: $c is not installed (make deps)"; exit 77; }; done
. tests/sink/pg_lib.sh
pg_need $T
. tests/bus/nats_lib.sh
bus_test_begin $T "$agent" "$an" "$sink" "$ref" "$runc" "$BUILD/bin/pulse-host-agent"
spid="" pids="" nspids="" pg=""
cleanup() {
	for p in $pids; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	for p in $nspids; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	pg_stop_all
	[ "${KEEP:-0}" = 1 ] && echo "$T: kept $work" || rm -rf "$work"
}
trap cleanup EXIT
SPEED=5
LEASE_MS=1500
PULSE_BUS="replicas=3,max_bytes=16777216"
export PULSE_BUS
# silent_ms: once the replays end, nothing newer will come; the last data
# waits for it before the analyzers release it
PULSE_ANALYZER_SERVER="lease_ms=$LEASE_MS,silent_ms=2000"
export PULSE_ANALYZER_SERVER

# the runs and what pulse-analyzer --replay says of them
for j in A:comm_stop B:comp_slow; do
	n=${j%%:*} s=${j#*:}
	"$runc" "tests/live/$s.json" --out "$work/run-$n" --quiet || { echo "$T: run_cluster $s failed"; exit 1; }
	"$ref" --replay "$work/run-$n" --agent-out "$work/ref-$n" --json --quiet >"$work/ref-$n.json" 2>"$work/ref-$n.log" ||
		{ echo "$T: pulse-analyzer --replay of $s failed"; cat "$work/ref-$n.log"; exit 1; }
done
python3 tests/bus/diag_compare.py --self-test "$work/ref-A.json" >"$work/self" && ok "judge: $(cat "$work/self")" ||
	bad "judge: $(cat "$work/self")"

pg_create $T
nats_cluster_start 3 || { echo "$T: the nats-server cluster did not start"; tail -n 5 "$work"/s*.log; exit 1; }
ok "3 nats-servers in one JetStream cluster"

start_an() { # I JOB
	"$an" --bus "$NATS_URLS" --job "$2" --metrics-listen 127.0.0.1:0 --quiet >"$work/an$1.out" 2>"$work/an$1.log" &
	eval "anp_$1=$!"
	pids="$pids $!"
}
metric() { # I NAME: analyzer I's sample
	eval "p=\${mport_$1:-}"
	[ -n "$p" ] && curl -s "http://127.0.0.1:$p/metrics" 2>/dev/null | sed -n "s/^$2 \([0-9.]*\)$/\1/p"
}
owner_of() { # I...: the first alive analyzer among them that owns its job
	for i in "$@"; do
		eval "p=\$anp_$i"
		r=$(metric "$i" pulse_analyzer_lease_revision)
		kill -0 "$p" 2>/dev/null && [ -n "$r" ] && [ "$r" != 0 ] && { echo "$i"; return; }
	done
}
start_an 1 bcA
start_an 2 bcA
start_an 3 bcB
for i in 1 2 3; do
	p=""
	for _ in $(seq 100); do
		p=$(sed -n 's#.*metrics on http://127.0.0.1:\([0-9]*\)/metrics.*#\1#p' "$work/an$i.log")
		[ -n "$p" ] && break
		sleep 0.1
	done
	eval "mport_$i=$p"
done
oa="" ob=""
for _ in $(seq 300); do
	oa=$(owner_of 1 2)
	ob=$(owner_of 3)
	[ -n "$oa" ] && [ -n "$ob" ] && break
	sleep 0.1
done
[ -n "$oa" ] && [ -n "$ob" ] || { bad "owners: job A '$oa', job B '$ob'"; tail -n 5 "$work"/an*.log; exit 1; }
sa=$((3 - oa))
ok "analyzer $oa owns job A, $sa stands by; analyzer 3 owns job B"
for n in A B; do
	"$sink" --bus "$NATS_URLS" --job "bc$n" --db "$db" 2>"$work/sink-$n.log" &
	pids="$pids $!"
done

# the agents: every host of each run, at 5x real time
for n in A B; do
	"$agent" --replay "$work/run-$n" --bus "$NATS_URLS" --job "bc$n" --speed $SPEED \
		--out "$work/ag$n-{host}.jsonl" 2>"$work/ag$n.log" &
	eval "agp_$n=$!"
	pids="$pids $!"
done
# The onsets are 6.8 s into the runs, their first hook records about 0.1 s:
# 1.3 s of wall at 5x. Kill job A's owner and one server well before.
sleep 0.6
eval "kill -9 \$anp_$oa"
kill -9 "$nsp_2"
t0=$(date +%s%N)
o2=""
for _ in $(seq 200); do
	[ -n "$(owner_of "$sa")" ] && { o2=$sa; break; }
	sleep 0.05
done
ms=$((($(date +%s%N) - t0) / 1000000))
[ -n "$o2" ] && [ "$ms" -le $((LEASE_MS + LEASE_MS / 3 + 1500)) ] &&
	ok "kill -9 of job A's owner (and of server 2): analyzer $sa took the job in $ms ms (lease $LEASE_MS ms)" ||
	bad "job A's lease: new owner '$o2' after $ms ms"
for n in A B; do
	eval "wait \$agp_$n"
	rc=$?
	[ $rc = 0 ] || bad "agents of job $n: exit $rc ($(grep -c error "$work/ag$n.log") error lines)"
done
ok "the agents' replays ended"

published() { # JOB letter: records the agents published
	sed -n 's/.*bus: [0-9]* messages (\([0-9]*\) records,.*/\1/p' "$work/ag$1.log" | awk '{s += $1} END {print s + 0}'
}
rows() { q "SELECT count(*) FROM pulse_diagnoses WHERE job = 'bc$1'"; }
for n in A B; do
	i=$o2
	[ $n = B ] && i=3
	pub=$(published $n)
	want=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['diagnoses']))" "$work/ref-$n.json")
	got=""
	for _ in $(seq 300); do
		got=$(metric "$i" pulse_analyzer_records_total)
		[ "$got" = "$pub" ] && [ "$(rows $n)" -ge "$want" ] && break
		sleep 0.1
	done
	[ "$got" = "$pub" ] && [ "$pub" -gt 0 ] &&
		ok "job $n: its final owner (analyzer $i) ingested the $pub records published" ||
		bad "job $n: analyzer $i ingested '$got' of $pub records"
	sleep 1 # anything said twice would be stored by now
	q "SELECT evidence || jsonb_build_object('key', key) FROM pulse_diagnoses WHERE job = 'bc$n'" >"$work/rows-$n"
	if python3 tests/bus/diag_compare.py "$work/ref-$n.json" "$work/rows-$n" >"$work/cmp-$n"; then
		ok "job $n: $(cat "$work/cmp-$n")"
	else
		bad "job $n: the stored diagnoses differ from the replay's:"
		sed 's/^/    /' "$work/cmp-$n"
	fi
	# issue 16: the answers go into the stored diagnosis: a machine-level
	# fail-slow's "where" (its stage and critical path) among them
	sel="FROM pulse_diagnoses WHERE job = 'bc$n' AND class IN ('comp-slow', 'comm-slow') AND level = 'machine'"
	nall=$(q "SELECT count(*) $sel")
	nw=$(q "SELECT count(*) $sel AND NOT evidence ? 'where'")
	[ "$nw" = 0 ] && ok "job $n: the $nall stored machine-level fail-slow diagnoses carry their \"where\"" ||
		bad "job $n: $nw of $nall stored fail-slow diagnoses without \"where\""
	sed -n 's/^  \(.*at .* level: .*\)/\1/p' "$work/an$i.out" | head -n 1 | sed "s/^/    job $n live: /"
done
for f in "$work"/an*.log "$work"/ag*.log "$work"/sink-*.log; do
	grep -q "ERROR: AddressSanitizer\|runtime error:" "$f" && bad "a sanitizer report in $f"
done
grep -q "took over\|reconnect" "$work"/ag*.log "$work"/an*.log 2>/dev/null || true

[ "$fails" -eq 0 ] || { echo "$T: $fails failure(s)"; tail -n 6 "$work"/an*.log "$work"/agA.log; exit 1; }
echo "$T: all passed"
