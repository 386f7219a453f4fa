# The data-loader benchmark (bench/loader_bench.c), included by bench/Makefile:
#   make -C bench loader     build the library, run it (user backend here;
#                            kernel backend where gpupool.ko is loaded)
# LOADER_BENCH_MIB sets the data per case (default 1024 MiB).
LOADER_BENCH_MIB ?= 1024

.PHONY: loader
loader: $(B)/loader_bench
	$(B)/loader_bench $(LOADER_BENCH_MIB)

$(B)/loader_bench: $(TOP)/bench/loader_bench.c $(TOP)/examples/batch_ring.c \
		$(TOP)/examples/batch_ring.h $(O)/userlib/libgpupool.so | $(B)
	$(CC) $(CPPFLAGS) -I$(TOP)/examples -std=gnu11 $(WARN) -O2 -g \
		-o $@ $(TOP)/bench/loader_bench.c $(TOP)/examples/batch_ring.c \
		-L$(O)/userlib -lgpupool -Wl,-rpath,$(O)/userlib -pthread -ldl
