/* pulse-host-agent: dumps the retention ring in the formats of
 * `run_trace --out` (sim/README.md, "--out DIR"): DIR/epochs.csv and
 * DIR/epochs.json, schema pulse.epochs.v1, so one reader serves both.
 *
 * run_trace's writer (sim/report.c) builds its JSON with cJSON from its
 * capture tables (NIC addresses, synthetic QPNs); the agent has neither, and
 * a dump of 30 s x 2000 flows should stream rather than build a tree, so this
 * writes the same columns and keys directly. What differs, by necessity:
 *   nic        the agent's NIC name ("sim:/path" or "mlx5_0"), not an address
 *   synthetic  always 0 (a NIC reports real QPNs)
 *   t_ns       host CLOCK_REALTIME of the epoch start via clock sync
 *   "source": "pulse-host-agent", "capture": null
 * and each window has extra keys: host_start_ns, host_end_ns, clock_err_ns,
 * gap (the gap flags that explain data missing before or inside it).
 * Files are written under temporary names and renamed, so a reader never
 * sees half a dump. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "pulse/json_put.h"
#include "agent.h"

static const char *platform_name(uint32_t p)
{
	switch (p) {
	case PULSE_PLATFORM_X86_SIM: return "x86-sim";
	case PULSE_PLATFORM_RV64_EMU: return "rv64-emu";
	case PULSE_PLATFORM_DOCA_DPA: return "doca-dpa";
	default: return "unknown";
	}
}

static void csv_field(FILE *f, const char *s)
{
	if (!strpbrk(s, ",\"\n")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

long agent_dump(const struct agent *a, const char *dir, char *err, size_t errlen)
{
	if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
		snprintf(err, errlen, "dump %s: cannot create the directory: %s", dir, strerror(errno));
		return -1;
	}
	char csv_tmp[4200], json_tmp[4200], csv_p[4200], json_p[4200];
	snprintf(csv_p, sizeof csv_p, "%s/epochs.csv", dir);
	snprintf(json_p, sizeof json_p, "%s/epochs.json", dir);
	snprintf(csv_tmp, sizeof csv_tmp, "%s/.epochs.csv.tmp", dir);
	snprintf(json_tmp, sizeof json_tmp, "%s/.epochs.json.tmp", dir);
	FILE *c = fopen(csv_tmp, "w");
	FILE *j = c ? fopen(json_tmp, "w") : NULL;
	if (!c || !j) {
		snprintf(err, errlen, "dump %s: cannot write: %s", dir, strerror(errno));
		if (c) {
			fclose(c);
			remove(csv_tmp);
		}
		return -1;
	}
	const struct retention *r = &a->ret;
	fprintf(c, "nic,qpn,synthetic,window_seq,epoch,epoch_ns,t_ns,nic_ns,bytes\n");
	fprintf(j, "{\n  \"schema\": \"pulse.epochs.v1\",\n  \"source\": \"pulse-host-agent\",\n"
		   "  \"capture\": null,\n  \"epoch_ns\": %u,\n  \"nics\": [",
		a->opt.epoch_ns);
	long windows = 0;
	for (int k = 0; k < a->nnics; k++) {
		const struct agent_nic *n = &a->nics[k];
		fprintf(j, "%s\n    {\"nic\": ", k ? "," : "");
		pulse_json_put_str(j, n->name);
		fprintf(j, ", \"platform\": \"%s\", \"windows\": [", platform_name(n->hello.platform));
		int first = 1;
		for (uint32_t i = 0; i < r->count; i++) {
			const struct ret_window *w = retention_get(r, i);
			if (w->nic != k)
				continue;
			windows++;
			fprintf(j,
				"%s\n      {\"window_seq\": %u, \"nic_start_ns\": %" PRIu64
				", \"nic_end_ns\": %" PRIu64 ", \"host_send_ns\": %" PRIu64
				", \"host_recv_ns\": %" PRIu64 ", \"t_start_ns\": %" PRIu64
				", \"epoch_ns\": %u, \"complete\": %s, \"pages_missing\": %u"
				", \"flows_aged\": %u, \"poll_flags\": %u, \"host_start_ns\": %" PRIu64
				", \"host_end_ns\": %" PRIu64 ", \"clock_err_ns\": %" PRIu64
				", \"gap\": %u, \"flows\": [",
				first ? "" : ",", w->window_seq, w->nic_start_ns, w->nic_end_ns,
				w->host_send_ns, w->host_recv_ns, w->host_start_ns, w->epoch_ns,
				w->complete ? "true" : "false", w->pages_missing, w->flows_aged,
				w->poll_flags, w->host_start_ns, w->host_end_ns, w->clock_err_ns, w->gap);
			first = 0;
			for (uint32_t q = 0; q < w->nflows; q++) {
				const struct ret_flow *f = &w->flows[q];
				fprintf(j, "%s\n        {\"qpn\": %u, \"synthetic\": false, \"total_bytes\": %" PRIu64
					   ", \"epochs\": [",
					q ? "," : "", f->qpn, f->total_bytes);
				for (uint32_t e = 0; e < f->count; e++)
					fprintf(j, "%s%u", e ? ", " : "", f->epoch[e]);
				fputs("], \"bytes\": [", j);
				for (uint32_t e = 0; e < f->count; e++) {
					fprintf(j, "%s%" PRIu64, e ? ", " : "", f->bytes[e]);
					uint64_t off = (uint64_t)f->epoch[e] * w->epoch_ns;
					csv_field(c, n->name);
					fprintf(c, ",%u,0,%u,%u,%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n", f->qpn,
						w->window_seq, f->epoch[e], w->epoch_ns, w->host_start_ns + off,
						w->nic_start_ns + off, f->bytes[e]);
				}
				fputs("]}", j);
			}
			fputs(w->nflows ? "\n      ]}" : "]}", j);
		}
		fputs(first ? "]}" : "\n    ]}", j);
	}
	fputs("\n  ]\n}\n", j);
	int bad = ferror(c) || ferror(j);
	bad |= fclose(c) != 0;
	bad |= fclose(j) != 0;
	if (bad || rename(csv_tmp, csv_p) || rename(json_tmp, json_p)) {
		snprintf(err, errlen, "dump %s: write failed: %s", dir, strerror(errno));
		remove(csv_tmp);
		remove(json_tmp);
		return -1;
	}
	return windows;
}
