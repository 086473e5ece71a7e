# gpurun: a plain Makefile. `make` builds, `make check` tests, `make demo` shows, `make bench` measures.
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR ?= $(PREFIX)/share/man
DATADIR ?= $(PREFIX)/share
BASH_COMPLETION_DIR ?= $(DATADIR)/bash-completion/completions
ZSH_COMPLETION_DIR ?= $(DATADIR)/zsh/site-functions
TMPFILES_DIR ?= $(PREFIX)/lib/tmpfiles.d
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
DESTDIR ?=
VERSION := $(shell sed -n 's/^\#define GPURUN_VERSION "\(.*\)"/\1/p' lib/gpurun.h)
$(if $(VERSION),,$(error lib/gpurun.h defines no GPURUN_VERSION))
# The ABI version: in 0.x every minor version may break the ABI, so it is major.minor (0.2 for
# 0.2.x); from 1.0 on, the major version. It names the soname (libgpurun.so.0.2) and the version
# node of every exported symbol (GPURUN_0.2): a program built against one ABI never loads another.
VERSION_MAJOR := $(word 1,$(subst ., ,$(VERSION)))
VERSION_MINOR := $(word 2,$(subst ., ,$(VERSION)))
ABI_VERSION := $(if $(filter 0,$(VERSION_MAJOR)),0.$(VERSION_MINOR),$(VERSION_MAJOR))
SONAME = libgpurun.so.$(ABI_VERSION)

CC ?= cc
# The compiler's own objcopy: a cross compiler names its target's, which the native one cannot read.
OBJCOPY ?= $(shell $(CC) -print-prog-name=objcopy)
CFLAGS ?= -O2 -g
WARNINGS = -Wall -Wextra -Wmissing-prototypes -Wstrict-prototypes -Wshadow $(if $(WERROR),-Werror)
# `make SANITIZE=1 check`: everything built with AddressSanitizer and UBSan, in its own tree, and
# any report fails the test that provoked it.
SANITIZE_FLAGS = $(if $(SANITIZE),-fsanitize=address -fsanitize=undefined -fno-sanitize-recover=all \
	-fno-omit-frame-pointer)
PLAIN_CFLAGS = -std=gnu11 $(WARNINGS) -fPIC $(CFLAGS)
ALL_CFLAGS = $(PLAIN_CFLAGS) $(SANITIZE_FLAGS)
ALL_CPPFLAGS = -Ilib -D_GNU_SOURCE -DGPURUN_LIBDIR='"$(LIBDIR)"' $(CPPFLAGS)
LDLIBS_GPURUN = -ldl -lm

