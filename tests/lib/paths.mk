# The build tree's paths that tests/lib/paths.c defines (paths.h says why
# they live in one object of their own), for the suites that link it:
# $(call tests_paths_defs,DOUBLE), DOUBLE the copy of the CUDA runtime
# double that suite loads.
tests_paths_defs = -DCDD_PATH='"$(1)"' \
		   -DGPLIB_SO='"$(O)/userlib/libgpupool.so.1"' \
		   -DLOADER_BIN='"$(O)/examples/loader"'
