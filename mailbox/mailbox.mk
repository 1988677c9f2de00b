# Mailbox protocol codec: freestanding, linked by both the firmware and the host.
MAILBOX_PROTO_SRCS := mailbox/proto.c
