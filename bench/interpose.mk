# The interposer's benchmark (bench/interpose_bench.c), included by
# bench/Makefile:
#   make -C bench interpose      build the library, the interposer and the
#                                doubles; run it (INTERPOSE_ARGS=--quick:
#                                a smoke run)
# It links the CUDA runtime double as libcudart.so.13 (the calls a program
# makes) and libgpupool statically (the library side), and runs its
# interposed figures under $(O)/userlib/libgpupool-interpose.so.
IB_DEFS := -DIB_INTERPOSER='"$(O)/userlib/libgpupool-interpose.so"' \
	   -DIB_CUDART='"$(O)/tests/cudart_double/libcudart_double.so"' \
	   -DIB_DRIVER_DIR='"$(O)/tests/cudadrv_double"'

.PHONY: interpose
interpose: $(B)/interpose_bench
	$(B)/interpose_bench $(INTERPOSE_ARGS)

# The library's make (lib.mk's rule for libgpupool.so) builds both.
$(O)/userlib/libgpupool.a: $(O)/userlib/libgpupool.so

$(O)/tests/cudadrv_double/libcuda.so.1: FORCE_LIB
	@$(MAKE) --no-print-directory -C $(TOP)/tests/cudadrv_double O=$(O) TOP=$(TOP)

$(B)/interpose_bench.o: interpose_bench.c | $(B)
	$(CC) $(B_CPPFLAGS) $(IB_DEFS) $(B_CFLAGS) -c -o $@ $<

$(B)/interpose_bench: $(B)/interpose_bench.o $(O)/userlib/libgpupool.so \
		$(O)/userlib/libgpupool.a $(O)/tests/cudadrv_double/libcuda.so.1
	$(CC) -o $@ $(B)/interpose_bench.o $(O)/userlib/libgpupool.a \
		-L$(O)/tests/cudart_double -l:libcudart.so.13 \
		-Wl,-rpath,$(O)/tests/cudart_double -ldl -pthread
