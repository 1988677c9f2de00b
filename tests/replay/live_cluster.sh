#!/usr/bin/env bash
# The live path, rehearsed (issue 18), in the simulator: small GPT runs of
# tests/live/*.json (4 hosts x 2 GPUs) served by pulse-cluster-serve at 4x
# real time to one pulse-host-agent per host (ASan build) and
# pulse-analyzer --listen (ASan build), through tools/live-cluster.sh.
#   classes   one run per class (comp/comm x slow/stop): the first live
#             verdict's class, level and suspects equal the first verdict of
#             pulse-analyzer --replay on the same run (the NIC-down run's
#             link event reaches the agent live, --sim-links); the
#             wall-clock latency from the onset is printed
#   agent     host1's agent killed (SIGKILL) mid-run and restarted: the
#             analyzer logs the gap, a verdict still comes (whether it is the
#             replay's is printed), no operator counted twice (the analyzer's
#             duplicate count stays 0)
#   analyzer  the analyzer killed and restarted on its port: the agents
#             reconnect and resend from their queue (checked), a verdict still
#             comes (whether it is the replay's is printed)
#   ring      a training process killed mid-run: the agent drains its ring a
#             last time, removes /dev/shm/pulse-hook.<pid>, and goes on
#   join      a job whose iterations start 30 ms after its communicators
#             (tests/live/join_late.json), before the analyzer's JOIN has
#             given the agents their QPs' remote ends: the agents' windows
#             and operators wait for it (host-agent/join_wait.c), and every
#             operator record has the replay's status, but for the last
#             0.5 s of calls of a host (the run's end, on a loaded machine);
#             the live verdict equals the replay's
#   cli       pulse-cluster-serve's usage and bad input: each a message and
#             its exit status
# Usage: live_cluster.sh [cli|classes|agent|analyzer|ring|join]... (default: all).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-build}
case $build in /*) ;; *) build=$root/$build ;; esac
agent=${PULSE_AGENT:-$build/tests/pulse-host-agent-asan}
analyzer=${PULSE_ANALYZER:-$build/tests/pulse-analyzer-asan}
for b in "$agent" "$analyzer" "$build/bin/pulse-cluster-serve" "$build/bin/pulse-run-cluster" \
	"$build/bin/pulse-analyzer"; do
	[ -x "$b" ] || { echo "live_cluster.sh: $b is not built"; exit 1; }
done
work=$(mktemp -d /tmp/pulse-live.XXXXXX)
trap '[ "${KEEP:-0}" = 1 ] && echo "live_cluster.sh: kept $work" || rm -rf "$work"' EXIT
speed=4
failed=0
fail() { echo "live_cluster.sh: FAIL: $*"; failed=1; }

mkrun() { # scenario -> $work/run-NAME
	local d=$work/run-$1
	[ -d "$d" ] && return 0
	"$build/bin/pulse-run-cluster" "$root/tests/live/$1.json" --out "$d" --quiet ||
		{ echo "live_cluster.sh: run_cluster $1 failed"; exit 1; }
}
# the first Pulse verdict of a replay, as "class at level: suspects" with the
# suspects sorted (their order is not part of the verdict)
norm() {
	local l head rest
	while IFS= read -r l; do
		l=${l#"${l%%[! ]*}"}
		head=${l%%: *}
		rest=${l#*: }
		echo "$head: $(echo "$rest" | sed 's/ or /\n/g' | sort | paste -sd'|' | sed 's/|/ or /g')"
	done
}
# a machine-level verdict's machines only: "host3 GPU 0 or host3 GPU 1" ->
# "host3" (what the strict score judges)
machines() {
	local l head rest
	while IFS= read -r l; do
		case $l in
		*" at machine level: "*)
			head=${l%%: *}
			rest=${l#*: }
			echo "$head: $(echo "$rest" | sed 's/ or /\n/g; s/ GPU [0-9]*//g' | sort -u | paste -sd'|' | sed 's/|/ or /g')" ;;
		*) echo "$l" ;;
		esac
	done
}
replay_verdict() {
	"$build/bin/pulse-analyzer" --replay "$work/run-$1" --agent-out "$work/replay-$1" --quiet |
		sed -n '/^Pulse/{n;p;q}' | norm
}
live() { # scenario outdir [options]
	local s=$1 out=$2
	shift 2
	"$root/tools/live-cluster.sh" "$work/run-$s" "$out" --speed "$speed" --agent "$agent" \
		--analyzer "$analyzer" "$@"
}
live_verdict() { sed -n 's/^LIVE \(.*\) latency_s=.*/\1/p' "$1/verdict.txt" | norm; }
latency() { sed -n 's/.*latency_s=\(.*\)/\1/p' "$1/verdict.txt"; }
no_asan() {
	if grep -l "ERROR: AddressSanitizer\|runtime error:" "$1"/*.log "$1"/an.out 2>/dev/null; then
		fail "$2: a sanitizer report (above)"
	fi
}

# A live run on a machine too busy to keep 4x real time (other jobs: the
# agents' polls overran, a NIC exchange timed out and left a gap, a poll's
# round trip put its clock sync more than 2 ms of host time off, a training
# process published calls later than the agent waits for them) may not
# measure what the replay measured. A verdict that differs on such a run is
# no evidence against the live path: the run is made again, twice at most,
# and only then skipped (77) with the reason. On a clean run it must agree.
degraded() { # dir -> prints the reason, status 0 when degraded
	local d=$1 why=
	grep -q "poll cycle overran" "$d"/agent-*.log && why="agent poll cycles overran"
	# the agent counts the calls that reached it later than it waited for
	# them (a preempted training process): the operator before one may
	# have taken its traffic
	grep -q "call(s) reached the agent more than" "$d"/agent-*.log &&
		why="calls reached the agent late"
	# lines that reached the analyzer below its data-time clock: a host fell
	# silent for the wall bound while the machine was busy (a replay never
	# has those)
	grep -q "wm_late=[1-9]" "$d"/an.log 2>/dev/null && why="lines late for the watermark (a host fell silent)"
	# windows after the first verdict's data time did not make it (the
	# last poll, as the run stops, often misses a page)
	python3 - "$d" <<'PY' && return 0
import glob, json, re, sys
until = None
try:
    m = re.search(r"^LIVE VERDICT .*data_ns=(\d+)", open(sys.argv[1] + "/an.out").read(), re.M)
    until = int(m.group(1)) if m else None
except OSError:
    pass
bad = []
for f in glob.glob(sys.argv[1] + "/agent-*.jsonl"):
    for l in open(f):
        if '"type":"window"' not in l:
            continue
        w = json.loads(l)
        if until is not None and int(w["host_start_ns"]) > until:
            continue
        if w.get("gap"):
            bad.append("a window with a gap (%s)" % ",".join(w["gap"]))
        elif w.get("clock_err_ns", 0) > 2000000:
            bad.append("a poll's clock sync %.1f ms off" % (w["clock_err_ns"] / 1e6))
if bad:
    print(bad[0]); sys.exit(0)
sys.exit(1)
PY
	[ -n "$why" ] && { echo "$why"; return 0; }
	return 1
}
skipped=0

# live_agreeing SCENARIO OUT [live options]: runs it until its verdict equals
# the replay's ($want) or three degraded runs; sets got and why.
live_agreeing() {
	local s=$1 out=$2 try
	shift 2
	for try in 1 2 3; do
		live "$s" "$out" --quiet "$@"
		got=$(live_verdict "$out")
		why=
		[ "$got" = "$want" ] && return 0
		why=$(degraded "$out") || { why=; return 0; }
		echo "live_cluster.sh: $(basename "$out"): run $try differs and was degraded by the machine's load ($why); again"
	done
}

run_classes() {
	for s in comp_slow comp_stop comm_slow comm_stop; do
		mkrun "$s"
		local want got why= try
		want=$(replay_verdict "$s")
		for try in 1 2 3; do
			live "$s" "$work/live-$s" --quiet
			got=$(live_verdict "$work/live-$s")
			why=
			[ "$got" = "$want" ] && break
			why=$(degraded "$work/live-$s") || { why=; break; }
			echo "live_cluster.sh: $s: run $try differs and was degraded by the machine's load ($why); again"
		done
		no_asan "$work/live-$s" "$s"
		[ -n "$want" ] || { fail "$s: no verdict from --replay"; continue; }
		# the NIC's link going down reaches the analyzer live as in the
		# replay (pulse-cluster-serve's links.jsonl, the agent's --sim-links)
		if [ "$s" = comm_stop ] && ! grep -q '"type":"link".*"state":"down"' "$work/live-$s"/agent-*.jsonl; then
			fail "comm_stop: the NIC's link-down event never reached the agents' output"
		fi
		if [ -n "$why" ]; then
			echo "live_cluster.sh: $s: SKIPPED: three runs degraded by the machine's load ($why)"
			skipped=1
		elif [ "$got" = "$want" ]; then
			echo "live_cluster.sh: $s: live = replay: $got; wall-clock latency from the onset $(latency "$work/live-$s") s at ${speed}x"
		else
			fail "$s: live verdict '$got', replay '$want'"
		fi
	done
}

run_agent_restart() {
	mkrun comp_slow
	local out=$work/live-agent
	# t = 1 s of wall at 4x: the job's communicators exist, its iterations
	# have not started (they start at 6 s of simulated time, 1.5 s of wall)
	local got want why
	want=$(replay_verdict comp_slow)
	live_agreeing comp_slow "$out" --kill-agent host1@1.2
	no_asan "$out" agent
	[ -n "$why" ] && { echo "live_cluster.sh: agent: SKIPPED: three runs degraded ($why)"; skipped=1; return; }
	grep -q "agent host1 connected" "$out/an.log" || fail "agent: host1 never connected"
	[ "$(grep -c "agent host1 connected" "$out/an.log")" -ge 2 ] || fail "agent: host1 did not reconnect"
	grep -q "agent host1 reconnected .* a gap in its data" "$out/an.log" || fail "agent: the analyzer did not mark host1's gap"
	# the issue asks for a verdict after the restart; whether it is the
	# replay's is said (it has been in every clean run so far)
	[ -n "$got" ] || fail "agent: no verdict after the restart"
	local same="= replay"
	[ "$got" = "$want" ] || same="DIFFERS from the replay's '$want'"
	# the analyzer's report names the operator records it dropped as duplicates
	grep -q "^Input: " "$out/an.out" || fail "agent: no final report from the analyzer"
	dup=$(sed -n 's/^Dropped records: .* \([0-9]*\) duplicate$/\1/p' "$out/an.out")
	dup=${dup:-0}
	[ "$dup" = 0 ] || fail "agent: $dup operator records counted twice"
	echo "live_cluster.sh: agent: host1's agent killed at 1.2 s and restarted; gap marked, verdict $got ($same), op_dup=$dup, latency $(latency "$out") s"
}

run_analyzer_restart() {
	mkrun comp_slow
	local out=$work/live-analyzer
	local got want why
	want=$(replay_verdict comp_slow)
	live_agreeing comp_slow "$out" --kill-analyzer 1.2
	no_asan "$out" analyzer
	[ -n "$why" ] && { echo "live_cluster.sh: analyzer: SKIPPED: three runs degraded ($why)"; skipped=1; return; }
	local n
	n=$(grep -c "connected from" "$out/an2.log" 2>/dev/null)
	[ "${n:-0}" -ge 4 ] || fail "analyzer: only ${n:-0} of 4 agents reconnected to the restarted analyzer"
	# the agent's link says how much it had queued when it got through again
	local resent
	resent=$(grep "analyzer 127.0.0.1:[0-9]*: connected" "$out/agent-host0.log" | sed -n '2s/.*, \([0-9]*\) bytes queued).*/\1/p')
	[ -n "$resent" ] || fail "analyzer: host0's agent did not reconnect"
	# A verdict must come. It can differ from the replay's: the restarted
	# analyzer has none of what the first one had, and the agents' queues
	# (resent) are what it gets of the time it was down; one clean run in
	# four gave a group-level verdict on host0/host1 instead of host3
	# (reported to the lead, issue 18).
	[ -n "$got" ] || fail "analyzer: no verdict after the restart"
	local same="= replay"
	[ "$got" = "$want" ] || same="DIFFERS from the replay's '$want'"
	echo "live_cluster.sh: analyzer: killed at 1.2 s and restarted; $n agents reconnected (host0 resent ${resent:-?} queued bytes), verdict $got ($same), latency $(latency "$out") s"
}

