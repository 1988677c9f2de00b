# libpulse-nccl-profiler.so: the NCCL profiler plugin (NCCL_PROFILER_PLUGIN).
CFLAGS_profiler/ := -fPIC -fvisibility=hidden
PROFILER_SO := $(BUILD)/lib/libpulse-nccl-profiler.so
$(PROFILER_SO): $(BUILD)/obj/profiler/plugin.o $(BUILD)/obj/hook/ring.o
	@mkdir -p $(@D)
	$(CC) -shared -Wl,--no-undefined -Wl,-soname,libpulse-nccl-profiler.so -o $@ $^ -ldl $(HOST_LDLIBS)
ALL += $(PROFILER_SO)

# ---- net profiling with NCCL's threads, plain and TSan (tests/hook/test_profiler_threads.c) ----
$(BUILD)/lib/tsan/libpulse-nccl-profiler.so: $(BUILD)/tsan/profiler/plugin.o $(BUILD)/tsan/hook/ring.o
	@mkdir -p $(@D)
	$(CC) -shared $(TSAN_CFLAGS) -Wl,-soname,libpulse-nccl-profiler.so -o $@ $^ -ldl $(HOST_LDLIBS)
$(BUILD)/tests/test_profiler_threads: $(BUILD)/obj/tests/hook/test_profiler_threads.o \
		$(BUILD)/lib/libpulse_hookring.a | $(PROFILER_SO)
	@mkdir -p $(@D)
	$(CC) $(OPT) -o $@ $(filter-out |,$^) -lcmocka -ldl $(HOST_LDLIBS) -lrt
$(BUILD)/tests/tsan/test_profiler_threads: $(BUILD)/tsan/tests/hook/test_profiler_threads.o \
		$(BUILD)/lib/tsan/libpulse_hookring.a | $(BUILD)/lib/tsan/libpulse-nccl-profiler.so
	@mkdir -p $(@D)
	$(CC) $(OPT) $(TSAN_CFLAGS) -o $@ $(filter-out |,$^) -lcmocka -ldl $(HOST_LDLIBS) -lrt
TEST_PROGS += $(BUILD)/tests/test_profiler_threads $(BUILD)/tests/tsan/test_profiler_threads

# ---- benchmark: make bench-profiler -> build/bench/profiler.md ----
$(BUILD)/bench/bench_profiler: $(BUILD)/obj/tests/hook/bench_profiler.o $(BUILD)/lib/libpulse_hookring.a \
		| $(PROFILER_SO)
	@mkdir -p $(@D)
	$(CC) -o $@ $(filter-out |,$^) -ldl $(HOST_LDLIBS) -lrt
.PHONY: bench-profiler
bench-profiler: $(BUILD)/bench/bench_profiler
	@echo "== Profiler plugin: ns per event, net profiling on and off (this machine: $$(nproc) cores, $$(lscpu | sed -n 's/^Model name: *//p'))"
	$(BUILD)/bench/bench_profiler $(PROFILER_SO) | tee $(BUILD)/bench/profiler.md
BENCH_TARGETS += bench-profiler

# ---- ring_dump: a process's ring as JSON lines (the GPU smoke test reads it) ----
$(HOOK_TDIR)/ring_dump: $(BUILD)/obj/tests/hook/ring_dump.o $(BUILD)/lib/libpulse_hookring.a
	@mkdir -p $(@D)
	$(CC) -o $@ $^ $(HOST_LDLIBS) -lrt
ALL += $(HOOK_TDIR)/ring_dump
TEST_SCRIPTS += tests/hook/torch_smoke_standin.sh
tests/hook/torch_smoke_standin.sh: | $(HOOK_TDIR)/ring_dump $(HOOK_TDIR)/libtrain_module.so $(BUILD)/bin/pulse-host-agent
# agent_net.sh: pulse-host-agent's mapping from the plugin's net records (host-agent/qp_map.c)
TEST_SCRIPTS += tests/hook/agent_net.sh
