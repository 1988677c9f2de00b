/* Poll windows: closing one while events keep arriving, aging idle flows,
 * and uploading the closed window in pages.
 *
 * Each flow has two sides; window w writes side w&1. A poll opens the next
 * window by bumping the generation, waits until no event thread is still
 * inside the old generation, and from then on the old side is the mailbox
 * thread's alone: it is read for the upload and cleared at the next poll,
 * just before the side is used again. Events that arrive during the upload
 * go to the new side, so nothing is lost while the host drains pages. */
#include "fw_internal.h"
#include "pulse/le.h"

bool fw_quiesce(struct pulse_fw *fw, fw_tag_t tag)
{
	for (uint32_t i = 0; i < fw->lim.max_threads; i++) {
		_Atomic fw_tag_t *w = fw_thread_tag(fw, i);
		uint32_t spins = 0;
		fw_tag_t v = atomic_load_explicit(w, memory_order_acquire);
		/* Done when the thread holds the new tag: the mailbox put it there,
		 * or the thread took it from want_tag itself. Either way its events
		 * in the old window happen before this (release/acquire), and its
		 * next event reads the new tag. */
		while (v != tag) {
			if (!FW_TAG_IS_BUSY(v)) {
				/* idle in an older window: move it (fails if it just
				 * started an event, then v is the busy mark) */
				if (atomic_compare_exchange_weak_explicit(w, &v, tag,
									  memory_order_acq_rel,
									  memory_order_acquire))
					break;
			} else {
				if (fw->lim.spin_relax)
					fw->lim.spin_relax();
				v = atomic_load_explicit(w, memory_order_acquire);
			}
			if (++spins > FW_QUIESCE_SPINS)
				return false;
		}
	}
	return true;
}

uint32_t fw_page_payload(const struct pulse_fw *fw)
{
	return fw->cfg.page_bytes - PULSE_MB_HEADER_SIZE - PULSE_MB_PAGE_HEADER_SIZE;
}

/* Frees what the previous upload held: its side of every flow in it, and the
 * flows that were in it for the last time. */
static void upload_release(struct pulse_fw *fw)
{
	if (!fw->upload_open)
		return;
	for (uint32_t i = 0; i < fw->upload_len; i++) {
		uint32_t idx = fw->upload_list[i];
		struct fw_flow *f = &fw->flows[idx];
		if (atomic_load_explicit(&f->state, memory_order_relaxed) == FLOW_DEAD)
			fw_flow_free(fw, idx);
		else
			fw_side_clear(fw, &f->side[fw->upload_side]);
	}
	fw->upload_len = 0;
	fw->upload_open = false;
}

/* After quiescence: close every flow's open epoch, age idle flows, and list
 * the flows whose records go up. */
static void collect_window(struct pulse_fw *fw, uint32_t side, uint32_t *flows,
			   uint32_t *records, uint32_t *aged)
{
	fw->upload_len = 0;
	*flows = *records = *aged = 0;
	for (uint32_t i = 0; i < fw->cfg.flow_limit; i++) {
		struct fw_flow *f = &fw->flows[i];
		uint32_t state = atomic_load_explicit(&f->state, memory_order_acquire);
		if (state == FLOW_FREE)
			continue;
		struct fw_side *s = &f->side[side];
		fw_side_flush(fw, fw->mb->ctr, s);
		fw_side_fold(fw, s);
		if (state == FLOW_RETIRING) {
			/* Unpublished a window ago: an event that had already
			 * looked it up may have written here once. Upload that,
			 * then free the slot with the upload. */
			atomic_store_explicit(&f->state, FLOW_DEAD, memory_order_relaxed);
			fw->upload_list[fw->upload_len++] = i;
		} else if (s->nrec == 0) {
			/* Silent for a whole window: unpublish now; the slot is
			 * freed after one more window, once no thread can hold it. */
			uint16_t mine = (uint16_t)(i + 1u);
			/* Its counters are folded and it has no records (a full
			 * pool can leave counts without records); clear it now,
			 * or STATS would count it again when the side comes back. */
			fw_side_clear(fw, s);
			/* fw_flow_publish stores the state before the table
			 * entry: a flow an event thread is publishing right now
			 * is ACTIVE, with nothing on this side, but its entry
			 * is not in the table yet. Then the swap fails and the
			 * flow stays ACTIVE: retiring it would let its entry
			 * land after the unpublish, and the slot would be freed
			 * while the table still names it. */
			if (!atomic_compare_exchange_strong_explicit(&fw->qpn_table[f->qpn], &mine, 0,
								     memory_order_relaxed,
								     memory_order_relaxed))
				continue;
			atomic_store_explicit(&f->state, FLOW_RETIRING, memory_order_relaxed);
			fw->flows_unpublished++;
			(*aged)++;
			continue;
		} else {
			fw->upload_list[fw->upload_len++] = i;
		}
		if (s->nrec) {
			(*flows)++;
			*records += s->nrec;
		}
	}
}

