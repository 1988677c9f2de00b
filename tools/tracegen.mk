# pulse-tracegen: deterministic RoCEv2 traffic as pcap (tools/tracegen/).
TRACEGEN_LIB_SRCS := tools/tracegen/tracegen.c

$(call static_lib,pulse_tracegen,$(TRACEGEN_LIB_SRCS))
$(BUILD)/bin/pulse-tracegen: $(call objs,obj,tools/tracegen/main.c) $(BUILD)/lib/libpulse_tracegen.a
	@mkdir -p $(@D)
	$(CC) -o $@ $^ $(HOST_LDLIBS)

ALL += $(BUILD)/lib/libpulse_tracegen.a $(BUILD)/bin/pulse-tracegen
INSTALL_BINS += $(BUILD)/bin/pulse-tracegen
