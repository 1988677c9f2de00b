#!/usr/bin/env python3
"""The bus cluster test's judge (tests/bus/bus_cluster.sh): the diagnoses a
job's analyzers stored in PostgreSQL through the bus against the report of
pulse-analyzer --replay of the same run.

  diag_compare.py REPLAY.json ROWS.jsonl        0 when they are the same
  diag_compare.py --self-test REPLAY.json       0 when a lost, a duplicated
                                                and a wrong diagnosis are
                                                each caught

ROWS.jsonl: one stored diagnosis per line (the sink's evidence column, the
analyzer's report entry whole, with its key). A diagnosis is what it says
and when: localizer, class, level, suspects, members, the operator it rests
on, its trigger, onset and report data times, so that a replay and the live
bus path agree only if they took the same decision on the same data."""
import json
import sys


def ident(d):
    ev = d.get("evidence") or {}
    hosts = lambda xs: tuple(sorted((x.get("host"), x.get("gpu")) for x in xs or []))
    return (d.get("localizer"), d.get("class_name"), d.get("level"), hosts(d.get("suspects")),
            hosts(d.get("members")), ev.get("comm_id"), ev.get("seq"), d.get("trigger"),
            str(d.get("onset_ns")), str(d.get("report_ns")))


def judge(replay, rows):
    """problems, as lines (empty: the same)"""
    out = []
    want = {}
    for d in replay:
        want.setdefault(ident(d), 0)
        want[ident(d)] += 1
    got = {}
    keys = {}
    for r in rows:
        got.setdefault(ident(r), 0)
        got[ident(r)] += 1
        keys[r.get("key")] = keys.get(r.get("key"), 0) + 1
    for k, n in keys.items():
        if n > 1:
            out.append("stored %d times: %s" % (n, k))
    for i, n in want.items():
        if got.get(i, 0) < n:
            out.append("lost (in the replay, not stored): %s" % (i,))
        elif got[i] > n:
            out.append("duplicated (%d stored, the replay has %d): %s" % (got[i], n, i))
    for i in got:
        if i not in want:
            out.append("not in the replay (wrong): %s" % (i,))
    if not replay:
        out.append("the replay made no diagnosis: nothing to compare")
    return out


def main(argv):
    if len(argv) == 3 and argv[1] == "--self-test":
        replay = json.load(open(argv[2]))["diagnoses"]
        if not replay:
            print("self-test: the replay has no diagnosis")
            return 1
        ok = not judge(replay, [dict(d, key=str(i)) for i, d in enumerate(replay)])
        lost = judge(replay, [dict(d, key=str(i)) for i, d in enumerate(replay[1:])])
        dup = judge(replay, [dict(d, key=str(i)) for i, d in enumerate(replay)] + [dict(replay[0], key="0")])
        wrong = [dict(d, key=str(i)) for i, d in enumerate(replay)]
        wrong[0] = dict(wrong[0], suspects=[{"host": "hostX", "gpu": 9}])
        wrong = judge(replay, wrong)
        good = ok and lost and dup and wrong
        print("self-test: identical %s, lost %s, duplicated %s, wrong %s" %
              ("passes" if ok else "FAILS", "caught" if lost else "MISSED", "caught" if dup else "MISSED",
               "caught" if wrong else "MISSED"))
        return 0 if good else 1
    if len(argv) != 3:
        print(__doc__)
        return 2
    replay = json.load(open(argv[1]))["diagnoses"]
    rows = [json.loads(l) for l in open(argv[2]) if l.strip()]
    problems = judge(replay, rows)
    for p in problems:
        print(p)
    if not problems:
        print("%d diagnoses, each stored once, equal to the replay's" % len(rows))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
