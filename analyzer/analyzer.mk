# analyzer/: pulse-analyzer, the central service that names the faulty
# machine (analyzer/analyzer.h), its tests (tests/analyzer/) and `make eval`
# (tools/eval/).
#
# libpulse_analyzer.a holds everything but main.c, so that the live service
# (analyzer/server_*.c, its own fragment analyzer/server.mk) and the tests
# link the same code. Extra libraries the service needs: ANALYZER_SERVER_LDLIBS.

ANALYZER_PKG_CFLAGS := $(shell pkg-config --cflags libcjson 2>/dev/null || echo -I/usr/include/cjson)
CFLAGS_analyzer/ := $(ANALYZER_PKG_CFLAGS)
CFLAGS_tests/analyzer/ := $(ANALYZER_PKG_CFLAGS) -Ianalyzer
CFLAGS_tools/eval/ := $(ANALYZER_PKG_CFLAGS)

ANALYZER_SRCS := analyzer/state.c analyzer/trigger.c analyzer/diagnosis.c analyzer/window.c \
	analyzer/localize.c analyzer/loc_hang.c analyzer/loc_comm_slow.c analyzer/loc_comp_slow.c \
	analyzer/loc_cpu.c analyzer/loc_lateness.c analyzer/baseline.c analyzer/transfers.c \
	analyzer/report.c analyzer/timeline.c analyzer/replay.c analyzer/watermark.c \
	analyzer/critical_path.c \
	analyzer/excess.c analyzer/slow_ratio.c analyzer/episode.c analyzer/answers.c analyzer/answers_report.c \
	analyzer/device_history.c analyzer/direction.c analyzer/series_fetch.c
ANALYZER_SERVER_SRCS := analyzer/server_conn.c analyzer/server_join.c analyzer/server_main.c \
	analyzer/server_metrics.c analyzer/server_bus.c analyzer/server_series.c
ANALYZER_LDLIBS := -lcjson -lm

$(call static_lib,pulse_analyzer,$(ANALYZER_SRCS))

$(BUILD)/bin/pulse-analyzer: $(call objs,obj,analyzer/main.c $(ANALYZER_SERVER_SRCS)) \
		$(BUILD)/lib/libpulse_analyzer.a $(BUILD)/lib/libpulse_busnats.a $(BUILD)/lib/libpulse_bus.a \
		$(BUILD)/lib/libpulse_wire.a $(BUILD)/lib/libpulse_om.a
	@mkdir -p $(@D)
	$(CC) -o $@ $(filter %.o %.a,$^) $(ANALYZER_SERVER_LDLIBS) $(ANALYZER_LDLIBS) $(HOST_LDLIBS)

# The ASan+UBSan build the shell tests run.
$(BUILD)/tests/pulse-analyzer-asan: $(call objs,asan,analyzer/main.c $(ANALYZER_SERVER_SRCS)) \
		$(BUILD)/lib/asan/libpulse_analyzer.a $(BUILD)/lib/asan/libpulse_busnats.a \
		$(BUILD)/lib/asan/libpulse_bus.a $(BUILD)/lib/asan/libpulse_wire.a $(BUILD)/lib/asan/libpulse_om.a
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) -o $@ $(filter %.o %.a,$^) $(ANALYZER_SERVER_LDLIBS) $(ANALYZER_LDLIBS) $(HOST_LDLIBS)

# Scores analyzer reports against the simulator's truth (make eval).
$(BUILD)/bin/pulse-eval-score: $(call objs,obj,tools/eval/score.c)
	@mkdir -p $(@D)
	$(CC) -o $@ $^ -lcjson -lm

ALL += $(BUILD)/bin/pulse-analyzer $(BUILD)/bin/pulse-eval-score
INSTALL_BINS += $(BUILD)/bin/pulse-analyzer

# ---- tests ----
ANALYZER_TEST_COMMON := tests/analyzer/synth.c
$(BUILD)/tests/test_analyzer: $(call objs,asan,tests/analyzer/test_analyzer.c $(ANALYZER_TEST_COMMON)) \
		$(BUILD)/lib/asan/libpulse_analyzer.a $(BUILD)/lib/asan/libpulse_wire.a
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) -o $@ $^ -lcmocka $(ANALYZER_LDLIBS)
TEST_PROGS += $(BUILD)/tests/test_analyzer

$(BUILD)/tests/test_answers: $(call objs,asan,tests/analyzer/test_answers.c $(ANALYZER_TEST_COMMON)) \
		$(BUILD)/lib/asan/libpulse_analyzer.a $(BUILD)/lib/asan/libpulse_wire.a
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) -o $@ $^ -lcmocka $(ANALYZER_LDLIBS)
TEST_PROGS += $(BUILD)/tests/test_answers