/* The page layout: greedy, flow after flow, splitting a flow across pages
 * with a continuation chunk. Counting and serialising share this rule. */
static uint32_t chunk_fit(uint32_t space, uint32_t left)
{
	if (space < PULSE_MB_CHUNK_HEADER_SIZE + 4u)
		return 0;
	uint32_t fit = (space - PULSE_MB_CHUNK_HEADER_SIZE) >> 2;
	return fit < left ? fit : left;
}

static void upload_layout(struct pulse_fw *fw, uint32_t *pages, uint32_t *bytes)
{
	uint32_t payload = fw_page_payload(fw);
	uint32_t space = payload, n = 1, total = PULSE_MB_PAGE_HEADER_SIZE;
	for (uint32_t i = 0; i < fw->upload_len; i++) {
		uint32_t left = fw->flows[fw->upload_list[i]].side[fw->upload_side].nrec;
		while (left) {
			uint32_t k = chunk_fit(space, left);
			if (k == 0) {
				n++;
				space = payload;
				total += PULSE_MB_PAGE_HEADER_SIZE;
				continue;
			}
			left -= k;
			space -= PULSE_MB_CHUNK_HEADER_SIZE + 4u * k;
			total += PULSE_MB_CHUNK_HEADER_SIZE + 4u * k;
		}
	}
	*pages = n;
	*bytes = total;
}

static void cursor_start(struct pulse_fw *fw, struct fw_cursor *c)
{
	c->list_idx = 0;
	c->rec_idx = 0;
	c->epoch = 0;
	c->page_seq = 0;
	c->block = fw->upload_len ? fw->flows[fw->upload_list[0]].side[fw->upload_side].head : FW_NONE;
}

static void cursor_next_flow(struct pulse_fw *fw, struct fw_cursor *c)
{
	c->list_idx++;
	c->rec_idx = 0;
	c->epoch = 0;
	c->block = c->list_idx < fw->upload_len
			   ? fw->flows[fw->upload_list[c->list_idx]].side[fw->upload_side].head
			   : FW_NONE;
}

/* Writes the page at cursor c into out (the response body) and advances c. */
static uint32_t page_write(struct pulse_fw *fw, struct fw_cursor *c, uint8_t *out)
{
	uint32_t space = fw_page_payload(fw);
	uint8_t *p = out + PULSE_MB_PAGE_HEADER_SIZE;
	uint16_t chunks = 0;
	while (c->list_idx < fw->upload_len) {
		struct fw_flow *f = &fw->flows[fw->upload_list[c->list_idx]];
		struct fw_side *s = &f->side[fw->upload_side];
		uint32_t left = s->nrec - c->rec_idx;
		if (left == 0) {
			cursor_next_flow(fw, c);
			continue;
		}
		uint32_t k = chunk_fit(space, left);
		if (k == 0)
			break;
		pulse_put_u32(p, (f->qpn & PULSE_QPN_MASK) |
					 (c->rec_idx ? (uint32_t)PULSE_MB_CHUNKF_CONT << 24 : 0u));
		pulse_put_u32(p + 4, c->epoch);
		pulse_put_u16(p + 8, (uint16_t)k);
		pulse_put_u16(p + 10, 0);
		p += PULSE_MB_CHUNK_HEADER_SIZE;
		for (uint32_t j = 0; j < k; j++) {
			uint32_t off = (c->rec_idx + j) % PULSE_FW_RECORDS_PER_BLOCK;
			if (off == 0 && (c->rec_idx + j) != 0)
				c->block = atomic_load_explicit(fw_block_link(fw, c->block),
								memory_order_relaxed);
			uint32_t rec = fw_block_recs(fw, c->block)[off];
			c->epoch += (rec & 0xFFu) == PULSE_MB_REC_SKIP ? rec >> 8 : (rec & 0xFFu);
			pulse_put_u32(p, rec);
			p += 4;
		}
		c->rec_idx += k;
		space -= PULSE_MB_CHUNK_HEADER_SIZE + 4u * k;
		chunks++;
	}
	uint16_t page_count = fw->upload.page_count;
	pulse_put_u32(out, fw->upload.window_seq);
	pulse_put_u16(out + 4, (uint16_t)c->page_seq);
	pulse_put_u16(out + 6, page_count);
	pulse_put_u16(out + 8, chunks);
	pulse_put_u16(out + 10, c->page_seq + 1u == page_count ? PULSE_MB_PAGEF_LAST : 0u);
	c->page_seq++;
	return (uint32_t)(p - out);
}

