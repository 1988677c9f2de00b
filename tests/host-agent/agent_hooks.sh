#!/bin/sh
# pulse-host-agent draining interception rings (libpulse-hook.so):
#  1. the unmodified training program (tests/hook/train, stand-in NCCL and
#     verbs) runs as ranks 0 and 1 under LD_PRELOAD of the hook, one before
#     the agent starts and one while it runs; the agent (--hook-dir on a
#     directory of links to their /dev/shm rings, and a simulated NIC from
#     run_trace --serve) writes the communicators, the QP mapping (QPNs,
#     remote QPNs and GIDs as the stand-in NCCL set them) and every operator
#     and group bracket, in call order;
#  2. a hooked process that exits while the agent polls: its ring is drained,
#     dropped and removed, and its entries leave the mapping;
#  3. a corrupt and a truncated ring file: one clear log line each, counted,
#     no crash, the agent carries on;
#  4. --no-hooks: nothing attached;
#  5. a ring that filled before the agent came: the drops logged and counted.
# The hook always creates /dev/shm/pulse-hook.<pid> (shm_open); --hook-dir
# keeps the agent to the rings this test made, whatever else runs here.
set -u
BUILD=${BUILD:-build}
agent=$BUILD/tests/pulse-host-agent-asan
rt=$BUILD/bin/pulse-run-trace
hook=$PWD/$BUILD/lib/libpulse-hook.so
hdir=$PWD/$BUILD/tests/hook
trace=tests/traces/ring.pcap
for b in "$agent" "$rt" "$hook" "$hdir/train" "$hdir/libnccl.so.2" "$hdir/libibverbs.so.1"; do
	[ -e "$b" ] || { echo "agent_hooks.sh: $b not built"; exit 77; }
