# host-agent/assoc*: flow-operator association (host-agent/assoc.h), linked
# into pulse-host-agent and its replay mode as a static library; its tests
# (tests/assoc/) and benchmark (make bench-assoc, BENCHMARKS.md "Association").

ASSOC_SRCS := host-agent/assoc.c host-agent/assoc_expect.c host-agent/assoc_infer.c \
	host-agent/assoc_segment.c host-agent/assoc_parallel.c

$(call static_lib,pulse_assoc,$(ASSOC_SRCS))
ALL += $(BUILD)/lib/libpulse_assoc.a

CFLAGS_tests/assoc/ := $(shell pkg-config --cflags libcjson 2>/dev/null || echo -I/usr/include/cjson) -Ihost-agent

# Unit tests on synthetic windows (ring/tree, back-to-back, gaps, hang,
# spanning windows, poll gap, groups, 100 operators without drift).
$(BUILD)/tests/test_assoc: $(call objs,asan,tests/assoc/test_assoc.c) $(BUILD)/lib/asan/libpulse_assoc.a \
		$(BUILD)/lib/asan/libpulse_wire.a
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) -o $@ $^ -lcmocka -lcjson -lm
TEST_PROGS += $(BUILD)/tests/test_assoc

# The real captures of ../shared/traces/rdma_ib_tutorial/ (read in place)
# replayed through the firmware core (libpulse_sim.a) into the association.
CFLAGS_tests/assoc/test_assoc_trace.c := -Isim -DTRACE_DIR='"$(CURDIR)/../shared/traces/rdma_ib_tutorial"'
$(BUILD)/tests/test_assoc_trace: $(call objs,asan,tests/assoc/test_assoc_trace.c) $(BUILD)/lib/asan/libpulse_assoc.a \
		$(BUILD)/lib/asan/libpulse_wire.a $(BUILD)/lib/asan/libpulse_sim.a $(BUILD)/lib/asan/libpulse_unix.a \
		$(BUILD)/lib/asan/libpulse_host.a $(BUILD)/lib/asan/libpulse_fw.a
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) -o $@ $^ -lcmocka -lpcap -lcjson -lm $(HOST_LDLIBS)
TEST_PROGS += $(BUILD)/tests/test_assoc_trace

# ---- benchmark (BENCHMARKS.md, "Association") ----
$(BUILD)/bench/bench_assoc: $(call objs,obj,tests/assoc/bench_assoc.c) $(BUILD)/lib/libpulse_assoc.a
	@mkdir -p $(@D)
	$(CC) -o $@ $^
.PHONY: bench-assoc
bench-assoc: $(BUILD)/bench/bench_assoc
	@echo "== association ($$(nproc) cores, $$(lscpu | sed -n 's/^Model name: *//p'))"
	$(BUILD)/bench/bench_assoc | tee $(BUILD)/bench/assoc.md
BENCH_TARGETS += bench-assoc

# End to end against the simulator's truth (tests/assoc/accuracy.sh).
$(BUILD)/tests/assoc_accuracy: $(call objs,obj,tests/assoc/assoc_accuracy.c) $(BUILD)/lib/libpulse_wire.a
	@mkdir -p $(@D)
	$(CC) -o $@ $^ -lcjson -lm
TEST_SCRIPTS += tests/assoc/accuracy.sh
test: $(BUILD)/tests/assoc_accuracy $(BUILD)/bin/pulse-host-agent $(BUILD)/bin/pulse-run-cluster
