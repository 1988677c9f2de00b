#!/usr/bin/env python3
"""make eval / make test: where in the iteration (issue 16 part 2), expected
against reported per failure type.

Reads RUN/truth.json and RUN/analyzer.json (tools/eval/run-one.sh) of each
run given. For the VenusTrace types the expected answer follows from the
truth: venus_slow_forward -> forward, venus_slow_backward -> backward,
venus_slow_transmission -> transmission, at the faulty host and GPU. A run
whose scenario name ends in "-absorbed" or "-critical" also expects that
critical-path answer. The reported answer is the first Pulse diagnosis'
"where" (analyzer --json), else "where_query" (analyzer --where HOST:GPU:
a slowdown absorbed by slack raises no verdict). Other failure types are
listed with what was reported, nothing expected.

  where_table.py [--check] RUN...    --check: exit 1 when an expected
                                     answer is wrong or missing
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from eval_json import load  # noqa: E402

KIND = {
    "venus_slow_forward": "forward",
    "venus_slow_backward": "backward",
    "venus_slow_transmission": "transmission",
}




def reported(rep):
    if not rep:
        return None, "no report"
    p = rep.get("pulse") or {}
    w = p.get("where")
    if w and w.get("found"):
        return w, "verdict"
    q = rep.get("where_query")
    if q and q.get("found"):
        return q, "--where"
    note = (w or q or {}).get("note", "no verdict")
    return None, note


def main(argv):
    check = False
    runs = []
    for a in argv:
        if a == "--check":
            check = True
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        else:
            runs.append(a)
    if not runs:
        print(__doc__, file=sys.stderr)
        return 2
    rows = []
    bad = 0
    per_type = {}
    for r in runs:
        truth = load(os.path.join(r, "truth.json"))
        rep = load(os.path.join(r, "analyzer.json"))
        name = os.path.basename(r.rstrip("/"))
        f = (truth or {}).get("failure") or {}
        ftype = f.get("type", "none")
        exp_kind = KIND.get(ftype)
        exp_at = "%s GPU %s" % (f.get("host"), f.get("gpu")) if f else "-"
        exp_path = "absorbed" if name.endswith("-absorbed") else "critical" if name.endswith("-critical") else None
        w, src = reported(rep)
        if w:
            alike = "".join("/%s" % g for g in w.get("alike_gpus", []))
            got = "%s mb %s at %s GPU %s%s, %s (%s)" % (w["stage_kind"], w["micro_batch"], w["host"], w["gpu"],
                                                       alike, w["critical_path"], src)
        else:
            got = "(%s)" % src
        ok = None
        if exp_kind:
            # TP keeps a host's GPUs in step: the answer lists the GPUs
            # that look alike, any of them is the faulty one's place
            gpus = [w["gpu"]] + list(w.get("alike_gpus", [])) if w else []
            ok = bool(w) and w["stage_kind"] == exp_kind and w["host"] == f.get("host") and f.get("gpu") in gpus
            if ok and exp_path:
                ok = w["critical_path"] == exp_path
            if ok and f.get("micro_batch") is not None and ftype != "venus_slow_transmission":
                ok = w["micro_batch"] == f["micro_batch"]
            t = per_type.setdefault(ftype, [0, 0])
            t[0] += 1
            t[1] += 1 if ok else 0
            if not ok:
                bad += 1
        exp = "%s at %s%s%s" % (exp_kind, exp_at, ", mb %s" % f["micro_batch"] if "micro_batch" in f else "",
                                ", " + exp_path if exp_path else "") if exp_kind else "-"
        rows.append((name, ftype, exp, got, "" if ok is None else "ok" if ok else "WRONG"))
    print("== Where in the iteration (VenusTrace's critical path; analyzer/critical_path.c)")
    w0 = max(len(x[0]) for x in rows)
    w2 = max(len(x[2]) for x in rows)
    print("  %-*s  %-*s  %s" % (w0, "run", w2, "expected", "reported"))
    for name, ftype, exp, got, ok in rows:
        print("  %-*s  %-*s  %s%s" % (w0, name, w2, exp, got, "  [" + ok + "]" if ok else ""))
    for t, (n, k) in sorted(per_type.items()):
        print("  %s: %d of %d right" % (t, k, n))
    if check and bad:
        print("where: %d run(s) placed wrongly" % bad)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