run_ring() {
	mkrun comp_slow
	local out=$work/live-ring
	live comp_slow "$out" --kill-rank host2@2.0 --quiet
	no_asan "$out" ring
	local pid
	pid=$(cat "$out/killed-rank" 2>/dev/null)
	[ -n "$pid" ] || { fail "ring: no process was killed"; return; }
	grep -q "hook ring of pid $pid dropped: the process exited" "$out/agent-host2.log" ||
		fail "ring: host2's agent did not drop the ring of $pid"
	[ ! -e "/dev/shm/pulse-hook.$pid" ] || fail "ring: /dev/shm/pulse-hook.$pid is still there"
	[ ! -e "$out/at/host2/hooks/pulse-hook.$pid" ] || fail "ring: the hook-dir entry of $pid is still there"
	local ops
	ops=$(grep -c "\"type\":\"hook_op\",.*\"pid\":$pid," "$out/agent-host2.jsonl")
	[ "$ops" -gt 0 ] || fail "ring: none of $pid's calls before its death reached the agent"
	echo "live_cluster.sh: ring: process $pid killed at 2.0 s; its ring drained ($ops calls), dropped and removed; $(grep -c '"type":"window"' "$out/agent-host2.jsonl") windows from host2 after all"
}

# live record statuses against the replay's: prints "MISMATCHES RECORDS",
# the mismatches outside the last 0.5 s of each host's calls
record_diff() {
	python3 - "$1" "$2" <<'PY'
import glob, json, sys
def load(pattern):
    recs = {}
    for f in glob.glob(pattern):
        for l in open(f):
            if '"type":"op"' in l:
                r = json.loads(l)
                recs[(r["host"], r["comm_id"], r["rank"], r["seq"])] = r
    return recs
live, rep = load(sys.argv[1] + "/agent-*.jsonl"), load(sys.argv[2] + "/*.jsonl")
last = {}
for r in live.values():
    last[r["host"]] = max(last.get(r["host"], 0), int(r["call_ns"]))
bad = [k for k, r in rep.items()
       if (k not in live or live[k]["status"] != r["status"]) and
       not (k in live and int(live[k]["call_ns"]) > last[k[0]] - 500000000)]
print(len(bad), len(rep))
PY
}

