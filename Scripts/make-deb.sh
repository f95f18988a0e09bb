#!/usr/bin/env bash
# make deb: libloopkit$MAJOR and libloopkit-dev with dpkg-deb, then lintian.
#   Scripts/make-deb.sh LIBRARY OUT_DIR      (LIBRARY: make lib's stripped libloopkit.so.MAJOR.MINOR.PATCH)
#
#   libloopkit$MAJOR   /usr/lib/<multiarch>/libloopkit.so.MAJOR.MINOR.PATCH and its soname's symlink; DEBIAN/shlibs,
#                      DEBIAN/symbols (from Sources/CLoopKit/abi/libloopkit.symbols), the ldconfig trigger; Depends
#                      from dpkg-shlibdeps
#   libloopkit-dev     /usr/include/loopkit.h, /usr/lib/<multiarch>/pkgconfig/loopkit.pc, the libloopkit.so symlink
# Native packages (version = LK_VERSION, no Debian revision); the package's name follows the soname, so moving
# LK_VERSION_MAJOR renames it (Debian policy 8.1). lintian fails the build on an error; the warnings it still
# gives are listed in the README's "From C" section.
set -euo pipefail
cd "$(dirname "$0")/.."
library=$1
out=$2
header=Sources/CLoopKit/include/loopkit.h
version=$(sed -n 's/^#define LK_VERSION_\(MAJOR\|MINOR\|PATCH\) //p' "$header" | paste -sd.)
major=${version%%.*}
arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
maintainer="LoopKit <dev@loopkit.invalid>"
package=libloopkit$major
date=$(git log -1 --format=%aD 2>/dev/null || date -R)
export SOURCE_DATE_EPOCH=$(git log -1 --format=%ct 2>/dev/null || date +%s)

rm -rf "$out"
mkdir -p "$out"

docs() { # docs ROOT PACKAGE: copyright and the (native) changelog
    local doc=$1/usr/share/doc/$2
    install -d "$doc"
    cat > "$doc/copyright" <<COPYRIGHT
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: LoopKit
Upstream-Contact: $maintainer

Files: *
Copyright: $(date -u -d "@$SOURCE_DATE_EPOCH" +%Y) the LoopKit authors
License: no-license-yet
 The LoopKit repository does not state a license yet. Until it does, these packages are for the
 project's own machines and hosts.
COPYRIGHT
    cat > "$out/changelog" <<CHANGELOG
loopkit ($version) unstable; urgency=medium

  * libloopkit.so.$major: the C ABI of loopkit.h, the Swift runtime inside.

 -- $maintainer  $date
CHANGELOG
    gzip -9n -c "$out/changelog" > "$doc/changelog.gz"
    rm "$out/changelog"
}

control_tail() { # the fields both packages share
    cat <<CONTROL
Version: $version
Architecture: $arch
Multi-Arch: same
Maintainer: $maintainer
Priority: optional
Installed-Size: $(du -sk --exclude=DEBIAN "$1" | cut -f1)
CONTROL
}

md5sums() { (cd "$1" && find . -type f ! -path './DEBIAN/*' -printf '%P\n' | sort | xargs md5sum > DEBIAN/md5sums); }

# ---- libloopkit$MAJOR ---------------------------------------------------------------------------------------
lib_root=$out/$package
install -d "$lib_root/DEBIAN" "$lib_root/usr/lib/$multiarch"
install -m 644 "$library" "$lib_root/usr/lib/$multiarch/libloopkit.so.$version"
ln -s "libloopkit.so.$version" "$lib_root/usr/lib/$multiarch/libloopkit.so.$major"
docs "$lib_root" "$package"
echo "libloopkit $major $package (>= $version)" > "$lib_root/DEBIAN/shlibs"
grep -v '^#' Sources/CLoopKit/abi/libloopkit.symbols | sed "s/#PACKAGE#/$package/" > "$lib_root/DEBIAN/symbols"
head -1 "$lib_root/DEBIAN/symbols" | grep -q "^libloopkit.so.$major " || {
    echo "==> Sources/CLoopKit/abi/libloopkit.symbols is for another soname than libloopkit.so.$major"; exit 1; }
