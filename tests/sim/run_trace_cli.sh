#!/bin/sh
# sim/run_trace from the command line: the user's exact invocation, options,
# outputs, and every bad-input case of issue #3 with its message and exit code.
set -u
BUILD=${BUILD:-build}
export BUILD PULSE_NO_BUILD=1
rt=./sim/run_trace
if [ ! -x "$BUILD/bin/pulse-run-trace" ]; then
	echo "run_trace_cli.sh: $BUILD/bin/pulse-run-trace not built"
	exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }

# expect RC PATTERN DESCRIPTION -- ARGS: runs run_trace, checks the exit code
# and that PATTERN occurs in its stdout+stderr.
expect() {
	want=$1 pat=$2 what=$3
	shift 4
	"$rt" "$@" >"$work/out" 2>&1
	rc=$?
	if [ "$rc" -ne "$want" ]; then
		bad "$what: exit $rc, expected $want"; sed 's/^/    | /' "$work/out" | tail -n 8
	elif [ -n "$pat" ] && ! grep -q -- "$pat" "$work/out"; then
		bad "$what: output lacks '$pat'"; sed 's/^/    | /' "$work/out" | tail -n 8
	else
		ok "$what (exit $rc)"
	fi
}

ring=tests/traces/ring.pcap
patch() { # FILE OFFSET BYTES(printf escapes)
	printf "$3" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

# the user's command
expect 0 "NIC 10.0.0.4: 4 sending QPs" "ring.pcap summary" -- "$ring"
grep -q "16 ACK PSN match" "$work/out" && ok "ring.pcap: all 16 flows paired by ACK" || bad "ring.pcap pairing"
# data QPs just under 200 Gb/s at their peak (two channels share 400 Gb/s)
n=$(grep -c " 199\.[0-9] " "$work/out")
[ "$n" -eq 8 ] && ok "ring.pcap: 8 data QPs peak at 199.x Gb/s" || bad "ring.pcap peaks: $n QPs at 199.x"
expect 0 "usage: run_trace" "--help" -- --help

# usage errors
expect 2 "no capture file" "no arguments" --
expect 2 "unknown option" "unknown option" -- --frobnicate "$ring"
expect 2 "8us to 1024us" "--epoch too small" -- --epoch 5us "$ring"
expect 2 "1ms to 2s" "--poll too long" -- --poll 3s "$ring"
expect 2 "wire or payload" "--bytes nonsense" -- --bytes all "$ring"
expect 2 "no such sending NIC" "--nic not in the capture" -- --nic 10.9.9.9 "$ring"
expect 2 "not an IPv4 or IPv6" "--nic not an address" -- --nic nonsense "$ring"
expect 0 "NIC 10.0.0.2" "--nic picks one NIC" -- --nic 10.0.0.2 "$ring"
grep -q "not emulated" "$work/out" && ok "--nic: the others are listed as not emulated" || bad "--nic others"

# bad files
expect 3 "cannot open" "missing file" -- "$work/nope.pcap"
printf 'this is not a capture file at all' >"$work/magic.pcap"
expect 3 "wrong magic" "wrong magic" -- "$work/magic.pcap"
: >"$work/empty.pcap"
expect 3 "too short" "empty file" -- "$work/empty.pcap"
mkdir -p "$work/adir"
expect 3 "is a directory" "a directory given as the capture" -- "$work/adir"
head -c 20 "$ring" >"$work/hdr.pcap"
expect 3 "truncated pcap file header" "truncated file header" -- "$work/hdr.pcap"
cp "$ring" "$work/lt.pcap"
patch "$work/lt.pcap" 20 '\151\000\000\000' # link type 105: IEEE 802.11
expect 3 "link type 105" "unsupported link type" -- "$work/lt.pcap"
cp "$ring" "$work/snap.pcap"
patch "$work/snap.pcap" 16 '\000\000\000\000'
expect 3 "snaplen 0" "zero snaplen" -- "$work/snap.pcap"
# truncated in the middle of a packet: results for what was read, exit 4
head -c 100000 "$ring" >"$work/cut.pcap"
expect 4 "truncated" "file truncated mid-packet" -- "$work/cut.pcap"
grep -q "^NIC 10.0.0.1" "$work/out" && ok "truncated: the summary covers the packets read" || bad "truncated: no summary"
# timestamps going backwards: a warning, exit 0; --strict makes it exit 5
cp "$ring" "$work/back.pcap"
patch "$work/back.pcap" 748 '\062\000\000\000' # record 5 stamped 50 ns: later ones go back
expect 0 "went backwards" "timestamps backwards" -- "$work/back.pcap"
expect 5 "timestamps went back" "timestamps backwards, --strict" -- --strict "$work/back.pcap"
expect 0 "" "ring.pcap --strict is clean" -- --strict "$ring"

# outputs
expect 0 'pulse.run_trace.summary.v1' "--json" -- --json "$ring"
if command -v python3 >/dev/null 2>&1; then
	if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["flows"])==16; assert d["packets"]["read"]==26496' "$work/out"; then
		ok "--json parses: 16 flows, 26496 packets"
	else
		bad "--json does not parse as expected"
	fi
