# NIC agent core, host builds (x86): the library sim/, tools and tests link.
FW_CORE_SRCS := $(sort $(wildcard firmware/core/*.c)) $(MAILBOX_PROTO_SRCS)
# The core is freestanding: no hosted headers, no libc calls beyond what
# picolibc gives the RISC-V image (memset/memcpy through builtins).
FW_CORE_FLAGS := -ffreestanding -fno-builtin-malloc
CFLAGS_firmware/core/ := $(FW_CORE_FLAGS)
CFLAGS_mailbox/proto.c := $(FW_CORE_FLAGS)

$(BUILD)/lib/libpulse_fw.a: $(call objs,obj,$(FW_CORE_SRCS))
	@mkdir -p $(@D)
	ar rcs $@ $^
$(BUILD)/lib/asan/libpulse_fw.a: $(call objs,asan,$(FW_CORE_SRCS))
	@mkdir -p $(@D)
	ar rcs $@ $^
$(BUILD)/lib/tsan/libpulse_fw.a: $(call objs,tsan,$(FW_CORE_SRCS))
	@mkdir -p $(@D)
	ar rcs $@ $^

ALL += $(BUILD)/lib/libpulse_fw.a
