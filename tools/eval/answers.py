#!/usr/bin/env python3
"""Issue 16's answers against the simulator's truth, per failure type.

  answers.py [--check] RUN_DIR...

RUN_DIR is what tools/eval/run-one.sh leaves: truth.json and analyzer.json.
For each run with a fail-slow fault, the Pulse diagnosis that names the
faulty host at machine level (else none) is compared with what the fault's
type implies:

  slow ratio  computation for GPU throttling, VenusTrace's slow forward and
              backward, CPU contention and throttling; communication for
              PCIe, congestion, Holmes, Vedrfolnir and the other network
              faults; mixed for a computation and a communication fault on
              one machine (concurrent faults, "failures");
  pattern     Holmes's types: holmes_spike -> spike, holmes_fluctuation ->
              fluctuation, holmes_persistent -> persistent;
  episode     a fault that clears (truth episodes): the episode's start
              and end against the truth's, in poll periods.

Prints one table per answer (expected against reported, per failure type).
--check: exit 1 when a judged run's answer is wrong (a run whose fault no
machine-level diagnosis names is listed as not judged: localization is
another test's business), or when an episode's start or end is more than
one poll period off.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from eval_json import load  # noqa: E402
from collections import defaultdict

COMPUTATION = {"gpu_throttling", "venus_slow_forward", "venus_slow_backward", "cpu_contention",
               "cpu_throttling", "moe_expert_imbalance"}
PATTERNS = {"holmes_spike": "spike", "holmes_fluctuation": "fluctuation",
            "holmes_persistent": "persistent"}




def faults(truth):
    fs = truth.get("failures") or ([truth["failure"]] if truth.get("failure") else [])
    return [f for f in fs if f and f.get("mode") == "fail-slow" and f.get("activated", True)]


def expected_label(fs, host):
    kinds = {"computation" if f["type"] in COMPUTATION else "communication"
             for f in fs if f.get("host") == host}
    return "mixed" if len(kinds) == 2 else kinds.pop() if kinds else None


def pick(report, host):
    for d in (report or {}).get("diagnoses", []):
        if d.get("localizer") != "pulse" or d.get("level") != "machine":
            continue
        if d.get("class") not in ("comp-slow", "comm-slow"):
            continue
        if d.get("suspects") and d["suspects"][0].get("host") == host:
            return d
    return None


def main(argv):
    check = "--check" in argv
    runs = [a for a in argv if a != "--check"]
    ratio = defaultdict(lambda: [0, 0, 0, []])   # type -> judged, right, not judged, got
    pattern = defaultdict(lambda: [0, 0, 0, []])
    episodes = []
    bad = []
    for run in runs:
        truth, rep = load(os.path.join(run, "truth.json")), load(os.path.join(run, "analyzer.json"))
        if not truth:
            continue
        if rep is None:
            bad.append("%s: no analyzer.json (the analyzer failed)" % os.path.basename(run.rstrip("/")))
            continue
        fs = faults(truth)
        if not fs:
            continue
        host = fs[0]["host"]
        hosts_named = {f.get("host") for f in fs}
        mixed = len([f for f in fs if f.get("host") == host]) > 1
        key = "+".join(sorted(f["type"] for f in fs if f.get("host") == host)) if mixed else fs[0]["type"]
        d = pick(rep, host)
        if d is None:
            for h in hosts_named:
                d = d or pick(rep, h)
                if d:
                    host = h
        name = os.path.basename(run.rstrip("/"))
        want = expected_label(fs, host)
        # the critical path goes with every diagnosis (the report's list,
        # the stored one), not only the report's first
        if d is not None and not isinstance(d.get("where"), dict):
            bad.append("%s: the diagnosis naming %s has no \"where\"" % (os.path.basename(run.rstrip("/")), host))
        sr = d.get("slow_ratio") if d else None
        got = sr["label"] if sr else None
        row = ratio[key]
        if d is None or got is None:
            row[2] += 1
        else:
            row[0] += 1
            row[3].append("%s %.2f" % (got, sr["computation_share"]))
            if got == want:
                row[1] += 1
            else:
                bad.append("%s: slow ratio %s (%.2f), expected %s" % (name, got, sr["computation_share"], want))
        ftype = fs[0]["type"]
        if ftype in PATTERNS and not mixed:
            ep = d.get("episode") if d else None
            p = ep.get("pattern") if ep else None
            row = pattern[ftype]
            if not p:
                row[2] += 1
            else:
                row[0] += 1
                row[3].append(p)
                if p == PATTERNS[ftype]:
                    row[1] += 1
                else:
                    bad.append("%s: pattern %s, expected %s" % (name, p, PATTERNS[ftype]))
        for f in fs:
            eps = f.get("episodes") or []
            if not eps or f.get("host") != host or not d or not d.get("episode", {}).get("start_ns"):
                continue
            poll = (load(os.path.join(run, "run", "cluster.json")) or {}).get("poll_ns", 1e9)
            ts, te = int(eps[0]["start_host_ns"]), int(eps[-1]["end_host_ns"] or 0)
            gs, ge = int(d["episode"]["start_ns"]), int(d["episode"]["end_ns"])
            es = abs(gs - ts) / poll
            ee = abs(ge - te) / poll if te else None
            episodes.append((name, f["type"], es, ee))
            if es > 1 or (ee is not None and ee > 1):
                bad.append("%s: episode %.2f..%.2f s, truth %.2f..%.2f s (more than one poll period off)"
                           % (name, gs / 1e9 % 1000, ge / 1e9 % 1000, ts / 1e9 % 1000, te / 1e9 % 1000))
    print("== Slow ratio (CCL-D): computation share of the excess, per failure type")
    print("  %-44s %-13s %7s %9s  %s" % ("failure type", "expected", "right", "not judged", "reported"))
    for k in sorted(ratio):
        r = ratio[k]
        fs_want = "mixed" if "+" in k else ("computation" if k in COMPUTATION else "communication")
        print("  %-44s %-13s %3d/%-3d %9d  %s" % (k, fs_want, r[1], r[0], r[2], ", ".join(r[3][:6])))
    if pattern:
        print("== Episode pattern (Holmes), per failure type")
        print("  %-44s %-13s %7s %9s  %s" % ("failure type", "expected", "right", "not judged", "reported"))
        for k in sorted(pattern):
            r = pattern[k]
            print("  %-44s %-13s %3d/%-3d %9d  %s" % (k, PATTERNS[k], r[1], r[0], r[2], ", ".join(r[3][:6])))
    if episodes:
        print("== Episodes of faults that clear: start and end against the truth, in poll periods")
        for name, t, es, ee in episodes:
            print("  %-44s %-22s start %.2f  end %s" % (name, t, es, "%.2f" % ee if ee is not None else "(still on)"))
    unverified = sorted(k for k, r in list(ratio.items()) + list(pattern.items()) if r[0] == 0)
    if unverified:
        print("not verified (no machine-level verdict named the faulty host in any run): " + ", ".join(unverified))
    if bad:
        print("wrong:")
        for b in bad:
            print("  " + b)
    judged = sum(r[0] for r in ratio.values())
    if check and not judged:
        print("wrong: no run was judged at all (did the analyzer run?)")
        return 1
    return 1 if check and bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
