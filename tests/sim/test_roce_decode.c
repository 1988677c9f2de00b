/* Unit tests for the RoCEv2 decoder (sim/roce_decode.c), on packets built
 * byte by byte here (independently of the trace generator's encoder). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "pulse/roce.h"

/* ---- a tiny byte writer ---- */
struct pb {
	uint8_t b[9100];
	uint32_t n;
};
static void put8(struct pb *p, uint32_t v) { p->b[p->n++] = (uint8_t)v; }
static void put16(struct pb *p, uint32_t v) { put8(p, v >> 8); put8(p, v); }
static void put24(struct pb *p, uint32_t v) { put8(p, v >> 16); put16(p, v & 0xFFFF); }
static void put32(struct pb *p, uint32_t v) { put16(p, v >> 16); put16(p, v & 0xFFFF); }
static void putn(struct pb *p, uint32_t n, uint8_t v)
{
	memset(p->b + p->n, v, n);
	p->n += n;
}
static void set16(struct pb *p, uint32_t at, uint32_t v)
{
	p->b[at] = (uint8_t)(v >> 8);
	p->b[at + 1] = (uint8_t)v;
}

static void eth(struct pb *p, uint32_t ethertype)
{
	static const uint8_t dmac[6] = {0x02, 0, 0, 0, 0, 2}, smac[6] = {0x02, 0, 0, 0, 0, 1};
	memcpy(p->b + p->n, dmac, 6);
	memcpy(p->b + p->n + 6, smac, 6);
	p->n += 12;
	put16(p, ethertype);
}

/* IPv4 header with ihl_words*4 bytes; returns the offset of the total length field. */
static uint32_t ipv4(struct pb *p, uint32_t ihl_words, uint32_t proto, uint32_t frag)
{
	uint32_t start = p->n;
	put8(p, 0x40 | ihl_words);
	put8(p, 0x02); /* ECT(0) */
	put16(p, 0);   /* total length, patched */
	put16(p, 0x1234);
	put16(p, frag);
	put8(p, 64);
	put8(p, proto);
	put16(p, 0);
	put32(p, 0xAC1E0019); /* 172.30.0.25 */
	put32(p, 0xAC1E000B); /* 172.30.0.11 */
	for (uint32_t i = 5; i < ihl_words; i++)
		put32(p, 0x01010101); /* NOP options */
	return start + 2;
}

static uint32_t ipv6(struct pb *p, uint32_t next)
{
	put32(p, 0x60000000u | 0x0A << 20); /* tclass 0x0A */
	uint32_t at = p->n;
	put16(p, 0); /* payload length, patched */
	put8(p, next);
	put8(p, 64);
	put32(p, 0xfd000000);
	put32(p, 0);
	put32(p, 0);
	put32(p, 1);
	put32(p, 0xfd000000);
	put32(p, 0);
	put32(p, 0);
	put32(p, 2);
	return at;
}

static uint32_t udp(struct pb *p, uint32_t dport)
{
	put16(p, 49152);
	put16(p, dport);
	uint32_t at = p->n;
	put16(p, 0);
	put16(p, 0);
	return at;
}

static void bth(struct pb *p, uint32_t opcode, uint32_t pad, uint32_t dqpn, uint32_t psn,
		uint32_t ackreq)
{
	put8(p, opcode);
	put8(p, 0x80 | pad << 4); /* SE, pad, tver 0 */
	put16(p, 0xFFFF);
	put8(p, 0);
	put24(p, dqpn);
	put8(p, ackreq ? 0x80 : 0);
	put24(p, psn);
}

static void reth(struct pb *p, uint32_t va_hi, uint32_t va_lo, uint32_t rkey, uint32_t len)
{
	put32(p, va_hi);
	put32(p, va_lo);
	put32(p, rkey);
	put32(p, len);
}

/* Patches UDP and IP lengths once the packet is complete (ICRC included). */
static void finish_v4(struct pb *p, uint32_t iplen_at, uint32_t udplen_at)
{
	set16(p, iplen_at, p->n - (iplen_at - 2));
	set16(p, udplen_at, p->n - (udplen_at - 4));
}
static void finish_v6(struct pb *p, uint32_t plen_at, uint32_t udplen_at)
{
	set16(p, plen_at, p->n - (plen_at + 36));
	set16(p, udplen_at, p->n - (udplen_at - 4));
}

