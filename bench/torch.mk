# PyTorch's own DataLoader (bench/torch_bench.py), included by bench/Makefile:
#   make -C bench torch      stock collate + pin copy vs gpupool.torch's
#                            PinnedCollate, with Debian's /usr/bin/python3 and
#                            python3-torch (user backend here; kernel backend
#                            where gpupool.ko is loaded)
# TORCH_BENCH_MIB sets the data per case (default 512), TORCH_BENCH_REPS the
# runs per case (best kept; default 2).
TORCH_BENCH_MIB ?= 512
TORCH_BENCH_REPS ?= 2
TORCH_PYTHON ?= /usr/bin/python3

.PHONY: torch
torch: $(O)/userlib/libgpupool.so
	GPUPOOL_LIBRARY=$(O)/userlib/libgpupool.so.1 \
	TORCH_BENCH_MIB=$(TORCH_BENCH_MIB) TORCH_BENCH_REPS=$(TORCH_BENCH_REPS) \
		$(TORCH_PYTHON) -W ignore::UserWarning $(TOP)/bench/torch_bench.py
