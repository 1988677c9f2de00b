# sim/cluster/: the cluster testbed simulator (sim/README.md, "run_cluster").
# Installed as pulse-run-cluster; the user-facing entry point is the wrapper
# script sim/run_cluster.

CLUSTER_PKG_CFLAGS := $(shell pkg-config --cflags libcjson 2>/dev/null || echo -I/usr/include/cjson)
CFLAGS_sim/cluster/ := $(CLUSTER_PKG_CFLAGS)
CFLAGS_tests/sim-cluster/ := $(CLUSTER_PKG_CFLAGS)
CLUSTER_LIB_SRCS := sim/cluster/scenario.c sim/cluster/engine.c sim/cluster/nccl.c sim/cluster/proto.c \
	sim/cluster/workload.c sim/cluster/simai.c sim/cluster/simai_parse.c sim/cluster/run.c sim/cluster/output.c sim/cluster/pcap_out.c sim/util.c
CLUSTER_LDLIBS := -lcjson -lm $(HOST_LDLIBS)

$(call static_lib,pulse_cluster,$(CLUSTER_LIB_SRCS))

$(BUILD)/bin/pulse-run-cluster: $(call objs,obj,sim/cluster/main.c) $(BUILD)/lib/libpulse_cluster.a \
		$(BUILD)/lib/libpulse_wire.a
	@mkdir -p $(@D)
	$(CC) -o $@ $^ $(CLUSTER_LDLIBS)

ALL += $(BUILD)/lib/libpulse_cluster.a $(BUILD)/bin/pulse-run-cluster
INSTALL_BINS += $(BUILD)/bin/pulse-run-cluster

# ---- tests (tests/sim-cluster/) ----
# Each test_X is tests/sim-cluster/X.c with the shared helpers, under ASan+UBSan:
#   test_cluster      the simulator's physics, formats and errors
#   test_events       benign events and fault shapes (sim/README.md, "Benign events",
#                     "Faults as they happen")
#   test_calibration  the paper's Appendix D case studies, qualitatively
#   test_parallel     parallelism as deployed: TP across hosts, sequence parallelism, ZeRO-3
#   test_nccl_deployed NCCL as deployed: LL/LL128 protocols, NICs shared by two GPUs
CLUSTER_TESTS := test_cluster test_events test_calibration test_parallel test_nccl_deployed
define cluster_test_rule
$$(BUILD)/tests/$(1): $$(call objs,asan,tests/sim-cluster/$(1).c tests/sim-cluster/cluster_testutil.c) $$(BUILD)/lib/asan/libpulse_cluster.a \
		$$(BUILD)/lib/asan/libpulse_wire.a
	@mkdir -p $$(@D)
	$$(CC) $$(SAN_CFLAGS) -o $$@ $$^ -lcmocka $$(CLUSTER_LDLIBS)
TEST_PROGS += $$(BUILD)/tests/$(1)
endef
$(foreach t,$(CLUSTER_TESTS),$(eval $(call cluster_test_rule,$(t))))
TEST_SCRIPTS += tests/sim-cluster/scenarios.sh
test: $(BUILD)/bin/pulse-run-cluster

# ---- benchmark (BENCHMARKS.md, "run_cluster") ----
# The paper's 64-GPU GPT (8 hosts x 8 GPUs: 8-way TP, 4-way DP, 2-way PP),
# 10 iterations, on one core; three runs.
.PHONY: bench-run-cluster
bench-run-cluster: $(BUILD)/bin/pulse-run-cluster
	@mkdir -p $(BUILD)/bench
	@echo "== run_cluster: 64 GPUs x 10 iterations of GPT ($$(lscpu | sed -n 's/^Model name: *//p'))"
	@for i in 1 2 3; do \
		rm -rf $(BUILD)/bench/run-cluster-gpt64; \
		taskset -c 0 $(BUILD)/bin/pulse-run-cluster tests/sim-cluster/bench-gpt64.json \
			--out $(BUILD)/bench/run-cluster-gpt64 || exit 1; \
	done | tee $(BUILD)/bench/run-cluster.txt | grep -E 'sim time|tx events|wall time|events/s|peak RSS'
	@du -sh $(BUILD)/bench/run-cluster-gpt64
BENCH_TARGETS += bench-run-cluster

# ---- fuzz target (libFuzzer; clang only) ----
$(BUILD)/fuzz/fuzz_scenario: tests/sim-cluster/fuzz_scenario.c sim/cluster/scenario.c sim/cluster/simai_parse.c sim/util.c sim/cluster/cluster.h
	@mkdir -p $(@D)
	$(CLANG) -std=c11 -g -O1 -Iinclude $(CLUSTER_PKG_CFLAGS) -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=all $(WARN) -o $@ tests/sim-cluster/fuzz_scenario.c sim/cluster/scenario.c sim/cluster/simai_parse.c sim/util.c -lcjson -lm
TEST_SCRIPTS += tests/sim-cluster/fuzz_scenario.sh
test: $(BUILD)/fuzz/fuzz_scenario

# the fluid fabric alone: engine.c and the allocation helpers, nothing of
# the NCCL model or the ranks (they call the fabric, never the reverse)
$(BUILD)/tests/test_fabric: $(call objs,asan,tests/sim-cluster/test_fabric.c sim/cluster/engine.c sim/util.c)
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) -o $@ $^ -lcmocka -lm
TEST_PROGS += $(BUILD)/tests/test_fabric

# the SimAI workload reader's fuzz target (the reader alone)
$(BUILD)/fuzz/fuzz_simai: tests/sim-cluster/fuzz_simai.c sim/cluster/simai_parse.c sim/util.c sim/cluster/simai.h
	@mkdir -p $(@D)
	$(CLANG) -std=c11 -g -O1 -Iinclude -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=all $(WARN) -o $@ tests/sim-cluster/fuzz_simai.c sim/cluster/simai_parse.c sim/util.c
TEST_SCRIPTS += tests/sim-cluster/fuzz_simai.sh
test: $(BUILD)/fuzz/fuzz_simai

# the SimAI workload: reader, scenario keys, a run (tests/sim-cluster/test_simai.c);
# the real files are read in place from ../shared/workloads/simai
CFLAGS_tests/sim-cluster/test_simai.c := $(CLUSTER_PKG_CFLAGS) -DSIMAI_DIR='"$(CURDIR)/../shared/workloads/simai"'
$(BUILD)/tests/test_simai: $(call objs,asan,tests/sim-cluster/test_simai.c) $(BUILD)/lib/asan/libpulse_cluster.a \
		$(BUILD)/lib/asan/libpulse_wire.a
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) -o $@ $^ -lcmocka $(CLUSTER_LDLIBS)
TEST_PROGS += $(BUILD)/tests/test_simai