static enum pulse_roce_status dec(const struct pb *p, struct pulse_roce_pkt *k)
{
	memset(k, 0xA5, sizeof(*k));
	return pulse_roce_decode(p->b, p->n, p->n, PULSE_ROCE_LINK_ETHERNET, k);
}

/* A standard RC WRITE_FIRST over Ethernet/IPv4, payload bytes of data. */
static void build_write_first(struct pb *p, uint32_t payload, uint32_t pad)
{
	p->n = 0;
	eth(p, 0x0800);
	uint32_t il = ipv4(p, 5, 17, 0x4000 /* DF */);
	uint32_t ul = udp(p, 4791);
	bth(p, 0x06, pad, 0x00ABCD, 0x123456, 0);
	reth(p, 0x00007F00, 0xDEAD0000, 0x4FD5, 1u << 20);
	putn(p, payload + pad, 0x5A);
	put32(p, 0xC0FFEE00); /* ICRC */
	finish_v4(p, il, ul);
}

static void test_write_first_ipv4(void **state)
{
	(void)state;
	struct pb p;
	struct pulse_roce_pkt k;
	build_write_first(&p, 4096, 0);
	assert_int_equal(dec(&p, &k), PULSE_ROCE_OK);
	assert_int_equal(k.ip_version, 4);
	assert_int_equal(k.tclass, 0x02);
	char a[46];
	assert_string_equal(pulse_roce_addr_str(k.src, a), "172.30.0.25");
	assert_string_equal(pulse_roce_addr_str(k.dst, a), "172.30.0.11");
	assert_int_equal(k.udp_sport, 49152);
	assert_int_equal(k.opcode, 0x06);
	assert_int_equal(k.transport, PULSE_ROCE_RC);
	assert_int_equal(k.kind, PULSE_ROCE_K_WRITE);
	assert_int_equal(k.position, PULSE_ROCE_P_FIRST);
	assert_int_equal(k.solicited, 1);
	assert_int_equal(k.pkey, 0xFFFF);
	assert_int_equal(k.dqpn, 0x00ABCD);
	assert_int_equal(k.psn, 0x123456);
	assert_int_equal(k.ackreq, 0);
	assert_int_equal(k.headers, PULSE_ROCE_H_RETH);
	assert_int_equal(k.reth_va, 0x00007F00DEAD0000ull);
	assert_int_equal(k.reth_rkey, 0x4FD5);
	assert_int_equal(k.reth_dmalen, 1u << 20);
	assert_int_equal(k.payload_len, 4096);
	assert_int_equal(k.udp_len, 8 + 12 + 16 + 4096 + 4);
	assert_int_equal(k.ip_len, 20 + k.udp_len);
	assert_int_equal(k.wire_len, 14 + k.ip_len);
	assert_int_equal(k.vlan_count, 0);
	assert_string_equal(pulse_roce_opcode_name(k.opcode), "RDMA_WRITE_FIRST");
}

static void test_pad_excluded(void **state)
{
	(void)state;
	struct pb p;
	struct pulse_roce_pkt k;
	build_write_first(&p, 4093, 3);
	assert_int_equal(dec(&p, &k), PULSE_ROCE_OK);
	assert_int_equal(k.pad, 3);
	assert_int_equal(k.payload_len, 4093);
}

static void test_vlan_and_qinq(void **state)
{
	(void)state;
	struct pb p;
	struct pulse_roce_pkt k;
	/* one 802.1Q tag */
	p.n = 0;
	eth(&p, 0x8100);
	put16(&p, 0x6000 | 100); /* PCP 3, VID 100 */
	put16(&p, 0x0800);
	uint32_t il = ipv4(&p, 5, 17, 0);
	uint32_t ul = udp(&p, 4791);
	bth(&p, 0x0A, 0, 77, 1, 1);
	reth(&p, 0, 0, 1, 8);
	putn(&p, 8, 0);
	put32(&p, 0);
	finish_v4(&p, il, ul);
	assert_int_equal(dec(&p, &k), PULSE_ROCE_OK);
	assert_int_equal(k.vlan_count, 1);
	assert_int_equal(k.vlan_id[0], 100);
	assert_int_equal(k.wire_len, p.n);
	assert_int_equal(k.payload_len, 8);
	assert_int_equal(k.ackreq, 1);

	/* QinQ: 802.1ad outer, 802.1Q inner */
	p.n = 0;
	eth(&p, 0x88A8);
	put16(&p, 200);
	put16(&p, 0x8100);
	put16(&p, 300);
	put16(&p, 0x0800);
	il = ipv4(&p, 5, 17, 0);
	ul = udp(&p, 4791);
	bth(&p, 0x07, 0, 77, 2, 0);
	putn(&p, 1024, 0);
	put32(&p, 0);
	finish_v4(&p, il, ul);
	assert_int_equal(dec(&p, &k), PULSE_ROCE_OK);
	assert_int_equal(k.vlan_count, 2);
	assert_int_equal(k.vlan_id[0], 200);
	assert_int_equal(k.vlan_id[1], 300);
	assert_int_equal(k.payload_len, 1024);
	assert_int_equal(k.wire_len, p.n);

	/* three tags: refused */
	p.n = 0;
	eth(&p, 0x88A8);
	put16(&p, 1);
	put16(&p, 0x8100);
	put16(&p, 2);
	put16(&p, 0x8100);
	put16(&p, 3);
	put16(&p, 0x0800);
	putn(&p, 64, 0);
	assert_int_equal(dec(&p, &k), PULSE_ROCE_E_LINK);
}

