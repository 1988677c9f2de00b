# pulse-evgen: deterministic event-stream generator (tests, benchmarks, demos).
EVGEN_SRCS := tools/pulse-evgen.c

$(BUILD)/bin/pulse-evgen: $(call objs,obj,$(EVGEN_SRCS))
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) $^ -o $@

ALL += $(BUILD)/bin/pulse-evgen
INSTALL_BINS += $(BUILD)/bin/pulse-evgen
