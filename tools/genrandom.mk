# pulse-gen-scenarios: the randomized scenario matrix (tools/gen_random.c;
# tools/gen-scenarios.sh --random, make eval's second part).
GEN_RANDOM_SRCS := tools/gen_random.c

$(BUILD)/bin/pulse-gen-scenarios: $(call objs,obj,$(GEN_RANDOM_SRCS))
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) $^ -o $@

ALL += $(BUILD)/bin/pulse-gen-scenarios
INSTALL_BINS += $(BUILD)/bin/pulse-gen-scenarios
TEST_SCRIPTS += tests/analyzer/gen_random.sh