static void test_ipv4_options(void **state)
{
	(void)state;
	struct pb p;
	struct pulse_roce_pkt k;
	p.n = 0;
	eth(&p, 0x0800);
	uint32_t il = ipv4(&p, 8, 17, 0); /* 12 bytes of options */
	uint32_t ul = udp(&p, 4791);
	bth(&p, 0x11, 0, 34, 99, 0);
	put8(&p, 0x1F); /* ACK, invalid credit count */
	put24(&p, 7);
	put32(&p, 0);
	finish_v4(&p, il, ul);
	assert_int_equal(dec(&p, &k), PULSE_ROCE_OK);
	assert_int_equal(k.kind, PULSE_ROCE_K_ACK);
	assert_int_equal(k.headers, PULSE_ROCE_H_AETH);
	assert_int_equal(k.aeth_syndrome, 0x1F);
	assert_int_equal(k.aeth_msn, 7);
	assert_int_equal(k.dqpn, 34);
	assert_int_equal(k.psn, 99);
	assert_int_equal(k.payload_len, 0);
	assert_int_equal(k.ip_len, 32 + 8 + 12 + 4 + 4);

	/* IHL below 5 */
	p.b[14] = 0x44;
	assert_int_equal(dec(&p, &k), PULSE_ROCE_E_IP);
}

static void test_ipv4_fragments(void **state)
{
	(void)state;
	struct pb p;
	struct pulse_roce_pkt k;
	uint32_t frags[] = {0x2000 /* MF */, 0x0010 /* offset */, 0x2000 | 5};
	for (unsigned i = 0; i < 3; i++) {
		p.n = 0;
		eth(&p, 0x0800);
		uint32_t il = ipv4(&p, 5, 17, frags[i]);
		uint32_t ul = udp(&p, 4791);
		bth(&p, 0x04, 0, 5, 5, 0);
		putn(&p, 100, 0);
		put32(&p, 0);
		finish_v4(&p, il, ul);
		assert_int_equal(dec(&p, &k), PULSE_ROCE_IP_FRAGMENT);
		assert_int_equal(pulse_roce_status_group(PULSE_ROCE_IP_FRAGMENT),
				 PULSE_ROCE_GROUP_SKIPPED);
	}
}

