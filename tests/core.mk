# Tests of the NIC agent core and the mailbox protocol, written from the
# interface (include/pulse/nic_agent.h, mailbox_proto.h, tx_event.h):
#   - cmocka unit tests, built twice: plain and ASan+UBSan;
#   - a multi-threaded stress test, built plain and with TSan;
#   - a libFuzzer target over pulse_fw_mailbox, run for a bounded time.

CORE_TEST_UTIL := tests/unit/fw_test_util.c
CORE_UNIT_TESTS := $(sort $(wildcard tests/unit/test_fw_*.c tests/unit/test_mailbox_*.c))
CORE_UNIT_NAMES := $(notdir $(basename $(CORE_UNIT_TESTS)))
CORE_TEST_LIBS := -lcmocka $(HOST_LDLIBS)

# One unit test program, NAME: plain and ASan+UBSan builds.
define CORE_UNIT_RULES
$$(BUILD)/tests/$(1): $$(BUILD)/obj/tests/unit/$(1).o $$(call objs,obj,$$(CORE_TEST_UTIL)) \
		$$(BUILD)/lib/libpulse_fw.a
	@mkdir -p $$(@D)
	$$(CC) $$(OPT) -o $$@ $$^ $$(CORE_TEST_LIBS)
$$(BUILD)/tests/asan/$(1): $$(BUILD)/asan/tests/unit/$(1).o $$(call objs,asan,$$(CORE_TEST_UTIL)) \
		$$(BUILD)/lib/asan/libpulse_fw.a
	@mkdir -p $$(@D)
	$$(CC) $$(OPT) $$(SAN_CFLAGS) -o $$@ $$^ $$(CORE_TEST_LIBS)
endef
$(foreach t,$(CORE_UNIT_NAMES),$(eval $(call CORE_UNIT_RULES,$(t))))

# Stress: plain and TSan.
$(BUILD)/tests/stress_fw: $(BUILD)/obj/tests/stress/stress_fw.o $(call objs,obj,$(CORE_TEST_UTIL)) \
		$(BUILD)/lib/libpulse_fw.a
	@mkdir -p $(@D)
	$(CC) $(OPT) -o $@ $^ $(CORE_TEST_LIBS)
$(BUILD)/tests/tsan/stress_fw: $(BUILD)/tsan/tests/stress/stress_fw.o \
		$(call objs,tsan,$(CORE_TEST_UTIL)) $(BUILD)/lib/tsan/libpulse_fw.a
	@mkdir -p $(@D)
	$(CC) $(OPT) $(TSAN_CFLAGS) -o $@ $^ $(CORE_TEST_LIBS)

TEST_PROGS += $(addprefix $(BUILD)/tests/,$(CORE_UNIT_NAMES)) \
	$(addprefix $(BUILD)/tests/asan/,$(CORE_UNIT_NAMES)) \
	$(BUILD)/tests/stress_fw $(BUILD)/tests/tsan/stress_fw

# libFuzzer target: clang only. The core is compiled straight into the fuzzer
# (coverage instrumentation needs clang objects, and gcc's ASan runtime does
# not mix with clang's).
CORE_FUZZ_BIN := $(BUILD)/fuzz/fuzz_mailbox
CORE_FUZZ_SRCS := $(sort $(wildcard firmware/core/*.c) $(MAILBOX_PROTO_SRCS))
CORE_FUZZ_FLAGS := -std=c11 -O1 -g -Iinclude -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined -fno-omit-frame-pointer
ifneq ($(shell command -v $(CLANG) 2>/dev/null),)
$(CORE_FUZZ_BIN): tests/fuzz/fuzz_mailbox.c $(CORE_FUZZ_SRCS) $(wildcard include/pulse/*.h)
	@mkdir -p $(@D)
	$(CLANG) $(CORE_FUZZ_FLAGS) -Wall -Wextra -o $@ tests/fuzz/fuzz_mailbox.c $(CORE_FUZZ_SRCS)
test: $(CORE_FUZZ_BIN)
endif
# Runs $(CORE_FUZZ_BIN) for FUZZ_SECONDS (default 20); skips (77) without clang.
TEST_SCRIPTS += tests/fuzz/run-fuzz.sh
export FUZZ_TARGET := $(CORE_FUZZ_BIN)
