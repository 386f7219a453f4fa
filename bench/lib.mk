# libgpupool's benchmark (bench/lib_bench.c), included by bench/Makefile:
#	include lib.mk
#   make -C bench lib        build the library and the double, run it
# It links the shared library the build installs ($(O)/userlib) and runs the
# device part through the CUDA runtime test double (allocator overhead only);
# LIB_BENCH_CUDART=/path/libcudart.so.13 runs it against a real runtime
# (then also the host-to-device bandwidth comparison).
LIB_BENCH_CUDART ?= $(O)/tests/cudart_double/libcudart_double.so

.PHONY: lib
lib: $(B)/lib_bench $(GEN_TRACES)
	GPUPOOL_CUDART=$(LIB_BENCH_CUDART) $(B)/lib_bench $(BENCH_ARGS) $(DATA_TRACES) $(GEN_TRACES)

$(O)/userlib/libgpupool.so: FORCE_LIB
	@$(MAKE) --no-print-directory -C $(TOP)/userlib O=$(O) TOP=$(TOP)
	@$(MAKE) --no-print-directory -C $(TOP)/tests/cudart_double O=$(O) TOP=$(TOP)

.PHONY: FORCE_LIB
FORCE_LIB:

$(B)/lib_bench: $(B)/lib_bench.o $(B)/trace.o $(O)/userlib/libgpupool.so
	$(CC) -o $@ $(B)/lib_bench.o $(B)/trace.o -L$(O)/userlib -lgpupool \
		-Wl,-rpath,$(O)/userlib -ldl