enum pulse_mb_status fw_poll(struct pulse_fw *fw, const struct pulse_mb_poll_req *req,
			     struct pulse_mb_poll_resp *resp)
{
	_Atomic uint64_t *ctr = fw->mb->ctr;
	uint32_t g = atomic_load_explicit(&fw->gen, memory_order_relaxed);
	if (g & FW_GEN_CLOSED)
		return PULSE_MB_E_TIMEOUT; /* a reset is still waiting for threads */
	if (!fw->quiesce_pending) {
		if (fw->upload_open && !fw->upload_done) {
			if (!(req->flags & PULSE_MB_POLL_FORCE)) {
				fw_ctr_add(&ctr[PULSE_STAT_POLLS_BUSY], 1);
				return PULSE_MB_E_BUSY;
			}
			fw_ctr_add(&ctr[PULSE_STAT_UPLOADS_ABANDONED], 1);
			fw->upload_flags = PULSE_MB_POLLF_ABANDONED;
		} else {
			fw->upload_flags = 0;
		}
		upload_release(fw);
		g += FW_GEN_STEP;
		fw->upload_side = FW_GEN_SIDE(g) ^ 1u;
		fw->upload.window_start_ns = fw->win_start_ext;
		fw->upload.nic_ns = fw->now_ext;
		fw->win_start_ext = fw->now_ext;
		fw->win_start_lo[FW_GEN_SIDE(g)] = (uint32_t)fw->now_ext;
		atomic_store_explicit(&fw->gen, g, memory_order_relaxed);
		/* Publishes the new window's start and its cleared side. */
		atomic_store_explicit(&fw->want_tag, FW_TAG_SIDE(FW_GEN_SIDE(g)), memory_order_release);
		fw->quiesce_pending = true;
	}
	if (!fw_quiesce(fw, FW_TAG_SIDE(FW_GEN_SIDE(g)))) {
		fw_ctr_add(&ctr[PULSE_STAT_QUIESCE_TIMEOUTS], 1);
		return PULSE_MB_E_TIMEOUT;
	}
	fw->quiesce_pending = false;
	uint16_t flags = fw->upload_flags;
	if (fw->restarted)
		flags |= PULSE_MB_POLLF_RESTARTED;
	fw->restarted = false;

	uint32_t flows, records, aged, pages, bytes;
	collect_window(fw, fw->upload_side, &flows, &records, &aged);
	fw_ctr_add(&ctr[PULSE_STAT_FLOWS_AGED], aged);
	fw_ctr_add(&ctr[PULSE_STAT_POLLS], 1);
	upload_layout(fw, &pages, &bytes);

	fw->window_seq++;
	resp->window_seq = fw->window_seq;
	resp->page_count = (uint16_t)pages;
	resp->flags = flags;
	resp->host_ns = req->host_ns;
	resp->nic_ns = fw->upload.nic_ns;
	resp->window_start_ns = fw->upload.window_start_ns;
	resp->epoch_ns = fw->cfg.epoch_ns;
	resp->flows = flows;
	resp->records = records;
	resp->upload_bytes = bytes;
	resp->flows_aged = aged;
	fw->upload = *resp;
	fw->upload_open = true;
	fw->upload_done = false;
	cursor_start(fw, &fw->cur);
	fw->prev = fw->cur;
	return PULSE_MB_OK;
}

