# pulse-host-agent --replay and the cross-host QP join: tests.
# (replay.c itself is in AGENT_SRCS, host-agent/host-agent.mk; the join,
# wire/qp_join.c, is in libpulse_wire.a, wire/wire.mk.)

CFLAGS_tests/replay/ := $(WIRE_PKG_CFLAGS)

# End to end on a generated run directory, through the ASan agent.
$(BUILD)/tests/test_replay: $(call objs,asan,tests/replay/test_replay.c tests/replay/gen_run.c)
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) -o $@ $^ -lcmocka -lcjson
TEST_PROGS += $(BUILD)/tests/test_replay
$(BUILD)/tests/test_replay: | $(BUILD)/tests/pulse-host-agent-asan

# The QP join's own cases.
$(BUILD)/tests/test_qp_join: $(call objs,asan,tests/replay/test_qp_join.c) $(BUILD)/lib/asan/libpulse_wire.a
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) -o $@ $^ -lcmocka $(WIRE_LDLIBS)
TEST_PROGS += $(BUILD)/tests/test_qp_join

# The same on a real sim/run_cluster run (skips when the simulator is absent).
TEST_SCRIPTS += tests/replay/replay_sim.sh tests/replay/replay_hang.sh tests/replay/full_disk.sh
test: $(BUILD)/tests/pulse-host-agent-asan $(BUILD)/bin/pulse-run-cluster

# The association wiring (loop.c) and the replay options, in process.
CFLAGS_tests/replay/test_agent_assoc.c := -Ihost-agent
$(BUILD)/tests/test_agent_assoc: $(call objs,asan,tests/replay/test_agent_assoc.c $(AGENT_SRCS) \
		mailbox/transport_doca_none.c) $(AGENT_ASAN_LIBS)
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) -o $@ $^ -lcmocka $(AGENT_LDLIBS)
TEST_PROGS += $(BUILD)/tests/test_agent_assoc

# Replay against the live path on the same traffic: run_cluster --pcap,
# run_trace --serve of one NIC's capture polled by the live agent, against
# the replay of that NIC's .evs: same QPs, same bytes each.
TEST_SCRIPTS += tests/replay/live_vs_replay.sh
test: $(BUILD)/bin/pulse-run-trace

# The live agent's --analyzer link (host-agent/analyzer_link.c, H-ANSVC)
# against pulse-analyzer --listen (skips while the analyzer is not built).
TEST_SCRIPTS += tests/replay/agent_analyzer.sh

# The live path, rehearsed (issue 18): small runs served by
# pulse-cluster-serve at 4x to ASan agents and an ASan analyzer: live =
# replay per failure class, an agent and the analyzer killed and
# restarted, a training process killed (tools/live-cluster.sh).
TEST_SCRIPTS += tests/replay/live_cluster.sh
test: $(BUILD)/bin/pulse-cluster-serve $(BUILD)/bin/pulse-run-cluster $(BUILD)/bin/pulse-analyzer \
	$(BUILD)/tests/pulse-analyzer-asan $(BUILD)/tests/pulse-host-agent-asan

# make demo-live: the daemons at work on a simulated cluster (tools/demo-live.sh)
.PHONY: demo-live
demo-live: ensure-deps
	@mkdir -p $(BUILD); printf 'demo-live: building (make all) ... '; \
	if $(MAKE) --no-print-directory all >$(BUILD)/demo-build.log 2>&1; then echo ok; \
	else echo failed; cat $(BUILD)/demo-build.log; exit 1; fi
	@tools/demo-live.sh

# make bench-live: the paper's 64-GPU GPT served live at 1x real time
# (BENCHMARKS.md, "The live path"): per-host agent CPU, analyzer CPU, the
# wall-clock latency of the verdict from the onset.
.PHONY: bench-live
bench-live: $(BUILD)/bin/pulse-cluster-serve $(BUILD)/bin/pulse-run-cluster $(BUILD)/bin/pulse-host-agent \
		$(BUILD)/bin/pulse-analyzer
	@tools/bench-live.sh
BENCH_TARGETS += bench-live

# make bench-replay: a 64-GPU x 10-iteration run replayed end to end, against
# the time the simulator took to write it.
.PHONY: bench-replay
bench-replay: $(BUILD)/bin/pulse-host-agent $(BUILD)/bin/pulse-run-cluster
	@mkdir -p $(BUILD)/bench
	@echo "== pulse-host-agent --replay ($$(nproc) cores, $$(lscpu | sed -n 's/^Model name: *//p'))"
	tests/replay/bench_replay.sh | tee $(BUILD)/bench/replay.md
BENCH_TARGETS += bench-replay
