#!/usr/bin/env bash
# install_test.sh: `make install` into a temporary PREFIX, with LIBDIR outside it so that only
# the compiled-in library directory can lead an installed gpurun to its preload library; what
# is installed (the shared library's soname and exports, pkg-config, the man page, completions),
# the example program built against the installed library, that the static library leaves
# libgpurun's internal names to the program, and `make uninstall`.
. "$(dirname "$0")/lib.sh"

PREFIX=$SCRATCH/prefix
LIBDIR=$SCRATCH/elsewhere/lib64
TREE=$SCRATCH/build
# The nested make builds in its own tree (from a copy of this one's objects, so only the
# launcher, which has LIBDIR compiled in, is rebuilt), with this build's sanitizers if any.
mkdir -p "$TREE"
cp -a "$BUILD/obj" "$TREE/obj"
# A program linked against a sanitizer build's libraries needs the sanitizers' runtimes too.
SANITIZER_FLAGS=${GPURUN_SANITIZED:+-fsanitize=address -fsanitize=undefined}
nested_make() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$ROOT" --no-print-directory \
	B="$TREE" ${GPURUN_SANITIZED:+SANITIZE=1} PREFIX="$PREFIX" LIBDIR="$LIBDIR" "$@"; }

if ! nested_make install >"$SCRATCH/install.log" 2>&1; then
	not_ok "make install into a temporary PREFIX" "$(tail -n 20 "$SCRATCH/install.log")"
	exit 1
fi
ok "make install PREFIX=... LIBDIR=... succeeds"

VERSION=$(sed -n 's/^#define GPURUN_VERSION "\(.*\)"/\1/p' "$ROOT/lib/gpurun.h")
# The ABI version, as the Makefile should derive it: in 0.x every minor version may break the
# ABI (0.2.x is 0.2), from 1.0 on the major version alone.
IFS=. read -r major minor _ <<<"$VERSION"
ABI=$([ "$major" = 0 ] && echo "0.$minor" || echo "$major")
SONAME=libgpurun.so.$ABI
missing=""
for file in "$PREFIX/bin/gpurun" "$LIBDIR/libgpurun-preload.so" "$LIBDIR/libgpurun.so.$VERSION" \
	"$LIBDIR/$SONAME" "$LIBDIR/libgpurun.so" "$LIBDIR/libgpurun.a" \
	"$PREFIX/include/gpurun.h" "$LIBDIR/pkgconfig/gpurun.pc" "$PREFIX/share/man/man1/gpurun.1" \
	"$PREFIX/share/bash-completion/completions/gpurun" "$PREFIX/share/zsh/site-functions/_gpurun" \
	"$PREFIX/lib/tmpfiles.d/gpurun.conf"; do
	[ -e "$file" ] || missing+=" $file"
done
check "every file is installed where PREFIX and LIBDIR say${missing:+ (missing:$missing)}" test -z "$missing"

