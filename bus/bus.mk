# bus/: Pulse on NATS JetStream (include/pulse/bus.h): the publisher the
# host agent uses and the consumer the analyzer uses. libpulse_busnats.a
# (plain and ASan); link with $(BUSNATS_LDLIBS) and libpulse_bus.a
# (wire/bus_msg.c) and libpulse_wire.a after it.
BUSNATS_SRCS := bus/bus_conn.c bus/bus_pub.c bus/bus_sub.c bus/bus_lease.c
BUSNATS_LDLIBS = -lnats $(BUS_LDLIBS)
$(call static_lib,pulse_busnats,$(BUSNATS_SRCS),obj asan tsan)

# ---- tests: a real nats-server -js on loopback (tests/bus/bus_nats.sh) ----
$(BUILD)/tests/bus_client: $(call objs,asan,tests/bus/bus_client.c) $(BUILD)/lib/asan/libpulse_busnats.a \
		$(BUILD)/lib/asan/libpulse_bus.a $(BUILD)/lib/asan/libpulse_wire.a
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) -o $@ $^ $(BUSNATS_LDLIBS) $(WIRE_LDLIBS) -lpthread
test: $(BUILD)/tests/bus_client
TEST_SCRIPTS += tests/bus/bus_nats.sh
TEST_SCRIPTS += tests/bus/analyzer_bus.sh
TEST_SCRIPTS += tests/bus/agent_bus.sh
TEST_SCRIPTS += tests/bus/analyzer_lease.sh
# issue 15's CI test (3 nats-servers, 3 analyzers, 2 jobs at 5x, kill -9 of
# an owner and a server, PostgreSQL): not in `make test` yet, see docs/bus.md
test-bus-cluster: $(BUILD)/tests/pulse-host-agent-asan $(BUILD)/tests/pulse-analyzer-asan \
		$(BUILD)/tests/pulse-sink-asan $(BUILD)/bin/pulse-analyzer $(BUILD)/bin/pulse-host-agent \
		$(BUILD)/bin/pulse-run-cluster
	BUILD=$(BUILD) sh tests/bus/bus_cluster.sh
.PHONY: test-bus-cluster
