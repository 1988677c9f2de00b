#!/usr/bin/env bash
# pulse-eval-score's strict rules on hand-written runs (truth.json and
# analyzer.json in the formats sim/run_cluster and pulse-analyzer --json
# write): two hosts named is not machine level; a later diagnosis naming a
# wrong host or a wrong class, or one before the onset, spoils a run; a run
# without a failure with an alarm counts; a missing or unparsable
# analyzer.json is a miss and is listed. Runs with several faults (truth
# "failures"): strict needs every faulty host named alone at machine level
# with one of its classes, and nothing else. Fails when a rule regresses.
set -u
cd "$(dirname "$0")/../.."
score=build/bin/pulse-eval-score
[ -x "$score" ] || { echo "score_strict.sh: $score not built; skipped"; exit 77; }
command -v python3 >/dev/null || { echo "score_strict.sh: python3 missing; skipped"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# the checks' common part: the report (argv[1]) by run, check() counting failures
cat >"$work/check.py" <<'EOF'
import json, sys
rep = json.load(open(sys.argv[1]))
runs = {r["scenario"]: r for r in rep["runs"]}
bad = 0
def check(what, got, want):
    global bad
    ok = got == want
    bad += not ok
    print("%s  %-58s got %r%s" % ("ok  " if ok else "FAIL", what, got, "" if ok else ", want %r" % (want,)))
EOF

ONSET=1700000000138602409
AFTER=1700000002999100066  # 2.86 s after the onset
BEFORE=1699999995000000000 # 5.1 s before it
HOSTS='[{"name":"host0","clock_offset_ns":-955083,"clock_drift_ppm":11.443},{"name":"host1","clock_offset_ns":747570,"clock_drift_ppm":-7.028},{"name":"host2","clock_offset_ns":586702,"clock_drift_ppm":0.127},{"name":"host3","clock_offset_ns":668677,"clock_drift_ppm":-10.802},{"name":"host4","clock_offset_ns":783260,"clock_drift_ppm":-1.869},{"name":"host5","clock_offset_ns":50728,"clock_drift_ppm":1.402},{"name":"host6","clock_offset_ns":-860091,"clock_drift_ppm":-12.280},{"name":"host7","clock_offset_ns":75693,"clock_drift_ppm":2.532}]'

# truth NAME: a NIC down on host4 GPU 1 (communication fail-stop, the job hung)
truth() {
	mkdir -p "$work/$1"
	cat >"$work/$1/truth.json" <<EOF
{"format":"pulse-truth","version":1,"scenario":"$1","run_id":"gpt-101","workload":"gpt","seed":101,
 "failure":{"type":"nic_down","class":"communication","mode":"fail-stop","host":"host4","gpu":1,"rank_global":9,"severity":0,"start_iteration":3,"activated":true,"start_ns":137819406,"start_host_ns":"$ONSET"},
 "hung":true,"sim_end_ns":161737819,
 "hosts":$HOSTS,
 "iterations":[{"index":0,"start_ns":3230348,"end_ns":45327433,"complete":true},{"index":3,"start_ns":125073680,"end_ns":0,"complete":false}]}
EOF
}
# truth_none NAME: the same job without a failure
truth_none() {
	mkdir -p "$work/$1"
	cat >"$work/$1/truth.json" <<EOF
{"format":"pulse-truth","version":1,"scenario":"$1","run_id":"gpt-101","workload":"gpt","seed":101,
 "failure":null,"hung":false,"sim_end_ns":161737819,"hosts":$HOSTS,
 "iterations":[{"index":0,"start_ns":3230348,"end_ns":45327433,"complete":true}]}
EOF
}
# diag LOCALIZER CLASS LEVEL REPORT_NS HOST:GPU...: one diagnosis as pulse-analyzer writes it
diag() {
	local loc=$1 cls=$2 lvl=$3 rep=$4
	shift 4
	local name
	case $cls in
	comp-slow) name="computation fail-slow" ;; comp-stop) name="computation fail-stop" ;;
	comm-slow) name="communication fail-slow" ;; comm-stop) name="communication fail-stop" ;;
	*) name=none ;;
	esac
	local list="" rank=0 x
	for x in "$@"; do
		list="$list${list:+, }{\"host\": \"${x%:*}\", \"gpu\": ${x#*:}, \"rank\": $rank}"
		rank=$((rank + 1))
	done
	local sus="[]" mem="[]"
	if [ "$lvl" = machine ]; then sus="[$list]"; else mem="[$list]"; fi
	cat <<EOF
{"localizer": "$loc", "class": "$cls", "class_name": "$name", "level": "$lvl",
 "suspects": $sus, "members": $mem,
 "evidence": {"comm_id": "0xc4a3e442385d4225", "seq": 25, "op": "group", "metric": "actual_bytes",
  "value": 262144, "median": 8388608, "ranks_compared": 2},
 "why": "hand-written", "steps": "", "trigger": "", "onset_ns": "1700000000138607616",
 "report_ns": "$rep", "latency_s": null}
