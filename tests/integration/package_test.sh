#!/usr/bin/env bash
# package_test.sh: `make deb` builds a Debian package; it is installed into this system with
# dpkg -i, the installed gpurun runs against the fakes (--version, --show, --lazy finding the
# installed preload library), and dpkg -r removes it again. Needs root and dpkg; skipped, saying
# so, elsewhere, and where a gpurun is already installed (it is not this test's to replace).
. "$(dirname "$0")/lib.sh"

NAME="the Debian package installs, runs and uninstalls"
if [ "$(id -u)" != 0 ]; then
	skip "$NAME" "needs root to dpkg -i into the system"
	exit 0
fi
if ! command -v dpkg-deb >/dev/null || ! command -v dpkg >/dev/null; then
	skip "$NAME" "needs dpkg and dpkg-deb (a Debian system)"
	exit 0
fi
if dpkg -s gpurun >/dev/null 2>&1 || [ -e /usr/bin/gpurun ] || [ -e /usr/lib/libgpurun-preload.so ]; then
	skip "$NAME" "a gpurun is already installed in /usr; not replacing it"
	exit 0
fi

# The package is built from the source tree as a user would, whatever this check's build is.
if ! env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$ROOT" --no-print-directory deb \
	>"$SCRATCH/deb.log" 2>&1; then
	not_ok "make deb" "$(tail -n 20 "$SCRATCH/deb.log")"
	exit 1
fi
VERSION=$(sed -n 's/^#define GPURUN_VERSION "\(.*\)"/\1/p' "$ROOT/lib/gpurun.h")
deb=$(ls "$ROOT"/build-deb/gpurun_"$VERSION"_*.deb 2>/dev/null | head -n 1)
check "make deb builds build-deb/$(basename "${deb:-none}")" test -n "$deb"
[ -n "$deb" ] || exit 1

# The soname follows the ABI version: major.minor in 0.x (install_test.sh checks it in full).
IFS=. read -r major minor _ <<<"$VERSION"
SONAME=libgpurun.so.$([ "$major" = 0 ] && echo "0.$minor" || echo "$major")
contents=$(dpkg-deb --contents "$deb" | awk '{ print $6 }')
missing=""
for path in ./usr/bin/gpurun ./usr/lib/libgpurun-preload.so ./usr/lib/libgpurun.so.$VERSION \
	./usr/lib/$SONAME ./usr/lib/libgpurun.so ./usr/lib/libgpurun.a ./usr/include/gpurun.h \
	./usr/lib/pkgconfig/gpurun.pc ./usr/share/man/man1/gpurun.1.gz ./usr/share/bash-completion/completions/gpurun \
	./usr/share/zsh/site-functions/_gpurun ./usr/lib/tmpfiles.d/gpurun.conf; do
	grep -qx -- "$path" <<<"$contents" || missing+=" $path"
done
check "the package holds the command, both libraries, the header, pkg-config, man page, completions and the tmpfiles.d rule${missing:+ (missing:$missing)}" \
	test -z "$missing"

if ! dpkg -i "$deb" >"$SCRATCH/dpkg.log" 2>&1; then
	not_ok "dpkg -i $(basename "$deb")" "$(cat "$SCRATCH/dpkg.log")"
	exit 1
fi
ok "dpkg -i $(basename "$deb")"
# Whatever happens next, the system is left as it was found.
trap 'dpkg -r gpurun >/dev/null 2>&1; rm -rf "$SCRATCH"' EXIT

run /usr/bin/gpurun --version
expect "the packaged gpurun --version" 0 "gpurun $VERSION"
use_fixture four.fixture
run /usr/bin/gpurun --show
expect "the packaged gpurun --show against the fakes" 0 "$(cat "$EXPECTED/four.table")"
run /usr/bin/gpurun --lazy sh -c 'printf "%s\n" "$LD_PRELOAD"'
expect "the packaged gpurun --lazy preloads /usr/lib/libgpurun-preload.so" 0 "/usr/lib/libgpurun-preload.so"
LD_LIBRARY_PATH=$FAKES run /usr/bin/gpurun --lazy --order memory "$BUILD/helpers/preload_direct"
expect "... which chooses when the program starts CUDA (the fake libcuda sees GPU 2)" 0 \
	"init=0 count=1 visible=2"
if command -v man >/dev/null; then
	check "man gpurun finds the packaged page" sh -c 'man -w gpurun | grep -q /usr/share/man/man1/gpurun.1.gz'
else
	skip "man gpurun finds the packaged page" "man is not installed"
fi

if dpkg -r gpurun >"$SCRATCH/dpkg.log" 2>&1 && [ ! -e /usr/bin/gpurun ] &&
	[ ! -e /usr/lib/libgpurun-preload.so ]; then
	ok "dpkg -r gpurun removes it"
else
	not_ok "dpkg -r gpurun removes it" "$(cat "$SCRATCH/dpkg.log")"
fi