$(BUILD)/tests/test_direction: $(call objs,asan,tests/analyzer/test_direction.c) \
		$(BUILD)/lib/asan/libpulse_analyzer.a $(BUILD)/lib/asan/libpulse_wire.a
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) -o $@ $^ -lcmocka $(ANALYZER_LDLIBS)
TEST_PROGS += $(BUILD)/tests/test_direction

$(BUILD)/tests/test_watermark: $(call objs,asan,tests/analyzer/test_watermark.c) \
		$(BUILD)/lib/asan/libpulse_analyzer.a
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) -o $@ $^ -lcmocka $(ANALYZER_LDLIBS)
TEST_PROGS += $(BUILD)/tests/test_watermark

# End to end on the quick scenarios (tests/scenarios/quick.list): run_cluster
# -> pulse-host-agent --replay -> pulse-analyzer; skips (77) while the
# simulator or the agent's replay is not there.
TEST_SCRIPTS += tests/analyzer/direction_sim.sh
TEST_SCRIPTS += tests/analyzer/quick_eval.sh tests/analyzer/hang_first.sh tests/analyzer/no_false_alarm.sh tests/analyzer/long_run.sh tests/analyzer/random_matrix.sh \
	tests/analyzer/answers.sh
test: $(BUILD)/bin/pulse-analyzer $(BUILD)/tests/pulse-analyzer-asan $(BUILD)/bin/pulse-eval-score

# ---- make eval: every scenario end to end, Table 3, precision/recall ----
.PHONY: eval
eval: ensure-deps
	@$(MAKE) --no-print-directory all
	@tools/eval/run-eval.sh

# ---- fuzz target for the analyzer's input parser (libFuzzer; clang only) ----
# The analyzer's sources are compiled straight into the fuzzer with its flags.
AN_FUZZ_BIN := $(BUILD)/fuzz/fuzz_analyzer_ingest
AN_FUZZ_FLAGS := -std=c11 -O1 -g -Iinclude -Ianalyzer $(ANALYZER_PKG_CFLAGS) \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
$(AN_FUZZ_BIN): tests/fuzz/fuzz_analyzer_ingest.c $(ANALYZER_SRCS) $(WIRE_SRCS) \
		$(wildcard analyzer/*.h include/pulse/*.h)
	@mkdir -p $(@D)
	$(CLANG) $(AN_FUZZ_FLAGS) $(WARN) -o $@ tests/fuzz/fuzz_analyzer_ingest.c $(ANALYZER_SRCS) \
		$(WIRE_SRCS) $(ANALYZER_LDLIBS)
ifneq ($(shell command -v $(CLANG) 2>/dev/null),)
test: $(AN_FUZZ_BIN)
endif
TEST_SCRIPTS += tests/fuzz/fuzz_ingest.sh

# ---- fuzz target for the data-time watermark (include/pulse/watermark.h) ----
WM_FUZZ_BIN := $(BUILD)/fuzz/fuzz_watermark
$(WM_FUZZ_BIN): tests/fuzz/fuzz_watermark.c analyzer/watermark.c include/pulse/watermark.h
	@mkdir -p $(@D)
	$(CLANG) $(AN_FUZZ_FLAGS) $(WARN) -o $@ tests/fuzz/fuzz_watermark.c analyzer/watermark.c
ifneq ($(shell command -v $(CLANG) 2>/dev/null),)
test: $(WM_FUZZ_BIN)
endif
TEST_SCRIPTS += tests/fuzz/fuzz_watermark.sh

# ---- where in the iteration (analyzer/critical_path.c, issue 16 part 2) ----
$(BUILD)/tests/test_critical_path: $(call objs,asan,tests/analyzer/test_critical_path.c) \
		$(BUILD)/lib/asan/libpulse_analyzer.a $(BUILD)/lib/asan/libpulse_wire.a
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) -o $@ $^ -lcmocka $(ANALYZER_LDLIBS)
TEST_PROGS += $(BUILD)/tests/test_critical_path
TEST_SCRIPTS += tests/analyzer/where_venus.sh
# ---- fuzz target for the --device-history file (analyzer/device_history.c) ----
DH_FUZZ_BIN := $(BUILD)/fuzz/fuzz_device_history
$(DH_FUZZ_BIN): tests/fuzz/fuzz_device_history.c analyzer/device_history.c analyzer/answers.h \
		analyzer/an_internal.h analyzer/analyzer.h
	@mkdir -p $(@D)
	$(CLANG) $(AN_FUZZ_FLAGS) $(WARN) -o $@ tests/fuzz/fuzz_device_history.c analyzer/device_history.c -lcjson -lm
ifneq ($(shell command -v $(CLANG) 2>/dev/null),)
test: $(DH_FUZZ_BIN)
endif
TEST_SCRIPTS += tests/fuzz/fuzz_device_history.sh
