/* One NIC TX event, as the DOCA PCC library hands it to the DPA handler.
 *
 * The content mirrors a DOCA_PCC_DEV_EVNT_ROCE_TX event: the sending QP, the
 * bytes (in 32-byte units) and packets sent since that flow's previous event,
 * and a 32-bit nanosecond timestamp that wraps every ~4.29 s. The NIC
 * coalesces, so one event may cover many packets, and the 16-bit byte counter
 * clips at 0xFFFF units (2 MiB). */
#ifndef PULSE_TX_EVENT_H
#define PULSE_TX_EVENT_H

#include <stdint.h>

#define PULSE_QPN_BITS 24
#define PULSE_QPN_COUNT (1u << PULSE_QPN_BITS)
#define PULSE_QPN_MASK (PULSE_QPN_COUNT - 1u)
/* QPN 0 is the SMI QP and 0xFFFFFF the multicast QPN: never a sending RC QP. */
#define PULSE_QPN_RESERVED_LOW 0u
#define PULSE_QPN_RESERVED_HIGH 0xFFFFFFu

#define PULSE_UNIT_BYTES 32u
#define PULSE_SENT_UNITS_CLIPPED 0xFFFFu

struct pulse_tx_event {
	uint32_t qpn;       /* 24-bit QPN of the sending QP (upper bits must be 0) */
	uint16_t sent_32b;  /* bytes sent since the flow's previous event, /32 */
	uint16_t sent_pkts; /* packets sent since the flow's previous event */
	uint32_t ts_ns;     /* NIC time of the event, ns, wraps at 2^32 */
};

#endif
