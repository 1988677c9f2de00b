/* pulse-host-agent on a real host (issue 14), what can be tested without an
 * RDMA device: discovery, NUMA and PCIe findings against the sysfs fixture
 * (tests/host-agent/sysfs, README there), the GPU pairing, the value
 * parsers, a device that disappears between two scans, and (below) the
 * netlink parsers on messages built with the kernel's uapi attributes. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../host-agent/agent.h"
#include "../../host-agent/rdma.h"

#define FIXTURE "tests/host-agent/sysfs"

static char g_log[16384];
static void cap_log(const char *level, const char *msg)
{
	size_t n = strlen(g_log);
	snprintf(g_log + n, sizeof g_log - n, "%s: %s\n", level, msg);
}

static struct rdma_inventory inv;

static void test_parsers(void **state)
{
	(void)state;
	assert_true(rdma_parse_gts("16.0 GT/s PCIe") == 16.0);
	assert_true(rdma_parse_gts("2.5 GT/s") == 2.5);
	assert_true(rdma_parse_gts("8 GT/s PCIe\n") == 8.0);
	assert_true(rdma_parse_gts("Unknown") < 0);
	assert_true(rdma_parse_gts("0x10 GT/s") < 0);
	assert_true(rdma_parse_gts("-8 GT/s") < 0);
	assert_true(rdma_parse_gts("16.0 GB/s") < 0);
	assert_true(rdma_parse_rate("400 Gb/sec (4X NDR)") == 400.0);
	assert_true(rdma_parse_rate("2.5 Gb/sec (1X SDR)") == 2.5);
	assert_true(rdma_parse_rate("fast") < 0);
	char n[16];
	assert_int_equal(rdma_parse_port_state("4: ACTIVE", n, sizeof n), 4);
	assert_string_equal(n, "ACTIVE");
	assert_int_equal(rdma_parse_port_state("1: DOWN\n", n, sizeof n), 1);
	assert_string_equal(n, "DOWN");
	assert_int_equal(rdma_parse_port_state("ACTIVE", n, sizeof n), -1);
	assert_int_equal(rdma_parse_port_state("4:", n, sizeof n), -1);
	assert_int_equal(rdma_parse_port_state("999: X", n, sizeof n), -1);
	assert_int_equal(rdma_parse_port_state("4: ACT IVE", n, sizeof n), -1);
	uint8_t g[16];
	assert_int_equal(rdma_parse_gid("fe80:0000:0000:0000:0ac0:ebff:fe12:3456", g), 0);
	assert_int_equal(g[0], 0xfe);
	assert_int_equal(g[1], 0x80);
	assert_int_equal(g[15], 0x56);
	assert_int_equal(rdma_parse_gid("fe80:0000:0000:0000:0ac0:ebff:fe12:345", g), -1);
	assert_int_equal(rdma_parse_gid("fe80:0000:0000:0000:0ac0:ebff:fe12:34567", g), -1);
	assert_int_equal(rdma_parse_gid("fe80::1", g), -1);
	char pci[16];
	assert_int_equal(rdma_parse_pci_addr("0000:3B:00.0", pci), 0);
	assert_string_equal(pci, "0000:3b:00.0");
	assert_int_equal(rdma_parse_pci_addr("00000000:3b:00.1", pci), 0); /* NVML's form */
	assert_string_equal(pci, "0000:3b:00.1");
	assert_int_equal(rdma_parse_pci_addr("00010000:3b:00.1", pci), -1);
	assert_int_equal(rdma_parse_pci_addr("3b:00.0", pci), -1);
	assert_int_equal(rdma_parse_pci_addr("0000:3b:00.8", pci), -1);
	assert_int_equal(rdma_parse_pci_addr("0000:3b:00.0x", pci), -1);
}

