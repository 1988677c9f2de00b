#!/bin/sh
# pulse-host-agent: the QP -> communicator mapping from the NCCL profiler
# plugin's net records (PULSE_HOOK_NET_QP, libpulse-nccl-profiler.so).
# The unmodified training program (tests/hook/train, stand-in NCCL) runs
#  - rank 0 under LD_PRELOAD of the hook AND the profiler plugin: the stand-in
#    connects one QP per communicator during init and a second one at the
#    first operator, after every init returned, as NCCL's runtime connection
#    does: no init call can claim those, only the net records can;
#  - rank 1 under the plugin alone (no hook): every QP is known only from the
#    plugin's net records (state "net", device unknown), on NCCL's hashes.
# Then the agent (--hook-dir: links to their two rings; a simulated NIC)
# drains both rings; the last state each QP had in the "hook_map" lines must
# tie every QP to its communicator and rank, marked "comm_from":"net", with
# the profiler's communicators not counted twice.
set -u
BUILD=${BUILD:-build}
agent=${AGENT:-$BUILD/tests/pulse-host-agent-asan}
rt=$BUILD/bin/pulse-run-trace
hook=$PWD/$BUILD/lib/libpulse-hook.so
plugin=$PWD/$BUILD/lib/libpulse-nccl-profiler.so
hdir=$PWD/$BUILD/tests/hook
trace=tests/traces/ring.pcap
for b in "$agent" "$rt" "$hook" "$plugin" "$hdir/train" "$hdir/libnccl.so.2" "$hdir/libibverbs.so.1"; do
	[ -e "$b" ] || { echo "agent_net.sh: $b not built"; exit 77; }
