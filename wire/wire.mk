# wire/: what the host agent and the analyzer exchange, one codec per
# payload, shared by both sides (libpulse_wire.a):
#   op_record.c  the operator record, JSON (include/pulse/op_record.h)
#   op_record_bin.c  the operator record, binary: protocol 2's OPS frames (same header)
#   hook_map.c   the interception mapping, MAP (include/pulse/hook_map.h)
#   frame.c      the analyzer wire protocol: frames, HELLO, status, JOIN
#                (include/pulse/analyzer_wire.h)
#   qp_join.c    the cross-host QP join (include/pulse/qp_join.h)
#   hex_id.c     64-bit hex ids, for all of them (include/pulse/hex_id.h)
#   host_event.c link events and configuration findings (include/pulse/host_event.h)
#   json_dec.c   the checked field reading those codecs share (wire/json_dec.h)
#   json_put.c   the JSON string escaper of every hand-written JSON line (include/pulse/json_put.h)
#   bus_msg.c    the NATS bus's names, message ids and record messages
#                (include/pulse/bus_msg.h; libpulse_bus.a, with libzstd)
# Tests: test_op_record, test_op_record_bin, fuzz_op_record_bin, test_bus_msg,
# fuzz_bus_msg, test_hook_map,
# fuzz_hook_map, test_host_event, fuzz_host_event (here);
# test_analyzer_wire and fuzz_analyzer_wire (analyzer/server.mk).

WIRE_PKG_CFLAGS := $(shell pkg-config --cflags libcjson 2>/dev/null || echo -I/usr/include/cjson)
CFLAGS_wire/ := $(WIRE_PKG_CFLAGS)
WIRE_SRCS := wire/op_record.c wire/op_record_bin.c wire/qp_join.c wire/frame.c wire/hook_map.c wire/hex_id.c \
	wire/host_event.c wire/json_dec.c wire/json_put.c wire/qp_series.c
WIRE_LDLIBS := -lcjson -lm

$(call static_lib,pulse_wire,$(WIRE_SRCS))

$(BUILD)/tests/test_op_record: $(call objs,asan,tests/wire/test_op_record.c) $(BUILD)/lib/asan/libpulse_wire.a
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) -o $@ $^ -lcmocka $(WIRE_LDLIBS)
CFLAGS_tests/wire/ := $(WIRE_PKG_CFLAGS)
TEST_PROGS += $(BUILD)/tests/test_op_record

$(BUILD)/tests/test_hook_map: $(call objs,asan,tests/wire/test_hook_map.c) $(BUILD)/lib/asan/libpulse_wire.a
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) -o $@ $^ -lcmocka $(WIRE_LDLIBS)
TEST_PROGS += $(BUILD)/tests/test_hook_map

# libFuzzer target for the mapping decoder (clang only)
HM_FUZZ_BIN := $(BUILD)/fuzz/fuzz_hook_map
HM_FUZZ_FLAGS := -std=c11 -O1 -g -Iinclude $(WIRE_PKG_CFLAGS) -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined -fno-omit-frame-pointer
ifneq ($(shell command -v $(CLANG) 2>/dev/null),)
$(HM_FUZZ_BIN): tests/fuzz/fuzz_hook_map.c wire/hook_map.c wire/hex_id.c wire/qp_join.c wire/json_put.c \
		include/pulse/hook_map.h include/pulse/hex_id.h include/pulse/json_put.h
	@mkdir -p $(@D)
	$(CLANG) $(HM_FUZZ_FLAGS) $(WARN) -o $@ tests/fuzz/fuzz_hook_map.c wire/hook_map.c \
		wire/hex_id.c wire/qp_join.c wire/json_put.c $(WIRE_LDLIBS)
test: $(HM_FUZZ_BIN)
endif
TEST_SCRIPTS += tests/wire/fuzz_hook_map.sh

$(BUILD)/tests/test_host_event: $(call objs,asan,tests/wire/test_host_event.c) $(BUILD)/lib/asan/libpulse_wire.a
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) -o $@ $^ -lcmocka $(WIRE_LDLIBS)
TEST_PROGS += $(BUILD)/tests/test_host_event

