# Mailbox protocol codec: freestanding, linked by both the firmware and the host.
MAILBOX_PROTO_SRCS := mailbox/proto.c

# Host side: the mailbox client every host program uses to poll a NIC agent.
MAILBOX_HOST_SRCS := mailbox/client.c $(MAILBOX_PROTO_SRCS)
$(call static_lib,pulse_host,$(MAILBOX_HOST_SRCS))
ALL += $(BUILD)/lib/libpulse_host.a
