#!/bin/sh
# pulse-host-agent's link events for real (issue 14): in a network namespace
# this test makes (unshare -n), a dummy interface (or, where the kernel has no
# dummy driver, one end of a veth pair) is set up, down and up while the agent
# watches it through rtnetlink (--netdev). Each change must come out once, in
# order, as a "link" line whose time lies between the moments before and
# after the `ip link` command, and as a log line and metrics. The agent reads
# the sysfs fixture (--sysfs-root tests/host-agent/sysfs): its PCIe findings
# must be on --out ("config_finding") and /metrics at start-up, and the
# fixture's netdevs, absent here, reported as such. A missing piece of the
# host (no RDMA netlink) must be one log line.
#
# Skips (exit 77) only when the sandbox refuses a network namespace or an
# interface: the reason is the last line.
set -u
BUILD=${BUILD:-build}
agent=$BUILD/tests/pulse-host-agent-asan
[ -x "$agent" ] || { echo "agent_links.sh: $agent not built"; exit 77; }
for c in ip unshare python3 curl; do
	command -v $c >/dev/null || { echo "agent_links.sh: skipped: $c is not installed"; exit 77; }
done

if [ -z "${PULSE_LINKS_IN_NETNS:-}" ]; then
	why=$(unshare -n true 2>&1) || {
		echo "agent_links.sh: skipped: this sandbox does not allow a network namespace (unshare -n: $why)"
		exit 77
	}
	PULSE_LINKS_IN_NETNS=1 exec unshare -n sh "$0" "$@"
fi

# ---- inside the namespace ----
ip link set lo up || { echo "agent_links.sh: skipped: cannot set lo up in the namespace"; exit 77; }
if ip link add pl0 type dummy 2>/dev/null; then
	IF=pl0
	kind=dummy
elif why=$(ip link add pl0 type veth peer name pl1 2>&1); then
	IF=pl0
	kind="veth (no dummy driver here)"
	ip link set pl1 up # the peer up: pl0 gets carrier when it is up
else
	echo "agent_links.sh: skipped: cannot create a dummy or veth interface in the namespace ($why)"
	exit 77
fi
echo "interface $IF: $kind"

