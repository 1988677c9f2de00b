#!/usr/bin/env bash
# tools/live-cluster.sh RUNDIR WORKDIR [options]: a sim/run_cluster run through
# the real daemons, live. pulse-analyzer --listen; pulse-cluster-serve serving
# every host of RUNDIR (its NICs on sockets, its training processes as live
# processes with real interception rings) at --speed; one pulse-host-agent
# per simulated host (--sim sockets, --hook-dir of its rings, --sim-clock,
# --analyzer). Prints every verdict as the analyzer makes it, with the wall
# time since the failure's onset, then the truth. Everything here runs in the
# simulator: no NIC, GPU or training process is real.
#
#   --speed X            simulated seconds per wall second (default 1)
#   --agent BIN          the host agent binary (default build/bin/pulse-host-agent)
#   --analyzer BIN       the analyzer binary (default build/bin/pulse-analyzer)
#   --kill-agent H@S     SIGKILL host H's agent S wall seconds after t = 0 and start
#                        it again 1 s later (as systemd would)
#   --kill-analyzer S    SIGKILL the analyzer S wall seconds after t = 0, start it
#                        again 1 s later on the same port
#   --kill-rank H@S      SIGKILL one training process of host H at S wall seconds
#   --quiet              only the summary lines
#
# Writes WORKDIR/an.out (the analyzer's verdicts and final report), an*.log,
# agent-H.log, agent-H.jsonl, serve.log, verdict.txt (LIVE class level
# suspects latency), cpu.txt (CPU seconds per process). Exit 0 when a verdict
# came, 1 when none did, 2 on usage, 3 when a daemon could not start.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-build}
case $build in /*) ;; *) build=$root/$build ;; esac
agent=$build/bin/pulse-host-agent
analyzer=$build/bin/pulse-analyzer
serve=$build/bin/pulse-cluster-serve
speed=1 kill_agent= kill_analyzer= kill_rank= quiet=0
[ $# -ge 2 ] || { sed -n '2,27p' "$0"; exit 2; }
run=$1 work=$2
shift 2
while [ $# -gt 0 ]; do
	case $1 in
	--speed) speed=$2; shift ;;
	--agent) agent=$2; shift ;;
	--analyzer) analyzer=$2; shift ;;
	--kill-agent) kill_agent=$2; shift ;;
	--kill-analyzer) kill_analyzer=$2; shift ;;
	--kill-rank) kill_rank=$2; shift ;;
	--quiet) quiet=1 ;;
	*) echo "live-cluster.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
for b in "$agent" "$analyzer" "$serve"; do
	[ -x "$b" ] || { echo "live-cluster.sh: $b is not built" >&2; exit 3; }
done
[ -f "$run/cluster.json" ] || { echo "live-cluster.sh: $run: not a run_cluster directory" >&2; exit 2; }
mkdir -p "$work"
rm -rf "$work/at" "$work"/agent-*.jsonl "$work"/agent-*.log "$work"/an*.log "$work/an.out"
say() { [ "$quiet" = 1 ] || echo "$@"; }

declare -A apid
spid= anpid=
cleanup() {
	for p in "${apid[@]}" $spid $anpid; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
}
trap cleanup EXIT
cpu_of() { # utime+stime in clock ticks of a live pid
	awk '{print $14+$15}' "/proc/$1/stat" 2>/dev/null || echo 0
}

# The analyzer's clock is data time; a simulated cluster at N x real time runs
# its hosts' clocks N x faster than the analyzer's own, so the skew check
# (agent realtime against the analyzer's) is widened.
export PULSE_ANALYZER_SERVER=max_skew_ms=3600000
start_analyzer() { # $1: port (0: any), $2: log
	"$analyzer" --listen "127.0.0.1:$1" >>"$work/an.out" 2>"$2" &
	anpid=$!
	for _ in $(seq 100); do
		port=$(sed -n 's/.*listening on .*(port \([0-9]*\)).*/\1/p' "$2" 2>/dev/null)
		[ -n "$port" ] && return 0
		kill -0 "$anpid" 2>/dev/null || break
		sleep 0.05
	done
	echo "live-cluster.sh: pulse-analyzer did not start:" >&2
	cat "$2" >&2
	exit 3
}
start_analyzer 0 "$work/an.log"

t_begin=$(date +%s%N)
timer=()
[ -x /usr/bin/time ] && timer=(/usr/bin/time -f "%U %S" -o "$work/serve.time")
"${timer[@]}" "$serve" "$run" --at "$work/at" --speed "$speed" --lead 2s --tail 3s 2>"$work/serve.log" &
spid=$!
for _ in $(seq 2400); do [ -f "$work/at/ready" ] && break; kill -0 $spid 2>/dev/null || break; sleep 0.05; done
[ -f "$work/at/ready" ] || { echo "live-cluster.sh: pulse-cluster-serve did not start:" >&2; cat "$work/serve.log" >&2; exit 3; }
t0=$(sed -n 's/.*"t0_realtime_ns":\([0-9]*\).*/\1/p' "$work/at/run.json")
hosts=$(cd "$work/at" && for d in */; do [ -f "$d/agent.args" ] && echo "${d%/}"; done)
start_agent() { # $1 host
	# shellcheck disable=SC2046
	"$agent" $(cat "$work/at/$1/agent.args") --analyzer "127.0.0.1:$port" --job live \
		--lock-dir "$work" --out "$work/agent-$1.jsonl.part$2" --log "$work/agent-$1.log.part$2" &
	apid[$1]=$!
}
for h in $hosts; do start_agent "$h" 0; done
say "live-cluster.sh: simulator: $(echo "$hosts" | wc -w) hosts served by pulse-cluster-serve at ${speed}x real time," \
	"one pulse-host-agent each, pulse-analyzer --listen on port $port"

