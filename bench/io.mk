# Files into pinned chunks (bench/io_bench.c), included by bench/Makefile:
#   make -C bench io     build the library, write (once) a file of records
#                        under $(O)/bench and read it four ways, fio beside
#   make -C bench io-vm KVER=<release>   the same in the VM on the kernel
#                        backend, the file on an ext4 on a brd ramdisk (256 MiB;
#                        under TCG only the ratios mean anything)
# IO_BENCH_MIB sets the file's size (default 2048 MiB, capped by free disk);
# IO_BENCH_DIR where it lives; IO_BENCH_DROP=1 also writes drop_caches.
IO_BENCH_MIB ?= 2048
IO_BENCH_DIR ?= $(B)

.PHONY: io io-vm
io: $(B)/io_bench
	$(B)/io_bench $(IO_BENCH_MIB) $(IO_BENCH_DIR)

KVER ?= $(shell $(TOP)/scripts/default-kver.sh 2>/dev/null)
io-vm: $(B)/io_bench
	$(TOP)/vm/run-vm.sh --name io-bench-$(KVER) --kernel $(KVER) --mem 2G \
		--ko $(O)/kmod/$(KVER)/gpupool.ko --load pool_size=256M \
		--env GPUPOOL_BACKEND=kernel --tests $(B) \
		--run "sh $(TOP)/bench/io_vm.sh $(B)/io_bench" \
		--timeout 900 --test-timeout 800 --build-dir $(O)

$(B)/io_bench: $(TOP)/bench/io_bench.c $(O)/userlib/libgpupool.so | $(B)
	$(CC) $(CPPFLAGS) -std=gnu11 $(WARN) -O2 -g -o $@ $(TOP)/bench/io_bench.c \
		-L$(O)/userlib -lgpupool -Wl,-rpath,$(O)/userlib -pthread