fi
expect 0 "" "--out" -- --out "$work/out.d" --poll 1ms --epoch 16us "$ring"
for f in epochs.csv epochs.json flows.csv summary.json; do
	[ -s "$work/out.d/$f" ] && ok "--out wrote $f" || bad "--out did not write $f"
done
head -n 1 "$work/out.d/epochs.csv" | grep -q '^nic,qpn,synthetic,window_seq,epoch,epoch_ns,t_ns,nic_ns,bytes$' &&
	ok "epochs.csv header" || bad "epochs.csv header"
[ "$(wc -l <"$work/out.d/flows.csv")" -eq 17 ] && ok "flows.csv: 16 flows" || bad "flows.csv rows"
# the JSON flow fields (README), then the QP's measured bytes
head -n 1 "$work/out.d/flows.csv" | grep -q '^src,dst,transport,remote_qpn,local_qpn,local_qpn_synthetic,local_qpn_from,peer_flow,packets,tx_packets,tx_bytes,wire_bytes,payload_bytes,control_packets,first_ns,last_ns,opcodes,qp,measured_bytes,peak_epoch_bytes$' &&
	ok "flows.csv header" || bad "flows.csv header: $(head -n 1 "$work/out.d/flows.csv")"
col() { head -n 1 "$1" | tr , '\n' | grep -n "^$2\$" | cut -d: -f1; }
# every flow of ring.pcap is paired (peer_flow) and sends on a QP; wire bytes
# (all its packets) exceed the IB payload; each flow's peer names it back
awk -F, -v pf="$(col "$work/out.d/flows.csv" peer_flow)" -v qp="$(col "$work/out.d/flows.csv" qp)" \
	-v wb="$(col "$work/out.d/flows.csv" wire_bytes)" -v pb="$(col "$work/out.d/flows.csv" payload_bytes)" '
	NR > 1 { n++; peer[NR - 2] = $pf; if ($pf == "" || $qp == "" || $wb + 0 <= $pb + 0 || $pb + 0 <= 0) badrow++ }
	END { for (i in peer) if (peer[peer[i]] != i) badrow++; exit !(n == 16 && !badrow) }' \
	"$work/out.d/flows.csv" && ok "flows.csv: peer_flow, qp, wire_bytes, payload_bytes" ||
	bad "flows.csv: peer_flow/qp/wire_bytes/payload_bytes"
# the epochs add up to what the firmware measured per flow
sum_e=$(awk -F, 'NR>1 {s+=$9} END {print s}' "$work/out.d/epochs.csv")
sum_f=$(awk -F, -v m="$(col "$work/out.d/flows.csv" measured_bytes)" 'NR>1 {s+=$m} END {print s}' "$work/out.d/flows.csv")
[ "$sum_e" = "$sum_f" ] && [ "$sum_e" -gt 100000000 ] && ok "epochs.csv sums to the measured bytes ($sum_e)" ||
	bad "epochs.csv sum $sum_e vs flows.csv $sum_f"
expect 1 "cannot" "--out in an unwritable place" -- --out /proc/nope/dir "$ring"

echo "run_trace_cli.sh: $fails failures"
[ "$fails" -eq 0 ]