work=$(mktemp -d)
apid=""
cleanup() { [ -n "$apid" ] && kill "$apid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
now() { python3 -c 'import time; print(time.time_ns())'; }
port=$((20000 + $$ % 20000))

"$agent" --netdev "$IF" --sysfs-root tests/host-agent/sysfs --no-hooks --lock-dir "$work" \
	--out "$work/out.jsonl" --log "$work/agent.log" --poll 100ms --metrics-listen "127.0.0.1:$port" \
	>"$work/stdout" 2>"$work/stderr" &
apid=$!
i=0
while ! grep -q "link $IF: watching" "$work/agent.log" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
grep -q "link $IF: watching, now down" "$work/agent.log" && ok "initial state: down, logged" ||
	bad "no 'link $IF: watching, now down' line"

step() { # up|down
	b=$(now)
	ip link set "$IF" "$1"
	a=$(now)
	echo "$1 $b $a" >>"$work/steps"
	sleep 0.3
}
step up
step down
step up
sleep 0.3
curl -s "http://127.0.0.1:$port/metrics" >"$work/metrics" || bad "metrics: curl failed"
kill -TERM "$apid"
wait "$apid"
rc=$?
apid=""
[ "$rc" -eq 0 ] && ok "SIGTERM: exit 0" || bad "exit status $rc"

python3 - "$work/out.jsonl" "$work/steps" "$IF" <<'EOF' || fails=$((fails + 1))
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
steps = [l.split() for l in open(sys.argv[2])]
ifn = sys.argv[3]
bad = 0
def check(c, msg):
    global bad
    print(("ok   " if c else "FAIL ") + msg)
    bad += not c
links = [l for l in lines if l["type"] == "link" and l["netdev"] == ifn]
init = [l for l in links if l["event"] == "initial"]
chg = [l for l in links if l["event"] == "change"]
check(len(init) == 1 and init[0]["state"] == "down", "one initial line, down")
check([c["state"] for c in chg] == [s[0] for s in steps],
      "changes %s, as set: %s" % ([c["state"] for c in chg], [s[0] for s in steps]))
for c, s in zip(chg, steps):
    b, a = int(s[1]), int(s[2])
    # the event is read when the kernel sends it: after the command starts,
    # and at most 200 ms after it returned (the watcher thread wakes at once)
    check(b <= c["t_ns"] <= a + 200_000_000,
          "%s at %d: within [%d, %d + 200 ms] (%.1f ms after the command)" % (c["state"], c["t_ns"], b, a, (c["t_ns"] - b) / 1e6))
    check(c["running"] == (s[0] == "up") and c["admin_up"] == (s[0] == "up"), "%s: admin_up/running flags" % s[0])
check(all(chg[i]["t_ns"] < chg[i + 1]["t_ns"] for i in range(len(chg) - 1)), "change times increase")
fx = {l["netdev"]: l for l in lines if l["type"] == "link" and l["netdev"] != ifn}
check(fx.get("ens1f0np0", {}).get("state") == "absent" and fx["ens1f0np0"]["dev"] == "mlx5_0",
      "fixture netdev ens1f0np0 (mlx5_0) watched, reported absent in this namespace")
cf = [(l["kind"], l["nic"]) for l in lines if l["type"] == "config_finding"]
check(cf == [("pcie_width", "mlx5_1"), ("pcie_speed", "mlx5_1")], "config findings on --out: %s" % cf)
sys.exit(1 if bad else 0)
EOF

m=$work/metrics
grep -q "^pulse_agent_netdev_up{netdev=\"$IF\",dev=\"\"} 1$" "$m" && ok "metrics: netdev_up 1" || bad "metrics: netdev_up"
grep -q "^pulse_agent_link_events_total{netdev=\"$IF\",state=\"down\"} 1$" "$m" &&
	grep -q "^pulse_agent_link_events_total{netdev=\"$IF\",state=\"up\"} 2$" "$m" &&
	ok "metrics: 1 down and 2 up events" || bad "metrics: link events"
grep -q '^pulse_agent_config_finding{kind="pcie_width",nic="mlx5_1",gpu=""} 1$' "$m" &&
	ok "metrics: pcie_width finding" || bad "metrics: no pcie_width finding"
grep -q '^pulse_agent_rdma_devices 3$' "$m" && ok "metrics: 3 RDMA devices (fixture)" || bad "metrics: device count"
grep -q "warn: link $IF: down (admin down" "$work/agent.log" && grep -q "info: link $IF: up" "$work/agent.log" &&
	ok "log: down and up lines" || bad "log: link lines"
grep -q "configuration finding pcie_width: mlx5_1" "$work/agent.log" && ok "log: finding line" || bad "log: finding"
# the kernel's RDMA netlink: one line when it is missing, none when it works
if grep -q '^pulse_agent_rdma_netlink_up 1$' "$m"; then
	ok "RDMA netlink available here: dump worked"
else
	n=$(grep -c "RDMA netlink" "$work/agent.log")
	[ "$n" -eq 1 ] && ok "RDMA netlink missing: said in one line: $(grep 'RDMA netlink' "$work/agent.log" | cut -d' ' -f3-)" ||
		bad "RDMA netlink missing: $n log lines"
fi
if grep -q "ERROR: \(Address\|Undefined\|Leak\)Sanitizer\|runtime error" "$work/stderr" "$work/agent.log"; then
	bad "sanitizer report"; sed 's/^/    | /' "$work/stderr"
fi
if [ "$fails" -ne 0 ]; then
	echo "--- agent log"; sed 's/^/    | /' "$work/agent.log"
	echo "--- out"; sed 's/^/    | /' "$work/out.jsonl"
	echo "agent_links.sh: $fails failed"
	exit 1
fi
echo "agent_links.sh: all passed"
