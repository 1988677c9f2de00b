#!/usr/bin/env python3
"""make eval: the direction of network slowdowns (issue 16 part 3,
analyzer/direction.c), expected against reported, per failure type.

Usage: direction-table.py [--scenarios DIR] RUN...   (run directories of tools/eval/run-one.sh:
truth.json and analyzer.json). For every run whose first Pulse diagnosis
carries a direction, or whose failure type has an expected one: the type,
the faulty host, the host Pulse named, the expected and the reported
direction. A run counts as agreeing when Pulse named the faulty host and the
direction is one of the expected labels. Exit 0 (a table, not a gate: the
gate is tests/analyzer/direction_sim.sh in make test)."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from eval_json import load  # noqa: E402

# What the hosts' TX series can tell (sim/README.md has each type's model):
# a host-side limit slows both ways (PCIe; a host that sends nothing in the
# range can only be receiver-limited), congestion or a TX-only fault only
# what the NIC sends, an incast only what it receives.
EXPECT = {
    "vedrfolnir_incast": "receiver-limited",
    "vedrfolnir_background": "path|egress",
    "network_congestion": "path|egress",
    "network_congestion/ingress": "receiver-limited|path",
    "pcie_downgrade": "sender-limited",
    "pcie_contention": "sender-limited",
    "memory_misalignment": "sender-limited|egress",
    "holmes_persistent": "sender-limited|egress",
    "venus_slow_transmission": "sender-limited|egress",
}




SCENARIO_DIRS = ["tests/scenarios"]


def ingress(truth, run):
    """congestion into the faulty NIC: truth.json does not say, the scenario
    does (NAME.json in tests/scenarios or a --scenarios DIR)"""
    name = truth.get("scenario", "")
    for path in [os.path.join(d, name + ".json") for d in SCENARIO_DIRS]:
        sc = load(path)
        if sc:
            f = sc.get("failure") or (sc.get("failures") or [{}])[0]
            return f.get("direction") == "ingress"
    return False


def main(runs):
    rows = []
    for run in runs:
        truth = load(os.path.join(run, "truth.json"))
        rep = load(os.path.join(run, "analyzer.json"))
        if not truth:
            continue
        f = truth.get("failure") or {}
        ftype = f.get("type", "none")
        if ftype == "network_congestion" and ingress(truth, run):
            ftype += "/ingress"
        exp = EXPECT.get(ftype, "")
        p = (rep or {}).get("pulse") or {}
        named = (p.get("suspects") or [{}])[0].get("host", "-") if p.get("level") == "machine" else "-"
        d = p.get("direction")
        got = d["label"] if d else "-"
        if not exp and not d:
            continue
        if not exp:
            verdict = "(none expected)"
        elif named != f.get("host"):
            verdict = "not named" if named == "-" else "other host named"
        else:
            ok = got in exp.split("|")
            # a host-side limit (PCIe) slows both ways: where the host only
            # receives in the range, that is all the series can show
            if not ok and ftype.startswith("pcie_") and got == "receiver-limited" and d.get("out_pairs") == 0:
                ok = True
            verdict = "ok" if ok else "WRONG"
        rows.append((ftype, os.path.basename(run.rstrip("/")), f.get("host", "-"), named, exp or "-", got, verdict))
    if not rows:
        print("direction: no run with a network failure type")
        return 0
    print("== Direction of network slowdowns (issue 16.3: from the hosts' µs per-QP series, "
          "no switch telemetry)")
    w = max(len(r[1]) for r in rows)
    print("%-28s %-*s %-7s %-7s %-22s %-18s %s" % ("type", w, "run", "faulty", "named", "expected",
                                                   "reported", ""))
    for r in sorted(rows):
        print("%-28s %-*s %-7s %-7s %-22s %-18s %s" % (r[0], w, r[1], r[2], r[3], r[4], r[5], r[6]))
    by = {}
    for r in rows:
        if r[4] == "-":
            continue
        t = by.setdefault(r[0], [0, 0, 0])
        t[0] += 1
        t[1] += r[6] == "ok"
        t[2] += r[6] in ("ok", "WRONG")
    print("per type (agreeing / runs where Pulse named the faulty host / runs):")
    for k in sorted(by):
        print("  %-28s %d / %d / %d" % (k, by[k][1], by[k][2], by[k][0]))
    return 0


if __name__ == "__main__":
    args = sys.argv[1:]
    while len(args) >= 2 and args[0] == "--scenarios":
        SCENARIO_DIRS.insert(0, args[1])
        args = args[2:]
    sys.exit(main(args))