static void test_ipv6(void **state)
{
	(void)state;
	struct pb p;
	struct pulse_roce_pkt k;
	p.n = 0;
	eth(&p, 0x86DD);
	uint32_t pl = ipv6(&p, 17);
	uint32_t ul = udp(&p, 4791);
	bth(&p, 0x0D, 0, 0x123, 0x10, 0); /* READ_RESPONSE_FIRST */
	put8(&p, 0);
	put24(&p, 3);
	putn(&p, 4096, 1);
	put32(&p, 0);
	finish_v6(&p, pl, ul);
	assert_int_equal(dec(&p, &k), PULSE_ROCE_OK);
	assert_int_equal(k.ip_version, 6);
	assert_int_equal(k.tclass, 0xA0 >> 4 | 0); /* 0x0A */
	char a[46];
	assert_string_equal(pulse_roce_addr_str(k.src, a), "fd00::1");
	assert_string_equal(pulse_roce_addr_str(k.dst, a), "fd00::2");
	assert_int_equal(k.kind, PULSE_ROCE_K_READ_RESP);
	assert_int_equal(k.headers, PULSE_ROCE_H_AETH);
	assert_int_equal(k.payload_len, 4096);
	assert_int_equal(k.ip_len, 40 + 8 + 12 + 4 + 4096 + 4);
	assert_int_equal(k.wire_len, p.n);

	/* a destination-options header before UDP */
	p.n = 0;
	eth(&p, 0x86DD);
	pl = ipv6(&p, 60);
	put8(&p, 17);
	put8(&p, 0); /* 8 bytes */
	putn(&p, 6, 0);
	ul = udp(&p, 4791);
	bth(&p, 0x04, 0, 9, 9, 0);
	putn(&p, 64, 0);
	put32(&p, 0);
	finish_v6(&p, pl, ul);
	assert_int_equal(dec(&p, &k), PULSE_ROCE_OK);
	assert_int_equal(k.payload_len, 64);

	/* a fragment header */
	p.n = 0;
	eth(&p, 0x86DD);
	pl = ipv6(&p, 44);
	put8(&p, 17);
	put8(&p, 0);
	put16(&p, 1); /* more fragments */
	put32(&p, 42);
	ul = udp(&p, 4791);
	bth(&p, 0x04, 0, 9, 9, 0);
	putn(&p, 64, 0);
	put32(&p, 0);
	finish_v6(&p, pl, ul);
	assert_int_equal(dec(&p, &k), PULSE_ROCE_IP_FRAGMENT);

	/* address parse round trip */
	uint8_t g[16];
	assert_int_equal(pulse_roce_addr_parse("fd00::2", g), 0);
	assert_memory_equal(g, k.dst, 16);
	assert_int_equal(pulse_roce_addr_parse("10.0.0.1", g), 0);
	assert_string_equal(pulse_roce_addr_str(g, a), "10.0.0.1");
	assert_int_equal(pulse_roce_addr_parse("nonsense", g), -1);
}

static void test_not_roce(void **state)
{
	(void)state;
	struct pb p;
	struct pulse_roce_pkt k;
	/* ARP */
	p.n = 0;
	eth(&p, 0x0806);
	putn(&p, 28, 0);
	assert_int_equal(dec(&p, &k), PULSE_ROCE_NOT_IP);
	assert_int_equal(pulse_roce_status_group(PULSE_ROCE_NOT_IP), PULSE_ROCE_GROUP_NOT_ROCE);
	/* RoCE v1 */
	p.n = 0;
	eth(&p, 0x8915);
	putn(&p, 60, 0);
	assert_int_equal(dec(&p, &k), PULSE_ROCE_ROCEV1);
	/* TCP */
	p.n = 0;
	eth(&p, 0x0800);
	uint32_t il = ipv4(&p, 5, 6, 0);
	putn(&p, 20, 0);
	set16(&p, il, p.n - 14);
	assert_int_equal(dec(&p, &k), PULSE_ROCE_NOT_UDP);
	/* UDP to another port */
	p.n = 0;
	eth(&p, 0x0800);
	il = ipv4(&p, 5, 17, 0);
	uint32_t ul = udp(&p, 4792);
	putn(&p, 40, 0);
	finish_v4(&p, il, ul);
	assert_int_equal(dec(&p, &k), PULSE_ROCE_NOT_ROCE_PORT);
}

static void test_udp4791_not_roce(void **state)
{
	(void)state;
	struct pb p;
	struct pulse_roce_pkt k;
	/* 8 bytes of payload: too short for BTH + ICRC */
	p.n = 0;
	eth(&p, 0x0800);
	uint32_t il = ipv4(&p, 5, 17, 0);
	uint32_t ul = udp(&p, 4791);
	put32(&p, 0x68656c6c);
	put32(&p, 0x6f0a0000);
	finish_v4(&p, il, ul);
	assert_int_equal(dec(&p, &k), PULSE_ROCE_E_NOT_ROCE);
	assert_int_equal(pulse_roce_status_group(PULSE_ROCE_E_NOT_ROCE),
			 PULSE_ROCE_GROUP_MALFORMED);
	/* long enough, but transport version 1 */
	p.n = 0;
	eth(&p, 0x0800);
	il = ipv4(&p, 5, 17, 0);
	ul = udp(&p, 4791);
	bth(&p, 0x04, 0, 1, 1, 0);
	p.b[p.n - 11] |= 0x01;
	putn(&p, 16, 0);
	put32(&p, 0);
	finish_v4(&p, il, ul);
	assert_int_equal(dec(&p, &k), PULSE_ROCE_E_NOT_ROCE);
	/* not 4-byte aligned */
	p.n = 0;
	eth(&p, 0x0800);
	il = ipv4(&p, 5, 17, 0);
	ul = udp(&p, 4791);
	bth(&p, 0x04, 0, 1, 1, 0);
	putn(&p, 17, 0);
	put32(&p, 0);
	finish_v4(&p, il, ul);
	assert_int_equal(dec(&p, &k), PULSE_ROCE_E_NOT_ROCE);
}

