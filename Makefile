# gpurun: a plain Makefile. `make` builds, `make check` tests, `make demo` shows, `make bench` measures.
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR ?= $(PREFIX)/share/man
DESTDIR ?=

CC ?= cc
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

PROGRAMS = $(B)/gpurun $(B)/libgpurun.a $(B)/libgpurun-preload.so

.PHONY: all check unit integration demo bench install uninstall clean
all: $(PROGRAMS)

$(B)/obj/%.o: %.c lib/gpurun.h $(wildcard lib/*_internal.h) $(wildcard launcher/*.h)
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) $(ALL_CFLAGS) -c $< -o $@

$(B)/libgpurun.a: $(LIB_OBJ)
	@mkdir -p $(@D)
	rm -f $@ && $(AR) rcs $@ $^

$(B)/gpurun: $(LAUNCHER_OBJ) $(B)/libgpurun.a
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS_GPURUN)

# The preload library lives in other people's processes: export only the hooks.
$(B)/obj/preload/%.o: preload/%.c lib/gpurun.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) $(ALL_CFLAGS) -fvisibility=hidden -c $< -o $@

$(B)/libgpurun-preload.so: $(PRELOAD_OBJ) $(B)/libgpurun.a
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -shared -fvisibility=hidden -Wl,--exclude-libs,ALL \
		-o $@ $(PRELOAD_OBJ) $(B)/libgpurun.a $(LDLIBS_GPURUN) -lpthread

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

$(B)/fakes/libcuda.so.1: tests/fakes/fake_cuda.c $(FAKE_COMMON) tests/fakes/fixture.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) $(PLAIN_CFLAGS) -shared -Wl,-soname,libcuda.so.1 -o $@ \
		tests/fakes/fake_cuda.c $(FAKE_COMMON)
	ln -sf libcuda.so.1 $(B)/fakes/libcuda.so

$(B)/helpers/%: tests/helpers/%.c $(B)/fakes/libcuda.so.1
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) $(PLAIN_CFLAGS) -o $@ $< -L$(B)/fakes $(if $(findstring direct,$*),-lcuda) \
		-ldl -lpthread

$(B)/bench/%: bench/%.c $(B)/libgpurun.a
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) $(ALL_CFLAGS) -o $@ $< $(B)/libgpurun.a $(LDLIBS_GPURUN)

$(B)/tests/%_test: tests/unit/%_test.c tests/unit/unit.h $(B)/libgpurun.a
	@mkdir -p $(@D)
	$(CC) $(ALL_CPPFLAGS) $(ALL_CFLAGS) -o $@ $< $(B)/libgpurun.a -lcmocka $(LDLIBS_GPURUN)

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
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(MANDIR)/man1
	install -m 755 $(B)/gpurun $(DESTDIR)$(BINDIR)/gpurun
	install -m 755 $(B)/libgpurun-preload.so $(DESTDIR)$(LIBDIR)/libgpurun-preload.so
	install -m 644 $(B)/libgpurun.a $(DESTDIR)$(LIBDIR)/libgpurun.a
	install -m 644 lib/gpurun.h $(DESTDIR)$(INCLUDEDIR)/gpurun.h
	install -m 644 gpurun.1 $(DESTDIR)$(MANDIR)/man1/gpurun.1

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/gpurun $(DESTDIR)$(LIBDIR)/libgpurun-preload.so \
		$(DESTDIR)$(LIBDIR)/libgpurun.a $(DESTDIR)$(INCLUDEDIR)/gpurun.h \
		$(DESTDIR)$(MANDIR)/man1/gpurun.1

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

$(FUZZ_B)/libgpurun.a: $(FUZZ_LIB_OBJ)
	rm -f $@ && $(AR) rcs $@ $^

$(FUZZ_B)/%_fuzz: tests/fuzz/%_fuzz.c tests/fuzz/fuzz.h $(FUZZ_B)/libgpurun.a
	$(FUZZ_CC) $(ALL_CPPFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_B)/libgpurun.a \
		$(LDLIBS_GPURUN)

fuzz-build: $(FUZZ_BIN)

FUZZ_RESULTS ?= bench/RESULTS.md
fuzz: fuzz-build all $(FAKES) $(HELPERS)
	@FUZZ_RESULTS=$(FUZZ_RESULTS) tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_BIN)

.PHONY: fuzz fuzz-build lint

clean:
	rm -rf $(B) build-asan $(FUZZ_B)
