#!/usr/bin/env bash
# Fails when the release binary needs a shared library outside the allowed set: glibc's own,
# libmosquitto, OpenSSL, avahi-client (and the C++ runtime, see below). Reads the ELF NEEDED
# entries (readelf -d), so it checks what the binary itself asks the loader for.
#
#   Tests/packaging/check_needed.sh dist/cast2mqtt
#
# libstdc++ and libgcc_s are allowed: the Swift runtime (libswiftCore.a) is written in C++ and
# `--static-swift-stdlib` links it with -lstdc++ (/opt/swift/usr/lib/swift_static/linux/
# static-stdlib-args.lnk), and libstdc++ needs libgcc_s for unwinding. Both are part of every
# Debian system (libstdc++6 and libgcc-s1 are Priority: required/important).
set -euo pipefail
bin=${1:?usage: check_needed.sh BINARY}
[[ -f $bin ]] || { echo "check_needed: no such file: $bin" >&2; exit 1; }

allowed='^(libc|libm|libpthread|libdl|librt|libutil|ld-linux-x86-64|ld-linux-aarch64|libstdc\+\+|libgcc_s|libmosquitto|libssl|libcrypto|libavahi-client|libavahi-common)\.so(\.[0-9]+)*$'

mapfile -t needed < <(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
[[ ${#needed[@]} -gt 0 ]] || { echo "check_needed: $bin has no NEEDED entries (not dynamic?)" >&2; exit 1; }
bad=0
for lib in "${needed[@]}"; do
    if [[ $lib =~ $allowed ]]; then
        echo "ok       $lib"
    else
        echo "REFUSED  $lib"
        bad=1
    fi
done
if [[ $bad -ne 0 ]]; then
    echo "check_needed: $bin needs libraries outside the allowed set" >&2
    exit 1
fi
echo "check_needed: ${#needed[@]} libraries, all allowed"
