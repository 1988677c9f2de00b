#!/usr/bin/env python3
"""Checks the Grafana dashboards in dashboards/ against a live PostgreSQL
with pulse-sink's schema and a live Prometheus (tests/dashboards/dashboards.sh):
every panel's SQL (and the template variables' queries) must run, every
PromQL expression must be accepted by Prometheus's query API, and every
pulse_* metric a PromQL names must be one the agent or the analyzer serves.
Grafana macros are replaced as Grafana would for a 7-day range; a macro
this checker does not know fails the check (teach it here).

usage: check_dashboards.py PSQL_CONNINFO PROMETHEUS_URL METRIC_NAMES_FILE DASHBOARD.json...
"""
import json
import re
import subprocess
import sys
import urllib.parse
import urllib.request

SQL_MACROS = [
    (r"\$__timeFilter\((\w+)\)", r"(\1 BETWEEN now() - interval '7 days' AND now())"),
    (r"\$__timeGroupAlias\((\w+),\s*1h\)", r"date_trunc('hour', \1) AS time"),
    (r"\$\{job:sqlstring\}", "'%'"),
]
PROM_MACROS = [(r"\$__rate_interval", "1m"), (r"\$__range", "1h"), (r"\$__interval", "1m")]


def subst(text, macros):
    for pat, rep in macros:
        text = re.sub(pat, rep, text)
    left = re.findall(r"\$\{?\w+", text)
    return text, left


def main():
    conninfo, prom, names_file = sys.argv[1:4]
    known = set(open(names_file).read().split())
    fails = checked = 0

    def bad(where, why):
        nonlocal fails
        fails += 1
        print("FAIL %s: %s" % (where, why))

    for path in sys.argv[4:]:
        d = json.load(open(path))
        items = [("variable " + v["name"], {"rawSql": v["query"]}, v["datasource"]["type"])
                 for v in d.get("templating", {}).get("list", []) if "query" in v]
        for p in d["panels"]:
            if not p.get("targets"):
                bad("%s panel %r" % (path, p.get("title")), "no query")
            for t in p.get("targets", []):
                items.append(("panel %r %s" % (p["title"], t["refId"]), t, p["datasource"]["type"]))
        for where, t, kind in items:
            where = "%s %s" % (path, where)
            checked += 1
            if "rawSql" in t:
                sql, left = subst(t["rawSql"], SQL_MACROS)
                if left:
                    bad(where, "unknown macro(s) %s" % left)
                    continue
                r = subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", conninfo, "-c", sql],
                                   capture_output=True, text=True)
                if r.returncode:
                    bad(where, "PostgreSQL: " + r.stderr.strip())
            elif "expr" in t:
                expr, left = subst(t["expr"], PROM_MACROS)
                if left:
                    bad(where, "unknown macro(s) %s" % left)
                    continue
                url = prom + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})
                try:
                    ans = json.load(urllib.request.urlopen(url, timeout=10))
                except Exception as e:  # HTTP 400 carries Prometheus's reason
                    body = getattr(e, "read", lambda: b"")().decode(errors="replace")
                    bad(where, "Prometheus: %s %s" % (e, body))
                    continue
                if ans.get("status") != "success":
                    bad(where, "Prometheus: %s" % ans)
                for m in re.findall(r"\bpulse_[a-z0-9_]+", expr):
                    if m not in known:
                        bad(where, "metric %s is served by no Pulse daemon" % m)
            else:
                bad(where, "neither rawSql nor expr")
            if kind not in ("grafana-postgresql-datasource", "prometheus"):
                bad(where, "data source %r: want Grafana's built-in PostgreSQL or Prometheus" % kind)
    print("check_dashboards: %d queries checked, %d failure(s)" % (checked, fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