listed=$(sed -n 's/^ \([a-z0-9_]*\)@Base .*/\1/p' "$lib_root/DEBIAN/symbols" | sort)
exported=$(nm -D --defined-only "$library" | awk '{ print $3 }' | sort)
if [ "$listed" != "$exported" ]; then
    diff <(echo "$listed") <(echo "$exported") || true
    echo "==> Sources/CLoopKit/abi/libloopkit.symbols does not list exactly the library's symbols (< listed, > exported)"
    exit 1
fi
echo "activate-noawait ldconfig" > "$lib_root/DEBIAN/triggers"

# dpkg-shlibdeps reads debian/control from the folder it runs in: a scratch one.
shlibdeps_dir=$out/shlibdeps
install -d "$shlibdeps_dir/debian"
printf 'Source: loopkit\n\nPackage: %s\nArchitecture: any\n' "$package" > "$shlibdeps_dir/debian/control"
depends=$(cd "$shlibdeps_dir" && dpkg-shlibdeps -O "$OLDPWD/$lib_root/usr/lib/$multiarch/libloopkit.so.$version" | sed -n 's/^shlibs:Depends=//p')
rm -rf "$shlibdeps_dir"

{
    echo "Package: $package"
    echo "Source: loopkit"
    control_tail "$lib_root"
    echo "Section: libs"
    echo "Depends: $depends"
    echo "Description: event loop with a strict next-iteration queue (C library)"
    echo " LoopKit is an embeddable event loop on libevent whose next-iteration"
    echo " queue has a documented order: work queued in one iteration runs in the"
    echo " next, never inside the callback that queued it. This package holds"
    echo " libloopkit.so.$major, the C interface of loopkit.h, with the Swift runtime"
    echo " it is written in linked inside: it needs no Swift toolchain."
} > "$lib_root/DEBIAN/control"
md5sums "$lib_root"
dpkg-deb --root-owner-group -Zxz --build "$lib_root" "$out/${package}_${version}_${arch}.deb" > /dev/null

# ---- libloopkit-dev -----------------------------------------------------------------------------------------
dev_root=$out/libloopkit-dev
install -d "$dev_root/DEBIAN" "$dev_root/usr/include" "$dev_root/usr/lib/$multiarch/pkgconfig"
install -m 644 "$header" "$dev_root/usr/include/loopkit.h"
ln -s "libloopkit.so.$major" "$dev_root/usr/lib/$multiarch/libloopkit.so"
sed -e 's|@PREFIX@|/usr|' -e "s|@LIBDIR@|\${prefix}/lib/$multiarch|" -e "s|@VERSION@|$version|" \
    Sources/CLoopKit/loopkit.pc.in > "$dev_root/usr/lib/$multiarch/pkgconfig/loopkit.pc"
chmod 644 "$dev_root/usr/lib/$multiarch/pkgconfig/loopkit.pc"
docs "$dev_root" libloopkit-dev
{
    echo "Package: libloopkit-dev"
    echo "Source: loopkit"
    control_tail "$dev_root"
    echo "Section: libdevel"
    echo "Depends: $package (= $version), libevent-dev"
    echo "Description: event loop with a strict next-iteration queue (development files)"
    echo " LoopKit is an embeddable event loop on libevent whose next-iteration"
    echo " queue has a documented order. This package holds loopkit.h, the"
    echo " pkg-config file loopkit.pc and the libloopkit.so link a C host builds"
    echo " against: cc host.c \$(pkg-config --cflags --libs loopkit)."
} > "$dev_root/DEBIAN/control"
md5sums "$dev_root"
dpkg-deb --root-owner-group -Zxz --build "$dev_root" "$out/libloopkit-dev_${version}_${arch}.deb" > /dev/null

for deb in "$out"/*.deb; do
    echo "==> $deb: $(stat -c %s "$deb") bytes; $(dpkg-deb -f "$deb" Depends)"
done
echo "==> lintian (errors fail the build; warnings are the README's)"
lintian --fail-on error --tag-display-limit 0 "$out"/*.deb | tee "$out/lintian.txt"
echo "==> lintian: no error ($(grep -c '^W:' "$out/lintian.txt" || true) warnings, $(grep -c '^[IP]:' "$out/lintian.txt" || true) info or pedantic tags)"
