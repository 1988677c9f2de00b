# wire/: what the host agent and the analyzer exchange, shared by both
# sides: the operator record's JSON codec (include/pulse/op_record.h).

WIRE_PKG_CFLAGS := $(shell pkg-config --cflags libcjson 2>/dev/null || echo -I/usr/include/cjson)
CFLAGS_wire/ := $(WIRE_PKG_CFLAGS)
WIRE_SRCS := wire/op_record.c wire/qp_join.c wire/frame.c
WIRE_LDLIBS := -lcjson -lm

$(BUILD)/lib/libpulse_wire.a: $(call objs,obj,$(WIRE_SRCS))
	@mkdir -p $(@D)
	ar rcs $@ $^
$(BUILD)/lib/asan/libpulse_wire.a: $(call objs,asan,$(WIRE_SRCS))
	@mkdir -p $(@D)
	ar rcs $@ $^

$(BUILD)/tests/test_op_record: $(call objs,asan,tests/wire/test_op_record.c) $(BUILD)/lib/asan/libpulse_wire.a
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) -o $@ $^ -lcmocka $(WIRE_LDLIBS)
CFLAGS_tests/wire/ := $(WIRE_PKG_CFLAGS)
TEST_PROGS += $(BUILD)/tests/test_op_record
