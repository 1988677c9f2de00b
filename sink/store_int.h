/* What sink/store.c shares with the files that write the other tables
 * (sink/store_ev.c): the connection and the day partitions. */
#ifndef PULSE_SINK_STORE_INT_H
#define PULSE_SINK_STORE_INT_H

#include <stddef.h>

#include <libpq-fe.h>

#define SINK_PARTS_CACHED 8

struct sink_store {
	PGconn *pg;
	char conninfo[512];
	const char *schema;
	/* "table/YYYY-MM-DD" of the partitions made last: most rows fall on
	 * the same few days, and CREATE ... IF NOT EXISTS costs a round trip */
	char made[SINK_PARTS_CACHED][64];
	unsigned made_next;
};

/* 0, or -1 with PostgreSQL's message in err */
int sink_exec(PGconn *pg, const char *sql, char *err, size_t errlen);
/* (re)connects and applies the schema when the connection was lost */
int sink_connect(struct sink_store *s, char *err, size_t errlen);
/* table's partition for day ("YYYY-MM-DD"), made if missing */
int sink_partition(struct sink_store *s, const char *table, const char *day, char *err, size_t errlen);

#endif