EOF
}
# report NAME DIAG...: analyzer.json with these diagnoses (pulse/op_level: the first of each)
report() {
	local run=$1
	shift
	local all="" d
	for d in "$@"; do all="$all${all:+,}$d"; done
	cat >"$work/$run/analyzer.json" <<EOF
{"format": "pulse-analyzer-report", "version": 1, "pulse": null, "op_level": null,
 "diagnoses": [$all],
 "input": {"lines": 3916, "used": 3284, "ignored": 632, "malformed": 0, "op_records": 1434, "hosts": 8,
  "gpus": 16, "communicators": 20, "triggers_slow": 0, "triggers_hang": 1, "skewed_hosts": []}}
EOF
}

R=()
# the faulty host alone, Pulse; the OP-level baseline names its PP group
truth ok
report ok "$(diag pulse comm-stop machine $AFTER host4:1)" "$(diag op-level comm-stop group $AFTER host0:1 host4:1)"
R+=(ok)
# two GPUs of the faulty host: still the host alone
truth two_gpus
report two_gpus "$(diag pulse comm-stop machine $AFTER host4:0 host4:1)"
R+=(two_gpus)
# two hosts named at "machine level": group level now
truth two_hosts
report two_hosts "$(diag pulse comm-stop machine $AFTER host4:1 host0:1)"
R+=(two_hosts)
# right first, then a diagnosis naming another host
truth later_host
report later_host "$(diag pulse comm-stop machine $AFTER host4:1)" "$(diag pulse comm-slow machine $AFTER host2:0)"
R+=(later_host)
# right first, then the faulty host with a wrong class
truth later_class
report later_class "$(diag pulse comm-stop machine $AFTER host4:1)" "$(diag pulse comp-stop machine $AFTER host4:1)"
R+=(later_class)
# the right host and class, but reported before the failure began
truth before_onset
report before_onset "$(diag pulse comm-stop machine $BEFORE host4:1)" "$(diag pulse comm-stop machine $AFTER host4:1)"
R+=(before_onset)
# a wrong class first
truth wrong_class
report wrong_class "$(diag pulse comp-stop machine $AFTER host4:1)"
R+=(wrong_class)
# pipeline failures
truth no_report
R+=(no_report)
truth bad_report
printf '{"format": "pulse-analyzer-report", "diagnoses": [' >"$work/bad_report/analyzer.json"
R+=(bad_report)
# runs without a failure: one with an alarm, one clean
truth_none alarm
report alarm "$(diag pulse comm-slow machine $AFTER host1:0)"
R+=(alarm)
truth_none quiet
report quiet
R+=(quiet)

dirs=()
for r in "${R[@]}"; do dirs+=("$work/$r"); done
if ! "$score" --out "$work/report.json" "${dirs[@]}" >"$work/out.txt" 2>"$work/err.txt"; then
	echo "FAIL: pulse-eval-score exited $? without --expect"; cat "$work/out.txt" "$work/err.txt"; exit 1
fi
fail=0
python3 - "$work/report.json" "$work/check.py" <<'EOF' || fail=1
import sys
exec(open(sys.argv[2]).read())
want = {  # run: (Pulse symbol, Pulse strict verdict, OP-level strict verdict)
    "ok": ("M", "strict", "group"),
    "two_gpus": ("M", "strict", "missed"),
    "two_hosts": ("G", "group", "missed"),
    "later_host": ("M", "machine_with_false_positive", "missed"),
    "later_class": ("M", "machine_with_false_positive", "missed"),
    "before_onset": ("M", "wrong", "missed"),
    "wrong_class": ("X", "wrong", "missed"),
    "no_report": ("X", "missed", "missed"),
    "bad_report": ("X", "missed", "missed"),
    "alarm": ("X", "false_alarm", "clean"),
    "quiet": ("X", "clean", "clean"),
}
for name, (sym, sv, op) in want.items():
    r = runs.get(name)
    if r is None:
        check(name + ": scored", False, True)
        continue
    check(name + ": Table 3 symbol (first diagnosis)", r["pulse"]["symbol"], sym)
    check(name + ": strict verdict, Pulse", r["pulse"]["strict"], sv)
    check(name + ": strict verdict, OP-level", r["op_level"]["strict"], op)
