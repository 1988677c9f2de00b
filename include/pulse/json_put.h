/* Writing a JSON string: the one escaper of every JSON line Pulse writes
 * by hand with stdio (the host agent's output, its RDMA findings and
 * dumps, the hook map codec). wire/json_put.c. */
#ifndef PULSE_JSON_PUT_H
#define PULSE_JSON_PUT_H

#include <stdio.h>

/* s as a quoted JSON string: '"' and '\\' escaped, control characters as
 * \u00XX, everything else as is (UTF-8 passes through); NULL as "". */
void pulse_json_put_str(FILE *f, const char *s);

#endif
