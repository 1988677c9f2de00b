# host-agent/: pulse-host-agent, the per-host collection daemon, its tests
# and benchmarks. See host-agent/README.md and BENCHMARKS.md.

AGENT_SRCS := host-agent/options.c host-agent/log.c host-agent/clock_sync.c host-agent/nic.c \
	host-agent/retention.c host-agent/series_query.c host-agent/dump.c host-agent/jsonl.c host-agent/metrics.c \
	host-agent/daemon.c host-agent/loop.c host-agent/op_feed.c host-agent/join_wait.c host-agent/hook_drain.c host-agent/qp_map.c \
	host-agent/replay.c host-agent/analyzer_link.c host-agent/rdma_sysfs.c host-agent/rdma_verbs.c \
	host-agent/rdma_find.c host-agent/link_watch.c host-agent/rdma_res.c \
	host-agent/probe.c host-agent/line_tee.c host-agent/bus_out.c \
	host-agent/replay_fork.c host-agent/replay_links.c
# libibverbs (libibverbs-dev), libnl-3 and libnl-route-3 (libnl-3-dev,
# libnl-route-3-dev): make deps installs them.
NL_CFLAGS := $(shell pkg-config --cflags libnl-3.0 libnl-route-3.0 2>/dev/null || echo -I/usr/include/libnl3)
CFLAGS_host-agent/link_watch.c := $(NL_CFLAGS)
CFLAGS_host-agent/rdma_res.c := $(NL_CFLAGS)
CFLAGS_tests/host-agent/test_rdma_nl.c := $(NL_CFLAGS)
CFLAGS_host-agent/replay.c := $(WIRE_PKG_CFLAGS)
CFLAGS_host-agent/analyzer_link.c := $(WIRE_PKG_CFLAGS)
CFLAGS_host-agent/replay_fork.c := $(WIRE_PKG_CFLAGS)
AGENT_LDLIBS := -lmicrohttpd $(BUSNATS_LDLIBS) -lcjson -libverbs -lnl-route-3 -lnl-3 -lm $(HOST_LDLIBS) -lrt

# Libraries in link order: association (host-agent/assoc.mk), transports and mailbox client,
# interception ring reader, firmware core (replay), the bus (bus/, wire/bus_msg.c), wire codecs
# and QP join, /metrics (om/).
AGENT_LIBS := $(BUILD)/lib/libpulse_assoc.a $(BUILD)/lib/libpulse_unix.a $(BUILD)/lib/libpulse_host.a \
	$(BUILD)/lib/libpulse_hookring.a $(BUILD)/lib/libpulse_fw.a $(BUILD)/lib/libpulse_busnats.a \
	$(BUILD)/lib/libpulse_bus.a $(BUILD)/lib/libpulse_wire.a $(BUILD)/lib/libpulse_om.a
AGENT_ASAN_LIBS := $(BUILD)/lib/asan/libpulse_assoc.a $(BUILD)/lib/asan/libpulse_unix.a \
	$(BUILD)/lib/asan/libpulse_host.a $(BUILD)/lib/asan/libpulse_hookring.a \
	$(BUILD)/lib/asan/libpulse_fw.a $(BUILD)/lib/asan/libpulse_busnats.a $(BUILD)/lib/asan/libpulse_bus.a \
	$(BUILD)/lib/asan/libpulse_wire.a $(BUILD)/lib/asan/libpulse_om.a

# The agent links the socket transport, the mailbox client and the DOCA
# transport (the real one with the SDK, else the one that says it is absent).
$(BUILD)/bin/pulse-host-agent: $(call objs,obj,$(AGENT_SRCS) host-agent/main.c $(DOCA_TRANSPORT_SRCS)) \
		$(AGENT_LIBS) $(DOCA_HOST_DEPS)
	@mkdir -p $(@D)
	$(CC) -o $@ $(filter %.o %.a,$^) $(DOCA_HOST_LDLIBS) $(AGENT_LDLIBS)

# ASan+UBSan build of the same program, which the tests run.
$(BUILD)/tests/pulse-host-agent-asan: $(call objs,asan,$(AGENT_SRCS) host-agent/main.c \
		mailbox/transport_doca_none.c) $(AGENT_ASAN_LIBS)
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) -o $@ $^ $(AGENT_LDLIBS)

ALL += $(BUILD)/bin/pulse-host-agent
INSTALL_BINS += $(BUILD)/bin/pulse-host-agent

# ---- tests ----
# Unit tests: options, clock sync, retention ring, dump format, metrics text.
$(BUILD)/tests/test_host_agent: $(call objs,asan,tests/host-agent/test_host_agent.c $(AGENT_SRCS) \
		mailbox/transport_doca_none.c) $(AGENT_ASAN_LIBS)
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) -o $@ $^ -lcmocka $(AGENT_LDLIBS)
TEST_PROGS += $(BUILD)/tests/test_host_agent

