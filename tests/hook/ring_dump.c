/* ring_dump PID: drains the interception ring /dev/shm/pulse-hook.PID
 * (include/pulse/hook_ring.h) and prints one JSON object per record, then
 * a "stats" line. For looking at what a real process wrote (the GPU smoke
 * test, tests/hook/gpu/torch_nccl_smoke.py) without an agent. It attaches
 * as the ring's reader; with --unlink it removes the ring afterwards. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pulse/hook_ring.h"

static void str(const char *key, const char *s, size_t n)
{
	printf(",\"%s\":\"", key);
	for (size_t i = 0; i < n && s[i]; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20 || c > 0x7e)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void gpu(const struct pulse_hook_gpu *g)
{
	printf(",\"cuda_dev\":%d", g->cuda_dev);
	str("pci_bus_id", g->pci_bus_id, sizeof g->pci_bus_id);
}

static void dump(const struct pulse_hook_record *r)
{
	static const char *const kinds[] = { "?", "comm_init", "comm_destroy", "op", "group_start", "group_end",
					     "qp_create", "qp_rtr", "qp_destroy", "net_qp", "comm_event" };
	_Static_assert(sizeof kinds / sizeof kinds[0] == PULSE_HOOK_KIND_MAX + 1, "a name per kind");
	printf("{\"kind\":\"%s\",\"kind_n\":%u,\"source\":\"%s\",\"flags\":%u,\"pid\":%u,\"tid\":%u,\"t_ns\":%" PRIu64,
	       r->kind <= PULSE_HOOK_KIND_MAX ? kinds[r->kind] : "unknown", r->kind,
	       r->source == PULSE_HOOK_SRC_PROFILER ? "profiler" : r->source == PULSE_HOOK_SRC_HOOK ? "hook" : "?",
	       r->flags, r->pid, r->tid, r->time_ns);
	switch (r->kind) {
	case PULSE_HOOK_COMM_INIT:
	case PULSE_HOOK_COMM_DESTROY:
	case PULSE_HOOK_COMM_EVENT: {
		const struct pulse_hook_comm_body *b = &r->u.comm;
		printf(",\"comm_id\":\"0x%016" PRIx64 "\",\"parent_id\":\"0x%016" PRIx64 "\",\"nccl_hash\":\"0x%016" PRIx64
		       "\",\"rank\":%d,\"nranks\":%d,\"nnodes\":%u,\"how\":%u,\"result\":%d",
		       b->comm_id, b->parent_id, b->nccl_hash, b->rank, b->nranks, b->nnodes, b->how, b->result);
		gpu(&b->gpu);
		break;
	}
	case PULSE_HOOK_OP: {
		const struct pulse_hook_op_body *b = &r->u.op;
		printf(",\"comm_id\":\"0x%016" PRIx64 "\",\"seq\":%" PRIu64 ",\"type\":%u,\"count\":%" PRIu64
		       ",\"datatype\":%u,\"root_peer\":%d,\"group_id\":%" PRIu64 ",\"nccl_seq\":%" PRIu64
		       ",\"nchannels\":%u,\"result\":%d",
		       b->comm_id, b->seq, b->type, b->count, b->datatype, b->root_peer, b->group_id, b->nccl_seq,
		       b->nchannels, b->result);
		str("algo", b->algo, sizeof b->algo);
		str("proto", b->proto, sizeof b->proto);
		break;
	}
	case PULSE_HOOK_GROUP_START:
	case PULSE_HOOK_GROUP_END:
		printf(",\"group_id\":%" PRIu64 ",\"depth\":%u", r->u.group.group_id, r->u.group.depth);
		break;
	case PULSE_HOOK_QP_CREATE:
	case PULSE_HOOK_QP_RTR:
	case PULSE_HOOK_QP_DESTROY: {
		const struct pulse_hook_qp_body *b = &r->u.qp;
		str("dev", b->dev, sizeof b->dev);
		printf(",\"qpn\":%u,\"dest_qpn\":%u,\"port\":%u,\"result\":%d", b->qpn, b->dest_qpn, b->port, b->result);
		gpu(&b->gpu);
		break;
	}
	case PULSE_HOOK_NET_QP: {
		const struct pulse_hook_net_qp_body *b = &r->u.net;
		printf(",\"comm_id\":\"0x%016" PRIx64 "\",\"nccl_hash\":\"0x%016" PRIx64 "\",\"seq\":%" PRId64
		       ",\"nccl_seq\":%" PRId64 ",\"qpn\":%u,\"nccl_dev\":%d,\"channel\":%u,\"is_send\":%u,\"peer\":%d"
		       ",\"rank\":%d,\"op_type\":%u,\"wrs\":%u,\"bytes\":%" PRIu64 ",\"opcodes\":%u,\"net_flags\":%u"
		       ",\"end_ns\":%" PRIu64 ",\"unknown_total\":%u,\"pool_drops_total\":%u",
		       b->comm_id, b->nccl_hash, (int64_t)b->seq, (int64_t)b->nccl_seq, b->qpn, b->nccl_dev, b->channel,
		       b->is_send, b->peer, b->rank, b->op_type, b->wrs, b->bytes, b->opcodes, b->net_flags, b->last_ns,
		       b->unknown_total, b->pool_drops_total);
		break;
	}
	default: break;
	}
	puts("}");
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3 || (argc == 3 && strcmp(argv[2], "--unlink"))) {
		fprintf(stderr, "usage: ring_dump PID [--unlink]\n");
		return 2;
	}
	char *end;
	long pid = strtol(argv[1], &end, 10);
	if (*end || pid <= 0) {
		fprintf(stderr, "ring_dump: bad pid %s\n", argv[1]);
		return 2;
	}
	struct pulse_hook_ring *r;
	int rc = pulse_hook_ring_open((pid_t)pid, &r);
	if (rc != 0) {
		fprintf(stderr, "ring_dump: /dev/shm/" PULSE_HOOK_RING_PREFIX "%ld: %s\n", pid, strerror(-rc));
		return 1;
	}
	static struct pulse_hook_record buf[4096];
	size_t n, total = 0;
	while ((n = pulse_hook_ring_drain(r, buf, 4096)) > 0) {
		for (size_t i = 0; i < n; i++)
			dump(&buf[i]);
		total += n;
	}
	struct pulse_hook_ring_stats st;
	pulse_hook_ring_stats(r, &st);
	printf("{\"kind\":\"stats\",\"records\":%zu,\"dropped_full\":%" PRIu64 ",\"dropped_no_reader\":%" PRIu64
	       ",\"hook_loaded\":%u}\n",
	       total, st.dropped_full, st.dropped_no_reader, st.hook_loaded);
	pulse_hook_ring_close(r, argc == 3);
	return 0;
}