enum pulse_mb_status fw_read_page(struct pulse_fw *fw, const struct pulse_mb_page_req *req,
				  uint8_t *out, uint32_t cap, uint32_t *len)
{
	if (!fw->upload_open)
		return PULSE_MB_E_NO_UPLOAD;
	if (req->window_seq != fw->upload.window_seq)
		return PULSE_MB_E_WINDOW;
	if (cap < fw->cfg.page_bytes - PULSE_MB_HEADER_SIZE)
		return PULSE_MB_E_NOSPACE;
	if (req->page_seq == fw->cur.page_seq && fw->cur.page_seq < fw->upload.page_count) {
		fw->prev = fw->cur;
		*len = page_write(fw, &fw->cur, out);
		fw_ctr_add(&fw->mb->ctr[PULSE_STAT_PAGES_SERVED], 1);
		if (fw->cur.page_seq == fw->upload.page_count)
			fw->upload_done = true;
		return PULSE_MB_OK;
	}
	if (fw->cur.page_seq > 0 && req->page_seq == fw->prev.page_seq) {
		/* The host lost our answer: rebuild the same page from its start. */
		struct fw_cursor again = fw->prev;
		*len = page_write(fw, &again, out);
		fw_ctr_add(&fw->mb->ctr[PULSE_STAT_PAGE_REPEATS], 1);
		return PULSE_MB_OK;
	}
	return PULSE_MB_E_RANGE;
}

enum pulse_mb_status fw_reset(struct pulse_fw *fw, const struct fw_config *new_cfg)
{
	uint32_t g = atomic_load_explicit(&fw->gen, memory_order_relaxed);
	if (!(g & FW_GEN_CLOSED)) {
		g = (g + FW_GEN_STEP) | FW_GEN_CLOSED;
		atomic_store_explicit(&fw->gen, g, memory_order_relaxed);
		atomic_store_explicit(&fw->want_tag, FW_TAG_CLOSED, memory_order_release);
	}
	if (!fw_quiesce(fw, FW_TAG_CLOSED)) {
		fw_ctr_add(&fw->mb->ctr[PULSE_STAT_QUIESCE_TIMEOUTS], 1);
		return PULSE_MB_E_TIMEOUT;
	}
	/* No event thread touches shared state while the gate is shut, so the
	 * configuration the event path reads can change here too. */
	if (new_cfg)
		fw->cfg = *new_cfg;
	fw_flows_reset(fw);
	fw_pool_reset(fw);
	for (uint32_t i = 0; i <= fw->lim.max_threads; i++)
		for (uint32_t k = 0; k < PULSE_STAT_COUNT; k++)
			atomic_store_explicit(&fw->threads[i].ctr[k], 0, memory_order_relaxed);
	atomic_store_explicit(&fw->drops_bad_thread, 0, memory_order_relaxed);
	fw->upload_open = false;
	fw->upload_done = false;
	fw->upload_len = 0;
	fw->quiesce_pending = false;
	fw->restarted = true;
	fw->win_start_ext = fw->now_ext;
	g = (g + FW_GEN_STEP) & ~FW_GEN_CLOSED;
	fw->win_start_lo[FW_GEN_SIDE(g)] = (uint32_t)fw->now_ext;
	atomic_store_explicit(&fw->gen, g, memory_order_relaxed);
	atomic_store_explicit(&fw->want_tag, FW_TAG_SIDE(FW_GEN_SIDE(g)), memory_order_release);
	/* Threads move on at their next slow event or here; one still busy
	 * (dropping as paused) takes want_tag itself when it leaves. */
	if (!fw_quiesce(fw, FW_TAG_SIDE(FW_GEN_SIDE(g))))
		fw_ctr_add(&fw->mb->ctr[PULSE_STAT_QUIESCE_TIMEOUTS], 1);
	return PULSE_MB_OK;
}
