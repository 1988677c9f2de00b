# DOCA build: the Pulse NIC agent as a DOCA PCC application on the
# BlueField-3 DPA, and the host's DOCA PCC mailbox transport.
#
# Built ONLY when the NVIDIA DOCA SDK is installed: pkg-config finds
# doca-pcc, and dpacc (NVIDIA's DPA compiler) is in PATH or at
# /opt/mellanox/doca/tools/dpacc. Otherwise this fragment adds nothing to
# ALL, the host programs get mailbox/transport_doca_none.c (which fails
# --device with a plain message), and `make doca-check` says what is missing.
# There is no SDK on the CI machines, so the dpacc rule below has never run
# in this repository; it follows the documented dpacc usage and the DOCA PCC
# sample's build script (applications/pcc/build_device_code.sh, DOCA 2.6 and
# 3.0), see docs/hardware.md. tests/doca-decls/check.sh (always run) and
# tests/doca-fake/ check the code itself.
#
# For other fragments (host-agent/*.mk is read after this one):
#   PULSE_DOCA_FOUND     yes | no
#   DOCA_TRANSPORT_SRCS  mailbox/transport_doca.c | mailbox/transport_doca_none.c
#   DOCA_HOST_DEPS       extra prerequisites of a program linking the transport
#   DOCA_HOST_LDLIBS     extra link arguments for it (SDK: the DPA program
#                        archive and the doca-pcc, doca-common, flexio libs)
# A host program using the transport:
#   prog: $(call objs,obj,... $(DOCA_TRANSPORT_SRCS)) $(DOCA_HOST_DEPS)
#   	$(CC) ... $^ $(DOCA_HOST_LDLIBS) $(HOST_LDLIBS)
#
# Tunables (make VAR=value):
#   DOCA_MCPU             dpacc -mcpu target (nv-dpa-bf3; documented values:
#                         nv-dpa-bf3, nv-dpa-cx7, nv-dpa-cx8)
#   PULSE_DPA_MEM_MB      static DPA memory for the core (256)
#   PULSE_DPA_MAX_FLOWS   flow slots (16384)
#   PULSE_DPA_DELEGATE_CC 1: keep the NIC's built-in congestion control (0)

DOCA_PKG_CONFIG ?= pkg-config
DOCA_DPACC ?= $(firstword $(shell command -v dpacc 2>/dev/null) \
	$(wildcard /opt/mellanox/doca/tools/dpacc))
DOCA_PCC_PC := $(shell $(DOCA_PKG_CONFIG) --exists doca-pcc 2>/dev/null && echo yes)

.PHONY: doca-check

ifeq ($(DOCA_PCC_PC)$(if $(DOCA_DPACC),yes),yesyes)
PULSE_DOCA_FOUND := yes

DOCA_MCPU ?= nv-dpa-bf3
PULSE_DPA_MEM_MB ?= 256
PULSE_DPA_MAX_FLOWS ?= 16384
PULSE_DPA_DELEGATE_CC ?= 0

# Must match the extern in mailbox/transport_doca.c (PULSE_DOCA_APP_NAME).
DOCA_APP_NAME := pulse_dpa_app
DOCA_BUILD := $(BUILD)/doca
# dpacc's output: a host library holding the DPA ELF and the host stubs that
# define `struct doca_pcc_app *pulse_dpa_app`.
DOCA_DPA_APP := $(DOCA_BUILD)/lib$(DOCA_APP_NAME).a

DOCA_INCDIR := $(shell $(DOCA_PKG_CONFIG) --variable=includedir doca-pcc)
DOCA_LIBDIR := $(shell $(DOCA_PKG_CONFIG) --variable=libdir doca-common)
DOCA_HOST_CFLAGS := $(shell $(DOCA_PKG_CONFIG) --cflags doca-pcc doca-common) \
	-DDOCA_ALLOW_EXPERIMENTAL_API
DOCA_HOST_DEPS := $(DOCA_DPA_APP)
DOCA_HOST_LDLIBS := $(DOCA_DPA_APP) \
	$(shell $(DOCA_PKG_CONFIG) --libs doca-pcc doca-common) \
	$(shell $(DOCA_PKG_CONFIG) --libs libflexio 2>/dev/null)
DOCA_TRANSPORT_SRCS := mailbox/transport_doca.c

# Device compiler options, comma-separated as dpacc's --devicecc-options
# takes them: freestanding, medany code model, little-endian DOCA structs
# (E_MODE_LE, as the DOCA samples pass), the experimental-API opt-in, and the
# Pulse build-time limits.
comma := ,
DOCA_DEVICE_OPTS := -std=c11 -Wall -Wextra -Werror -O2 -ffreestanding -mcmodel=medany \
	-DE_MODE_LE -DDOCA_ALLOW_EXPERIMENTAL_API -Iinclude -I$(DOCA_INCDIR) \
	-DPULSE_DPA_MEM_MB=$(PULSE_DPA_MEM_MB) -DPULSE_DPA_MAX_FLOWS=$(PULSE_DPA_MAX_FLOWS) \
	-DPULSE_DPA_DELEGATE_CC=$(PULSE_DPA_DELEGATE_CC)
DOCA_HOSTCC_OPTS := -Wno-deprecated-declarations -Werror

