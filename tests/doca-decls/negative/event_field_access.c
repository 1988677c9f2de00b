/* MUST NOT COMPILE: events are opaque; the DOCA docs require the getters.
 * Proves glue code cannot reach into the event layout unnoticed. */
#include <doca_pcc_dev.h>
#include <doca_pcc_dev_event.h>
uint32_t f(doca_pcc_dev_event_t *ev)
{
	return ev->timestamp;
}
