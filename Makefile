# SPDX-License-Identifier: MIT
# atftrace build. Everything goes to $(OUTPUT); quiet unless V=1.
#   make            build .output/atftrace
#   make demo       trace the bundled sample and write every export
#   make test       unit tests (ASan+UBSan), end-to-end tests with real BPF, short fuzz runs
#   make fuzz       each libFuzzer target for FUZZ_SECONDS (default 60)
#   make bench      benchmarks (figures, never assertions)
.DELETE_ON_ERROR:
.DEFAULT_GOAL := all

OUTPUT   ?= .output
ARCH     := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
ifeq ($(filter x86 arm64,$(ARCH)),)
$(error atftrace builds on x86_64 and arm64 only, not $(shell uname -m))
endif

ifeq ($(V),1)
Q :=
msg :=
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

# ---- dependencies: scripts/deps.sh installs what is missing (once per missing item) -------
DEP_FILES := /usr/include/bpf/libbpf.h /usr/include/gelf.h /usr/include/elfutils/libdw.h \
	     /usr/include/lz4.h /usr/include/zlib.h /usr/include/jansson.h /usr/include/cmocka.h \
	     /usr/include/cbor.h /usr/include/elfutils/debuginfod.h /usr/share/doc/libc6-dbg \
	     /usr/include/Zydis/Zydis.h /usr/include/ncursesw/curses.h
DEP_CMDS  := clang llvm-strip bpftool protoc bpftrace node npm g++ jq chromium debuginfod podman runc catatonit debootstrap \
	     tmux strace
# clang's libFuzzer runtime (libclang-rt-dev): make fuzz, and the fuzz runs of make test
DEP_FUZZ_RT := $(if $(shell command -v clang 2>/dev/null),$(shell clang -print-resource-dir)/lib/linux/libclang_rt.fuzzer-$(shell uname -m).a)
DEPS_MISSING := $(strip $(foreach f,$(DEP_FILES) $(DEP_FUZZ_RT),$(if $(wildcard $(f)),,$(f))) \
		$(foreach c,$(DEP_CMDS),$(if $(shell command -v $(c) 2>/dev/null),,$(c))))
ifneq ($(DEPS_MISSING),)
$(info deps: missing $(DEPS_MISSING); running scripts/deps.sh)
DEPS_RC := $(shell bash scripts/deps.sh >&2; echo $$?)
ifneq ($(DEPS_RC),0)
$(error scripts/deps.sh failed (exit $(DEPS_RC)))
endif
endif

# ---- toolchain ------------------------------------------------------------------------------
CC       ?= gcc
CLANG    ?= clang
BPFTOOL  ?= bpftool
LLVM_STRIP ?= llvm-strip
VERSION  := $(shell git describe --always --dirty 2>/dev/null || echo 0.1)

# include/ holds the headers shared across layers; a layer's private headers sit beside its
# files and are found relative to them. bpf/ holds each BPF unit's record header (X.h).
INCLUDES := -Iinclude -Ibpf -I$(OUTPUT)
CFLAGS   ?= -O2 -g
CFLAGS   += -std=gnu11 -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers \
	    -D_GNU_SOURCE -DATFTRACE_VERSION='"$(VERSION)"' $(INCLUDES) -MMD -MP
LIBS     := -lbpf -lelf -ldw -llz4 -lz -ljansson -lZydis -lncursesw -lpthread
SAN      := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
TEST_LIBS := -lcmocka -lcbor

BPF_ARCH_x86   := x86
BPF_ARCH_arm64 := arm64
BPF_CFLAGS := -g -O2 -target bpf -Wall -Wno-unused-function \
	      -D__TARGET_ARCH_$(ARCH) -Ivmlinux/$(ARCH) -Ibpf -Iinclude

