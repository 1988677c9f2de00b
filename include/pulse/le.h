/* Little-endian field access for wire and file formats.
 *
 * The NIC (RISC-V DPA) and the host (x86) are different machines, so every
 * byte that crosses between them goes through these helpers rather than
 * through struct casts: explicit sizes, explicit byte order, no padding or
 * alignment assumptions. Freestanding: usable in firmware. */
#ifndef PULSE_LE_H
#define PULSE_LE_H

#include <stdint.h>

static inline void pulse_put_u8(uint8_t *p, uint8_t v) { p[0] = v; }

static inline void pulse_put_u16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void pulse_put_u32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static inline void pulse_put_u64(uint8_t *p, uint64_t v)
{
	pulse_put_u32(p, (uint32_t)v);
	pulse_put_u32(p + 4, (uint32_t)(v >> 32));
}

static inline uint8_t pulse_get_u8(const uint8_t *p) { return p[0]; }

static inline uint16_t pulse_get_u16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (uint16_t)p[1] << 8);
}

static inline uint32_t pulse_get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline uint64_t pulse_get_u64(const uint8_t *p)
{
	return (uint64_t)pulse_get_u32(p) | (uint64_t)pulse_get_u32(p + 4) << 32;
}

#endif