done
command -v python3 >/dev/null || { echo "agent_hooks.sh: python3 needed to check the JSON lines"; exit 77; }
[ -d /dev/shm ] && [ -w /dev/shm ] || { echo "agent_hooks.sh: no writable /dev/shm"; exit 77; }
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
wait_for() { # FILE: up to 5 s for it to exist
	i=0; while [ ! -e "$1" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
}
mkdir "$work/rings"
train() { # RANK STEPS: runs to the end; its ring stays for the agent
	LD_PRELOAD=$hook LD_LIBRARY_PATH=$hdir PULSE_HOOK_KEEP_RING=1 FAKE_NCCL_UID=job-agent-hooks \
		"$hdir/train" "$1" 2 "$2" >"$work/train$1.out" 2>&1 &
	tp=$!
	shm="$shm $tp"
	wait "$tp" || bad "train rank $1 exit $?"
	echo "$tp" >"$work/train$1.pid"
	[ -e "/dev/shm/pulse-hook.$tp" ] || bad "train rank $1 left no ring"
	ln -s "/dev/shm/pulse-hook.$tp" "$work/rings/pulse-hook.$tp"
}

"$rt" --serve "$work/nic.sock" --epoch 32us --poll 200ms --speed 0.006 "$trace" 2>"$work/serve.log" &
spid=$!; pids="$pids $spid"
wait_for "$work/nic.sock"

# rank 0 ran before the agent started
train 0 2
# 3. a corrupt ring and a truncated one, named for live pids (no hook in them)
sleep 5 & c1=$!; sleep 5 & c2=$!
pids="$pids $c1 $c2"; shm="$shm $c1 $c2"
head -c 2101248 /dev/zero | tr '\0' 'x' >"/dev/shm/pulse-hook.$c1"
printf 'PLSERING' >"/dev/shm/pulse-hook.$c2"
ln -s "/dev/shm/pulse-hook.$c1" "$work/rings/pulse-hook.$c1"
ln -s "/dev/shm/pulse-hook.$c2" "$work/rings/pulse-hook.$c2"
# an entry that is not a ring name at all is ignored
touch "$work/rings/pulse-hook.notapid"

"$agent" --sim "$work/nic.sock" --poll 200ms --epoch 32us --exit-after 2.4s --lock-dir "$work" \
	--hook-dir "$work/rings" --out "$work/a.jsonl" 2>"$work/a.log" &
apid=$!; pids="$pids $apid"
sleep 0.3
# 2. a hooked process that lives for a few polls and exits mid-run
LD_PRELOAD=$hook sleep 0.8 & mp=$!
shm="$shm $mp"
wait_for "/dev/shm/pulse-hook.$mp"
ln -s "/dev/shm/pulse-hook.$mp" "$work/rings/pulse-hook.$mp"
# rank 1 runs while the agent polls
train 1 1
wait "$mp"
wait "$apid"; arc=$?
kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null
[ "$arc" -eq 0 ] && ok "agent exit 0" || bad "agent exit $arc"
p0=$(cat "$work/train0.pid"); p1=$(cat "$work/train1.pid")

grep -q '"type":"window"' "$work/a.jsonl" && ok "NIC windows still written" || bad "no window lines"
for p in $p0 $p1 $mp; do
	if grep -q "hook ring of pid $p attached" "$work/a.log" &&
	   grep -q "hook ring of pid $p dropped: the process exited" "$work/a.log"; then
		ok "pid $p: ring attached, drained and dropped after the exit"
	else
		bad "pid $p: ring not attached and dropped"
	fi
	[ ! -e "/dev/shm/pulse-hook.$p" ] && [ ! -e "$work/rings/pulse-hook.$p" ] &&
		ok "pid $p: ring and its entry removed" || bad "pid $p: ring left behind"
done
n=$(grep -c "pulse-hook.$c1: cannot attach: not a Pulse interception ring" "$work/a.log")
[ "$n" -eq 1 ] && ok "corrupt ring: one clear log line" || bad "corrupt ring: $n log lines"
n=$(grep -c "pulse-hook.$c2: cannot attach: not a Pulse interception ring" "$work/a.log")
[ "$n" -eq 1 ] && ok "truncated ring: one clear log line" || bad "truncated ring: $n log lines"
grep -q "2 attach errors" "$work/a.log" && ok "attach errors counted (2)" || bad "attach errors not counted"
grep -q "notapid" "$work/a.log" && bad "a non-ring entry was looked at" || ok "non-ring entry ignored"
grep -qE "AddressSanitizer|runtime error" "$work/a.log" && bad "sanitizer report" || ok "no sanitizer report"

# 1. the JSON lines
python3 - "$work/a.jsonl" "$p0" "$p1" "$mp" "$work/train0.out" "$work/train1.out" <<'EOF'
import json, re, sys
path, p0, p1, mp, out0, out1 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
lines = [json.loads(l) for l in open(path)]
fails = 0
def check(cond, what):
    global fails
    print(("ok   " if cond else "FAIL ") + what)
    fails += 0 if cond else 1
maps = [l for l in lines if l["type"] == "hook_map"]
check(maps and [m["version"] for m in maps] == list(range(1, len(maps) + 1)), "hook_map lines, versions 1..%d" % len(maps))
# the last state each pid had in the mapping
comms, qps = {}, {}
for m in maps:
    for c in m["comms"]:
        comms[(c["pid"], c["comm_id"])] = c
    for q in m["qps"]:
        qps[(q["pid"], q["qpn"])] = q
check(maps[-1]["comms"] == [] and maps[-1]["qps"] == [], "final mapping empty: every process exited")
world = {}
for rank, pid in ((0, p0), (1, p1)):
    mine = [c for (p, _), c in comms.items() if p == pid]
    w = [c for c in mine if c["how"] == "init_rank_config"]
    s = [c for c in mine if c["how"] == "split"]
    check(len(w) == 1 and w[0]["rank"] == rank and w[0]["nranks"] == 2 and w[0]["destroyed"],
          "rank %d: world communicator, rank %d of 2, destroyed at the end" % (rank, rank))
    check(len(s) == 1 and w and s[0]["parent_id"] == w[0]["comm_id"], "rank %d: split communicator, parent = world" % rank)
    world[rank] = (w[0]["comm_id"] if w else None, s[0]["comm_id"] if s else None)
check(world[0][0] and world[0][0] == world[1][0], "world communicator id equal on both ranks: %s" % world[0][0])
check(world[0][1] != world[1][1], "split ids differ by colour (rank % 2)")
# QPs: train's stand-in NCCL printed "rtr qpn=Q dest=D rc=0" for each
for rank, pid, out in ((0, p0, out0), (1, p1, out1)):
    rtr = [(int(a), int(b)) for a, b in re.findall(r"fake-nccl: rtr qpn=(\d+) dest=(\d+) rc=0", open(out).read())]
    mine = sorted((q["qpn"], q["remote_qpn"]) for (p, _), q in qps.items() if p == pid)
    check(len(rtr) == 2 and mine == sorted(rtr), "rank %d: QPs and remote QPNs %s match the RTRs %s" % (rank, mine, rtr))
    for q in (q for (p, _), q in qps.items() if p == pid):
        gid = q["remote_gid"] or ""
        check(gid.startswith("fe80:0000:0000:0000:") and q["dev"] == "mlx5_fake0" and q["port"] == 1,
              "rank %d qpn %d: dev mlx5_fake0 port 1, remote GID %s" % (rank, q["qpn"], gid))
        if q["comm_id"] == world[rank][0]:
            # stand-in: dest = 0x1000 + (rank+1)%2 + salt*16, GID byte 8 = salt ^ rank
            salt = (q["remote_qpn"] - 0x1000 - (rank + 1) % 2) // 16
            check(q["rank"] == rank and int(gid.split(":")[4][:2], 16) == (salt ^ rank) & 0xff,
                  "rank %d qpn %d: on the world communicator as rank %d, GID belongs to this QP" % (rank, q["qpn"], rank))
    check(sorted(q["comm_id"] for (p, _), q in qps.items() if p == pid) == sorted(world[rank]),
          "rank %d: one QP per communicator (world, split)" % rank)
# operators and group brackets, in call order
def expected(rank, steps, w, h):
    e, seq = [], {w: 0, h: 0}
    def op(name, count, dt, comm, peer=-1, gid=0):
        e.append(("op", name, count, dt, comm, seq[comm], peer, gid)); seq[comm] += 1
    g = 0
    for _ in range(steps):
        op("allreduce", 1024, 7, w); op("allgather", 256, 9, w); op("reducescatter", 128, 7, h)
        op("broadcast", 64, 2, h, 0); op("reduce", 32, 8, w, 1); op("alltoall", 16, 0, w)
        g += 1; e.append(("start", g))
        for p in range(2):
            op("send", 8, 1, w, p, g); op("recv", 8, 1, w, p, g)
        e.append(("end", g))
    return e
for rank, pid, steps in ((0, p0, 2), (1, p1, 1)):
    got, ts = [], []
    for l in lines:
        if l.get("pid") != pid:
            continue
        if l["type"] == "hook_op":
            got.append(("op", l["op"], l["count"], l["datatype"], l["comm_id"], l["seq"], l["root_peer"], l["group_id"]))
            ts.append(l["t_ns"])
        elif l["type"] == "hook_group":
            got.append((l["event"], l["group_id"]))
            ts.append(l["t_ns"])
    exp = expected(rank, steps, *world[rank])
    check(got == exp, "rank %d: %d operator and group records, in order, with comm ids, seq, counts, peers" % (rank, len(exp)))
    if got != exp:
        for a, b in zip(got, exp):
            if a != b:
                print("    got %s\n    exp %s" % (a, b)); break
    check(ts == sorted(ts), "rank %d: call times in order" % rank)
check(not any(l.get("pid") == mp and l["type"] in ("hook_op", "hook_group") for l in lines), "hooked sleep: no operators")
sys.exit(1 if fails else 0)
EOF
[ $? -eq 0 ] || fails=$((fails + 1))

# records drained = records the hook wrote (train: 24 a step + 6, sleep: 0)
grep -q "hook rings: 3 attached, 3 detached, 60 records drained (30 operators), 0 dropped, 2 attach errors" \
	"$work/a.log" && ok "counters: 3 rings, 60 records, 30 operators, 0 dropped" ||
	{ bad "counters"; grep "hook rings:" "$work/a.log" | sed 's/^/    | /'; }

# 5. drops the ring reports: a 16-slot ring, 48 records written before any agent attached
LD_PRELOAD=$hook LD_LIBRARY_PATH=$hdir PULSE_HOOK_KEEP_RING=1 PULSE_HOOK_RING_RECORDS=16 \
	FAKE_NCCL_UID=job-drops "$hdir/train" 0 2 3 >/dev/null 2>&1 &
dp=$!
shm="$shm $dp"
wait "$dp"
ln -s "/dev/shm/pulse-hook.$dp" "$work/rings/pulse-hook.$dp"
"$agent" --sim "$work/nic.sock" --poll 200ms --exit-after 0.5s --lock-dir "$work" \
	--hook-dir "$work/rings" --out "$work/d.jsonl" 2>"$work/d.log"
if grep -q "hook ring of pid $dp: 32 records dropped while no agent was attached (ring full: 16 slots)" \
	"$work/d.log" && grep -q "16 records drained .* 32 dropped" "$work/d.log" &&
	[ "$(grep -c '"type":"hook_' "$work/d.jsonl")" -ge 2 ]; then
	ok "ring-full drops logged and counted (16 drained, 32 dropped)"
else
	bad "ring-full drops"; sed 's/^/    | /' "$work/d.log"
fi

# 4. --no-hooks
LD_PRELOAD=$hook sleep 1 & np=$!
shm="$shm $np"
wait_for "/dev/shm/pulse-hook.$np"
ln -s "/dev/shm/pulse-hook.$np" "$work/rings/pulse-hook.$np"
"$agent" --sim "$work/nic.sock" --poll 200ms --exit-after 0.5s --lock-dir "$work" --no-hooks \
	--hook-dir "$work/rings" --out "$work/n.jsonl" 2>"$work/n.log"
grep -q "hook" "$work/n.log" "$work/n.jsonl" && bad "--no-hooks: rings looked at" || ok "--no-hooks: no ring attached"
wait "$np"

[ $fails -eq 0 ] || { sed 's/^/    | /' "$work/a.log"; exit 1; }
echo "agent_hooks.sh: all passed"
