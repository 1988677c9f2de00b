# libpulse-hook.so (LD_PRELOAD interception of NCCL and verbs), the ring
# library the host agent links, and their tests (tests/hook/).

# Position-independent, hidden by default (only the interposed entry points
# and pulse_hook_submit are exported), and always optimised: the dlsym and
# dlvsym wrappers rely on sibling calls so glibc sees their caller.
CFLAGS_hook/ := -fPIC -fvisibility=hidden -O2 -foptimize-sibling-calls
CFLAGS_tests/hook/ := -fPIC

HOOK_SRCS := hook/init.c hook/real_sym.c hook/dlsym.c hook/comm_id.c hook/gpu.c hook/nccl.c hook/verbs.c hook/find_loaded.c \
	hook/ring.c
# dlsym/dlvsym run inside sanitizer runtimes' own start-up: never instrumented.
CFLAGS_hook/dlsym.c := -fno-sanitize=all
CFLAGS_hook/real_sym.c := -fno-sanitize=all
HOOK_SO := $(BUILD)/lib/libpulse-hook.so
HOOK_RING_SRCS := hook/ring.c

$(HOOK_SO): $(call objs,obj,$(HOOK_SRCS))
	@mkdir -p $(@D)
	$(CC) -shared -Wl,--no-undefined -Wl,-soname,libpulse-hook.so -o $@ $^ -ldl $(HOST_LDLIBS)

# The reader side for the host agent: pulse_hook_ring_open/drain/stats/scan.
$(call static_lib,pulse_hookring,$(HOOK_RING_SRCS),obj asan tsan)

ALL += $(HOOK_SO) $(BUILD)/lib/libpulse_hookring.a

# ---- tests ----
HOOK_TDIR := $(BUILD)/tests/hook
HOOK_TEST_LIBS := -lcmocka $(HOST_LDLIBS)

# Stand-in libibverbs.so.1 with IBVERBS_1.0/1.1 symbol versions.
$(HOOK_TDIR)/libibverbs.so.1: $(BUILD)/obj/tests/hook/fake_verbs.o tests/hook/fake_verbs.map
	@mkdir -p $(@D)
	$(CC) -shared -Wl,-soname,libibverbs.so.1 -Wl,--version-script=tests/hook/fake_verbs.map \
		-o $@ $(BUILD)/obj/tests/hook/fake_verbs.o
# Its unversioned name too: the stand-in NCCL, like NCCL, dlopens
# "libibverbs.so" first, which must not find a system libibverbs-dev's.
$(HOOK_TDIR)/libibverbs.so: $(HOOK_TDIR)/libibverbs.so.1
	ln -sf libibverbs.so.1 $@
# Stand-in libmlx5.so.1 with mlx5dv_create_qp@@MLX5_1.3.
$(HOOK_TDIR)/libmlx5.so.1: $(BUILD)/obj/tests/hook/fake_mlx5.o tests/hook/fake_mlx5.map
	@mkdir -p $(@D)
	$(CC) -shared -Wl,-soname,libmlx5.so.1 -Wl,--version-script=tests/hook/fake_mlx5.map \
		-o $@ $(BUILD)/obj/tests/hook/fake_mlx5.o
# Stand-in libnccl.so.2: dlopens libibverbs.so.1 from its own directory.
$(HOOK_TDIR)/libnccl.so.2: $(BUILD)/obj/tests/hook/fake_nccl.o
	@mkdir -p $(@D)
	$(CC) -shared -Wl,-soname,libnccl.so.2 -Wl,-rpath,'$$ORIGIN' -o $@ $^ -ldl
# The unmodified training program, linked against the stand-in NCCL.
$(HOOK_TDIR)/train: $(BUILD)/obj/tests/hook/train.o $(HOOK_TDIR)/libnccl.so.2
	$(CC) -o $@ $< $(HOOK_TDIR)/libnccl.so.2 -Wl,-rpath,'$$ORIGIN'