# Discovery, findings and netlink parsers (tests/host-agent/sysfs: the fixture).
RDMA_TEST_SRCS := tests/host-agent/test_rdma.c tests/host-agent/test_rdma_nl.c
$(BUILD)/tests/test_rdma: $(call objs,asan,$(RDMA_TEST_SRCS) $(AGENT_SRCS) \
		mailbox/transport_doca_none.c) $(AGENT_ASAN_LIBS)
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) -o $@ $^ -lcmocka $(AGENT_LDLIBS)
TEST_PROGS += $(BUILD)/tests/test_rdma

# libFuzzer target (clang only) for the netlink and sysfs parsers; the
# sources are compiled straight into the fuzzer with its flags.
HA_FUZZ_BIN := $(BUILD)/fuzz/fuzz_host_netlink
HA_FUZZ_SRCS := host-agent/link_watch.c host-agent/rdma_res.c host-agent/rdma_sysfs.c host-agent/log.c \
	wire/json_put.c
$(HA_FUZZ_BIN): tests/fuzz/fuzz_host_netlink.c $(HA_FUZZ_SRCS) $(wildcard host-agent/*.h)
	@mkdir -p $(@D)
	$(CLANG) -std=c11 -g -O1 -Iinclude $(NL_CFLAGS) -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=all $(WARN) -o $@ tests/fuzz/fuzz_host_netlink.c $(HA_FUZZ_SRCS) \
		-lnl-route-3 -lnl-3 -lpthread -lm
TEST_SCRIPTS += tests/host-agent/fuzz_host_netlink.sh
test: $(HA_FUZZ_BIN)

# A misbehaving simulated NIC for the end-to-end tests.
$(BUILD)/tests/bad_nic: $(call objs,asan,tests/host-agent/bad_nic.c) $(BUILD)/lib/asan/libpulse_unix.a \
		$(BUILD)/lib/asan/libpulse_host.a
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) -o $@ $^ $(HOST_LDLIBS)

# End to end against run_trace --serve and bad_nic (shell; 77 skips).
TEST_SCRIPTS += tests/host-agent/agent_sim.sh tests/host-agent/agent_bad_nic.sh \
	tests/host-agent/agent_daemon.sh tests/host-agent/agent_prometheus.sh tests/host-agent/agent_hooks.sh \
	tests/host-agent/agent_links.sh tests/host-agent/agent_pairing.sh
test: $(BUILD)/bin/pulse-host-agent $(BUILD)/tests/pulse-host-agent-asan $(BUILD)/tests/bad_nic \
	$(BUILD)/bin/pulse-run-trace
# agent_hooks.sh: the hook and the unmodified training program (hook/hook.mk)
test: $(BUILD)/lib/libpulse-hook.so $(BUILD)/tests/hook/train $(BUILD)/tests/hook/libibverbs.so.1 \
	$(BUILD)/tests/hook/libibverbs.so
# agent_pairing.sh: and the stand-in CUDA runtime (the GPU's PCI bus id)
test: $(BUILD)/tests/hook/libcudart.so.12

# ---- benchmarks (BENCHMARKS.md, "pulse-host-agent") ----
$(BUILD)/bench/bench_host_agent: $(call objs,obj,tests/host-agent/bench_host_agent.c $(AGENT_SRCS) \
		mailbox/transport_doca_none.c) $(AGENT_LIBS)
	@mkdir -p $(@D)
	$(CC) -o $@ $^ $(AGENT_LDLIBS)
.PHONY: bench-host-agent
bench-host-agent: $(BUILD)/bench/bench_host_agent $(BUILD)/bin/pulse-host-agent $(BUILD)/bin/pulse-run-trace
	@echo "== pulse-host-agent ($$(nproc) cores, $$(lscpu | sed -n 's/^Model name: *//p'))"
	$(BUILD)/bench/bench_host_agent | tee $(BUILD)/bench/host-agent.md
	tests/host-agent/bench_upload.sh | tee -a $(BUILD)/bench/host-agent.md
BENCH_TARGETS += bench-host-agent

# `make install` also installs the systemd unit, where systemd looks for
# locally installed units ($(PREFIX)/lib/systemd/system; /usr/local/lib/...
# is on systemd's search path), with ExecStart pointing at $(PREFIX)/bin.
.PHONY: install-host-agent-unit
install: install-host-agent-unit
install-host-agent-unit: host-agent/pulse-host-agent.service
	install -d $(DESTDIR)$(PREFIX)/lib/systemd/system
	sed 's|/usr/local/bin/|$(PREFIX)/bin/|' host-agent/pulse-host-agent.service \
		>$(DESTDIR)$(PREFIX)/lib/systemd/system/pulse-host-agent.service
	chmod 0644 $(DESTDIR)$(PREFIX)/lib/systemd/system/pulse-host-agent.service
