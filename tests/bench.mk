# Benchmarks of the NIC agent core on x86 (results: build/bench/*.md).
$(BUILD)/bench/bench_fw: tests/bench/bench_fw.c $(BUILD)/lib/libpulse_fw.a
	@mkdir -p $(@D)
	$(CC) -std=c11 $(WARN) -O2 -Iinclude $< $(BUILD)/lib/libpulse_fw.a -o $@

.PHONY: bench-fw-x86
bench-fw-x86: $(BUILD)/bench/bench_fw
	@echo "== NIC agent core on x86: events/s and memory (this machine: $$(nproc) cores, $$(lscpu | sed -n 's/^Model name: *//p'))"
	$(BUILD)/bench/bench_fw | tee $(BUILD)/bench/fw-x86.md
BENCH_TARGETS += bench-fw-x86