static void test_discovery_fixture(void **state)
{
	(void)state;
	g_log[0] = '\0';
	int n = rdma_sysfs_scan(FIXTURE, &inv, cap_log);
	assert_int_equal(n, 3); /* mlx5_3 is a dangling link: logged, skipped */
	assert_non_null(strstr(g_log, "mlx5_3: listed in " FIXTURE "/class/infiniband but not readable"));
	const struct rdma_dev *d = rdma_find_dev(&inv, "mlx5_0");
	assert_non_null(d);
	assert_string_equal(d->pci, "0000:03:00.0");
	assert_int_equal(d->numa, 0);
	assert_string_equal(d->netdev, "ens1f0np0");
	assert_int_equal(d->cur_width, 16);
	assert_int_equal(d->max_width, 16);
	assert_true(d->cur_gts == 16.0 && d->max_gts == 16.0);
	assert_int_equal(d->nports, 1);
	const struct rdma_port *p = &d->ports[0];
	assert_int_equal(p->num, 1);
	assert_int_equal(p->state, 4);
	assert_string_equal(p->state_name, "ACTIVE");
	assert_string_equal(p->link_layer, "Ethernet");
	assert_true(p->gbps == 400.0);
	assert_int_equal(p->ngids, 4); /* the zero entry is skipped */
	assert_int_equal(p->gids[1].index, 1);
	assert_string_equal(p->gids[1].type, "RoCE v2");
	assert_string_equal(p->gids[0].type, "IB/RoCE v1");
	assert_int_equal(p->gids[3].raw[10], 0xff);
	assert_int_equal(p->gids[3].raw[12], 10); /* ::ffff:10.0.0.1 */
	assert_string_equal(p->gids[3].type, "RoCE v2");
	assert_string_equal(p->gids[3].netdev, "ens1f0np0");

	d = rdma_find_dev(&inv, "mlx5_1");
	assert_non_null(d);
	assert_int_equal(d->numa, 1);
	assert_int_equal(d->cur_width, 8);
	assert_int_equal(d->ports[0].state, 1);
	assert_ptr_equal(rdma_find_netdev(&inv, "ens2f0np0"), d);

	d = rdma_find_dev(&inv, "mlx5_2");
	assert_non_null(d);
	assert_int_equal(d->numa, -1);
	assert_string_equal(d->netdev, "");
	assert_int_equal(d->cur_width, 0);
	assert_string_equal(d->ports[0].link_layer, "InfiniBand");
	assert_int_equal(d->ports[0].ngids, 1); /* the malformed one: logged, counted */
	assert_non_null(strstr(g_log, "mlx5_2 port 1: malformed GID 1 \"not-a-gid\""));
	assert_non_null(strstr(g_log, "mlx5_2 (0000:82:00.0): PCIe link width/speed not all readable"));
	assert_int_equal(inv.errors, 3);
	assert_null(rdma_find_dev(&inv, "mlx5_3"));
	assert_int_equal(inv.verbs_ran, 0);
}

static void test_pcie_findings(void **state)
{
	(void)state;
	rdma_sysfs_scan(FIXTURE, &inv, NULL);
	struct rdma_finding f[8];
	int n = rdma_findings_pcie(&inv, f, 8);
	assert_int_equal(n, 2); /* mlx5_1: width and speed; mlx5_0 fine; mlx5_2 unknown */
	assert_int_equal(f[0].kind, FIND_PCIE_WIDTH);
	assert_string_equal(f[0].nic, "mlx5_1");
	assert_non_null(strstr(f[0].detail, "PCIe link x8 of x16"));
	assert_int_equal(f[1].kind, FIND_PCIE_SPEED);
	assert_non_null(strstr(f[1].detail, "8.0 GT/s of 16.0 GT/s"));
	char buf[1024];
	FILE *m = fmemopen(buf, sizeof buf, "w");
	rdma_finding_json(m, &f[0], "h\"1", 123);
	fclose(m);
	assert_non_null(strstr(buf, "{\"type\":\"config_finding\",\"t_ns\":123,\"host\":\"h\\\"1\","
				    "\"kind\":\"pcie_width\",\"nic\":\"mlx5_1\",\"gpu\":null,\"nic_numa\":1,"));
}