check("before_onset: diagnoses before the onset", runs["before_onset"]["pulse"]["before_onset_diagnoses"], 1)
check("later_host: false-positive diagnoses", runs["later_host"]["pulse"]["false_positive_diagnoses"], 1)
check("no_report: pipeline_ok", runs["no_report"]["pipeline_ok"], False)
s = rep["strict"]
p = s["pulse"]
check("failure runs", s["failure_runs"], 9)
check("strict successes (ok, two_gpus)", (p["runs"]["strict"]["count"], p["runs"]["strict"]["runs"]), (2, 9))
check("comm-stop strict successes", (p["runs"]["comm-stop"]["count"], p["runs"]["comm-stop"]["runs"]), (2, 9))
check("group level with the host", p["runs"]["group"]["count"], 1)
check("missed (two pipeline failures)", p["runs"]["missed"]["count"], 2)
nf = p["no_failure_with_false_alarm"]
check("no-failure runs with a false alarm", (nf["count"], nf["runs"]), (1, 2))
lo, hi = p["runs"]["strict"]["ci95_low"], p["runs"]["strict"]["ci95_high"]
check("Wilson interval of 2/9", (round(lo, 3), round(hi, 3)), (0.063, 0.547))
check("pipeline failures listed", sorted(x["scenario"] for x in s["pipeline_failures"]), ["bad_report", "no_report"])
# host level: the alarm of the run without a failure is a comm-slow false positive; the other
# comm-slow one is later_host's host2
check("comm-slow false positives (alarm, later_host)", p["classes"]["comm-slow"]["fp"], 2)
check("comm-stop true positives", p["classes"]["comm-stop"]["tp"], 5)
ov = p["classes"]["overall"]
# host0 (two_hosts), host2 (later_host), host1 (alarm); the faulty host with a wrong class
# (later_class, wrong_class) or before the onset (before_onset)
check("overall false positives", ov["fp"], 6)
check("overall FPR > 0", ov["fpr"] > 0, True)
sys.exit(1 if bad else 0)
EOF
want_line='strict, Pulse: 2/9 failure runs at machine level (22.2%, 95% CI 6.3-54.7), 1/2 no-failure runs with a false alarm, 2 pipeline failure(s)'
if grep -qF "$want_line" "$work/out.txt"; then
	echo "ok    summary line"
else
	echo "FAIL  summary line; want: $want_line"; grep '^strict' "$work/out.txt"; fail=1
fi
for r in no_report bad_report; do
	if ! sed -n '/^Pipeline failures/,/^$/p' "$work/out.txt" | grep -q "^  $r "; then
		echo "FAIL  $r not listed as a pipeline failure"; fail=1
	fi
done

# --expect: M is the first diagnosis naming the faulty host alone; N: no report at all
expect_rc() {
	printf '%s %s\n' "$1" "$2" >"$work/expect"
	"$score" --expect "$work/expect" "$work/$1" >"$work/expect.out" 2>&1
	echo $?
}
for t in "ok M 0" "two_gpus M 0" "two_hosts M 1" "two_hosts G 0" "later_host M 0" "wrong_class M 1" \
	"no_report M 1" "quiet N 0" "alarm N 1"; do
	set -- $t
	got=$(expect_rc "$1" "$2")
	if [ "$got" = "$3" ]; then
		echo "ok    --expect $1 $2: exit $got"
	else
		echo "FAIL  --expect $1 $2: exit $got, want $3"; cat "$work/expect.out"; fail=1
	fi
