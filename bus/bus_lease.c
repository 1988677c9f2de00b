/* Job ownership on the bus (include/pulse/bus.h): a lease per job in the
 * JetStream KV bucket PULSE_LEASES, whose entries expire ttl after their
 * last write. Taking it is a create (only if no one holds it), renewing an
 * update against the revision we hold (only if no one took it since), so
 * two analyzers can never both believe they own a job for longer than the
 * renew period; the revision, growing with every renewal, is the fencing
 * token a sink compares. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus_int.h"

static int open_bucket(struct pulse_bus *b, uint32_t ttl_ms)
{
	if (b->kv)
		return 0;
	kvConfig kc;
	kvConfig_Init(&kc);
	kc.Bucket = "PULSE_LEASES";
	kc.History = 1;
	kc.TTL = (int64_t)ttl_ms * 1000000LL; /* ns, as streams' MaxAge */
	kc.StorageType = js_FileStorage;
	kc.Replicas = b->cfg.replicas;
	natsStatus s = js_CreateKeyValue(&b->kv, b->js, &kc);
	if (s != NATS_OK) /* made by another analyzer already: bind to it */
		s = js_KeyValue(&b->kv, b->js, kc.Bucket);
	if (s != NATS_OK) {
		if (b->nlog++ < 20 || b->nlog % 1000 == 0)
			bus_log(b, "warn", "lease bucket PULSE_LEASES: %s", natsStatus_GetText(s));
		b->kv = NULL;
		return -1;
	}
	return 0;
}

int pulse_bus_lease(struct pulse_bus *b, const char *owner, uint32_t ttl_ms, uint64_t *rev, char *who,
		    size_t wholen)
{
	pthread_mutex_lock(&b->mu);
	int rc = -1;
	if (who && wholen)
		who[0] = 0;
	if (natsConnection_Status(b->nc) != NATS_CONN_STATUS_CONNECTED || open_bucket(b, ttl_ms))
		goto out;
	uint64_t r = 0;
	natsStatus s;
	if (b->lease_rev) {
		s = kvStore_UpdateString(&r, b->kv, b->job_tok, owner, b->lease_rev);
		if (s == NATS_OK) {
			b->lease_rev = r;
			rc = 1;
			goto out;
		}
		bus_log(b, "warn", "lease of job %s lost (revision %" PRIu64 ": %s)", b->cfg.job, b->lease_rev,
			natsStatus_GetText(s));
		b->lease_rev = 0;
	}
	s = kvStore_CreateString(&r, b->kv, b->job_tok, owner);
	if (s == NATS_OK) {
		b->lease_rev = r;
		bus_log(b, "info", "lease of job %s taken by %s (revision %" PRIu64 ")", b->cfg.job, owner, r);
		rc = 1;
		goto out;
	}
	kvEntry *e = NULL;
	if (kvStore_Get(&e, b->kv, b->job_tok) == NATS_OK) {
		const char *holder = kvEntry_ValueString(e);
		if (holder && !strcmp(holder, owner)) {
			/* still ours: a renewal whose reply was lost (a stream
			 * electing its leader answers "No responders", or times
			 * out, after the write) left our own entry, at a revision
			 * we did not see. A taker writes its own name, and only
			 * after ours expired (create), so this one is ours to renew
			 * (bus_cluster.sh: job B's analyzer stopped, "lost to"
			 * itself, and its diagnoses with it). */
			b->lease_rev = kvEntry_Revision(e);
			bus_log(b, "info", "lease of job %s still held by %s (revision %" PRIu64 ")", b->cfg.job,
				owner, b->lease_rev);
			rc = 1;
		} else {
			if (who)
				snprintf(who, wholen, "%s", holder ? holder : "");
			rc = 0;
		}
		kvEntry_Destroy(e);
	}
out:
	if (rev)
		*rev = b->lease_rev;
	pthread_mutex_unlock(&b->mu);
	return rc;
}

void pulse_bus_lease_release(struct pulse_bus *b)
{
	pthread_mutex_lock(&b->mu);
	if (b->kv && b->lease_rev && natsConnection_Status(b->nc) == NATS_CONN_STATUS_CONNECTED)
		kvStore_Delete(b->kv, b->job_tok); /* the next owner need not wait for the expiry */
	b->lease_rev = 0;
	pthread_mutex_unlock(&b->mu);
}
