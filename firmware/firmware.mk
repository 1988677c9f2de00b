# NIC agent core, host builds (x86): the library sim/, tools and tests link.
FW_CORE_SRCS := $(sort $(wildcard firmware/core/*.c)) $(MAILBOX_PROTO_SRCS)
# The core is freestanding: no hosted headers, no libc calls beyond what
# picolibc gives the RISC-V image (memset/memcpy through builtins).
FW_CORE_FLAGS := -ffreestanding -fno-builtin-malloc
CFLAGS_firmware/core/ := $(FW_CORE_FLAGS)
CFLAGS_mailbox/proto.c := $(FW_CORE_FLAGS)

$(call static_lib,pulse_fw,$(FW_CORE_SRCS),obj asan tsan)

ALL += $(BUILD)/lib/libpulse_fw.a
