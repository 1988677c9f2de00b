/* Deterministic random numbers shared by the simulator (sim/cluster) and
 * the scenario generator (tools/gen_random.c): splitmix64 to seed,
 * xoshiro256** to draw. Integer arithmetic only, so a seed gives the same
 * numbers on every machine. */
#ifndef PULSE_RNG_H
#define PULSE_RNG_H

#include <stdint.h>

struct pulse_rng {
	uint64_t s[4];
};

static inline uint64_t pulse_splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline uint64_t pulse_rng_next(struct pulse_rng *r)
{
	uint64_t *s = r->s;
	uint64_t x = s[1] * 5;
	uint64_t res = ((x << 7) | (x >> 57)) * 9;
	uint64_t t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = (s[3] << 45) | (s[3] >> 19);
	return res;
}

#endif