static void test_gpu_pairing(void **state)
{
	(void)state;
	rdma_sysfs_scan(FIXTURE, &inv, NULL);
	struct rdma_finding f;
	char detail[300];
	/* GPU on mlx5_0's own PCIe switch: same NUMA node, no finding */
	assert_int_equal(rdma_pair_gpu(&inv, "00000000:04:00.0", "mlx5_0", &f, detail, sizeof detail), 0);
	assert_non_null(strstr(detail, "GPU 0000:04:00.0 (NUMA 0) uses mlx5_0 (0000:03:00.0, NUMA 0): "
					"4 PCIe hops apart"));
	/* GPU of NUMA 0 with mlx5_1 of NUMA 1: the finding */
	assert_int_equal(rdma_pair_gpu(&inv, "0000:05:00.0", "mlx5_1", &f, detail, sizeof detail), 1);
	assert_int_equal(f.kind, FIND_CROSS_NUMA);
	assert_string_equal(f.nic, "mlx5_1");
	assert_string_equal(f.gpu, "0000:05:00.0");
	assert_int_equal(f.nic_numa, 1);
	assert_int_equal(f.gpu_numa, 0);
	assert_non_null(strstr(f.detail, "under different PCIe root complexes"));
	/* NUMA unknown on the NIC: no finding, said so */
	assert_int_equal(rdma_pair_gpu(&inv, "0000:05:00.0", "mlx5_2", &f, detail, sizeof detail), 0);
	assert_non_null(strstr(detail, "NUMA -1"));
	/* a GPU sysfs does not know, a NIC that is not there, a bad bus id */
	assert_int_equal(rdma_pair_gpu(&inv, "0000:3c:00.0", "mlx5_0", &f, detail, sizeof detail), 0);
	assert_non_null(strstr(detail, "PCIe distance unknown"));
	assert_int_equal(rdma_pair_gpu(&inv, "0000:05:00.0", "mlx5_9", &f, detail, sizeof detail), -1);
	assert_int_equal(rdma_pair_gpu(&inv, "gpu0", "mlx5_0", &f, detail, sizeof detail), 0);
	assert_int_equal(rdma_pcie_hops("/s/devices/pci0000:00/0000:00:01.0/0000:01:00.0",
					"/s/devices/pci0000:00/0000:00:01.0"),
			 1);
	assert_int_equal(rdma_pcie_hops("/s/devices/pci0000:00/a", "/s/devices/pci0000:80/b"), -1);
	assert_int_equal(rdma_pcie_hops("/nowhere", "/s/devices/pci0000:80/b"), -1);
}

/* A device that goes away between two scans: the second scan logs it and
 * goes on with the others. */
static void test_device_disappears(void **state)
{
	(void)state;
	char tmp[] = "/tmp/pulse-sysfs-XXXXXX";
	assert_non_null(mkdtemp(tmp));
	char cmd[512];
	snprintf(cmd, sizeof cmd, "cp -a " FIXTURE "/. %s/", tmp);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(rdma_sysfs_scan(tmp, &inv, NULL), 3);
	snprintf(cmd, sizeof cmd, "rm -rf %s/devices/pci0000:80/0000:80:01.0/0000:81:00.0", tmp);
	assert_int_equal(system(cmd), 0);
	g_log[0] = '\0';
	assert_int_equal(rdma_sysfs_scan(tmp, &inv, cap_log), 2);
	assert_non_null(strstr(g_log, "mlx5_1: listed in"));
	assert_null(rdma_find_dev(&inv, "mlx5_1"));
	assert_non_null(rdma_find_dev(&inv, "mlx5_0"));
	/* the whole class directory gone: no device, no error */
	snprintf(cmd, sizeof cmd, "rm -rf %s/class/infiniband", tmp);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(rdma_sysfs_scan(tmp, &inv, cap_log), 0);
	assert_int_equal(inv.errors, 0);
	snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
	assert_int_equal(system(cmd), 0);
}