now_ns() { date +%s%N; }
at_wall() { # seconds after t = 0 -> wait until then
	local due=$(( t0 + $(awk -v s="$1" 'BEGIN{printf "%d", s*1e9}') ))
	local left=$(( due - $(now_ns) ))
	[ $left -gt 0 ] && sleep "$(awk -v n=$left 'BEGIN{printf "%.3f", n/1e9}')"
	return 0
}
events=()
[ -n "$kill_agent" ] && events+=("${kill_agent#*@} agent ${kill_agent%@*}")
[ -n "$kill_analyzer" ] && events+=("$kill_analyzer analyzer -")
[ -n "$kill_rank" ] && events+=("${kill_rank#*@} rank ${kill_rank%@*}")
cpu_agents=0 cpu_an=0
declare -A cpu_agent
while read -r when what who; do
	[ -n "$when" ] || continue
	at_wall "$when"
	case $what in
	agent)
		cpu_agent[$who]=$(( ${cpu_agent[$who]:-0} + $(cpu_of "${apid[$who]}") ))
		kill -KILL "${apid[$who]}"; wait "${apid[$who]}" 2>/dev/null
		say "live-cluster.sh: t=${when}s: host $who's agent killed (SIGKILL); restarted in 1 s"
		sleep 1
		start_agent "$who" 1 ;;
	analyzer)
		cpu_an=$(( cpu_an + $(cpu_of "$anpid") ))
		kill -KILL "$anpid"; wait "$anpid" 2>/dev/null
		say "live-cluster.sh: t=${when}s: pulse-analyzer killed (SIGKILL); restarted in 1 s on port $port"
		sleep 1
		start_analyzer "$port" "$work/an2.log" ;;
	rank)
		rp=$(ls "$work/at/$who/hooks" | sed -n 's/^pulse-hook\.//p' | head -1)
		kill -KILL "$rp"
		echo "$rp" >"$work/killed-rank"
		say "live-cluster.sh: t=${when}s: training process $rp of host $who killed (SIGKILL) mid-run" ;;
	esac
done < <(printf '%s\n' "${events[@]+"${events[@]}"}" | sort -n)

wait "$spid"
src=$?
spid=
# the agents' last polls and the analyzer's last ticks
sleep "$(awk -v s="$speed" 'BEGIN{printf "%.2f", 2.5/s + 0.5}')"
for h in $hosts; do
	cpu_agent[$h]=$(( ${cpu_agent[$h]:-0} + $(cpu_of "${apid[$h]}") ))
	kill -TERM "${apid[$h]}" 2>/dev/null
done
for h in $hosts; do wait "${apid[$h]}" 2>/dev/null; done
apid=()
sleep 0.5
cpu_an=$(( cpu_an + $(cpu_of "$anpid") ))
kill -TERM "$anpid"; wait "$anpid"; anpid=
for h in $hosts; do
	cat "$work"/agent-"$h".jsonl.part* >"$work/agent-$h.jsonl" 2>/dev/null
	cat "$work"/agent-"$h".log.part* >"$work/agent-$h.log" 2>/dev/null
	rm -f "$work"/agent-"$h".jsonl.part* "$work"/agent-"$h".log.part*
done
tck=$(getconf CLK_TCK)
{
	for h in $hosts; do echo "agent $h $(awk -v t="${cpu_agent[$h]}" -v k="$tck" 'BEGIN{printf "%.3f", t/k}')"; done
	echo "analyzer - $(awk -v t="$cpu_an" -v k="$tck" 'BEGIN{printf "%.3f", t/k}')"
	[ -f "$work/serve.time" ] && echo "serve - $(awk '{printf "%.3f", $1 + $2}' "$work/serve.time")"
	echo "elapsed - $(awk -v n="$(( $(date +%s%N) - t_begin ))" 'BEGIN{printf "%.3f", n/1e9}')"
} >"$work/cpu.txt"
[ $src -eq 0 ] || { echo "live-cluster.sh: pulse-cluster-serve exited $src:" >&2; tail -5 "$work/serve.log" >&2; }

# the first live verdict: its wall time against the onset's
onset=$(python3 -c "
import json,sys
t=json.load(open('$run/truth.json'))
f=t.get('failure')
print(int(f['start_ns']) if f and f.get('activated', True) else '')" 2>/dev/null)
line=$(grep -m1 '^LIVE VERDICT' "$work/an.out")
if [ -z "$line" ]; then
	say "live-cluster.sh: no live verdict"
	echo "LIVE none" >"$work/verdict.txt"
	rc=1
else
	wall=$(echo "$line" | sed -n 's/.*wall_ns=\([0-9]*\).*/\1/p')
	verdict=$(grep -m1 -A1 '^LIVE VERDICT' "$work/an.out" | tail -1 | sed 's/^ *//')
	lat=
	if [ -n "$onset" ]; then
		lat=$(awk -v w="$wall" -v t0="$t0" -v o="$onset" -v s="$speed" 'BEGIN{printf "%.2f", (w - t0 - o / s) / 1e9}')
	fi
	say "live-cluster.sh: live verdict: $verdict"
	[ -n "$lat" ] && say "live-cluster.sh: wall-clock latency from the onset: $lat s at ${speed}x (the simulated onset at t=$(awk -v o="$onset" 'BEGIN{printf "%.3f", o/1e9}') s)"
	echo "LIVE $verdict latency_s=${lat:-none}" >"$work/verdict.txt"
	rc=0
fi
exit $rc
