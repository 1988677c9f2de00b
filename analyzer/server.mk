# analyzer/server.mk: the analyzer's TCP service for live host agents
# (analyzer/server_conn.c, server_join.c, server_main.c), the agent's side of it (host-agent/analyzer_link.c),
# the wire codec's tests and fuzz target. The wire codec itself
# (wire/frame.c) is in libpulse_wire.a (wire/wire.mk).
#
# pulse-analyzer (analyzer/analyzer.mk) links $(AN_SERVER_SRCS) and
# libpulse_wire.a; the agent links $(ALINK_SRCS).

AN_SERVER_SRCS := analyzer/server_conn.c analyzer/server_join.c analyzer/server_main.c \
	analyzer/server_metrics.c analyzer/server_bus.c analyzer/server_series.c
# the data-time watermark the server ticks on (in libpulse_analyzer.a for the program;
# the test links the server against a test double of the state, so it takes it here)
AN_CLOCK_SRCS := analyzer/watermark.c
# analyzer/analyzer.mk links analyzer/server_*.c into pulse-analyzer when they
# exists, with these libraries
ANALYZER_SERVER_LDLIBS = -lcjson $(OM_LDLIBS) $(BUSNATS_LDLIBS)
ALINK_SRCS := host-agent/analyzer_link.c host-agent/line_tee.c
CFLAGS_tests/analyzer-wire/ := $(WIRE_PKG_CFLAGS) -I. -Ianalyzer
CFLAGS_analyzer/server_conn.c := $(WIRE_PKG_CFLAGS)
CFLAGS_analyzer/server_join.c := $(WIRE_PKG_CFLAGS)
CFLAGS_analyzer/server_main.c := $(WIRE_PKG_CFLAGS)
CFLAGS_host-agent/analyzer_link.c := $(WIRE_PKG_CFLAGS)

# ---- codec unit test ----
$(BUILD)/tests/test_analyzer_wire: $(call objs,asan,tests/analyzer-wire/test_frame.c) \
		$(BUILD)/lib/asan/libpulse_wire.a
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) -o $@ $^ -lcmocka $(WIRE_LDLIBS)
TEST_PROGS += $(BUILD)/tests/test_analyzer_wire

# ---- server and link over loopback, against a test double of the state ----
# (the server needs the cross-host QP join, wire/qp_join.c, in libpulse_wire)
ifneq ($(filter wire/qp_join.c,$(WIRE_SRCS)),)
$(BUILD)/tests/test_analyzer_server: $(call objs,asan,tests/analyzer-wire/test_server.c \
		tests/analyzer-wire/fake_state.c $(AN_SERVER_SRCS) $(AN_CLOCK_SRCS) $(ALINK_SRCS)) \
		$(BUILD)/lib/asan/libpulse_busnats.a $(BUILD)/lib/asan/libpulse_bus.a \
		$(BUILD)/lib/asan/libpulse_wire.a $(BUILD)/lib/asan/libpulse_om.a
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) -o $@ $^ -lcmocka $(WIRE_LDLIBS) $(OM_LDLIBS) $(BUSNATS_LDLIBS) -lpthread
TEST_PROGS += $(BUILD)/tests/test_analyzer_server
# the same under TSan (the link is called from several threads)
$(BUILD)/tests/tsan/test_analyzer_server: $(call objs,tsan,tests/analyzer-wire/test_server.c \
		tests/analyzer-wire/fake_state.c $(AN_SERVER_SRCS) $(AN_CLOCK_SRCS) $(ALINK_SRCS) $(WIRE_SRCS)) \
		$(BUILD)/lib/tsan/libpulse_busnats.a $(BUILD)/lib/tsan/libpulse_bus.a $(BUILD)/lib/tsan/libpulse_om.a
	@mkdir -p $(@D)
	$(CC) $(TSAN_CFLAGS) -o $@ $^ -lcmocka $(WIRE_LDLIBS) $(OM_LDLIBS) $(BUSNATS_LDLIBS) -lpthread
TEST_PROGS += $(BUILD)/tests/tsan/test_analyzer_server
endif

# ---- fuzz target for the wire decoder (libFuzzer; clang only) ----
AW_FUZZ_BIN := $(BUILD)/fuzz/fuzz_analyzer_wire
AW_FUZZ_FLAGS := -std=c11 -O1 -g -Iinclude $(WIRE_PKG_CFLAGS) -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined -fno-omit-frame-pointer
ifneq ($(shell command -v $(CLANG) 2>/dev/null),)
$(AW_FUZZ_BIN): tests/fuzz/fuzz_analyzer_wire.c wire/frame.c wire/op_record.c wire/op_record_bin.c \
		wire/hex_id.c wire/json_dec.c \
		include/pulse/analyzer_wire.h include/pulse/op_record.h
	@mkdir -p $(@D)
	$(CLANG) $(AW_FUZZ_FLAGS) $(WARN) -o $@ tests/fuzz/fuzz_analyzer_wire.c wire/frame.c \
		wire/op_record.c wire/op_record_bin.c wire/hex_id.c wire/json_dec.c $(WIRE_LDLIBS)
test: $(AW_FUZZ_BIN)
endif
TEST_SCRIPTS += tests/analyzer-wire/fuzz_wire.sh

# ---- test client (good and misbehaving agents) and the live test ----
$(BUILD)/tests/aw_client: $(call objs,asan,tests/analyzer-wire/aw_client.c $(ALINK_SRCS)) \
		$(BUILD)/lib/asan/libpulse_wire.a
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) -o $@ $^ $(WIRE_LDLIBS) -lpthread
# pulse-analyzer --listen on a random port, a good agent and misbehaving
# ones at once (skips, 77, while pulse-analyzer is not built)
TEST_SCRIPTS += tests/analyzer-wire/analyzer_live.sh tests/analyzer-wire/analyzer_series.sh
# --metrics-listen scraped by curl and by a real Prometheus
TEST_SCRIPTS += tests/analyzer-wire/analyzer_prometheus.sh
test: $(BUILD)/tests/aw_client

# ---- benchmark: decoder frames/s, end to end through pulse-analyzer ----
$(BUILD)/bench/aw_client: $(call objs,obj,tests/analyzer-wire/aw_client.c $(ALINK_SRCS)) \
		$(BUILD)/lib/libpulse_wire.a
	@mkdir -p $(@D)
	$(CC) -o $@ $^ $(WIRE_LDLIBS) -lpthread
.PHONY: bench-analyzer-wire
bench-analyzer-wire: $(BUILD)/bench/aw_client $(BUILD)/bin/pulse-analyzer
	tests/analyzer-wire/bench_wire.sh | tee $(BUILD)/bench/analyzer-wire.md
BENCH_TARGETS += bench-analyzer-wire
