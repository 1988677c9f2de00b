# Pulse: one Makefile for the whole tree.
#
#   make                 build everything that this machine can build
#   make test            build and run all tests (unit, sanitizers, fuzz, emulator)
#   make bench           run the benchmarks (results go to build/bench/)
#   make deps            install the Debian packages the build and tests need
#   make flash-firmware  build the NIC agent image and load it (or boot it on qemu)
#   make install         install the binaries under $(PREFIX)
#
# Each component keeps its rules in its own fragment (firmware/firmware.mk,
# mailbox/mailbox.mk, ...). Fragments append to ALL, TEST_PROGS, TEST_SCRIPTS
# and BENCH_TARGETS.

.DEFAULT_GOAL := all
.DELETE_ON_ERROR:
.SUFFIXES:

BUILD ?= build
PREFIX ?= /usr/local
CC ?= cc
CLANG ?= clang

OPT ?= -O2 -g
WARN := -Wall -Wextra -Werror
HOST_CFLAGS := -std=c11 $(WARN) $(OPT) -Iinclude -MMD -MP
SAN_CFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
TSAN_CFLAGS := -fsanitize=thread -fno-omit-frame-pointer
HOST_LDLIBS := -lpthread

# Three host builds of every C file: plain, ASan+UBSan, TSan.
$(BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) $(CFLAGS_$(dir $<)) $(CFLAGS_$<) -c $< -o $@
$(BUILD)/asan/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) $(SAN_CFLAGS) $(CFLAGS_$(dir $<)) $(CFLAGS_$<) -c $< -o $@
$(BUILD)/tsan/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) $(TSAN_CFLAGS) $(CFLAGS_$(dir $<)) $(CFLAGS_$<) -c $< -o $@

# objs VARIANT, SOURCES -> object paths
objs = $(patsubst %.c,$(BUILD)/$(1)/%.o,$(2))

# $(call static_lib,NAME,SOURCES[,VARIANTS]): one archive of SOURCES per
# variant (obj, asan, tsan; default obj asan): $(BUILD)/lib/libNAME.a for
# the plain build, $(BUILD)/lib/VARIANT/libNAME.a for the others.
lib_path = $(BUILD)/lib/$(if $(filter obj,$(2)),,$(2)/)lib$(1).a
define static_lib_rule
$(call lib_path,$(1),$(2)): $(call objs,$(2),$(3))
	@mkdir -p $$(@D)
	ar rcs $$@ $$^
endef
static_lib = $(foreach v,$(or $(3),obj asan),$(eval $(call static_lib_rule,$(1),$(v),$(2))))

ALL :=
TEST_PROGS :=
TEST_SCRIPTS :=
BENCH_TARGETS :=
INSTALL_BINS :=

# mailbox/ first: the firmware library and every host program build on it.
include $(sort $(wildcard mailbox/*.mk wire/*.mk om/*.mk bus/*.mk))
include $(sort $(wildcard firmware/*.mk sim/*.mk tools/*.mk host-agent/*.mk analyzer/*.mk tests/*.mk hook/*.mk profiler/*.mk sink/*.mk dashboards/*.mk))

.PHONY: all test bench deps ensure-deps flash-firmware install clean demo
all: $(ALL)

# The README's commands must work on a fresh Debian machine, so they install
# what is missing first (a quick no-op when everything is there). SKIP_DEPS=1
# skips that, e.g. on a machine without sudo that has the packages already.
ifeq ($(SKIP_DEPS),1)
ensure-deps: ;
else
ensure-deps:
	@tools/install-deps.sh
endif

test: ensure-deps
	@$(MAKE) --no-print-directory all $(TEST_PROGS)
	@tests/run-tests.sh $(TEST_PROGS) -- $(TEST_SCRIPTS)

# The main job, end to end, with no hardware (tools/demo.sh): a simulated
# GPT job with one hidden failure -> NIC events -> the firmware core ->
# pulse-host-agent per host -> pulse-analyzer, which names the machine; its
# verdict next to the OP-level baseline's, then the truth.
# The build is quiet here: one line, its full output only when it fails
# (or with V=1), so that the story starts at once.
demo: ensure-deps
ifeq ($(V),1)
	@$(MAKE) --no-print-directory all
else
	@mkdir -p $(BUILD); printf 'demo: building (make all; V=1 shows the compiler lines) ... '; \
	t0=$$(date +%s); \
	if $(MAKE) --no-print-directory all >$(BUILD)/demo-build.log 2>&1; then \
		echo "ok ($$(($$(date +%s) - t0)) s, log: $(BUILD)/demo-build.log)"; \
	else \
		echo failed; cat $(BUILD)/demo-build.log; exit 1; \
	fi
endif
	@tools/demo.sh
TEST_SCRIPTS += tests/demo/demo.sh

bench: ensure-deps
	@$(MAKE) --no-print-directory all
	@$(MAKE) --no-print-directory $(BENCH_TARGETS)

deps:
	@tools/install-deps.sh

install: $(INSTALL_BINS)
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(INSTALL_BINS) $(DESTDIR)$(PREFIX)/bin/

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