# libFuzzer target for the link event and finding decoders (clang only)
HE_FUZZ_BIN := $(BUILD)/fuzz/fuzz_host_event
ifneq ($(shell command -v $(CLANG) 2>/dev/null),)
$(HE_FUZZ_BIN): tests/fuzz/fuzz_host_event.c wire/host_event.c wire/json_dec.c include/pulse/host_event.h
	@mkdir -p $(@D)
	$(CLANG) $(HM_FUZZ_FLAGS) $(WARN) -o $@ tests/fuzz/fuzz_host_event.c wire/host_event.c wire/json_dec.c $(WIRE_LDLIBS)
test: $(HE_FUZZ_BIN)
endif
TEST_SCRIPTS += tests/wire/fuzz_host_event.sh

$(BUILD)/tests/test_op_record_bin: $(call objs,asan,tests/wire/test_op_record_bin.c) $(BUILD)/lib/asan/libpulse_wire.a
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) -o $@ $^ -lcmocka $(WIRE_LDLIBS)
TEST_PROGS += $(BUILD)/tests/test_op_record_bin

# libFuzzer target for the binary operator record and the OPS framing (clang only)
OB_FUZZ_BIN := $(BUILD)/fuzz/fuzz_op_record_bin
ifneq ($(shell command -v $(CLANG) 2>/dev/null),)
$(OB_FUZZ_BIN): tests/fuzz/fuzz_op_record_bin.c wire/op_record_bin.c wire/op_record.c wire/frame.c \
		wire/hex_id.c wire/json_dec.c include/pulse/op_record.h include/pulse/analyzer_wire.h
	@mkdir -p $(@D)
	$(CLANG) $(HM_FUZZ_FLAGS) $(WARN) -o $@ tests/fuzz/fuzz_op_record_bin.c wire/op_record_bin.c \
		wire/op_record.c wire/frame.c wire/hex_id.c wire/json_dec.c $(WIRE_LDLIBS)
test: $(OB_FUZZ_BIN)
endif
TEST_SCRIPTS += tests/wire/fuzz_op_record_bin.sh

# The bus's format (wire/bus_msg.c, include/pulse/bus_msg.h): its own
# archive, so that only what talks to the bus links libzstd.
BUS_MSG_SRCS := wire/bus_msg.c
BUS_LDLIBS := -lzstd
$(call static_lib,pulse_bus,$(BUS_MSG_SRCS),obj asan tsan)

$(BUILD)/tests/test_bus_msg: $(call objs,asan,tests/wire/test_bus_msg.c) $(BUILD)/lib/asan/libpulse_bus.a \
		$(BUILD)/lib/asan/libpulse_wire.a
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) -o $@ $^ -lcmocka $(BUS_LDLIBS) $(WIRE_LDLIBS)
TEST_PROGS += $(BUILD)/tests/test_bus_msg

# libFuzzer target for the bus record message decoder (clang only)
BM_FUZZ_BIN := $(BUILD)/fuzz/fuzz_bus_msg
ifneq ($(shell command -v $(CLANG) 2>/dev/null),)
$(BM_FUZZ_BIN): tests/fuzz/fuzz_bus_msg.c wire/bus_msg.c wire/frame.c wire/op_record_bin.c wire/op_record.c \
		wire/hex_id.c wire/json_dec.c include/pulse/bus_msg.h
	@mkdir -p $(@D)
	$(CLANG) $(HM_FUZZ_FLAGS) $(WARN) -o $@ tests/fuzz/fuzz_bus_msg.c wire/bus_msg.c wire/frame.c \
		wire/op_record_bin.c wire/op_record.c wire/hex_id.c wire/json_dec.c $(BUS_LDLIBS) $(WIRE_LDLIBS)
test: $(BM_FUZZ_BIN)
endif
TEST_SCRIPTS += tests/wire/fuzz_bus_msg.sh

# libFuzzer target for the SERIES_REQ / SERIES decoders (clang only)
QPS_FUZZ_BIN := $(BUILD)/fuzz/fuzz_qp_series
ifneq ($(shell command -v $(CLANG) 2>/dev/null),)
$(QPS_FUZZ_BIN): tests/fuzz/fuzz_qp_series.c wire/qp_series.c wire/json_dec.c include/pulse/qp_series_wire.h
	@mkdir -p $(@D)
	$(CLANG) $(HM_FUZZ_FLAGS) $(WARN) -Iwire -o $@ tests/fuzz/fuzz_qp_series.c wire/qp_series.c \
		wire/json_dec.c $(WIRE_LDLIBS)
test: $(QPS_FUZZ_BIN)
endif
TEST_SCRIPTS += tests/wire/fuzz_qp_series.sh
