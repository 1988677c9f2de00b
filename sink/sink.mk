# sink/: pulse-sink, a job's diagnoses from the bus into PostgreSQL
# (sink/README.md). libpq (libpq-dev), the bus (bus/), the schema built in.
SINK_SRCS := sink/main.c sink/store.c sink/store_ev.c sink/evidence.c sink/ring.c sink/window.c sink/iter_agg.c
SINK_PKG_CFLAGS := $(shell pkg-config --cflags libpq 2>/dev/null || echo -I/usr/include/postgresql) \
	$(WIRE_PKG_CFLAGS)
CFLAGS_sink/ := $(SINK_PKG_CFLAGS)
SINK_LDLIBS = -lpq $(BUSNATS_LDLIBS) -lcjson -lm -lpthread

# sink/schema.sql as a C string (the binary applies it at start)
$(BUILD)/gen/sink_schema.c: sink/schema.sql
	@mkdir -p $(@D)
	{ echo 'const char pulse_sink_schema[] ='; \
	  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/\t"/' -e 's/$$/\\n"/' $<; echo ';'; } >$@
$(BUILD)/obj/gen/sink_schema.o: $(BUILD)/gen/sink_schema.c
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) -c $< -o $@
$(BUILD)/asan/gen/sink_schema.o: $(BUILD)/gen/sink_schema.c
	@mkdir -p $(@D)
	$(CC) $(HOST_CFLAGS) $(SAN_CFLAGS) -c $< -o $@

$(BUILD)/bin/pulse-sink: $(call objs,obj,$(SINK_SRCS)) $(BUILD)/obj/gen/sink_schema.o \
		$(BUILD)/lib/libpulse_busnats.a $(BUILD)/lib/libpulse_bus.a $(BUILD)/lib/libpulse_wire.a
	@mkdir -p $(@D)
	$(CC) -o $@ $^ $(SINK_LDLIBS)
$(BUILD)/tests/pulse-sink-asan: $(call objs,asan,$(SINK_SRCS)) $(BUILD)/asan/gen/sink_schema.o \
		$(BUILD)/lib/asan/libpulse_busnats.a $(BUILD)/lib/asan/libpulse_bus.a $(BUILD)/lib/asan/libpulse_wire.a
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) -o $@ $^ $(SINK_LDLIBS)
ALL += $(BUILD)/bin/pulse-sink
INSTALL_BINS += $(BUILD)/bin/pulse-sink
test: $(BUILD)/tests/pulse-sink-asan
# initdb in a temporary folder as the postgres user, nats-server, the sink
TEST_SCRIPTS += tests/sink/sink_pg.sh

# the evidence parts without a database: ring, window parsing (bad input), aggregates
SINK_EV_SRCS := sink/ring.c sink/window.c sink/iter_agg.c
CFLAGS_tests/sink/ := $(WIRE_PKG_CFLAGS)
$(BUILD)/tests/test_sink_ev: $(call objs,asan,tests/sink/test_sink_ev.c $(SINK_EV_SRCS)) $(BUILD)/lib/asan/libpulse_wire.a
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) -o $@ $^ -lcmocka $(WIRE_LDLIBS)
TEST_PROGS += $(BUILD)/tests/test_sink_ev
