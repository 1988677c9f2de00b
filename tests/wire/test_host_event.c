/* wire/host_event.c: the link event and configuration finding lines, the
 * one codec of the host agent (writer) and the analyzer (reader). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pulse/host_event.h"

static void link_round_trip(void **state)
{
	(void)state;
	struct pulse_link_event a, b;
	memset(&a, 0, sizeof a);
	a.t_ns = 1700000000123456000ull;
	strcpy(a.host, "host\"1");
	strcpy(a.netdev, "eth1");
	strcpy(a.event, "change");
	strcpy(a.state, "down");
	a.ifindex = 3;
	a.admin_up = 1;
	a.operstate = 2;
	a.carrier = 0;
	char *s = pulse_link_event_to_json(&a);
	assert_non_null(s);
	/* the form the agent has always written: an exact integer time, null for no device */
	assert_non_null(strstr(s, "{\"type\":\"link\",\"t_ns\":1700000000123456000,\"host\":\"host\\\"1\","
				  "\"netdev\":\"eth1\",\"dev\":null,\"event\":\"change\",\"state\":\"down\""));
	char err[160] = "";
	assert_int_equal(pulse_link_event_from_json(s, strlen(s), &b, err, sizeof err), 0);
	assert_string_equal(b.host, a.host);
	assert_string_equal(b.dev, "");
	assert_int_equal(b.ifindex, 3);
	assert_true(b.admin_up && !b.running);
	assert_true(b.t_ns / 1000 == a.t_ns / 1000 || b.t_ns / 1000 + 1 == a.t_ns / 1000 ||
		    b.t_ns / 1000 == a.t_ns / 1000 + 1);
	assert_true(pulse_link_event_is_down(&b));
	free(s);
}

static void finding_round_trip(void **state)
{
	(void)state;
	struct pulse_config_finding a, b;
	memset(&a, 0, sizeof a);
	a.t_ns = 123;
	strcpy(a.host, "h1");
	strcpy(a.kind, "pcie_width");
	strcpy(a.nic, "mlx5_1");
	a.nic_numa = 1;
	a.gpu_numa = -1;
	strcpy(a.detail, "PCIe link x8 of x16");
	char *s = pulse_config_finding_to_json(&a);
	assert_non_null(s);
	assert_string_equal(s, "{\"type\":\"config_finding\",\"t_ns\":123,\"host\":\"h1\",\"kind\":\"pcie_width\","
			       "\"nic\":\"mlx5_1\",\"gpu\":null,\"nic_numa\":1,\"gpu_numa\":-1,"
			       "\"detail\":\"PCIe link x8 of x16\"}");
	char err[160] = "";
	assert_int_equal(pulse_config_finding_from_json(s, strlen(s), &b, err, sizeof err), 0);
	assert_memory_equal(&a, &b, sizeof a);
	free(s);
}

static void rejects_bad(void **state)
{
	(void)state;
	static const char *bad[] = {
		"",
		"[]",
		"{\"type\":\"window\"}",
		"{\"type\":\"link\",\"t_ns\":1,\"host\":\"h\",\"netdev\":\"e\",\"dev\":null,\"event\":\"change\","
		"\"state\":\"sideways\",\"ifindex\":1,\"admin_up\":true,\"running\":true,\"operstate\":6,\"carrier\":1}",
		"{\"type\":\"link\",\"t_ns\":-1,\"host\":\"h\",\"netdev\":\"e\",\"dev\":null,\"event\":\"change\","
		"\"state\":\"up\",\"ifindex\":1,\"admin_up\":true,\"running\":true,\"operstate\":6,\"carrier\":1}",
		"{\"type\":\"link\",\"t_ns\":1,\"host\":\"h\",\"dev\":null,\"event\":\"change\","
		"\"state\":\"up\",\"ifindex\":1,\"admin_up\":true,\"running\":true,\"operstate\":6,\"carrier\":1}",
	};
	struct pulse_link_event e;
	char err[160];
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		err[0] = 0;
		assert_int_equal(pulse_link_event_from_json(bad[i], strlen(bad[i]), &e, err, sizeof err), -1);
		assert_true(err[0] != 0);
	}
	struct pulse_config_finding f;
	const char *nogpu = "{\"type\":\"config_finding\",\"t_ns\":1,\"host\":\"h\",\"kind\":\"k\",\"nic\":\"n\","
			    "\"gpu\":7,\"nic_numa\":0,\"gpu_numa\":0,\"detail\":\"d\"}";
	assert_int_equal(pulse_config_finding_from_json(nogpu, strlen(nogpu), &f, err, sizeof err), -1);
	assert_non_null(strstr(err, "gpu"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(link_round_trip),
		cmocka_unit_test(finding_round_trip),
		cmocka_unit_test(rejects_bad),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
