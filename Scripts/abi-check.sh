#!/usr/bin/env bash
# make abi-check / make abi-update: libloopkit's C ABI against its checked-in baseline.
#
# The ABI is loopkit.h's (the Swift compiler checks the library's @c @implementation functions against
# it, and make lib checks that the library exports exactly the functions it declares): Scripts/abi-stub.py
# turns the header into a stub library with C debug information, abidw writes its ABI, and abidiff compares
# that with Sources/CLoopKit/abi/libloopkit.abi.
#
#   no change                          passes
#   only additions (functions)         fails until the baseline records them on purpose: make abi-update
#   a function removed or changed      (a type's size or members, a parameter, a constant's value)
#                                      fails, unless LK_VERSION_MAJOR, and with it the soname, moved past
#                                      the baseline's: then make abi-update starts the new baseline
#
# Usage: Scripts/abi-check.sh [--update]
set -euo pipefail
cd "$(dirname "$0")/.."

header=Sources/CLoopKit/include/loopkit.h
baseline=Sources/CLoopKit/abi/libloopkit.abi
work=.build/abi
major=$(sed -n 's/^#define LK_VERSION_MAJOR //p' "$header")
soname=libloopkit.so.$major

mkdir -p "$work"
python3 Scripts/abi-stub.py "$header" > "$work/stub.c"
${CC:-cc} -std=c11 -g -O0 -fPIC -shared -Wall -Wno-unused-parameter -I"$(dirname "$header")" \
    -o "$work/$soname" "$work/stub.c" -Wl,-soname,"$soname" -Wl,--version-script=Sources/CLoopKit/loopkit.map
abidw --no-corpus-path --no-comp-dir-path --no-show-locs --headers-dir "$(dirname "$header")" \
    "$work/$soname" > "$work/libloopkit.abi"

if [ "${1:-}" = "--update" ]; then
    mkdir -p "$(dirname "$baseline")"
    cp "$work/libloopkit.abi" "$baseline"
    echo "==> ABI baseline updated: $baseline ($soname, $(grep -c '<elf-symbol ' "$baseline") symbols); commit it"
    exit 0
fi

[ -f "$baseline" ] || { echo "==> no ABI baseline at $baseline: make abi-update"; exit 1; }
baseline_major=$(sed -n "s/.*soname='libloopkit\.so\.\([0-9]*\)'.*/\1/p" "$baseline" | head -1)

set +e
abidiff "$baseline" "$work/libloopkit.abi" > "$work/abidiff.txt"
status=$?
set -e
if [ $status -eq 0 ]; then
    echo "==> ABI check: $soname matches its baseline ($(grep -c '<elf-symbol ' "$baseline") symbols)"
    exit 0
fi
if [ $((status & 3)) -ne 0 ]; then
    cat "$work/abidiff.txt"; echo "==> ABI check: abidiff failed (status $status)"; exit 1
fi
cat "$work/abidiff.txt"
removed_or_changed=$(sed -n 's/^\(Functions\|Variables\) changes summary: \([0-9]*\) Removed, \([0-9]*\) Changed.*/\2 \3/p' \
    "$work/abidiff.txt" | awk '{ n += $1 + $2 } END { print n + 0 }')
if [ "$removed_or_changed" -gt 0 ] || [ $((status & 8)) -ne 0 ]; then
    if [ "$major" != "$baseline_major" ]; then
        echo "==> ABI check: incompatible with the baseline, and LK_VERSION_MAJOR moved ($baseline_major -> $major):"
        echo "    allowed; make abi-update records $soname's ABI as the new baseline"
        exit 0
    fi
    echo "==> ABI check: an incompatible change to $soname (above). Undo it, or move LK_VERSION_MAJOR (the soname"
    echo "    and the Debian package's name move with it) and run make abi-update"
    exit 1
fi
echo "==> ABI check: additions that the baseline does not record (above): compatible; move LK_VERSION_MINOR and"
echo "    run make abi-update to record them on purpose"
exit 1