run_join() {
	mkrun join_late
	local out=$work/live-join want got why try diff
	# judged by machine, as the strict score: which of a TP pair's GPUs
	# a live run names with the slow one varies with the poll timing
	want=$(replay_verdict join_late | machines)
	for try in 1 2 3; do
		live join_late "$out" --quiet
		diff=$(record_diff "$out" "$work/replay-join_late")
		got=$(live_verdict "$out" | machines)
		why=
		[ "${diff%% *}" = 0 ] && [ "$got" = "$want" ] && break
		why=$(degraded "$out") || { why=; break; }
		echo "live_cluster.sh: join: run $try differs and was degraded by the machine's load ($why); again"
	done
	no_asan "$out" join
	[ -n "$why" ] && { echo "live_cluster.sh: join: SKIPPED: three runs degraded ($why)"; skipped=1; return; }
	local waited
	waited=$(sed -n 's/.*analyzer JOIN: \([0-9]*\) windows waited for it.*/\1/p' "$out"/agent-*.log | sort -n | tail -1)
	[ "${waited:-0}" -gt 0 ] || { fail "join: no agent's windows waited for the JOIN (the traffic did not start before it)"; return; }
	[ "${diff%% *}" = 0 ] || { fail "join: ${diff%% *} of ${diff##* } operator records differ from the replay's"; return; }
	# the records of calls that waited for the JOIN are no hang (the
	# analyzer counts them from the JOIN, trigger.c stalled_calls)
	[ "$got" = "$want" ] || { fail "join: live verdict '$got', replay '$want'"; return; }
	echo "live_cluster.sh: join: traffic before the JOIN (up to $waited windows waited for it); ${diff##* } operator records as the replay's; live = replay: $got"
}