# train.c as a Python extension module would hold it (NCCL a dependency of a
# library dlopened with RTLD_LOCAL), and the loader that dlopens it that way.
$(BUILD)/obj/tests/hook/train_module.o: tests/hook/train.c
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) -fPIC -Dmain=train_main -c -o $@ $<
$(HOOK_TDIR)/libtrain_module.so: $(BUILD)/obj/tests/hook/train_module.o $(HOOK_TDIR)/libnccl.so.2
	$(CC) -shared -o $@ $< $(HOOK_TDIR)/libnccl.so.2 -Wl,-rpath,'$$ORIGIN'
$(HOOK_TDIR)/load_local: $(BUILD)/obj/tests/hook/load_local.o
	$(CC) -o $@ $< -ldl
# Other entry points, direct verbs linking and dlsym(RTLD_NEXT) semantics.
$(HOOK_TDIR)/apis: $(BUILD)/obj/tests/hook/apis.o $(HOOK_TDIR)/libnccl.so.2 $(HOOK_TDIR)/libibverbs.so.1 \
		$(HOOK_TDIR)/libmlx5.so.1
	$(CC) -o $@ $< $(HOOK_TDIR)/libnccl.so.2 $(HOOK_TDIR)/libibverbs.so.1 $(HOOK_TDIR)/libmlx5.so.1 \
		-Wl,-rpath,'$$ORIGIN' -ldl

# NCCL 2.22-2.29 entry points; NCCL's own-thread inits; a calloc that fails on demand.
$(HOOK_TDIR)/newapis: $(BUILD)/obj/tests/hook/newapis.o $(HOOK_TDIR)/libnccl.so.2
	$(CC) -o $@ $< $(HOOK_TDIR)/libnccl.so.2 -Wl,-rpath,'$$ORIGIN'
$(HOOK_TDIR)/inits: $(BUILD)/obj/tests/hook/inits.o $(HOOK_TDIR)/libnccl.so.2
	$(CC) -o $@ $< $(HOOK_TDIR)/libnccl.so.2 -Wl,-rpath,'$$ORIGIN'
$(HOOK_TDIR)/libfailcalloc.so: $(BUILD)/obj/tests/hook/failcalloc.o
	@mkdir -p $(@D)
	$(CC) -shared -o $@ $^ -ldl

HOOK_FIXTURES := $(HOOK_SO) $(BUILD)/lib/libpulse-nccl-profiler.so $(HOOK_TDIR)/libibverbs.so.1 \
	$(HOOK_TDIR)/libibverbs.so $(HOOK_TDIR)/libmlx5.so.1 $(HOOK_TDIR)/libnccl.so.2 \
	$(HOOK_TDIR)/train $(HOOK_TDIR)/apis $(HOOK_TDIR)/newapis $(HOOK_TDIR)/inits $(HOOK_TDIR)/libfailcalloc.so \
	$(HOOK_TDIR)/libtrain_module.so $(HOOK_TDIR)/load_local

$(BUILD)/tests/test_hook: $(BUILD)/obj/tests/hook/test_hook.o $(BUILD)/lib/libpulse_hookring.a \
		| $(HOOK_FIXTURES)
	@mkdir -p $(@D)
	$(CC) $(OPT) -o $@ $(filter-out |,$^) $(HOOK_TEST_LIBS) -lrt
$(BUILD)/tests/test_hook_ring: $(BUILD)/obj/tests/hook/test_hook_ring.o $(BUILD)/lib/libpulse_hookring.a
	@mkdir -p $(@D)
	$(CC) $(OPT) -o $@ $^ $(HOOK_TEST_LIBS) -lrt
$(BUILD)/tests/tsan/test_hook_ring: $(BUILD)/tsan/tests/hook/test_hook_ring.o \
		$(BUILD)/lib/tsan/libpulse_hookring.a
	@mkdir -p $(@D)
	$(CC) $(OPT) $(TSAN_CFLAGS) -o $@ $^ $(HOOK_TEST_LIBS) -lrt