static void test_reserved_opcodes(void **state)
{
	(void)state;
	struct pb p;
	struct pulse_roce_pkt k;
	const uint8_t reserved[] = {0x15, 0x18, 0x1B, 0x1E, 0x1F, 0x2C, 0x31, 0x40, 0x4A,
				    0x60, 0x63, 0x66, 0x80, 0x82, 0xB5, 0xC0, 0xFF};
	for (unsigned i = 0; i < sizeof(reserved); i++) {
		p.n = 0;
		eth(&p, 0x0800);
		uint32_t il = ipv4(&p, 5, 17, 0);
		uint32_t ul = udp(&p, 4791);
		bth(&p, reserved[i], 0, 1, 1, 0);
		putn(&p, 64, 0);
		put32(&p, 0);
		finish_v4(&p, il, ul);
		assert_int_equal(dec(&p, &k), PULSE_ROCE_E_OPCODE);
		assert_string_equal(pulse_roce_opcode_name(reserved[i]), "reserved");
	}
}

/* Every opcode byte: exactly the documented ones decode. */
static void test_opcode_table(void **state)
{
	(void)state;
	int valid[256] = {0};
	for (int o = 0x00; o <= 0x14; o++)
		valid[o] = valid[0xA0 + o] = 1;
	valid[0x16] = valid[0x17] = valid[0x1C] = valid[0x1D] = 1;
	valid[0xB6] = valid[0xB7] = valid[0xBC] = valid[0xBD] = 1;
	for (int o = 0x20; o <= 0x2B; o++)
		valid[o] = 1;
	valid[0x64] = valid[0x65] = valid[0x81] = 1;
	struct pb p;
	struct pulse_roce_pkt k;
	for (int o = 0; o < 256; o++) {
		p.n = 0;
		eth(&p, 0x0800);
		uint32_t il = ipv4(&p, 5, 17, 0);
		uint32_t ul = udp(&p, 4791);
		bth(&p, (uint32_t)o, 0, 1, 1, 0);
		putn(&p, 64, 0);
		put32(&p, 0);
		finish_v4(&p, il, ul);
		enum pulse_roce_status s = dec(&p, &k);
		if (valid[o]) {
			assert_int_equal(s, PULSE_ROCE_OK);
			assert_int_equal(k.transport, o >> 5);
		} else {
			assert_int_equal(s, PULSE_ROCE_E_OPCODE);
		}
	}
}

static void test_ud_deth_and_imm(void **state)
{
	(void)state;
	struct pb p;
	struct pulse_roce_pkt k;
	p.n = 0;
	eth(&p, 0x0800);
	uint32_t il = ipv4(&p, 5, 17, 0);
	uint32_t ul = udp(&p, 4791);
	bth(&p, 0x65, 0, 0x000101, 3, 0);
	put32(&p, 0x11111111); /* Q_Key */
	put8(&p, 0);
	put24(&p, 0x0000AB); /* source QP */
	put32(&p, 0xCAFEBABE); /* ImmDt */
	putn(&p, 256, 0);
	put32(&p, 0);
	finish_v4(&p, il, ul);
	assert_int_equal(dec(&p, &k), PULSE_ROCE_OK);
	assert_int_equal(k.transport, PULSE_ROCE_UD);
	assert_int_equal(k.headers, PULSE_ROCE_H_DETH | PULSE_ROCE_H_IMM);
	assert_int_equal(k.deth_qkey, 0x11111111);
	assert_int_equal(k.deth_sqpn, 0xAB);
	assert_int_equal(k.imm, 0xCAFEBABE);
	assert_int_equal(k.payload_len, 256);
}