run_cli() {
	local cs=$build/bin/pulse-cluster-serve rc
	"$cs" >/dev/null 2>"$work/cli1"; rc=$?
	[ $rc = 2 ] && grep -q "give one RUNDIR and --at DIR" "$work/cli1" || fail "cli: no arguments: exit $rc"
	"$cs" "$work" --at "$work/x" 2>"$work/cli2"; rc=$?
	[ $rc = 3 ] && grep -q "cluster.json" "$work/cli2" || fail "cli: not a run directory: exit $rc"
	"$cs" "$work" --at "$work/x" --speed 0 2>"$work/cli3"; rc=$?
	[ $rc = 2 ] && grep -q -- "--speed 0: expected" "$work/cli3" || fail "cli: --speed 0: exit $rc"
	mkrun comp_slow
	cp -r "$work/run-comp_slow" "$work/run-bad"
	printf 'PULSEEVS-not' >"$work/run-bad/hosts/host0/mlx5_0.evs"
	"$cs" "$work/run-bad" --at "$work/x" 2>"$work/cli4"; rc=$?
	[ $rc = 3 ] && grep -q "mlx5_0.evs: not an event stream" "$work/cli4" || fail "cli: a bad .evs: exit $rc"
	cp -r "$work/run-comp_slow" "$work/run-badlink"
	echo '{"type":"window"}' >"$work/run-badlink/hosts/host1/links.jsonl"
	"$cs" "$work/run-badlink" --at "$work/y" 2>"$work/cli5"; rc=$?
	[ $rc != 0 ] && grep -q "links.jsonl:1: not a link event" "$work/cli5" || fail "cli: a bad links.jsonl: exit $rc"
	"$agent" --sim-links "$work/y/host1/links.jsonl" 2>"$work/cli6"; rc=$?
	[ $rc = 2 ] && grep -q -- "--sim-links is for a simulated host" "$work/cli6" ||
		fail "agent cli: --sim-links without --sim-clock: exit $rc"
	echo "live_cluster.sh: cli: usage (2), not a run directory (3), --speed 0 (2), a bad .evs (3)," \
		"a bad links.jsonl, the agent's --sim-links without --sim-clock (2): each said why"
}

what=${*:-cli classes agent analyzer ring join}
for w in $what; do
	case $w in
	classes) run_classes ;;
	agent) run_agent_restart ;;
	analyzer) run_analyzer_restart ;;
	ring) run_ring ;;
	join) run_join ;;
	cli) run_cli ;;
	*) echo "live_cluster.sh: unknown part $w"; exit 2 ;;
	esac
done
[ $failed = 0 ] && [ $skipped = 1 ] && { echo "live_cluster.sh: SKIP (see above)"; exit 77; }
[ $failed = 0 ] && echo "live_cluster.sh: PASS"
exit $failed
