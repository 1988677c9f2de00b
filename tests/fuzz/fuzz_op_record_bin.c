/* libFuzzer target: the binary operator record decoder and the OPS batch
 * framing (wire/op_record_bin.c, wire/frame.c), which the analyzer runs on
 * every OPS frame from any agent. Any bytes must be rejected or decoded,
 * never crash or read past the input; what decodes must encode back to
 * bytes that decode to the same record (compared through its JSON line),
 * and its JSON line must decode too (both forms accept the same records). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pulse/analyzer_wire.h"
#include "pulse/op_record.h"

static struct pulse_op_record a, b;
static uint8_t out[PULSE_OP_BIN_MAX];

static void check_one(const uint8_t *p, size_t n)
{
	char err[256];
	if (pulse_op_record_from_bin(p, n, &a, err, sizeof err))
		return;
	size_t m = pulse_op_record_to_bin(&a, out, sizeof out);
	if (!m || pulse_op_record_from_bin(out, m, &b, err, sizeof err))
		abort(); /* the encoder wrote what the decoder rejects */
	char *ja = pulse_op_record_to_json(&a), *jb = pulse_op_record_to_json(&b);
	if (!ja || !jb || strcmp(ja, jb))
		abort();
	if (pulse_op_record_from_json(ja, strlen(ja), &b, err, sizeof err))
		abort(); /* accepted in binary, refused in JSON */
	free(ja);
	free(jb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_one(data, size);
	/* the same bytes as an OPS payload */
	size_t pos = 0, rl;
	const uint8_t *r;
	int rc, guard = 0;
	while ((rc = pulse_aw_ops_next(data, size, &pos, &r, &rl, NULL, 0)) == 1) {
		if (r < data || r + rl > data + size || ++guard > 100000)
			abort();
		check_one(r, rl);
	}
	return 0;
}