static void test_cnp_and_xrc(void **state)
{
	(void)state;
	struct pb p;
	struct pulse_roce_pkt k;
	p.n = 0;
	eth(&p, 0x0800);
	uint32_t il = ipv4(&p, 5, 17, 0);
	uint32_t ul = udp(&p, 4791);
	bth(&p, 0x81, 0, 0x42, 0, 0);
	putn(&p, 16, 0);
	put32(&p, 0);
	finish_v4(&p, il, ul);
	assert_int_equal(dec(&p, &k), PULSE_ROCE_OK);
	assert_int_equal(k.kind, PULSE_ROCE_K_CNP);
	assert_int_equal(k.payload_len, 0);
	/* a CNP without its 16 reserved bytes */
	p.n = 0;
	eth(&p, 0x0800);
	il = ipv4(&p, 5, 17, 0);
	ul = udp(&p, 4791);
	bth(&p, 0x81, 0, 0x42, 0, 0);
	put32(&p, 0);
	finish_v4(&p, il, ul);
	assert_int_equal(dec(&p, &k), PULSE_ROCE_E_SHORT);

	/* XRC SEND_ONLY: XRCETH then payload */
	p.n = 0;
	eth(&p, 0x0800);
	il = ipv4(&p, 5, 17, 0);
	ul = udp(&p, 4791);
	bth(&p, 0xA4, 0, 0x42, 0, 0);
	put32(&p, 0x00000777);
	putn(&p, 100, 0);
	put32(&p, 0);
	finish_v4(&p, il, ul);
	assert_int_equal(dec(&p, &k), PULSE_ROCE_OK);
	assert_int_equal(k.transport, PULSE_ROCE_XRC);
	assert_int_equal(k.xrc_srqn, 0x777);
	assert_int_equal(k.payload_len, 100);
}

static void test_short_for_opcode(void **state)
{
	(void)state;
	struct pb p;
	struct pulse_roce_pkt k;
	/* WRITE_FIRST with 8 bytes where the 16-byte RETH should be */
	p.n = 0;
	eth(&p, 0x0800);
	uint32_t il = ipv4(&p, 5, 17, 0);
	uint32_t ul = udp(&p, 4791);
	bth(&p, 0x06, 0, 1, 1, 0);
	putn(&p, 8, 0);
	put32(&p, 0);
	finish_v4(&p, il, ul);
	assert_int_equal(dec(&p, &k), PULSE_ROCE_E_SHORT);
	/* pad larger than the payload */
	p.n = 0;
	eth(&p, 0x0800);
	il = ipv4(&p, 5, 17, 0);
	ul = udp(&p, 4791);
	bth(&p, 0x08, 3, 1, 1, 0);
	put32(&p, 0);
	finish_v4(&p, il, ul);
	assert_int_equal(dec(&p, &k), PULSE_ROCE_E_SHORT);
}

static void test_lengths_lie(void **state)
{
	(void)state;
	struct pb p;
	struct pulse_roce_pkt k;
	build_write_first(&p, 512, 0);
	/* IP total length beyond the frame: shorter than its headers say */
	set16(&p, 16, p.n - 14 + 100);
	assert_int_equal(dec(&p, &k), PULSE_ROCE_E_IP_LENGTH);
	/* IP total length below its own header */
	set16(&p, 16, 10);
	assert_int_equal(dec(&p, &k), PULSE_ROCE_E_IP);
	/* UDP length beyond the IP payload */
	build_write_first(&p, 512, 0);
	set16(&p, 14 + 20 + 4, 2000);
	assert_int_equal(dec(&p, &k), PULSE_ROCE_E_UDP_LENGTH);
	/* UDP length below its header */
	set16(&p, 14 + 20 + 4, 4);
	assert_int_equal(dec(&p, &k), PULSE_ROCE_E_UDP_LENGTH);
	/* Ethernet padding after the IP packet is fine and not counted */
	build_write_first(&p, 0, 0);
	uint32_t ip_len = p.n - 14;
	putn(&p, 20, 0);
	assert_int_equal(dec(&p, &k), PULSE_ROCE_OK);
	assert_int_equal(k.ip_len, ip_len);
	assert_int_equal(k.wire_len, 14 + ip_len);
}

/* A headers-only capture (small snaplen) still decodes; a packet that is
 * really shorter than its headers never does. */