done
# ---- several faults (truth "failures": concurrent on two hosts, or mixed on one)
ON2=1700000001000000000
# truth_multi NAME F...: faults, each "TYPE:CLASS:HOST:ONSET"
truth_multi() {
	local name=$1 list="" first="" x obj
	shift
	for x in "$@"; do
		IFS=: read -r ty cl ho on <<<"$x"
		obj="{\"type\":\"$ty\",\"class\":\"$cl\",\"mode\":\"fail-slow\",\"host\":\"$ho\",\"gpu\":0,\"rank_global\":0,\"severity\":0.5,\"start_iteration\":3,\"activated\":true,\"start_ns\":1,\"start_host_ns\":\"$on\"}"
		[ -z "$first" ] && first=$obj
		list="$list${list:+,}$obj"
	done
	mkdir -p "$work/$name"
	cat >"$work/$name/truth.json" <<EOF
{"format":"pulse-truth","version":1,"scenario":"$name","run_id":"gpt-101","workload":"gpt","seed":101,
 "failure":$first,"failures":[$list],"hung":false,"sim_end_ns":161737819,"hosts":$HOSTS,
 "iterations":[{"index":0,"start_ns":3230348,"end_ns":45327433,"complete":true}]}
EOF
}
M=()
truth_multi both "gpu_throttling:computation:host2:$ONSET" "pcie_downgrade:communication:host5:$ON2"
report both "$(diag pulse comp-slow machine $AFTER host2:0)" "$(diag pulse comm-slow machine $AFTER host5:0)"
M+=(both)
truth_multi one_of_two "gpu_throttling:computation:host2:$ONSET" "pcie_downgrade:communication:host5:$ON2"
report one_of_two "$(diag pulse comp-slow machine $AFTER host2:0)"
M+=(one_of_two)
truth_multi both_and_other "gpu_throttling:computation:host2:$ONSET" "pcie_downgrade:communication:host5:$ON2"
report both_and_other "$(diag pulse comp-slow machine $AFTER host2:0)" "$(diag pulse comm-slow machine $AFTER host5:0)" \
	"$(diag pulse comm-slow machine $AFTER host1:0)"
M+=(both_and_other)
truth_multi mixed "gpu_throttling:computation:host3:$ONSET" "pcie_downgrade:communication:host3:$ON2"
report mixed "$(diag pulse comm-slow machine $AFTER host3:1)"
M+=(mixed)
truth_multi second_early "gpu_throttling:computation:host2:$ONSET" "pcie_downgrade:communication:host5:$AFTER"
report second_early "$(diag pulse comp-slow machine $AFTER host2:0)" "$(diag pulse comm-slow machine $ON2 host5:0)"
M+=(second_early)
truth_multi wrong_cls "gpu_throttling:computation:host2:$ONSET" "pcie_downgrade:communication:host5:$ON2"
report wrong_cls "$(diag pulse comm-slow machine $AFTER host2:0)"
M+=(wrong_cls)
truth_multi none_said "gpu_throttling:computation:host2:$ONSET" "pcie_downgrade:communication:host5:$ON2"
report none_said
M+=(none_said)
# the second fault never acted (the run hung first): naming the first is enough
truth_multi one_acted "gpu_throttling:computation:host2:$ONSET" "pcie_downgrade:communication:host5:$ON2"
sed -i 's/"host":"host5","gpu":0,"rank_global":0,"severity":0.5,"start_iteration":3,"activated":true/"host":"host5","gpu":0,"rank_global":0,"severity":0.5,"start_iteration":3,"activated":false/' "$work/one_acted/truth.json"
report one_acted "$(diag pulse comp-slow machine $AFTER host2:0)"
M+=(one_acted)
dirs=()
for r in "${M[@]}"; do dirs+=("$work/$r"); done
"$score" --out "$work/multi.json" "${dirs[@]}" >"$work/multi.txt" 2>&1 || {
	echo "FAIL: pulse-eval-score on the several-fault runs"; cat "$work/multi.txt"; exit 1; }
python3 - "$work/multi.json" "$work/check.py" <<'EOF' || fail=1
import sys
exec(open(sys.argv[2]).read())
want = {  # run: (Pulse symbol, Pulse strict verdict)
    "both": ("M", "strict"),
    "one_of_two": ("M", "group"),
    "both_and_other": ("M", "machine_with_false_positive"),
    "mixed": ("M", "strict"),
    "second_early": ("M", "group"),
    "wrong_cls": ("H", "wrong"),
    "none_said": ("X", "missed"),
    "one_acted": ("M", "strict"),
}
for name, (sym, sv) in want.items():
    r = runs.get(name)
    if r is None:
        check(name + ": scored", False, True)
        continue
    check(name + ": Table 3 symbol (first diagnosis)", r["pulse"]["symbol"], sym)
    check(name + ": strict verdict, Pulse", r["pulse"]["strict"], sv)
check("second_early: diagnoses before the onset", runs["second_early"]["pulse"]["before_onset_diagnoses"], 1)
check("both: the run's type lists both faults", runs["both"]["type"], "gpu_throttling+pcie_downgrade")
p = rep["strict"]["pulse"]
check("strict successes (both, mixed, one_acted)", (p["runs"]["strict"]["count"], p["runs"]["strict"]["runs"]), (3, 8))
# host1 in both_and_other, host2 with a wrong class in wrong_cls, host5 before its onset
check("overall false positives", p["classes"]["overall"]["fp"], 3)
sys.exit(1 if bad else 0)
EOF
exit $fail