done
command -v python3 >/dev/null || { echo "agent_net.sh: python3 needed to check the JSON lines"; exit 77; }
[ -d /dev/shm ] && [ -w /dev/shm ] || { echo "agent_net.sh: no writable /dev/shm"; exit 77; }
work=$(mktemp -d)
pids="" shm=""
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null; done
	for f in $shm; do rm -f "/dev/shm/pulse-hook.$f"; done
	rm -rf "$work"
}
trap cleanup EXIT
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
wait_for() { i=0; while [ ! -e "$1" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done; }
mkdir "$work/rings"

run_train() { # RANK PRELOAD: runs to the end; its ring stays for the agent
	LD_PRELOAD=$2 LD_LIBRARY_PATH=$hdir PULSE_HOOK_KEEP_RING=1 FAKE_NCCL_UID=job-agent-net \
		NCCL_PROFILER_PLUGIN=$plugin "$hdir/train" "$1" 2 1 >"$work/train$1.out" 2>&1 &
	tp=$!
	shm="$shm $tp"
	wait "$tp" || bad "train rank $1 exit $?"
	echo "$tp" >"$work/train$1.pid"
	[ -e "/dev/shm/pulse-hook.$tp" ] || bad "train rank $1 left no ring"
	ln -s "/dev/shm/pulse-hook.$tp" "$work/rings/pulse-hook.$tp"
}
run_train 0 "$hook"
run_train 1 ""
grep -q "fake-nccl: profiler v6" "$work/train0.out" && ok "the stand-in NCCL loaded the plugin as ABI v6" ||
	bad "plugin not loaded: $(cat "$work/train0.out")"

"$rt" --serve "$work/nic.sock" --epoch 32us --poll 200ms --speed 0.006 "$trace" 2>"$work/serve.log" &
spid=$!; pids="$pids $spid"
wait_for "$work/nic.sock"
"$agent" --sim "$work/nic.sock" --poll 200ms --epoch 32us --exit-after 1s --lock-dir "$work" \
	--hook-dir "$work/rings" --out "$work/a.jsonl" 2>"$work/a.log"
arc=$?
kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null
[ "$arc" -eq 0 ] && ok "agent exit 0" || bad "agent exit $arc"
grep -qE "AddressSanitizer|runtime error" "$work/a.log" && bad "sanitizer report" || ok "no sanitizer report"
grep -q "unknown kind" "$work/a.log" && bad "the agent did not know the net records: $(grep 'unknown kind' "$work/a.log")" ||
	ok "no record of an unknown kind"

python3 - "$work/a.jsonl" "$(cat "$work/train0.pid")" "$(cat "$work/train1.pid")" \
	"$work/train0.out" "$work/train1.out" <<'EOF'
import json, re, sys
path, p0, p1, out0, out1 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
lines = [json.loads(l) for l in open(path)]
fails = 0
def check(cond, what):
    global fails
    print(("ok   " if cond else "FAIL ") + what)
    fails += 0 if cond else 1
maps = [l for l in lines if l["type"] == "hook_map"]
comms, qps = {}, {}
for m in maps:
    for c in m["comms"]:
        comms[(c["pid"], c["comm_id"])] = c
    for q in m["qps"]:
        qps[(q["pid"], q["dev"], q["qpn"])] = q
def stand_in_qps(out):
    t = open(out).read()
    init = [int(x) for x in re.findall(r"fake-nccl: rtr qpn=(\d+) dest=\d+ rc=0", t)]
    lazy = [int(x) for x in re.findall(r"fake-nccl: lazy connect qpn=(\d+) dest=\d+ rc=0", t)]
    return init, lazy  # world's, then the split's

# rank 0: hook + plugin
init, lazy = stand_in_qps(out0)
check(len(init) == 2 and len(lazy) == 2, "rank 0: 2 QPs connected at init, 2 after (%s, %s)" % (init, lazy))
mine = {c["how"]: c for (p, _), c in comms.items() if p == p0}
check(sorted(mine) == ["init_rank_config", "split"], "rank 0: two communicators, the hook's (%s): the plugin's "
      "annotations made none" % sorted(mine))
w, s = mine.get("init_rank_config"), mine.get("split")
check(w and s and w["nccl_hash"] and s["nccl_hash"], "rank 0: the profiler's commHash on both")
q0 = {q["qpn"]: q for (p, _, _), q in qps.items() if p == p0}
check(sorted(q0) == sorted(init + lazy), "rank 0: the mapping has exactly the four QPs")
for i, (name, c) in enumerate((("world", w), ("split", s))):
    for qpn, when in ((init[i], "init"), (lazy[i], "after init")):
        q = q0.get(qpn, {})
        check(c and q.get("comm_id") == c["comm_id"] and q.get("rank") == 0 and q.get("comm_from") == "net"
              and q.get("dev") == "mlx5_fake0",
              "rank 0 qpn %d (connected %s): %s communicator, rank 0, from the net records (%s)"
              % (qpn, when, name, {k: q.get(k) for k in ("comm_id", "rank", "comm_from", "dev", "state")}))

# rank 1: the plugin alone
init, lazy = stand_in_qps(out1)
mine = [c for (p, _), c in comms.items() if p == p1]
check(len(mine) == 2 and all(c["how"] == "profiler" and c["comm_id"] == c["nccl_hash"] for c in mine),
      "rank 1: two communicators from the plugin, keyed by NCCL's hash")
byrank = {c["nranks"]: c for c in mine}  # world has 2 ranks, the split 1
q1 = {q["qpn"]: q for (p, _, _), q in qps.items() if p == p1}
check(sorted(q1) == sorted(init + lazy), "rank 1: the four QPs, known from the net records only")
for i, (name, nr, rank) in enumerate((("world", 2, 1), ("split", 1, 0))):
    c = byrank.get(nr)
    for qpn in (init[i], lazy[i]):
        q = q1.get(qpn, {})
        check(c and q.get("comm_id") == c["comm_id"] and q.get("rank") == rank and q.get("state") == "net"
              and q.get("dev") == "" and q.get("comm_from") == "net",
              "rank 1 qpn %d: %s communicator, rank %d, state net, device unknown" % (qpn, name, rank))
# hook_map lines are written on change only: net records of the same ties add none
check(len(maps) <= 4, "%d hook_map lines for 2 processes (one per change, not per record)" % len(maps))
sys.exit(1 if fails else 0)
EOF
[ $? -eq 0 ] || fails=$((fails + 1))
[ "$fails" -eq 0 ] || { echo "--- agent log"; sed 's/^/    | /' "$work/a.log" | tail -30; }
exit $((fails > 0))
