# SPDX-License-Identifier: MIT
# Per-target flags for tests/targets/*.c (included by the Makefile):
#   TARGET_CFLAGS_<name>, TARGET_LDFLAGS_<name>: extra flags for $(OUTPUT)/targets/<name>
#   EXTRA_TARGETS: special builds (shared libraries, C++), built by `make targets`.

# probe_sites: hot functions written in assembly, one per first-instruction kind; the C parts
# keep frame pointers so their prologue is push %rbp (emulated by the kernel).
TARGET_CFLAGS_probe_sites := -fcf-protection=none

# ---- recorder targets (record) ----
TARGET_CFLAGS_threads  := -pthread
TARGET_LDFLAGS_threads := -pthread
TARGET_CFLAGS_attach_loop  := -pthread
TARGET_LDFLAGS_attach_loop := -pthread
TARGET_CFLAGS_thread_exec  := -pthread
TARGET_LDFLAGS_thread_exec := -pthread
TARGET_CFLAGS_callsites  := -pthread
TARGET_LDFLAGS_callsites := -pthread
TARGET_CFLAGS_threads_block  := -pthread
TARGET_LDFLAGS_threads_block := -pthread
TARGET_CFLAGS_migrate  := -pthread
TARGET_LDFLAGS_migrate := -pthread
# shlib_user calls into libatftest.so, found next to it through $ORIGIN.
$(OUTPUT)/targets/libatftest.so: tests/targets/libatftest.c
	$(call msg,TARGET,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(TARGET_CFLAGS) -fPIC -shared $< -o $@
$(OUTPUT)/targets/shlib_user: $(OUTPUT)/targets/libatftest.so
TARGET_LDFLAGS_shlib_user := -L$(OUTPUT)/targets -latftest -Wl,-rpath,'$$ORIGIN'
$(OUTPUT)/targets/cxx_throw: tests/targets/cxx_throw.cpp
	$(call msg,TARGET,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CXX) $(TARGET_CFLAGS) $< -o $@
# cxx_attach_throw: a running C++ program whose threads keep throwing, for record -p.
$(OUTPUT)/targets/cxx_attach_throw: tests/targets/cxx_attach_throw.cpp
	$(call msg,TARGET,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CXX) $(TARGET_CFLAGS) -pthread $< -o $@
# cxx_sites: C++ throws through functions whose calls record --call-sites redirects.
$(OUTPUT)/targets/cxx_sites: tests/targets/cxx_sites.cpp
	$(call msg,TARGET,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CXX) $(TARGET_CFLAGS) -pthread $< -o $@
# cxx_throw_static: the unwinder and the C++ runtime linked into the program (no libgcc_s).
$(OUTPUT)/targets/cxx_throw_static: tests/targets/cxx_throw.cpp
	$(call msg,TARGET,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CXX) $(TARGET_CFLAGS) -pthread -static-libstdc++ -static-libgcc $< -o $@
# libcxxthrow.so: a C++ library with a C interface; cxx_c_main (C) links against it (found
# beside it through $ORIGIN), cxx_dlopen (C, not linked to any C++ library) dlopens it.
$(OUTPUT)/targets/libcxxthrow.so: tests/targets/libcxxthrow.cpp
	$(call msg,TARGET,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CXX) $(TARGET_CFLAGS) -fPIC -shared $< -o $@
$(OUTPUT)/targets/cxx_c_main: $(OUTPUT)/targets/libcxxthrow.so
TARGET_LDFLAGS_cxx_c_main := -L$(OUTPUT)/targets -lcxxthrow -Wl,-rpath,'$$ORIGIN'
TARGET_LDFLAGS_cxx_dlopen := -ldl
EXTRA_TARGETS += $(OUTPUT)/targets/libatftest.so $(OUTPUT)/targets/cxx_throw \
		 $(OUTPUT)/targets/cxx_attach_throw $(OUTPUT)/targets/cxx_throw_static \
		 $(OUTPUT)/targets/libcxxthrow.so $(OUTPUT)/targets/cxx_sites

# ---- symbol-resolution targets (probe) ----
# probe_plt: odd symbols (in .plt, int3 first, aliases, data, ifunc) for tests/unit/test_symbols.c.
TARGET_CFLAGS_probe_plt := -fcf-protection=none
# probe_sites_cet: probe_sites built with -fcf-protection: compiled functions start with endbr64.
$(OUTPUT)/targets/probe_sites_cet: tests/targets/probe_sites.c
	$(call msg,TARGET,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(TARGET_CFLAGS) -fcf-protection=full $< -o $@
EXTRA_TARGETS += $(OUTPUT)/targets/probe_sites_cet
TARGET_CFLAGS_tail_call := -O2 -fomit-frame-pointer -foptimize-sibling-calls

# ---- real programs' symbols (debug files, ifuncs) ----
# calls_libc: every strlen is a real call into libc (no builtin), so counts are exact.
TARGET_CFLAGS_calls_libc := -fno-builtin
# dlopen_user loads libatfplugin.so on command (dlopen), never through DT_NEEDED.
$(OUTPUT)/targets/libatfplugin.so: tests/targets/libatfplugin.c
	$(call msg,TARGET,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(TARGET_CFLAGS) -fPIC -shared $< -o $@
TARGET_CFLAGS_dlopen_user  := -pthread
TARGET_LDFLAGS_dlopen_user := -ldl -pthread
EXTRA_TARGETS += $(OUTPUT)/targets/libatfplugin.so
# tramp_sites: one assembly function per first-instruction kind, for entry trampolines.
TARGET_CFLAGS_tramp_sites  := -fcf-protection=none -pthread
TARGET_LDFLAGS_tramp_sites := -pthread
# typed_args_nodw: typed_args without DWARF (-g0), for -A/-R on a function --auto-args cannot type.
$(OUTPUT)/targets/typed_args_nodw: tests/targets/typed_args.c
	$(call msg,TARGET,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(TARGET_CFLAGS) -g0 $< -o $@
EXTRA_TARGETS += $(OUTPUT)/targets/typed_args_nodw
# fork_calls: hot threads fill the ring while the process forks children (fork holds).
TARGET_CFLAGS_fork_calls  := -pthread
TARGET_LDFLAGS_fork_calls := -pthread
# libcsplt.so: exported functions calling each other through the library's PLT, bound at load
# (-z now); csplt calls it (found beside it through $ORIGIN); libcsplt_pre.so interposes one
# of them (LD_PRELOAD).
$(OUTPUT)/targets/libcsplt.so: tests/targets/libcsplt.c
	$(call msg,TARGET,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(TARGET_CFLAGS) -fPIC -shared -Wl,-z,now $< -o $@
$(OUTPUT)/targets/libcsplt_pre.so: tests/targets/libcsplt_pre.c
	$(call msg,TARGET,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(TARGET_CFLAGS) -fPIC -shared -Wl,-z,now $< -o $@
$(OUTPUT)/targets/csplt: $(OUTPUT)/targets/libcsplt.so
TARGET_LDFLAGS_csplt := -L$(OUTPUT)/targets -lcsplt -Wl,-z,now -Wl,-rpath,'$$ORIGIN'
EXTRA_TARGETS += $(OUTPUT)/targets/libcsplt.so $(OUTPUT)/targets/libcsplt_pre.so
# libcspltlazy.so / csplt_lazy: the same library and program bound lazily (-z lazy): a slot is
# bound at the first call through it.
$(OUTPUT)/targets/libcspltlazy.so: tests/targets/libcsplt.c
	$(call msg,TARGET,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(TARGET_CFLAGS) -fPIC -shared -Wl,-z,lazy $< -o $@
$(OUTPUT)/targets/csplt_lazy: tests/targets/csplt.c $(OUTPUT)/targets/libcspltlazy.so
	$(call msg,TARGET,$@)
	$(Q)$(CC) $(TARGET_CFLAGS) $< -L$(OUTPUT)/targets -lcspltlazy -Wl,-z,lazy -Wl,-rpath,'$$ORIGIN' -o $@
EXTRA_TARGETS += $(OUTPUT)/targets/libcspltlazy.so $(OUTPUT)/targets/csplt_lazy
# csmods / csmods_lazy: a stripped program (no .symtab) calling libcsplt.so (-z now) or
# libcspltlazy.so (-z lazy) through its PLT, and mapping libcsdl.so (direct calls inside) with
# dlopen when told to.
$(OUTPUT)/targets/libcsdl.so: tests/targets/libcsdl.c
	$(call msg,TARGET,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(TARGET_CFLAGS) -fPIC -shared -Wl,-z,now $< -o $@
$(OUTPUT)/targets/csmods: tests/targets/csmods.c $(OUTPUT)/targets/libcsplt.so $(OUTPUT)/targets/libcsdl.so
	$(call msg,TARGET,$@)
	$(Q)$(CC) $(TARGET_CFLAGS) $< -L$(OUTPUT)/targets -lcsplt -ldl -Wl,-z,now -Wl,-rpath,'$$ORIGIN' -o $@
	$(Q)strip $@
$(OUTPUT)/targets/csmods_lazy: tests/targets/csmods.c $(OUTPUT)/targets/libcspltlazy.so $(OUTPUT)/targets/libcsdl.so
	$(call msg,TARGET,$@)
	$(Q)$(CC) $(TARGET_CFLAGS) $< -L$(OUTPUT)/targets -lcspltlazy -ldl -Wl,-z,lazy -Wl,-rpath,'$$ORIGIN' -o $@
	$(Q)strip $@
EXTRA_TARGETS += $(OUTPUT)/targets/libcsdl.so $(OUTPUT)/targets/csmods $(OUTPUT)/targets/csmods_lazy
# cs_tailplain: -O2, so that its static helper's call is a tail call (jmp tp_f).
TARGET_CFLAGS_cs_tailplain := -O2
# libcsdetail.so / cs_detail: a function of eight integer arguments called through the program's
# PLT, and in the library directly, through a pointer and by a tail call (-Bsymbolic-functions:
# the library's own calls are direct).
$(OUTPUT)/targets/libcsdetail.so: tests/targets/libcsdetail.c
	$(call msg,TARGET,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(TARGET_CFLAGS) -fPIC -shared -Wl,-z,now -Wl,-Bsymbolic-functions $< -o $@
$(OUTPUT)/targets/cs_detail: $(OUTPUT)/targets/libcsdetail.so
TARGET_LDFLAGS_cs_detail := -L$(OUTPUT)/targets -lcsdetail -Wl,-z,now -Wl,-rpath,'$$ORIGIN'
EXTRA_TARGETS += $(OUTPUT)/targets/libcsdetail.so
