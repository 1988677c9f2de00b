# Sourced by the tests that need PostgreSQL: a server of their own, made
# with initdb in a temporary folder (as the postgres user when running as
# root, as CI does), on a unix socket only.
#   pg_need NAME     exits 77 when PostgreSQL or psql is not installed; sets pgbin
#   pg_create NAME   initdb, start, createdb pulse; sets pg (the folder,
#                    also the socket directory), pgport, db (a libpq
#                    conninfo); exits 1 on failure. pg_stop_all at exit.
#   pg_up            starts it (again, after an outage)
#   q SQL            runs SQL in the database: unaligned, tuples only
pg_need() {
	pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
	[ -n "$pgbin" ] && [ -x "$pgbin/initdb" ] || { echo "$1: PostgreSQL is not installed (make deps)"; exit 77; }
	command -v psql >/dev/null || { echo "$1: psql is not installed (make deps)"; exit 77; }
}
if [ "$(id -u)" = 0 ]; then
	asdb() { runuser -u postgres -- "$@"; }
else
	asdb() { "$@"; }
fi
pg_up() {
	asdb "$pgbin/pg_ctl" -D "$pg/data" -l "$pg/log" -w -t 30 \
		-o "-p $pgport -k $pg -c listen_addresses=''" start >/dev/null 2>&1
}
pg_stop_all() {
	[ -n "${pg:-}" ] || return 0
	asdb "$pgbin/pg_ctl" -D "$pg/data" -m immediate stop >/dev/null 2>&1
	rm -rf "$pg"
}
pg_create() {
	pg=$(mktemp -d /tmp/pulse-pg.XXXXXX)
	[ "$(id -u)" = 0 ] && chown postgres "$pg"
	asdb "$pgbin/initdb" -D "$pg/data" -A trust -U postgres >"$pg/initdb.log" 2>&1 ||
		{ echo "$1: initdb failed"; cat "$pg/initdb.log"; exit 1; }
	pgport=$((20000 + $(od -An -N2 -tu2 /dev/urandom) % 40000))
	pg_up || { echo "$1: PostgreSQL did not start"; cat "$pg/log"; exit 1; }
	asdb "$pgbin/createdb" -h "$pg" -p "$pgport" -U postgres pulse || { echo "$1: createdb failed"; exit 1; }
	db="host=$pg port=$pgport dbname=pulse user=postgres"
}
q() { psql -X -A -t -q -h "$pg" -p "$pgport" -U postgres pulse -c "$1" 2>&1; }
