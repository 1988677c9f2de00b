# Mailbox protocol codec: freestanding, linked by both the firmware and the host.
MAILBOX_PROTO_SRCS := mailbox/proto.c

# Host side: the mailbox client every host program uses to poll a NIC agent.
MAILBOX_HOST_SRCS := mailbox/client.c $(MAILBOX_PROTO_SRCS)
$(BUILD)/lib/libpulse_host.a: $(call objs,obj,$(MAILBOX_HOST_SRCS))
	@mkdir -p $(@D)
	ar rcs $@ $^
$(BUILD)/lib/asan/libpulse_host.a: $(call objs,asan,$(MAILBOX_HOST_SRCS))
	@mkdir -p $(@D)
	ar rcs $@ $^
ALL += $(BUILD)/lib/libpulse_host.a