soname=$(readelf -d "$LIBDIR/libgpurun.so.$VERSION" 2>/dev/null | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
check "libgpurun.so $VERSION has the soname $SONAME (got '$soname')" test "$soname" = "$SONAME"
chain="$(readlink "$LIBDIR/libgpurun.so") -> $(readlink "$LIBDIR/$SONAME")"
check "libgpurun.so -> $SONAME -> libgpurun.so.$VERSION, a file (got '$chain')" \
	test "$chain" = "$SONAME -> libgpurun.so.$VERSION" -a -f "$(readlink -e "$LIBDIR/libgpurun.so")"
foreign=$(nm -D --defined-only "$LIBDIR/libgpurun.so" |
	awk '!($2 ~ /[TDBR]/ && $3 ~ /^gpurun_.*@@GPURUN_'"$ABI"'$/ || $2 == "A" && $3 == "GPURUN_'"$ABI"'") { print $3 }' |
	tr '\n' ' ')
check "libgpurun.so exports only gpurun_*, each of version GPURUN_$ABI (others: '$foreign')" test -z "$foreign"
exported=$(nm -D --defined-only "$LIBDIR/libgpurun-preload.so" | awk '{ print $NF }' | sort | tr '\n' ' ')
check "the installed preload library exports only its hooks ($exported)" test "$exported" = "$PRELOAD_HOOKS"

# The installed gpurun: its version, and --lazy finds the preload library through the
# compiled-in LIBDIR (there is none beside bin/ or in ../lib).
run "$PREFIX/bin/gpurun" --version
expect "the installed gpurun --version" 0 "gpurun $VERSION"
use_fixture four.fixture
run "$PREFIX/bin/gpurun" --lazy sh -c 'printf "%s\n" "$LD_PRELOAD"'
expect "the installed gpurun --lazy preloads the installed library (compiled-in LIBDIR)" 0 \
	"$LIBDIR/libgpurun-preload.so"

# pkg-config, and the README's example program built against the installed library.
if command -v pkg-config >/dev/null; then
	export PKG_CONFIG_PATH=$LIBDIR/pkgconfig
	flags=$(pkg-config --cflags --libs gpurun)
	if cc $SANITIZER_FLAGS -o "$SCRATCH/pick" "$ROOT/examples/pick.c" $flags 2>"$SCRATCH/cc.err"; then
		run env LD_LIBRARY_PATH="$LIBDIR" "$SCRATCH/pick" "--order memory"
		expect "examples/pick.c, built with \$(pkg-config --cflags --libs gpurun), chooses" 0 \
			"CUDA_VISIBLE_DEVICES=2 (1 GPU, leased until this program lets go)
GPU 2 GPU-c37e0b91-5a28-4f6d-8e14-b92a6c0d7f35: NVIDIA A100-SXM4-80GB, load 3%, 2000 of 81920 MiB used"
		# What a program built against this version asks the loader for: this soname, and
		# the symbols of this ABI version (a 0.1 program asked for libgpurun.so.0 and got 0.2).
		needed=$(readelf -d "$SCRATCH/pick" | sed -n 's/.*(NEEDED).*\[\(libgpurun.*\)\]/\1/p')
		required=$(readelf -V "$SCRATCH/pick" | grep -o 'Name: GPURUN_[^ ]*' | sort -u | cut -c7- | paste -sd,)
		check "... and needs $SONAME, symbols of version GPURUN_$ABI (got '$needed', '$required')" \
			test "$needed $required" = "$SONAME GPURUN_$ABI"
	else
		not_ok "examples/pick.c builds with pkg-config's flags ($flags)" "$(cat "$SCRATCH/cc.err")"
	fi
	if cc $SANITIZER_FLAGS -o "$SCRATCH/pick-static" "$ROOT/examples/pick.c" -I"$PREFIX/include" \
		"$LIBDIR/libgpurun.a" $(pkg-config --static --libs-only-l gpurun | sed 's/-lgpurun//') \
		2>"$SCRATCH/cc.err"; then
		run "$SCRATCH/pick-static"
		[ "$STATUS" = 0 ] && ok "examples/pick.c links against the installed libgpurun.a" ||
			not_ok "examples/pick.c links against the installed libgpurun.a" "status $STATUS: $ERR_TEXT"
	else
		not_ok "examples/pick.c links against the installed libgpurun.a" "$(cat "$SCRATCH/cc.err")"
	fi
else
	skip "pkg-config --cflags --libs gpurun" "pkg-config is not installed"
fi

# The installed libraries define no global name but gpurun_* (and the .so its version node): a
# program may have functions of its own named as libgpurun's internal ones (queue_open,
# sysfs_path, ...). One that does links against libgpurun.a, and each calls its own.
foreign=$(nm -g --defined-only "$LIBDIR/libgpurun.a" | awk 'NF == 3 && $3 !~ /^gpurun_/ { print $3 }' |
	tr '\n' ' ')
check "libgpurun.a defines no global but gpurun_* (others: '$foreign')" test -z "$foreign"
foreign=$(nm -g --defined-only "$LIBDIR/libgpurun.so.$VERSION" |
	awk '$3 !~ /^gpurun_/ && $3 != "GPURUN_'"$ABI"'" { print $3 }' | tr '\n' ' ')
check "libgpurun.so defines no global but gpurun_* (others: '$foreign')" test -z "$foreign"
cat >"$SCRATCH/own_names.c" <<'EOF_C'
#include <stdio.h>
#include <stdlib.h>
#include <gpurun.h>

static int mine;    /* set while main calls them: libgpurun must never call these */
int queue_open(void) { if (!mine) abort(); return 1; }
int sysfs_path(void) { if (!mine) abort(); return 2; }
int lease_file_name(void) { if (!mine) abort(); return 3; }
int close_all_but(void) { if (!mine) abort(); return 4; }
int in_flight_add(void) { if (!mine) abort(); return 5; }

int main(void)
{
	struct gpurun_request request;
	struct gpurun_choice choice;
	struct gpurun_error err;
	char visible[64] = "";

	mine = 1;
	printf("%d%d%d%d%d ", queue_open(), sysfs_path(), lease_file_name(), close_all_but(),
	       in_flight_add());
	mine = 0;
	gpurun_request_init(&request);
	if (gpurun_request_parse_string(&request, "--limit 1 --order memory", &err) != 0 ||
	    gpurun_acquire(&request, NULL, NULL, &choice, &err) != 0) {
		fprintf(stderr, "%s\n", err.message);
		return 1;
	}
	gpurun_choice_format(&choice, &request, visible, sizeof(visible));
	printf("%s\n", visible);
	gpurun_choice_free(&choice);
	gpurun_request_free(&request);
	return 0;
}
EOF_C
if cc $SANITIZER_FLAGS -o "$SCRATCH/own_names" "$SCRATCH/own_names.c" -I"$PREFIX/include" \
	"$LIBDIR/libgpurun.a" -ldl -lm 2>"$SCRATCH/cc.err"; then
	run "$SCRATCH/own_names"
	expect "a program with its own queue_open, sysfs_path, ... links libgpurun.a; each calls its own" \
		0 "12345 2"
else
	not_ok "a program with its own queue_open, sysfs_path, ... links libgpurun.a" \
		"$(head -n 5 "$SCRATCH/cc.err")"
fi
run "$BUILD/examples/pick" "--limit 2 --order free"
[ "$STATUS" = 0 ] && [[ "$OUT_TEXT" == "CUDA_VISIBLE_DEVICES=2,3 (2 GPUs"* ]] &&
	ok "the example built by make check runs (--limit 2 --order free: 2,3)" ||
	not_ok "the example built by make check runs" "status $STATUS" "$OUT_TEXT" "$ERR_TEXT"

# The man page: it renders cleanly, names this version and describes every option gpurun accepts.
MAN=$PREFIX/share/man/man1/gpurun.1
check "gpurun.1 names version $VERSION" grep -q "^\.TH GPURUN 1 .* \"gpurun $VERSION\"" "$MAN"
if command -v groff >/dev/null; then
	warnings=$(groff -man -Tutf8 -ww "$MAN" 2>&1 >/dev/null)
	check "gpurun.1 renders without warnings${warnings:+: $warnings}" test -z "$warnings"
else
	skip "gpurun.1 renders without warnings" "groff is not installed"
fi
undocumented=""
for option in $(grep -o '{ "--[a-z-]*"' "$ROOT/lib/request.c" | cut -d'"' -f2); do
	grep -q -- "$(sed 's/-/\\\\-/g' <<<"$option")" "$MAN" || undocumented+=" $option"
done
check "gpurun.1 describes every option${undocumented:+ (not:$undocumented)}" test -z "$undocumented"
undocumented=""
for variable in $(grep -rho 'getenv("[A-Z_]*")' "$ROOT/lib" "$ROOT/launcher" "$ROOT/preload" |
	cut -d'"' -f2 | sort -u); do
	[ "$variable" = LD_PRELOAD ] && continue
	grep -q "$variable" "$MAN" || undocumented+=" $variable"
done
check "gpurun.1 describes every environment variable gpurun reads${undocumented:+ (not:$undocumented)}" \
	test -z "$undocumented"
help_options=$("$PREFIX/bin/gpurun" --help | grep -o -- '--[a-z-]*' | sort -u)
for option in $help_options; do
	grep -q -- "$(sed 's/-/\\\\-/g' <<<"$option")" "$MAN" || undocumented+=" $option"
done
check "every option of --help is in gpurun.1${undocumented:+ (not:$undocumented)}" test -z "$undocumented"

# Completions: bash completes options and their values; zsh loads the function.
completed=$(bash -c "source '$PREFIX/share/bash-completion/completions/gpurun'
	COMP_WORDS=(gpurun --ord); COMP_CWORD=1; _gpurun; printf '%s ' \"\${COMPREPLY[@]}\"
	COMP_WORDS=(gpurun --order m); COMP_CWORD=2; _gpurun; printf '%s ' \"\${COMPREPLY[@]}\"" 2>&1)
check "bash completion: --ord → --order, --order m → memory (got '$completed')" \
	test "$completed" = "--order memory "
completed=$(bash -c "source '$PREFIX/share/bash-completion/completions/gpurun'
	COMP_WORDS=(gpurun --vendor a); COMP_CWORD=2; _gpurun; printf '%s ' \"\${COMPREPLY[@]}\"
	COMP_WORDS=(gpurun --show --watch 5 --wi); COMP_CWORD=4; _gpurun; printf '%s ' \"\${COMPREPLY[@]}\"" 2>&1)
check "bash completion: --vendor a → amd any, --watch 5 is no command (got '$completed')" \
	test "$completed" = "amd any --wide "
if command -v zsh >/dev/null; then
	check "zsh completion parses" zsh -n "$PREFIX/share/zsh/site-functions/_gpurun"
else
	skip "zsh completion parses" "zsh is not installed"
fi

# The tmpfiles.d rule: systemd-tmpfiles makes the lock directory as gpurun does (root's, 1777),
# and the rule keeps /tmp's cleaning out of it.
if command -v systemd-tmpfiles >/dev/null; then
	mkdir -p "$SCRATCH/boot/tmp"
	systemd-tmpfiles --create --root="$SCRATCH/boot" "$PREFIX/lib/tmpfiles.d/gpurun.conf" \
		>"$SCRATCH/tmpfiles.log" 2>&1
	made=$(stat -c '%a %U' "$SCRATCH/boot/tmp/gpurun" "$SCRATCH/boot/tmp/gpurun/queue" 2>/dev/null |
		paste -sd,)
	check "systemd-tmpfiles makes /tmp/gpurun and its queue root's, mode 1777 (got '$made')" \
		test "$made" = "1777 root,1777 root"
else
	skip "systemd-tmpfiles makes /tmp/gpurun root's, mode 1777" "systemd-tmpfiles is not installed"
fi
check "... and the rule excludes it from cleaning" grep -qx 'x /tmp/gpurun' "$PREFIX/lib/tmpfiles.d/gpurun.conf"

# make uninstall removes every file it installed (the directories may stay, as usual).
nested_make uninstall >"$SCRATCH/uninstall.log" 2>&1
left=$(find "$PREFIX" "$SCRATCH/elsewhere" \( -type f -o -type l \) | tr '\n' ' ')
check "make uninstall removes everything it installed${left:+ (left: $left)}" test -z "$left"