# ---- sources --------------------------------------------------------------------------------
# user/ is one folder per layer: cmd/ (subcommands) over record/ (the recorder) and patch/ (call
# sites) over probe/ (attach, trampolines) over sym/ (symbols) over proc/ (/proc, ptrace,
# containers) and atf/ (libatf); formats/ (exporters) sits on atf/.
LAYERS    := user/cmd user/record user/patch user/probe user/sym user/proc user/atf formats
LIB_SRCS  := $(filter-out user/cmd/main.c,$(foreach d,$(LAYERS),$(wildcard $(d)/*.c)))
BPF_SRCS  := $(wildcard bpf/*.bpf.c)
SKELS     := $(patsubst bpf/%.bpf.c,$(OUTPUT)/%.skel.h,$(BPF_SRCS))
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
TOOL_SRCS := $(wildcard tests/tools/*.c)
BENCH_SRCS := $(wildcard bench/*.c)

LIB_OBJS      := $(patsubst %.c,$(OUTPUT)/obj/%.o,$(LIB_SRCS))
LIB_OBJS_ASAN := $(patsubst %.c,$(OUTPUT)/asan/%.o,$(LIB_SRCS))
LIB           := $(OUTPUT)/libatftrace.a
LIB_ASAN      := $(OUTPUT)/asan/libatftrace.a
BIN           := $(OUTPUT)/atftrace
BIN_ASAN      := $(OUTPUT)/asan/atftrace
UNIT_BINS     := $(patsubst tests/unit/%.c,$(OUTPUT)/asan/tests/%,$(UNIT_SRCS))
TOOL_BINS     := $(patsubst tests/tools/%.c,$(OUTPUT)/tools/%,$(TOOL_SRCS))
BENCH_BINS    := $(patsubst bench/%.c,$(OUTPUT)/bench/%,$(BENCH_SRCS))

# Test targets (programs atftrace traces). tests/targets/targets.mk adds per-target flags,
# shared libraries and C++ programs.
TARGET_CFLAGS ?= -O1 -g -fno-inline -fno-omit-frame-pointer
TARGET_SRCS   := $(wildcard tests/targets/*.c)
TARGETS       := $(patsubst tests/targets/%.c,$(OUTPUT)/targets/%,$(filter-out tests/targets/lib%.c,$(TARGET_SRCS)))
-include tests/targets/targets.mk

.PHONY: all lib tools targets test unit e2e fuzz test-containers image demo bench clean check-bpf-arm64
# Skeletons and BPF objects are intermediate files of a pattern chain: keep them.
.SECONDARY: $(SKELS) $(patsubst bpf/%.bpf.c,$(OUTPUT)/bpf/%.bpf.o,$(BPF_SRCS))
all: $(BIN)
lib: $(LIB)

# ---- BPF --------------------------------------------------------------------------------------
$(OUTPUT)/bpf/%.bpf.o: bpf/%.bpf.c | $(OUTPUT)/bpf
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -MMD -MP -c $< -o $@
	$(Q)$(LLVM_STRIP) -g $@

$(OUTPUT)/%.skel.h: $(OUTPUT)/bpf/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

# The arm64 object is built (never loaded here) so the detail lane's arm64 paths keep compiling.
ARM64_BPF := $(if $(wildcard vmlinux/arm64/vmlinux.h),$(patsubst bpf/%.bpf.c,$(OUTPUT)/arm64/%.bpf.o,$(BPF_SRCS)))
$(OUTPUT)/arm64/%.bpf.o: bpf/%.bpf.c | $(OUTPUT)/arm64
	$(call msg,BPF-A64,$@)
	$(Q)$(CLANG) -g -O2 -target bpf -Wall -Wno-unused-function -D__TARGET_ARCH_arm64 \
		-Ivmlinux/arm64 -Ibpf -Iinclude -MMD -MP -c $< -o $@
check-bpf-arm64: $(ARM64_BPF)

# ---- user space -------------------------------------------------------------------------------
$(OUTPUT)/obj/%.o: %.c | $(SKELS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

# The patcher (user/patch/) builds on the probe layer's trampoline code (its private headers).
$(OUTPUT)/obj/user/patch/%.o $(OUTPUT)/asan/user/patch/%.o: CFLAGS += -Iuser/probe

$(OUTPUT)/asan/%.o: %.c | $(SKELS)
	$(call msg,CC-SAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -O1 $(SAN) -c $< -o $@

$(LIB): $(LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(LIB_ASAN): $(LIB_OBJS_ASAN)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

# main.c refers to the subcommands weakly, and a weak reference does not pull a member out of
# an archive: -u makes the linker take each user/cmd/cmd_<name>.o that exists.
comma := ,
CMD_UNDEFS := $(patsubst user/cmd/%.c,-Wl$(comma)-u$(comma)%,$(wildcard user/cmd/cmd_*.c))
# formats/registry.c refers to the exporters weakly too: -u takes each formats/<name>.c's
# <name>_ops (a -u naming no symbol, e.g. obuf_ops, is ignored by the linker).
CMD_UNDEFS += $(patsubst formats/%.c,-Wl$(comma)-u$(comma)%_ops,$(wildcard formats/*.c))

$(BIN): $(OUTPUT)/obj/user/cmd/main.o $(LIB)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ $(CMD_UNDEFS) $(LIBS) -o $@

$(BIN_ASAN): $(OUTPUT)/asan/user/cmd/main.o $(LIB_ASAN)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(SAN) $^ $(CMD_UNDEFS) $(LIBS) -o $@

# Unit tests and test tools are white-box: they may include any layer's private headers.
TEST_INCLUDES := -Itests $(addprefix -I,$(LAYERS))

$(OUTPUT)/asan/tests/%: tests/unit/%.c $(LIB_ASAN)
	$(call msg,TEST,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -O1 $(SAN) $(TEST_INCLUDES) $< $(LIB_ASAN) $(LIBS) $(TEST_LIBS) -o $@

$(OUTPUT)/tools/%: tests/tools/%.c $(LIB)
	$(call msg,TOOL,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(TEST_INCLUDES) $< $(LIB) $(LIBS) $(TEST_LIBS) -o $@

$(OUTPUT)/bench/%: bench/%.c $(LIB)
	$(call msg,BENCH,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(TEST_INCLUDES) $< $(LIB) $(LIBS) -o $@

$(OUTPUT)/targets/%: tests/targets/%.c
	$(call msg,TARGET,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(TARGET_CFLAGS) $(TARGET_CFLAGS_$*) $< $(TARGET_LDFLAGS_$*) -o $@

$(OUTPUT)/bpf $(OUTPUT)/arm64:
	$(Q)mkdir -p $@

# ---- fuzzing: libFuzzer targets over libatf's readers (tests/fuzz/), clang with ASan+UBSan ------
# libatf is built again for them with coverage instrumentation (fuzzer-no-link).
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(OUTPUT)/fuzz/%,$(FUZZ_SRCS))
FUZZ_SAN  := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_CFLAGS := -g -O1 -std=gnu11 -D_GNU_SOURCE -Iinclude -Iuser/atf $(FUZZ_SAN)
FUZZ_LIB_OBJS := $(patsubst %.c,$(OUTPUT)/fuzz/obj/%.o,$(wildcard user/atf/*.c))
FUZZ_SECONDS ?= 60
# they are prerequisites of a pattern rule only: keep them, or every make rebuilds them
.SECONDARY: $(FUZZ_LIB_OBJS)

$(OUTPUT)/fuzz/obj/%.o: %.c
	$(call msg,CC-FUZZ,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

$(OUTPUT)/fuzz/%: tests/fuzz/%.c tests/fuzz/fuzz_common.h $(FUZZ_LIB_OBJS)
	$(call msg,FUZZ,$@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer $< $(FUZZ_LIB_OBJS) -ljansson -lz -o $@
# the patch log's decoder is pure and included by its target whole (it is not in libatf)
$(OUTPUT)/fuzz/fuzz_patch_log: user/probe/patch_log.c include/patch_log.h

# make fuzz: each target for FUZZ_SECONDS, growing a corpus under $(OUTPUT)/fuzz/corpus/ from the
# checked-in seeds (tests/fuzz/corpus/<target>/, never written); make test runs each for seconds.
fuzz: $(FUZZ_BINS)
	$(Q)OUTPUT=$(OUTPUT) bash tests/fuzz/run.sh $(FUZZ_SECONDS) $(notdir $(FUZZ_BINS))

tools: $(TOOL_BINS)
targets: $(TARGETS) $(EXTRA_TARGETS)

# ---- test, demo, bench ------------------------------------------------------------------------
# The wtf-trace reference loader (npm, pinned) for the e2e test; deps.sh installs it here.
WTF_LOADER := .output/npm/node_modules/tracing-framework/bin/dump.js
$(WTF_LOADER): scripts/deps.sh
	$(call msg,DEPS,tracing-framework (npm))
	$(Q)bash scripts/deps.sh
	$(Q)test -f $@ && touch $@

# speedscope (npm, pinned) for the real-browser test; deps.sh installs it beside the loader.
SPEEDSCOPE := .output/npm/node_modules/speedscope/dist/release/index.html
# one after the other: each runs deps.sh, which installs every npm package in one place
$(SPEEDSCOPE): scripts/deps.sh $(WTF_LOADER)
	$(call msg,DEPS,speedscope (npm))
	$(Q)bash scripts/deps.sh
	$(Q)test -f $@ && touch $@

# The Kubernetes schema validator (npm, pinned) for the deploy/k8s YAML; deps.sh installs it too.
K8S_VALIDATOR := .output/npm/node_modules/kubernetes-models/package.json
$(K8S_VALIDATOR): scripts/deps.sh $(SPEEDSCOPE)
	$(call msg,DEPS,kubernetes-models (npm))
	$(Q)bash scripts/deps.sh
	$(Q)test -f $@ && touch $@

# installed files, not made here: an error elsewhere must not delete them (.DELETE_ON_ERROR),
# since npm would not put back a file of a package it sees installed
.PRECIOUS: $(WTF_LOADER) $(SPEEDSCOPE) $(K8S_VALIDATOR)

TEST_DEPS := $(BIN) $(BIN_ASAN) $(UNIT_BINS) $(TOOL_BINS) $(TARGETS) $(EXTRA_TARGETS) $(ARM64_BPF) \
	     $(WTF_LOADER) $(SPEEDSCOPE) $(K8S_VALIDATOR) $(FUZZ_BINS)

test: $(TEST_DEPS)
	$(Q)OUTPUT=$(OUTPUT) bash tests/run_tests.sh

unit: $(UNIT_BINS)
	$(Q)OUTPUT=$(OUTPUT) bash tests/run_tests.sh unit

e2e: $(TEST_DEPS)
	$(Q)OUTPUT=$(OUTPUT) bash tests/run_tests.sh e2e

# The tests that run real containers with podman (they are part of `make test` too).
test-containers: $(TEST_DEPS)
	$(Q)OUTPUT=$(OUTPUT) bash tests/run_tests.sh e2e podman

# ---- image: deploy/Containerfile built with podman -----------------------------------------
# Without a registry, scripts/base-image.sh first makes the Containerfile's FROM images from a
# debootstrap rootfs. The build's RUN steps reach Debian's archive through the host's network;
# runc and cgroupfs run containers on hybrid-cgroup machines (crun refuses them), and explicit
# limits stay under the hard limits that podman's defaults exceed on some machines.
IMAGE  ?= localhost/atftrace:latest
PODMAN ?= podman --runtime runc --cgroup-manager cgroupfs
PODMAN_BUILD_FLAGS ?= --network host --ulimit nofile=1024:1024 --ulimit nproc=1024:1024
image:
	$(call msg,BASE,debian:12 debian:12-slim)
	$(Q)bash scripts/base-image.sh deploy/Containerfile
	$(call msg,IMAGE,$(IMAGE))
	$(Q)$(PODMAN) build $(PODMAN_BUILD_FLAGS) -f deploy/Containerfile --build-arg VERSION=$(VERSION) \
		-t $(IMAGE) $(if $(V),,-q >/dev/null) .
	$(Q)$(PODMAN) image inspect -f '  {{.Size}} bytes  $(IMAGE)' $(IMAGE)

demo: $(BIN) $(TOOL_BINS) $(TARGETS) $(EXTRA_TARGETS)
	$(Q)OUTPUT=$(OUTPUT) bash scripts/demo.sh

# deps.sh with ATFTRACE_DEPS=bench adds the packages only benchmarks run (nginx, wrk): silent when
# they are there, and never run by make test
bench: $(BIN) $(BENCH_BINS) $(TARGETS) $(EXTRA_TARGETS) $(TOOL_BINS)
	$(Q)ATFTRACE_DEPS=bench bash scripts/deps.sh
	$(Q)OUTPUT=$(OUTPUT) bash bench/run.sh

clean:
	$(call msg,CLEAN,$(OUTPUT))
	$(Q)rm -rf $(OUTPUT)

-include $(shell find $(OUTPUT) -name '*.d' 2>/dev/null)