static void test_list_devices_text(void **state)
{
	(void)state;
	rdma_sysfs_scan(FIXTURE, &inv, NULL);
	struct rdma_finding f[8];
	int n = rdma_findings_pcie(&inv, f, 8);
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	rdma_print_inventory(m, &inv, f, n);
	fclose(m);
	assert_non_null(strstr(buf, "RDMA devices under " FIXTURE ": 3 (libibverbs not asked"));
	assert_non_null(strstr(buf, "mlx5_0: netdev ens1f0np0, PCI 0000:03:00.0, NUMA 0, PCIe x16/x16 "
				    "16.0/16.0 GT/s\n"));
	assert_non_null(strstr(buf, "  port 1: ACTIVE (4), Ethernet, 400 Gb/sec (4X NDR), netdev ens1f0np0\n"));
	assert_non_null(strstr(buf, "    gid 3: 0000:0000:0000:0000:0000:ffff:0a00:0001 RoCE v2 ens1f0np0\n"));
	assert_non_null(strstr(buf, "mlx5_2: netdev -, PCI 0000:82:00.0, NUMA -1, PCIe width ? 16.0/16.0"));
	assert_non_null(strstr(buf, "finding pcie_width: mlx5_1 (0000:81:00.0): PCIe link x8 of x16"));
	free(buf);
}

/* libibverbs on this machine: whatever it lists is merged; with no device
 * it says so through the count, never fails the scan. */
static void test_verbs_scan_runs(void **state)
{
	(void)state;
	rdma_sysfs_scan("/sys", &inv, NULL);
	int before = inv.ndevs;
	int n = rdma_verbs_scan(&inv, NULL);
	assert_int_equal(inv.verbs_ran, 1);
	if (n >= 0) {
		assert_int_equal(inv.verbs_ndevs, n);
		assert_true(inv.ndevs >= before);
	} else {
		assert_true(inv.verbs_err[0] != '\0');
	}
}

#ifndef RDMA_NL_TESTS
#define RDMA_NL_TESTS                                    \
	cmocka_unit_test(test_rtnl_link_parse),          \
	cmocka_unit_test(test_rdma_res_parse),           \
	cmocka_unit_test(test_rdma_res_malformed),       \
	cmocka_unit_test(test_rdma_res_reconcile),
#endif
/* test_rdma_nl.c */
void test_rtnl_link_parse(void **state);
void test_rdma_res_parse(void **state);
void test_rdma_res_malformed(void **state);
void test_rdma_res_reconcile(void **state);

static void test_options(void **state)
{
	(void)state;
	struct agent_opts o;
	char *a1[] = {"x", "--device", "auto", "--netdev", "ens1f0np0", "--netdev", "lo", "--sysfs-root",
		      "/tmp/s", "--no-netlink", NULL};
	assert_int_equal(agent_parse_options(&o, 10, a1), 0);
	assert_int_equal(o.device_auto, 1);
	assert_int_equal(o.nnics, 0);
	assert_int_equal(o.nnetdevs, 2);
	assert_string_equal(o.netdevs[1], "lo");
	assert_string_equal(o.sysfs_root, "/tmp/s");
	assert_int_equal(o.no_netlink, 1);
	char *a2[] = {"x", "--list-devices", NULL};
	assert_int_equal(agent_parse_options(&o, 2, a2), 0);
	assert_int_equal(o.list_devices, 1);
	assert_int_equal(o.device_auto, 0);
	char *a3[] = {"x", "--device", "auto", "--sim", "/tmp/s.sock", NULL};
	assert_int_equal(agent_parse_options(&o, 5, a3), 2);
	char *a4[] = {"x", "--netdev", "a-name-of-16-chr", NULL};
	assert_int_equal(agent_parse_options(&o, 3, a4), 2);
	char *a5[] = {"x", "--netdev", "a/b", NULL};
	assert_int_equal(agent_parse_options(&o, 3, a5), 2);
	char *a6[] = {"x", "--device", "mlx5_0", NULL};
	assert_int_equal(agent_parse_options(&o, 3, a6), 0);
	assert_int_equal(o.device_auto, 0);
	assert_int_equal(o.nnics, 1);
	assert_string_equal(o.dev[0], "mlx5_0");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parsers),
		cmocka_unit_test(test_discovery_fixture),
		cmocka_unit_test(test_pcie_findings),
		cmocka_unit_test(test_gpu_pairing),
		cmocka_unit_test(test_device_disappears),
		cmocka_unit_test(test_list_devices_text),
		cmocka_unit_test(test_verbs_scan_runs),
		cmocka_unit_test(test_options),
		RDMA_NL_TESTS
	};
	return cmocka_run_group_tests_name("rdma", tests, NULL, NULL);
}
