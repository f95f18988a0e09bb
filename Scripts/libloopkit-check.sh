#!/usr/bin/env bash
# make lib's checks of the self-contained library: Scripts/libloopkit-check.sh LIBRARY HEADER [UNSTRIPPED]
#   - its soname is libloopkit.so.LK_VERSION_MAJOR (the header's);
#   - it NEEDs nothing from a Swift toolchain: only libevent (core, pthreads), libc, libm, libgcc_s, the
#     dynamic loader and libstdc++ if it is not linked in (no OpenSSL: TLS is LoopKitTLS's, which the C
#     library does not carry);
#   - it has no RPATH or RUNPATH;
#   - it exports exactly the functions loopkit.h declares (no Swift symbol, no other lk_ helper);
#   - Foundation is not linked in (UNSTRIPPED, the same link before strip: no symbol of Foundation's or
#     FoundationEssentials' modules), since nothing in LoopKit, LoopKitNet or LoopKitC needs it.
set -euo pipefail
library=$1
header=$2
unstripped=${3:-}
fail() { echo "==> $library: $*"; exit 1; }

major=$(sed -n 's/^#define LK_VERSION_MAJOR //p' "$header")
soname=$(readelf -d "$library" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libloopkit.so.$major" ] || fail "soname '$soname', expected libloopkit.so.$major (LK_VERSION_MAJOR)"

allowed='^(libevent_core-2\.1\.so\.7|libevent_pthreads-2\.1\.so\.7|libc\.so\.6|libm\.so\.6|libstdc\+\+\.so\.6|libgcc_s\.so\.1|ld-linux-[a-z0-9-]+\.so\.[0-9])$'
needed=$(readelf -d "$library" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
unexpected=$(echo "$needed" | grep -Ev "$allowed" || true)
[ -z "$unexpected" ] || fail "NEEDED beyond libevent, libc, libm, libstdc++ and libgcc_s: $unexpected"
if readelf -d "$library" | grep -Eq '\((RPATH|RUNPATH)\)'; then fail "has an RPATH or RUNPATH"; fi

exported=$(nm -D --defined-only "$library" | awk '{ print $3 }' | sort)
declared=$(sed -e 's|/\*.*\*/||' "$header" | grep -o '^LK_EXTERN[^(]*(' | grep -o 'lk_[a-z0-9_]*' | sort)
if [ "$exported" != "$declared" ]; then
    diff <(echo "$declared") <(echo "$exported") | sed 's/^</  declared, not exported:/; s/^>/  exported, not declared:/' | grep '^ '
    fail "its exported symbols are not loopkit.h's functions"
fi

foundation=
if [ -n "$unstripped" ]; then
    foundation=", no Foundation"
    if nm "$unstripped" | grep -qE '\$s(10Foundation|20FoundationEssentials|24FoundationInternationalization)'; then
        fail "Foundation is linked in (a symbol of its module in $unstripped): LoopKitC's targets must not import it"
    fi
fi

echo "==> $library: soname $soname, $(echo "$exported" | wc -l) symbols exported (loopkit.h's), no RPATH," \
    "NEEDED $(echo "$needed" | wc -l): $(echo $needed)$foundation"