TEST_PROGS += $(BUILD)/tests/test_hook $(BUILD)/tests/test_hook_ring $(BUILD)/tests/tsan/test_hook_ring

# ---- benchmarks: make bench -> build/bench/hook.md ----
$(HOOK_TDIR)/bench_calls: $(BUILD)/obj/tests/hook/bench_calls.o $(HOOK_TDIR)/libnccl.so.2
	$(CC) -o $@ $< $(HOOK_TDIR)/libnccl.so.2 -Wl,-rpath,'$$ORIGIN'
$(BUILD)/bench/bench_hook: $(BUILD)/obj/tests/hook/bench_hook.o $(BUILD)/lib/libpulse_hookring.a \
		| $(HOOK_SO) $(HOOK_TDIR)/bench_calls $(HOOK_TDIR)/libibverbs.so.1
	@mkdir -p $(@D)
	$(CC) -o $@ $^ $(HOST_LDLIBS) -lrt
.PHONY: bench-hook
bench-hook: $(BUILD)/bench/bench_hook
	@echo "== Interception: ns per call and ring records/s (this machine: $$(nproc) cores, $$(lscpu | sed -n 's/^Model name: *//p'))"
	$(BUILD)/bench/bench_hook | tee $(BUILD)/bench/hook.md
BENCH_TARGETS += bench-hook

# ---- many threads through the hook, plain and TSan ----
$(BUILD)/lib/tsan/libpulse-hook.so: $(call objs,tsan,$(HOOK_SRCS))
	@mkdir -p $(@D)
	$(CC) -shared $(TSAN_CFLAGS) -Wl,-soname,libpulse-hook.so -o $@ $^ -ldl $(HOST_LDLIBS)
$(HOOK_TDIR)/threads: $(BUILD)/obj/tests/hook/threads.o $(HOOK_TDIR)/libnccl.so.2
	$(CC) -o $@ $< $(HOOK_TDIR)/libnccl.so.2 -Wl,-rpath,'$$ORIGIN' $(HOST_LDLIBS)
$(HOOK_TDIR)/tsan/threads: $(BUILD)/tsan/tests/hook/threads.o $(HOOK_TDIR)/libnccl.so.2
	@mkdir -p $(@D)
	$(CC) $(TSAN_CFLAGS) -o $@ $< $(HOOK_TDIR)/libnccl.so.2 -Wl,-rpath,'$$ORIGIN/..' $(HOST_LDLIBS)
$(BUILD)/tests/test_hook_threads: $(BUILD)/obj/tests/hook/test_hook_threads.o \
		$(BUILD)/lib/libpulse_hookring.a | $(HOOK_SO) $(HOOK_TDIR)/threads $(HOOK_TDIR)/libibverbs.so.1
	@mkdir -p $(@D)
	$(CC) $(OPT) -o $@ $^ $(HOOK_TEST_LIBS) -lrt
$(BUILD)/tests/tsan/test_hook_threads: $(BUILD)/obj/tests/hook/test_hook_threads.o \
		$(BUILD)/lib/libpulse_hookring.a | $(BUILD)/lib/tsan/libpulse-hook.so \
		$(HOOK_TDIR)/tsan/threads $(HOOK_TDIR)/libibverbs.so.1
	@mkdir -p $(@D)
	$(CC) $(OPT) -o $@ $^ $(HOOK_TEST_LIBS) -lrt
TEST_PROGS += $(BUILD)/tests/test_hook_threads $(BUILD)/tests/tsan/test_hook_threads

# Stand-in CUDA runtime (cudaGetDevice, cudaDeviceGetPCIBusId) for the GPU-identity test.
$(HOOK_TDIR)/libcudart.so.12: $(BUILD)/obj/tests/hook/fake_cudart.o
	@mkdir -p $(@D)
	$(CC) -shared -Wl,-soname,libcudart.so.12 -o $@ $^
$(BUILD)/tests/test_hook: | $(HOOK_TDIR)/libcudart.so.12
