# sim/: RoCEv2 decoding, capture replay through the firmware core (run_trace),
# serve mode, the Unix-socket mailbox transport, their tests, fuzz target and
# benchmarks. The user-facing entry point is the wrapper script sim/run_trace.

SIM_PKG_CFLAGS := $(shell pkg-config --cflags libcjson 2>/dev/null || echo -I/usr/include/cjson)
SIM_LDLIBS := -lpcap -lcjson -lm $(HOST_LDLIBS)
CFLAGS_sim/ := $(SIM_PKG_CFLAGS)
CFLAGS_tests/sim/ := $(SIM_PKG_CFLAGS)

# The decoder alone: no libpcap, used by the fuzz target and the trace generator.
SIM_DECODE_SRCS := sim/roce_decode.c
# The replay library: capture input, pass 1 (flows, QPN recovery), NIC
# emulation, reports, serve mode.
SIM_LIB_SRCS := sim/roce_decode.c sim/pcap_in.c sim/trace.c sim/nic_emu.c sim/report.c \
	sim/util.c sim/serve.c
# Unix-socket mailbox transport (client and server), for run_trace --serve,
# the host agent and tests.
UNIX_TRANSPORT_SRCS := mailbox/transport_unix.c

$(call static_lib,pulse_roce,$(SIM_DECODE_SRCS))
$(call static_lib,pulse_sim,$(SIM_LIB_SRCS))
$(call static_lib,pulse_unix,$(UNIX_TRANSPORT_SRCS))

# run_trace itself (installed as pulse-run-trace; sim/run_trace wraps it).
RUN_TRACE_LIBS = $(BUILD)/lib/libpulse_sim.a $(BUILD)/lib/libpulse_unix.a \
	$(BUILD)/lib/libpulse_host.a $(BUILD)/lib/libpulse_fw.a
$(BUILD)/bin/pulse-run-trace: $(call objs,obj,sim/run_trace.c) $(RUN_TRACE_LIBS)
	@mkdir -p $(@D)
	$(CC) -o $@ $^ $(SIM_LDLIBS)

ALL += $(BUILD)/lib/libpulse_roce.a $(BUILD)/lib/libpulse_sim.a $(BUILD)/lib/libpulse_unix.a \
	$(BUILD)/bin/pulse-run-trace
INSTALL_BINS += $(BUILD)/bin/pulse-run-trace

# pulse-cluster-serve: a run_cluster directory served live (sim/cluster_serve.h):
# the serving loop of run_trace --serve, the hook's own ring writer.
CLUSTER_SERVE_SRCS := sim/cluster_serve.c sim/serve_evs.c sim/serve_ranks.c
$(BUILD)/bin/pulse-cluster-serve: $(call objs,obj,$(CLUSTER_SERVE_SRCS)) $(RUN_TRACE_LIBS) \
		$(BUILD)/lib/libpulse_hookring.a $(BUILD)/lib/libpulse_wire.a
	@mkdir -p $(@D)
	$(CC) -o $@ $^ $(SIM_LDLIBS) -lrt
ALL += $(BUILD)/bin/pulse-cluster-serve
INSTALL_BINS += $(BUILD)/bin/pulse-cluster-serve

# ---- tests ----
SIM_ASAN_LIBS = $(BUILD)/lib/asan/libpulse_sim.a $(BUILD)/lib/asan/libpulse_unix.a \
	$(BUILD)/lib/asan/libpulse_host.a $(BUILD)/lib/asan/libpulse_fw.a

$(BUILD)/tests/test_roce_decode: $(call objs,asan,tests/sim/test_roce_decode.c) $(BUILD)/lib/asan/libpulse_roce.a
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) -o $@ $^ -lcmocka $(HOST_LDLIBS)
TEST_PROGS += $(BUILD)/tests/test_roce_decode

# ---- fuzz target (libFuzzer; clang only) ----
FUZZ_CFLAGS := -std=c11 -g -O1 -Iinclude -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
$(BUILD)/fuzz/fuzz_roce_decode: tests/fuzz/fuzz_roce_decode.c $(SIM_DECODE_SRCS) include/pulse/roce.h
	@mkdir -p $(@D)
	$(CLANG) $(FUZZ_CFLAGS) $(WARN) -o $@ tests/fuzz/fuzz_roce_decode.c $(SIM_DECODE_SRCS)
TEST_SCRIPTS += tests/sim/fuzz_roce_decode.sh
test: $(BUILD)/fuzz/fuzz_roce_decode

TRACEGEN_ASAN_LIB = $(BUILD)/lib/asan/libpulse_tracegen.a
$(BUILD)/tests/test_run_trace: $(call objs,asan,tests/sim/test_run_trace.c) $(SIM_ASAN_LIBS) $(TRACEGEN_ASAN_LIB)
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) -o $@ $^ -lcmocka $(SIM_LDLIBS)
TEST_PROGS += $(BUILD)/tests/test_run_trace

$(BUILD)/tests/test_tracegen: $(call objs,asan,tests/sim/test_tracegen.c) $(SIM_ASAN_LIBS) $(TRACEGEN_ASAN_LIB)
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) -o $@ $^ -lcmocka $(SIM_LDLIBS)
TEST_PROGS += $(BUILD)/tests/test_tracegen
TEST_SCRIPTS += tests/sim/run_trace_cli.sh tests/sim/run_trace_qps.sh tests/sim/serve_sigterm.sh \
	tests/sim/run_trace_mutants.sh
test: $(BUILD)/bin/pulse-run-trace $(BUILD)/bin/pulse-tracegen

$(BUILD)/tests/test_serve: $(call objs,asan,tests/sim/test_serve.c) $(SIM_ASAN_LIBS) $(TRACEGEN_ASAN_LIB)
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) -o $@ $^ -lcmocka $(SIM_LDLIBS)
TEST_PROGS += $(BUILD)/tests/test_serve

# ---- benchmarks (BENCHMARKS.md, "run_trace") ----
# 1 s of one NIC at 400 Gb/s (4 QPs, 4096-byte MTU, headers captured) and
# the time to replay it, against libpcap just reading the file.
BENCH_400G_PCAP := $(BUILD)/bench/400g-1s.pcap
$(BENCH_400G_PCAP): $(BUILD)/bin/pulse-tracegen
	@mkdir -p $(@D)
	$(BUILD)/bin/pulse-tracegen --pattern write --nodes 2 --channels 4 --gbps 400 --duration 1s \
		--snaplen 128 --seed 1 -o $@
$(BUILD)/bench/bench_run_trace: $(call objs,obj,sim/bench_run_trace.c) $(RUN_TRACE_LIBS)
	@mkdir -p $(@D)
	$(CC) -o $@ $^ $(SIM_LDLIBS)
.PHONY: bench-run-trace
bench-run-trace: $(BUILD)/bench/bench_run_trace $(BENCH_400G_PCAP)
	@echo "== run_trace: decode rate and 1 s of 400 Gb/s end to end vs the libpcap floor ($$(nproc) cores, $$(lscpu | sed -n 's/^Model name: *//p'))"
	$(BUILD)/bench/bench_run_trace $(BENCH_400G_PCAP) 3 | tee $(BUILD)/bench/run-trace.md
BENCH_TARGETS += bench-run-trace
