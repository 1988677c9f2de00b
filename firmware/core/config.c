/* Configuration: defaults, validation, and the epoch reciprocal that lets
 * the event path turn nanoseconds into an epoch index without dividing. */
#include "fw_internal.h"

/* Pages needed in the worst case (every pool record uploaded): each page
 * holds at least payload-15 bytes of chunks, and a flow adds one chunk
 * header per page it spans. */
static uint64_t worst_pages(uint32_t page_bytes, uint32_t pool, uint32_t flows)
{
	uint64_t payload = page_bytes - PULSE_MB_HEADER_SIZE - PULSE_MB_PAGE_HEADER_SIZE;
	uint64_t recs = (uint64_t)pool * PULSE_FW_RECORDS_PER_BLOCK;
	return (payload - 15u + 4u * recs + 12u * (uint64_t)flows) / (payload - 27u) + 1u;
}

static void set_reciprocal(struct fw_config *c)
{
	/* Granlund-Montgomery: with l = ceil(log2 d), m = ceil(2^(31+l) / d),
	 * floor(n*m / 2^(31+l)) == floor(n/d) for every n < 2^31, and n*m fits
	 * in 64 bits. The division runs here, once, not per event. */
	uint32_t d = c->epoch_ns, l = 0;
	while ((1ull << l) < d)
		l++;
	c->shift = 31u + l;
	c->recip = ((1ull << c->shift) + d - 1u) / d;
	/* A poll may come a little late; an event stamped more than a quarter
	 * window past the expected end is a bad timestamp, not traffic, and
	 * accepting it would also push the flow's later events out of place. */
	uint64_t span = (uint64_t)c->window_ns + c->window_ns / 4u;
	c->max_delta = span < 0x7FFFFFFFull ? (uint32_t)span : 0x7FFFFFFFu;
}

static bool config_fits(const struct pulse_fw *fw, const struct fw_config *c)
{
	return worst_pages(c->page_bytes, c->pool_limit, c->flow_limit) <= 0xFFFFu &&
	       c->flow_limit <= fw->lim.max_flows && c->pool_limit <= fw->lim.pool_blocks;
}

void fw_config_default(struct pulse_fw *fw)
{
	struct fw_config *c = &fw->cfg;
	c->epoch_ns = PULSE_EPOCH_NS_DEFAULT;
	c->window_ns = PULSE_WINDOW_NS_DEFAULT;
	c->clip_units_per_pkt = PULSE_CLIP_UNITS_PER_PKT_DEFAULT;
	c->flow_limit = fw->lim.max_flows;
	c->pool_limit = fw->lim.pool_blocks;
	c->page_bytes = PULSE_PAGE_BYTES_DEFAULT;
	/* A pool too big for 65535 default pages gets bigger pages. */
	while (c->page_bytes < 0xF000u && !config_fits(fw, c))
		c->page_bytes = (uint16_t)(c->page_bytes * 2u);
	set_reciprocal(c);
}

enum pulse_mb_status fw_config_apply(struct pulse_fw *fw, const struct pulse_mb_config *req,
				     uint32_t resp_cap)
{
	struct fw_config c = fw->cfg;
	if (req->epoch_ns < PULSE_EPOCH_NS_MIN || req->epoch_ns > PULSE_EPOCH_NS_MAX ||
	    req->window_ns < PULSE_WINDOW_NS_MIN || req->window_ns > PULSE_WINDOW_NS_MAX ||
	    req->page_bytes < PULSE_PAGE_BYTES_MIN || req->page_bytes > resp_cap ||
	    req->flow_limit > fw->lim.max_flows || req->pool_limit > fw->lim.pool_blocks)
		return PULSE_MB_E_RANGE;
	c.epoch_ns = req->epoch_ns;
	c.window_ns = req->window_ns;
	c.page_bytes = req->page_bytes;
	if (req->clip_units_per_pkt)
		c.clip_units_per_pkt = req->clip_units_per_pkt;
	c.flow_limit = req->flow_limit ? req->flow_limit : fw->lim.max_flows;
	c.pool_limit = req->pool_limit ? req->pool_limit : fw->lim.pool_blocks;
	if (!config_fits(fw, &c))
		return PULSE_MB_E_RANGE;
	set_reciprocal(&c);
	return fw_reset(fw, &c);
}

void fw_hello(const struct pulse_fw *fw, struct pulse_mb_hello *h)
{
	h->proto_min = PULSE_MB_VERSION;
	h->proto_max = PULSE_MB_VERSION;
	h->fw_version = PULSE_FW_VERSION;
	h->platform = fw->lim.platform;
	h->max_flows = fw->lim.max_flows;
	h->pool_blocks = fw->lim.pool_blocks;
	h->records_per_block = PULSE_FW_RECORDS_PER_BLOCK;
	h->max_threads = (uint16_t)fw->lim.max_threads;
	h->epoch_ns = fw->cfg.epoch_ns;
	h->window_ns = fw->cfg.window_ns;
	h->page_bytes = fw->cfg.page_bytes;
	h->clip_units_per_pkt = fw->cfg.clip_units_per_pkt;
	h->flow_limit = fw->cfg.flow_limit;
	h->instance_id = fw->lim.instance_id;
}

/* The NIC clock is 32-bit ns; any mailbox request extends it to 64 bits, so
 * the host must talk to the NIC at least every 4.19 s (it polls far more
 * often). A step back of up to FW_CLOCK_NOISE_NS is platform noise (a clock
 * recalibrated against event timestamps, say) and must not read as a 4.29 s
 * jump forward: the clock stands still instead. */
void fw_clock_tick(struct pulse_fw *fw, uint32_t now_ns)
{
	uint32_t step = now_ns - (uint32_t)fw->now_ext;
	if (step < 0u - FW_CLOCK_NOISE_NS)
		fw->now_ext += step;
}
