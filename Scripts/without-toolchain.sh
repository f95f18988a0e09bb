#!/usr/bin/env bash
# Runs a command with the Swift toolchain's folder hidden, as on a machine the host ships to:
#   Scripts/without-toolchain.sh TOOLCHAIN_DIR COMMAND [ARGS...]
# An empty folder is bind-mounted over TOOLCHAIN_DIR in a mount namespace of the command's own (unshare -m,
# or unshare -rm as a user that is not root), so nothing the command loads can come from it. Where
# namespaces are refused (a container without CAP_SYS_ADMIN, user namespaces off), the command runs with the
# toolchain in place and that is said.
set -euo pipefail
toolchain=$1
shift
empty=$(mktemp -d)
trap 'rmdir "$empty"' EXIT
for flags in -m -rm; do
    if unshare $flags sh -c 'mount --bind "$1" "$2"' sh "$empty" "$toolchain" 2>/dev/null; then
        echo "==> $toolchain hidden (unshare $flags, an empty folder mounted over it): $*"
        status=0
        unshare $flags sh -c 'mount --bind "$1" "$2" && [ -z "$(ls -A "$2")" ] && shift 2 && exec "$@"' \
            sh "$empty" "$toolchain" "$@" || status=$?
        exit $status
    fi
done
echo "==> SKIPPED hiding $toolchain: mount namespaces are refused here (unshare -m, unshare -rm);" \
    "running with the toolchain in place: $*"
"$@"
