# The bare-metal rv64imac image of the NIC agent (qemu-system-riscv64 virt,
# picolibc, semihosting) and the x86 replay driver it is checked against.
#
#   $(BUILD)/rv64/pulse-fw.elf    modes: selftest | replay IN OUT [opts] | icount [OUT]
#   $(BUILD)/bin/pulse-fw-replay  the same replay driver and self-test on x86
#   make bench-rv64-icount        instructions per TX event -> $(BUILD)/bench/rv64-icount.txt
#   make flash-firmware           tools/flash-firmware.sh
#
# Run the image with firmware/platform/emu_rv64/run-qemu.sh.

RV64_CC ?= riscv64-unknown-elf-gcc
RV64_ELF := $(BUILD)/rv64/pulse-fw.elf
RV64_ARCH := -march=rv64imac -mabi=lp64 -mcmodel=medany
RV64_CFLAGS := -std=c11 $(WARN) -O2 -g $(RV64_ARCH) --specs=picolibc.specs -Iinclude -MMD -MP
# Memory map: 4 MiB of flash for code at 0x80000000, then RAM up to the end
# of the 256 MiB qemu gives the guest (run-qemu.sh passes -m 256M). After
# .bss, 1 MiB of heap for picolibc's stdio (fopen allocates), then the core's
# region up to the 64 KiB stack (rv64_fw_memory), never touched by malloc.
RV64_LDFLAGS := $(RV64_ARCH) --specs=picolibc.specs --oslib=semihost --crt0=semihost \
	-Wl,--defsym=__flash=0x80000000 -Wl,--defsym=__flash_size=0x400000 \
	-Wl,--defsym=__ram=0x80400000 -Wl,--defsym=__ram_size=0xFC00000 \
	-Wl,--defsym=__stack_size=0x10000 -Wl,--defsym=__heap_end=__end+0x100000

# The core's sources, as firmware/firmware.mk lists them (that file is read
# after this one, so FW_CORE_SRCS is not set yet; mailbox/mailbox.mk is read
# first).
RV64_CORE_SRCS := $(sort $(wildcard firmware/core/*.c)) $(MAILBOX_PROTO_SRCS)
REPLAY_SRCS := firmware/replay/replay.c firmware/replay/selftest.c
RV64_PLATFORM_SRCS := $(sort $(wildcard firmware/platform/emu_rv64/*.c))
RV64_SRCS := $(RV64_CORE_SRCS) $(REPLAY_SRCS) $(RV64_PLATFORM_SRCS)

$(BUILD)/rv64/obj/%.o: %.c
	@mkdir -p $(@D)
	@command -v $(RV64_CC) >/dev/null || { echo "$(RV64_CC) not found: run 'make deps' (gcc-riscv64-unknown-elf, picolibc-riscv64-unknown-elf)" >&2; exit 1; }
	$(RV64_CC) $(RV64_CFLAGS) $(CFLAGS_$(dir $<)) $(CFLAGS_$<) -c $< -o $@

$(RV64_ELF): $(call objs,rv64/obj,$(RV64_SRCS))
	@mkdir -p $(@D)
	$(RV64_CC) $(RV64_LDFLAGS) $^ -o $@

# The x86 replay driver: the same replay.c and selftest.c on the host core.
$(BUILD)/bin/pulse-fw-replay: $(call objs,obj,$(REPLAY_SRCS) firmware/replay/main_host.c) \
		$(BUILD)/lib/libpulse_fw.a
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) $^ -o $@

ALL += $(BUILD)/bin/pulse-fw-replay
INSTALL_BINS += $(BUILD)/bin/pulse-fw-replay
# The image is part of `make` wherever the RISC-V toolchain is installed; the
# same-output test fails, loudly, where it is not.
ifneq ($(shell command -v $(RV64_CC) 2>/dev/null),)
ALL += $(RV64_ELF)
endif

TEST_SCRIPTS += tests/emu/same-output.sh tests/emu/selftest.sh tests/emu/evgen.sh \
	tests/emu/flash-firmware.sh tests/emu/replay-errors.sh

.PHONY: bench-rv64-icount flash-firmware
bench-rv64-icount: $(RV64_ELF)
	@mkdir -p $(BUILD)/bench
	firmware/platform/emu_rv64/run-qemu.sh --icount $(RV64_ELF) icount $(BUILD)/bench/rv64-icount.txt
BENCH_TARGETS += bench-rv64-icount

# firmware/doca.mk (read before this file) says whether the DOCA build is on.
flash-firmware:
	@MAKE="$(MAKE)" BUILD="$(BUILD)" PULSE_DOCA_FOUND="$(PULSE_DOCA_FOUND)" \
		DOCA_DPA_APP="$(DOCA_DPA_APP)" tools/flash-firmware.sh $(FLASH_ARGS)
