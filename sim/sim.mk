# sim/: RoCEv2 decoding, capture replay through the firmware core (run_trace),
# the Unix-socket mailbox transport and their tests, fuzz target and benchmarks.

SIM_PKG_CFLAGS := $(shell pkg-config --cflags libcjson 2>/dev/null || echo -I/usr/include/cjson)
SIM_LDLIBS := -lpcap -lcjson -lm $(HOST_LDLIBS)
CFLAGS_sim/ := $(SIM_PKG_CFLAGS)
CFLAGS_tests/sim/ := $(SIM_PKG_CFLAGS)

# The decoder alone: no libpcap, used by the fuzz target and the trace generator.
SIM_DECODE_SRCS := sim/roce_decode.c

$(BUILD)/lib/libpulse_roce.a: $(call objs,obj,$(SIM_DECODE_SRCS))
	@mkdir -p $(@D)
	ar rcs $@ $^
$(BUILD)/lib/asan/libpulse_roce.a: $(call objs,asan,$(SIM_DECODE_SRCS))
	@mkdir -p $(@D)
	ar rcs $@ $^

ALL += $(BUILD)/lib/libpulse_roce.a

# ---- tests ----
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