B ?= $(if $(SANITIZE),build-asan,build)
LIB_SRC = $(wildcard lib/*.c)
LIB_OBJ = $(LIB_SRC:%.c=$(B)/obj/%.o)
LAUNCHER_SRC = $(wildcard launcher/*.c)
LAUNCHER_OBJ = $(LAUNCHER_SRC:%.c=$(B)/obj/%.o)
PRELOAD_SRC = $(wildcard preload/*.c)
PRELOAD_OBJ = $(PRELOAD_SRC:%.c=$(B)/obj/%.o)
UNIT_SRC = $(wildcard tests/unit/*_test.c)
UNIT_BIN = $(UNIT_SRC:tests/unit/%.c=$(B)/tests/%)
FAKE_COMMON = tests/fakes/fixture.c
FAKES = $(B)/fakes/libnvidia-ml.so.1 $(B)/fakes/old/libnvidia-ml.so.1 $(B)/fakes/nvidia-smi \
	$(B)/fakes/libcuda.so.1
HELPER_SRC = $(wildcard tests/helpers/*.c)
HELPERS = $(HELPER_SRC:tests/helpers/%.c=$(B)/helpers/%)
BENCH_SRC = $(wildcard bench/*.c)
BENCH_BIN = $(BENCH_SRC:bench/%.c=$(B)/bench/%)

PROGRAMS = $(B)/gpurun $(B)/libgpurun.a $(B)/libgpurun.so $(B)/libgpurun-preload.so \
	$(B)/gpurun.pc $(B)/examples/pick

.PHONY: all check unit integration demo bench install uninstall clean deb FORCE
all: $(PROGRAMS)

$(B)/obj/%.o: %.c lib/gpurun.h $(wildcard lib/*_internal.h) $(wildcard launcher/*.h)
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) $(ALL_CFLAGS) -c $< -o $@

# The static library is one relocatable object (ld -r) of all of libgpurun in which only the
# public API is global: the internal names (queue_open, sysfs_path, ...) are resolved inside it
# and left free for the program that links it. Undefined references (libc, libdl) stay global.
# (It depends on the Makefile too: a tree built before this recipe had the plain archive.)
$(B)/libgpurun.a: $(LIB_OBJ) Makefile
	@mkdir -p $(@D)
	$(CC) -r -nostdlib -o $(B)/obj/libgpurun-merged.o $(LIB_OBJ)
	$(OBJCOPY) --wildcard --keep-global-symbol='gpurun_*' $(B)/obj/libgpurun-merged.o \
		$(B)/obj/libgpurun-public.o
	rm -f $@ && $(AR) rcs $@ $(B)/obj/libgpurun-public.o

# The objects as they are, for what is built here and needs more than the public API or takes
# only the objects it uses: the unit tests (internal functions) and the preload library (which
# would otherwise take all of libgpurun, and libm with it, into every program).
$(B)/libgpurun-internal.a: $(LIB_OBJ)
	@mkdir -p $(@D)
	rm -f $@ && $(AR) rcs $@ $^

# The shared library exports the public API (gpurun_*) and nothing else (lib/libgpurun.map, its
# version node named for this ABI version).
$(B)/libgpurun.map: lib/libgpurun.map lib/gpurun.h
	@mkdir -p $(@D)
	sed 's/@ABI_VERSION@/$(ABI_VERSION)/' lib/libgpurun.map >$@

$(B)/libgpurun.so.$(VERSION): $(LIB_OBJ) $(B)/libgpurun.map
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -shared -Wl,-soname,$(SONAME) \
		-Wl,--version-script,$(B)/libgpurun.map -o $@ $(LIB_OBJ) $(LDLIBS_GPURUN)

$(B)/libgpurun.so: $(B)/libgpurun.so.$(VERSION)
	ln -sf libgpurun.so.$(VERSION) $(B)/$(SONAME)
	ln -sf $(SONAME) $@

$(B)/gpurun.pc: Makefile $(B)/install-paths.txt
	@mkdir -p $(@D)
	printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$(LIBDIR)' 'includedir=$(INCLUDEDIR)' '' \
		'Name: gpurun' 'Description: choose free GPUs by GPUtil'"'"'s rules and lease them' \
		'Version: $(VERSION)' 'Libs: -L$${libdir} -lgpurun' 'Libs.private: -ldl -lm' \
		'Cflags: -I$${includedir}' >$@

# An example of the C API (README), built against the static library like a user's program.
$(B)/examples/%: examples/%.c lib/gpurun.h $(B)/libgpurun.a
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) $(ALL_CFLAGS) -o $@ $< $(B)/libgpurun.a $(LDLIBS_GPURUN)

# The launcher has LIBDIR compiled in (where an installed gpurun finds its preload library),
# gpurun.pc the install paths: both are rebuilt whenever those change.
$(B)/install-paths.txt: FORCE
	@mkdir -p $(@D)
	@echo '$(PREFIX) $(LIBDIR) $(INCLUDEDIR)' | cmp -s - $@ || echo '$(PREFIX) $(LIBDIR) $(INCLUDEDIR)' >$@
$(B)/obj/launcher/gpurun.o: $(B)/install-paths.txt
FORCE:

$(B)/gpurun: $(LAUNCHER_OBJ) $(B)/libgpurun.a
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS_GPURUN)

# The preload library lives in other people's processes: export only the hooks, and load no
# library it does not use (--as-needed: libm, which the launcher's reports need, stays out).
$(B)/obj/preload/%.o: preload/%.c lib/gpurun.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) $(ALL_CFLAGS) -fvisibility=hidden -c $< -o $@

$(B)/libgpurun-preload.so: $(PRELOAD_OBJ) $(B)/libgpurun-internal.a
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -shared -fvisibility=hidden -Wl,--exclude-libs,ALL \
		-o $@ $(PRELOAD_OBJ) $(B)/libgpurun-internal.a -Wl,--as-needed $(LDLIBS_GPURUN) -lpthread

# ---- test doubles and helpers -------------------------------------------------------------
# They stand for the outside world (drivers, other people's programs), so SANITIZE leaves them
# alone: ASan's dlopen interceptor would hide their callers from RUNPATH and $ORIGIN.
$(B)/fakes/libnvidia-ml.so.1: tests/fakes/fake_nvml.c $(FAKE_COMMON) tests/fakes/fixture.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) $(PLAIN_CFLAGS) -shared -Wl,-soname,libnvidia-ml.so.1 -o $@ \
		tests/fakes/fake_nvml.c $(FAKE_COMMON)

# An "old driver": no suffixed entry points and none of the optional ones.
$(B)/fakes/old/libnvidia-ml.so.1: tests/fakes/fake_nvml.c $(FAKE_COMMON) tests/fakes/fixture.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) $(PLAIN_CFLAGS) -DFAKE_NVML_OLD_DRIVER -shared \
		-Wl,-soname,libnvidia-ml.so.1 -o $@ tests/fakes/fake_nvml.c $(FAKE_COMMON)

$(B)/fakes/nvidia-smi: tests/fakes/fake_smi.c $(FAKE_COMMON) tests/fakes/fixture.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) $(PLAIN_CFLAGS) -o $@ tests/fakes/fake_smi.c $(FAKE_COMMON)

# -Bsymbolic: like the real driver, the fake hands out its own entry points (cuGetProcAddress),
# never the preload library's hooks of the same names.
$(B)/fakes/libcuda.so.1: tests/fakes/fake_cuda.c $(FAKE_COMMON) tests/fakes/fixture.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) $(PLAIN_CFLAGS) -shared -Wl,-Bsymbolic -Wl,-soname,libcuda.so.1 -o $@ \
		tests/fakes/fake_cuda.c $(FAKE_COMMON)
	ln -sf libcuda.so.1 $(B)/fakes/libcuda.so

$(B)/helpers/%: tests/helpers/%.c $(B)/fakes/libcuda.so.1
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) $(PLAIN_CFLAGS) $(HELPER_LDFLAGS) -o $@ $< -L$(B)/fakes \
		$(if $(findstring direct,$*),-lcuda) -ldl -lpthread

# fork_while_waiting stops libgpurun's waiting thread inside a flock of its own.
$(B)/helpers/fork_while_waiting: HELPER_LDFLAGS = -Wl,--export-dynamic-symbol=flock

$(B)/bench/%: bench/%.c bench/timing.h $(B)/libgpurun.a
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) $(ALL_CFLAGS) -o $@ $< $(B)/libgpurun.a $(LDLIBS_GPURUN)

$(B)/tests/%_test: tests/unit/%_test.c $(wildcard tests/unit/*.h) $(B)/libgpurun-internal.a
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) $(ALL_CFLAGS) $(UNIT_LDFLAGS) -o $@ $< $(B)/libgpurun-internal.a -lcmocka $(LDLIBS_GPURUN)

# visible_test and cuda_order_test fail the library's allocations one at a time
# (tests/unit/failing_allocations.h: out of memory is an error, not a mask or an answer).
FAILING_ALLOCATIONS = -Wl,--wrap=calloc -Wl,--wrap=malloc -Wl,--wrap=realloc
$(B)/tests/visible_test $(B)/tests/cuda_order_test: UNIT_LDFLAGS = $(FAILING_ALLOCATIONS)

# ---- targets people run ------------------------------------------------------------------
# `make VALGRIND=1 check`: the unit tests, and every gpurun the integration tests start, run under
# memcheck; a memory error or a leak in gpurun's own code fails the test that provoked it.
VALGRIND_COMMAND = valgrind --quiet --error-exitcode=99 --leak-check=full \
	--show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect \
	--suppressions=$(abspath tests/valgrind.supp)
# The preload library runs in uninstrumented programs (sh, python3), where ASan's runtime is
# loaded after libc: allowed, at the price of not checking those programs' own allocations.
SANITIZER_ENV = GPURUN_SANITIZED=1 ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
check: all $(FAKES) $(HELPERS) $(UNIT_BIN)
	@GPURUN_BUILD=$(abspath $(B)) $(if $(SANITIZE),$(SANITIZER_ENV)) $(if $(VALGRIND),GPURUN_UNDER="$(VALGRIND_COMMAND)" \
		UNIT_UNDER="$(VALGRIND_COMMAND)") tests/run.sh $(UNIT_BIN)

demo: all $(FAKES)
	@tests/demo.sh

bench: all $(FAKES) $(HELPERS) $(BENCH_BIN)
	@bench/run.sh

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) \
		$(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(PKGCONFIGDIR) $(DESTDIR)$(BASH_COMPLETION_DIR) \
		$(DESTDIR)$(ZSH_COMPLETION_DIR) $(DESTDIR)$(TMPFILES_DIR)
	install -m 755 $(B)/gpurun $(DESTDIR)$(BINDIR)/gpurun
	install -m 755 $(B)/libgpurun-preload.so $(DESTDIR)$(LIBDIR)/libgpurun-preload.so
	install -m 755 $(B)/libgpurun.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libgpurun.so.$(VERSION)
	ln -sf libgpurun.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libgpurun.so
	install -m 644 $(B)/libgpurun.a $(DESTDIR)$(LIBDIR)/libgpurun.a
	install -m 644 lib/gpurun.h $(DESTDIR)$(INCLUDEDIR)/gpurun.h
	install -m 644 $(B)/gpurun.pc $(DESTDIR)$(PKGCONFIGDIR)/gpurun.pc
	install -m 644 gpurun.1 $(DESTDIR)$(MANDIR)/man1/gpurun.1
	install -m 644 completions/gpurun.bash $(DESTDIR)$(BASH_COMPLETION_DIR)/gpurun
	install -m 644 completions/_gpurun $(DESTDIR)$(ZSH_COMPLETION_DIR)/_gpurun
	install -m 644 tmpfiles/gpurun.conf $(DESTDIR)$(TMPFILES_DIR)/gpurun.conf

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/gpurun $(DESTDIR)$(LIBDIR)/libgpurun-preload.so \
		$(DESTDIR)$(LIBDIR)/libgpurun.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME) \
		$(DESTDIR)$(LIBDIR)/libgpurun.so $(DESTDIR)$(LIBDIR)/libgpurun.a \
		$(DESTDIR)$(INCLUDEDIR)/gpurun.h $(DESTDIR)$(PKGCONFIGDIR)/gpurun.pc \
		$(DESTDIR)$(MANDIR)/man1/gpurun.1 $(DESTDIR)$(BASH_COMPLETION_DIR)/gpurun \
		$(DESTDIR)$(ZSH_COMPLETION_DIR)/_gpurun $(DESTDIR)$(TMPFILES_DIR)/gpurun.conf

# `make deb`: a Debian package of an install into /usr, built with dpkg-deb alone
# (build-deb/gpurun_VERSION_ARCH.deb; tests/integration/package_test.sh installs it).
DEB_ARCH = $(shell dpkg --print-architecture 2>/dev/null || echo amd64)
DEB_ROOT = build-deb/root
deb:
	rm -rf $(DEB_ROOT) build-deb/gpurun_*.deb
	$(MAKE) --no-print-directory B=build-deb PREFIX=/usr DESTDIR=$(CURDIR)/$(DEB_ROOT) install
	install -d $(DEB_ROOT)/DEBIAN $(DEB_ROOT)/usr/share/doc/gpurun
	install -m 644 LICENSE $(DEB_ROOT)/usr/share/doc/gpurun/copyright
	gzip -9n $(DEB_ROOT)/usr/share/man/man1/gpurun.1
	printf '%s\n' 'Package: gpurun' 'Version: $(VERSION)' 'Architecture: $(DEB_ARCH)' \
		'Maintainer: gpurun developers <gpurun@localhost>' 'Section: utils' 'Priority: optional' \
		'Depends: libc6' \
		'Installed-Size: '"$$(du -sk $(DEB_ROOT)/usr | cut -f1)" \
		'Description: pick free GPUs by GPUtil'"'"'s rules, lease them, run a program' \
		' gpurun reads GPU load and memory through NVML (or nvidia-smi), keeps the GPUs that' \
		' are free by GPUtil'"'"'s rules, leases them with flock, sets CUDA_VISIBLE_DEVICES and' \
		' execs the program. A preload library does the same inside unmodified programs.' \
		>$(DEB_ROOT)/DEBIAN/control
	dpkg-deb --root-owner-group --build $(DEB_ROOT) build-deb/gpurun_$(VERSION)_$(DEB_ARCH).deb

# ---- static analysis: `make lint` (configuration and reasons: .clang-tidy, .cppcheck-suppressions;
# clang-tidy's compiler flags: compile_flags.txt)
LINT_SRC = $(LIB_SRC) $(LAUNCHER_SRC) $(PRELOAD_SRC) $(wildcard examples/*.c)
lint:
	cppcheck --enable=warning,performance,portability --std=c11 --error-exitcode=1 -q \
		--inline-suppr --suppressions-list=.cppcheck-suppressions -D_GNU_SOURCE -Ilib \
		$(LINT_SRC)
	@printf '%s\n' $(LINT_SRC) | xargs -P $$(nproc) -n 2 clang-tidy --quiet 2>/dev/null
	@echo "lint: cppcheck and clang-tidy found nothing"

# ---- fuzzing: libFuzzer targets for every parser of outside input (tests/fuzz) -----------------
# `make fuzz` runs each for FUZZ_SECONDS from its seed corpus and records the executions in
# bench/RESULTS.md ("Hardening"); a finding is saved under build-fuzz/findings and fails it.
FUZZ_CC = clang
FUZZ_SECONDS ?= 60
FUZZ_B = build-fuzz
FUZZ_SANITIZE = -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_SRC = $(wildcard tests/fuzz/*_fuzz.c)
FUZZ_BIN = $(FUZZ_SRC:tests/fuzz/%.c=$(FUZZ_B)/%)

FUZZ_CFLAGS = -std=gnu11 $(WARNINGS) -O1 -g $(FUZZ_SANITIZE)
FUZZ_LIB_OBJ = $(LIB_SRC:%.c=$(FUZZ_B)/obj/%.o)

# libgpurun itself, instrumented for coverage and the sanitizers, in its own tree.
$(FUZZ_B)/obj/%.o: %.c lib/gpurun.h $(wildcard lib/*_internal.h)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(ALL_CPPFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

# The targets call internal parsers (sysfs_*): the objects as they are.
$(FUZZ_B)/libgpurun-internal.a: $(FUZZ_LIB_OBJ)
	rm -f $@ && $(AR) rcs $@ $^

$(FUZZ_B)/%_fuzz: tests/fuzz/%_fuzz.c tests/fuzz/fuzz.h $(FUZZ_B)/libgpurun-internal.a
	$(FUZZ_CC) $(ALL_CPPFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< \
		$(FUZZ_B)/libgpurun-internal.a $(LDLIBS_GPURUN)

fuzz-build: $(FUZZ_BIN)

FUZZ_RESULTS ?= bench/RESULTS.md
fuzz: fuzz-build all $(FAKES) $(HELPERS)
	@FUZZ_RESULTS=$(FUZZ_RESULTS) tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_BIN)

.PHONY: fuzz fuzz-build lint

clean:
	rm -rf $(B) build-asan build-aarch64 $(FUZZ_B) build-deb
