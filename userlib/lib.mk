# What it takes to compile libgpupool's sources: shared by userlib/Makefile
# (the installed library) and tests/lib/Makefile (a sanitized copy).
# userlib/interpose/ is not the library's: it is libgpupool-interpose.so,
# the preloaded interposer, built from its own sources and the library's
# objects (INTERPOSE_SRCS).
INTERPOSE_SRCS := $(wildcard $(TOP)/userlib/interpose/*.c)
# ... and its dlsym()/dlvsym() entries, in the assembly of the target's
# architecture (none elsewhere: dlsym.c).
IP_ARCH := $(firstword $(subst -, ,$(shell $(CC) -dumpmachine)))
INTERPOSE_ASM := $(wildcard $(TOP)/userlib/interpose/dlsym_$(IP_ARCH).S)
LIB_SRCS := $(filter-out $(INTERPOSE_SRCS),\
	      $(wildcard $(TOP)/userlib/*.c $(TOP)/userlib/*/*.c) $(wildcard $(TOP)/core/*.c))
LIB_HDRS := $(wildcard $(TOP)/userlib/*.h $(TOP)/userlib/*/*.h) $(wildcard $(TOP)/core/*.h) \
	    $(TOP)/include/gpupool.h $(TOP)/include/gpupool_interpose.h \
	    $(TOP)/include/uapi/linux/gpupool.h
LIB_CPPFLAGS := $(CPPFLAGS) -I$(TOP)/userlib -I$(TOP)/core \
		-DGP_HAVE_CUDA_HEADERS=$(HAVE_CUDA)
ifeq ($(HAVE_CUDA),1)
LIB_CPPFLAGS += -isystem $(CUDA_INC)
endif
LIB_LIBS := -ldl -pthread

# The interposer's version script: interpose.map.in through the C
# preprocessor, its driver lines from entries.h.  A rule per user
# ($(call interpose_map_rule,TARGET)), after its default goal.
INTERPOSE_MAP_SRCS := $(TOP)/userlib/interpose/interpose.map.in \
		      $(TOP)/userlib/interpose/entries.h
define interpose_map_rule
$(1): $(INTERPOSE_MAP_SRCS)
	@mkdir -p $$(dir $$@)
	$$(CC) -E -P -x c -o $$@ $$<
endef
