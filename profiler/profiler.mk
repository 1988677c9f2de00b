# libpulse-nccl-profiler.so: the NCCL profiler plugin (NCCL_PROFILER_PLUGIN).
CFLAGS_profiler/ := -fPIC -fvisibility=hidden
PROFILER_SO := $(BUILD)/lib/libpulse-nccl-profiler.so
$(PROFILER_SO): $(BUILD)/obj/profiler/plugin.o $(BUILD)/obj/hook/ring.o
	@mkdir -p $(@D)
	$(CC) -shared -Wl,--no-undefined -Wl,-soname,libpulse-nccl-profiler.so -o $@ $^ -ldl $(HOST_LDLIBS)
ALL += $(PROFILER_SO)