static void test_truncation_sweep(void **state)
{
	(void)state;
	struct pb p;
	struct pulse_roce_pkt k;
	build_write_first(&p, 4096, 0);
	const uint32_t hdrs = 14 + 20 + 8 + 12 + 16;
	for (uint32_t cap = 0; cap <= p.n; cap++) {
		enum pulse_roce_status s =
			pulse_roce_decode(p.b, cap, p.n, PULSE_ROCE_LINK_ETHERNET, &k);
		if (cap >= hdrs) {
			assert_int_equal(s, PULSE_ROCE_OK);
			assert_int_equal(k.payload_len, 4096);
			assert_int_equal(k.wire_len, p.n);
		} else {
			assert_int_equal(s, PULSE_ROCE_E_SNAPLEN);
		}
		s = pulse_roce_decode(p.b, cap, cap, PULSE_ROCE_LINK_ETHERNET, &k);
		if (cap < p.n)
			assert_int_not_equal(s, PULSE_ROCE_OK);
	}
}

static void test_cooked_and_raw(void **state)
{
	(void)state;
	struct pb e, p;
	struct pulse_roce_pkt k;
	build_write_first(&e, 128, 0);
	/* SLL: 16-byte header, protocol at 14 */
	p.n = 0;
	put16(&p, 4); /* sent by us */
	put16(&p, 1);
	put16(&p, 6);
	putn(&p, 8, 0x11);
	put16(&p, 0x0800);
	memcpy(p.b + p.n, e.b + 14, e.n - 14);
	p.n += e.n - 14;
	assert_int_equal(pulse_roce_decode(p.b, p.n, p.n, PULSE_ROCE_LINK_SLL, &k), PULSE_ROCE_OK);
	assert_int_equal(k.payload_len, 128);
	assert_int_equal(k.wire_len, e.n);
	/* SLL2: 20-byte header, protocol first */
	p.n = 0;
	put16(&p, 0x0800);
	put16(&p, 0);
	put32(&p, 3);
	put16(&p, 1);
	put8(&p, 4);
	put8(&p, 6);
	putn(&p, 8, 0x11);
	memcpy(p.b + p.n, e.b + 14, e.n - 14);
	p.n += e.n - 14;
	assert_int_equal(pulse_roce_decode(p.b, p.n, p.n, PULSE_ROCE_LINK_SLL2, &k), PULSE_ROCE_OK);
	assert_int_equal(k.wire_len, e.n);
	/* raw IP */
	assert_int_equal(pulse_roce_decode(e.b + 14, e.n - 14, e.n - 14, PULSE_ROCE_LINK_RAW, &k),
			 PULSE_ROCE_OK);
	assert_int_equal(k.wire_len, e.n);
	assert_int_equal(pulse_roce_decode(e.b, 0, 0, PULSE_ROCE_LINK_RAW, &k), PULSE_ROCE_E_LINK);
	assert_int_equal(pulse_roce_decode(e.b, 10, 10, (enum pulse_roce_link)99, &k),
			 PULSE_ROCE_E_LINK);
}

static void test_status_names(void **state)
{
	(void)state;
	for (int s = 0; s < PULSE_ROCE_STATUS_COUNT; s++) {
		assert_non_null(pulse_roce_status_name((enum pulse_roce_status)s));
		assert_string_not_equal(pulse_roce_status_name((enum pulse_roce_status)s), "unknown");
		assert_string_not_equal(pulse_roce_status_text((enum pulse_roce_status)s),
					"unknown status");
	}
	assert_string_equal(pulse_roce_status_name(PULSE_ROCE_STATUS_COUNT), "unknown");
	assert_string_equal(pulse_roce_transport_name(PULSE_ROCE_UD), "UD");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_first_ipv4),
		cmocka_unit_test(test_pad_excluded),
		cmocka_unit_test(test_vlan_and_qinq),
		cmocka_unit_test(test_ipv4_options),
		cmocka_unit_test(test_ipv4_fragments),
		cmocka_unit_test(test_ipv6),
		cmocka_unit_test(test_not_roce),
		cmocka_unit_test(test_udp4791_not_roce),
		cmocka_unit_test(test_reserved_opcodes),
		cmocka_unit_test(test_opcode_table),
		cmocka_unit_test(test_ud_deth_and_imm),
		cmocka_unit_test(test_cnp_and_xrc),
		cmocka_unit_test(test_short_for_opcode),
		cmocka_unit_test(test_lengths_lie),
		cmocka_unit_test(test_truncation_sweep),
		cmocka_unit_test(test_cooked_and_raw),
		cmocka_unit_test(test_status_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
