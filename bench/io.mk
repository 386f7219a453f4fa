# Files into pinned chunks (bench/io_bench.c), included by bench/Makefile:
#   make -C bench io     build the library, write (once) a file of records
#                        under $(O)/bench and read it four ways, fio beside
# IO_BENCH_MIB sets the file's size (default 2048 MiB, capped by free disk);
# IO_BENCH_DIR where it lives; IO_BENCH_DROP=1 also writes drop_caches.
IO_BENCH_MIB ?= 2048
IO_BENCH_DIR ?= $(B)

.PHONY: io
io: $(B)/io_bench
	$(B)/io_bench $(IO_BENCH_MIB) $(IO_BENCH_DIR)

$(B)/io_bench: $(TOP)/bench/io_bench.c $(O)/userlib/libgpupool.so | $(B)
	$(CC) $(CPPFLAGS) -std=gnu11 $(WARN) -O2 -g -o $@ $(TOP)/bench/io_bench.c \
		-L$(O)/userlib -lgpupool -Wl,-rpath,$(O)/userlib -pthread