# The DPA program: the glue plus the unchanged firmware core and the
# freestanding mailbox codec, linked with the DOCA PCC device library
# (-ldoca_pcc_dev, which owns the event loop and calls our handlers).
# Prerequisites are globbed because firmware.mk (FW_CORE_SRCS) is read after
# this file; the recipe expands FW_CORE_SRCS when it runs.
$(DOCA_DPA_APP): firmware/platform/doca_dpa/pulse_dpa.c $(wildcard firmware/core/*.c \
		firmware/core/*.h mailbox/proto.c include/pulse/*.h) firmware/doca.mk
	@mkdir -p $(@D)
	$(DOCA_DPACC) $(sort firmware/platform/doca_dpa/pulse_dpa.c $(FW_CORE_SRCS)) \
		-o $@ \
		-mcpu=$(DOCA_MCPU) \
		-hostcc=$(CC) \
		-hostcc-options="$(DOCA_HOSTCC_OPTS)" \
		--devicecc-options="$(subst $(eval) ,$(comma),$(strip $(DOCA_DEVICE_OPTS)))" \
		-device-libs="-L$(DOCA_LIBDIR) -ldoca_pcc_dev" \
		--app-name=$(DOCA_APP_NAME)

# The real transport needs the SDK's include flags: explicit rules override
# the Makefile's pattern rules for these three objects.
$(BUILD)/obj/mailbox/transport_doca.o: mailbox/transport_doca.c
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) $(DOCA_HOST_CFLAGS) -c $< -o $@
$(BUILD)/asan/mailbox/transport_doca.o: mailbox/transport_doca.c
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) $(SAN_CFLAGS) $(DOCA_HOST_CFLAGS) -c $< -o $@
$(BUILD)/tsan/mailbox/transport_doca.o: mailbox/transport_doca.c
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) $(TSAN_CFLAGS) $(DOCA_HOST_CFLAGS) -c $< -o $@

ALL += $(DOCA_DPA_APP) $(BUILD)/obj/mailbox/transport_doca.o

doca-check:
	@echo "DOCA SDK found: pkg-config doca-pcc $$($(DOCA_PKG_CONFIG) --modversion doca-pcc), dpacc $(DOCA_DPACC)"
	@echo "The DOCA build is enabled: $(DOCA_DPA_APP) (-mcpu=$(DOCA_MCPU), $(PULSE_DPA_MEM_MB) MiB, $(PULSE_DPA_MAX_FLOWS) flows, delegate CC $(PULSE_DPA_DELEGATE_CC)) and the DOCA PCC transport."

else
PULSE_DOCA_FOUND := no
DOCA_TRANSPORT_SRCS := mailbox/transport_doca_none.c
DOCA_HOST_DEPS :=
DOCA_HOST_LDLIBS :=

doca-check:
	@echo "DOCA SDK not found: pkg-config doca-pcc: $(if $(DOCA_PCC_PC),found,missing); dpacc: $(if $(DOCA_DPACC),$(DOCA_DPACC),missing (not in PATH nor /opt/mellanox/doca/tools/dpacc))."
	@echo "The DOCA build was skipped: no DPA application, and --device fails at run time with a message (transport_doca_none.c). See docs/hardware.md."
endif

# Always: the glue type-checks against the documented API without the SDK.
TEST_SCRIPTS += tests/doca-decls/check.sh

# Always: the glue's logic on x86, linked with the real core and mailbox
# client against a fake of the DOCA functions (tests/doca-fake/). Two builds:
#   ASan+UBSan with the shipping DPA configuration (256 MiB, 16384 flows):
#     the memory plan and the page/mailbox fit of what would go on the NIC;
#   TSan with 100 MiB, 1024 flows and 1 KiB pages: small enough for TSan's
#     shadow memory, and big enough that the default page outgrows 1 KiB, so
#     the glue's pool re-plan runs.
DOCA_FAKE_INC := -Itests/doca-decls -Itests/doca-fake
DOCA_FAKE_ASAN_DEFS := $(DOCA_FAKE_INC) -DTEST_DPA_MAX_FLOWS=16384 -DTEST_PAGE_MAX=4096
DOCA_FAKE_TSAN_DEFS := $(DOCA_FAKE_INC) -DPULSE_DPA_MEM_MB=100 -DPULSE_DPA_MAX_FLOWS=1024 \
	-DPULSE_DPA_PAGE_BYTES_MAX=1024 -DTEST_DPA_MAX_FLOWS=1024 -DTEST_PAGE_MAX=1024
DOCA_FAKE_SRCS := firmware/platform/doca_dpa/pulse_dpa.c mailbox/transport_doca.c \
	tests/doca-fake/fake_doca.c tests/doca-fake/test_doca_glue.c

$(BUILD)/doca-fake/asan/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) $(SAN_CFLAGS) $(DOCA_FAKE_ASAN_DEFS) -c $< -o $@
$(BUILD)/doca-fake/tsan/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) $(TSAN_CFLAGS) $(DOCA_FAKE_TSAN_DEFS) -c $< -o $@

$(BUILD)/tests/test_doca_glue_asan: $(call objs,doca-fake/asan,$(DOCA_FAKE_SRCS)) \
		$(call objs,asan,mailbox/client.c) $(BUILD)/lib/asan/libpulse_fw.a
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) $^ -o $@ -lcmocka $(HOST_LDLIBS)
$(BUILD)/tests/test_doca_glue_tsan: $(call objs,doca-fake/tsan,$(DOCA_FAKE_SRCS)) \
		$(call objs,tsan,mailbox/client.c) $(BUILD)/lib/tsan/libpulse_fw.a
	@mkdir -p $(@D)
	$(CC) $(TSAN_CFLAGS) $^ -o $@ -lcmocka $(HOST_LDLIBS)

TEST_PROGS += $(BUILD)/tests/test_doca_glue_asan $(BUILD)/tests/test_doca_glue_tsan
