#!/usr/bin/env bash
# The install tests of what scripts/package builds (Tests/packaging):
#
#   scripts/lib/package-tests.sh [deb|image|addon|all]     (default: all)
#
# Installs what is missing (Debian packages, the Python packages in
# Tests/packaging/requirements.txt), builds the release binary (incrementally, in
# .build-release; CAST2MQTT_REUSE_BINARY=1 takes dist/cast2mqtt as it is), the .deb, the
# image and the Home Assistant add-on's image, then runs pytest on Tests/packaging (the add-on's
# web test drives Debian's chromium with Playwright, as Tests/web does). The two images are built
# by the release workflow's own steps (Tests/packaging/release_step.py), with only their base
# replaced by the local one (no registry here). Whatever WHAT is, the repository as Home
# Assistant's Supervisor reads it and the workflows (actionlint) are checked too; they need no build. Needs root and the debug cast-sim
# (.build/debug/cast-sim, or CAST_SIM). The base root filesystems are made once with mmdebstrap
# and cached in ${CAST2MQTT_CACHE:-~/.cache/cast2mqtt}/rootfs.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
what=${1:-all}

need=(mmdebstrap debhelper lintian rsync mosquitto podman runc shellcheck)
missing=()
for p in "${need[@]}"; do
    dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
    echo "==> apt-get install ${missing[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
{ python3 -c 'import paho.mqtt, requests, pytest, yaml' 2>/dev/null && command -v actionlint >/dev/null; } ||
    python3 -m pip install --quiet --disable-pip-version-check -r Tests/packaging/requirements.txt
if [[ $what == addon || $what == all ]]; then
    command -v chromium >/dev/null || {
        echo "==> apt-get install chromium" >&2
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
    }
    python3 -c 'import playwright' 2>/dev/null ||
        python3 -m pip install --quiet --disable-pip-version-check "$(grep -E '^playwright' Tests/web/requirements.txt)"
fi

export CAST_SIM=${CAST_SIM:-$root/.build/debug/cast-sim}
[[ -x $CAST_SIM ]] || { echo "package-tests: no cast-sim at $CAST_SIM (swift build --product cast-sim)" >&2; exit 1; }

start=$SECONDS
scripts/package binary
tests=(Tests/packaging/test_addon_repository.py Tests/packaging/test_release_workflow.py Tests/packaging/test_binary.py)
if [[ $what == deb || $what == all ]]; then
    CAST2MQTT_REUSE_BINARY=1 scripts/package deb
    tests+=(Tests/packaging/test_deb.py Tests/packaging/test_systemd.py)
fi
if [[ $what == image || $what == all ]]; then
    base=$(scripts/package base-image)
    python3 Tests/packaging/release_step.py image CAST2MQTT_BASE_IMAGE="$base"
    tests+=(Tests/packaging/test_image.py)
fi
if [[ $what == addon || $what == all ]]; then
    base=$(scripts/package base-image)
    python3 Tests/packaging/release_step.py addon CAST2MQTT_ADDON_BASE_IMAGE="$base"
    tests+=(Tests/packaging/test_addon_supervisor.py Tests/packaging/test_addon_ingress.py)
fi
echo "==> packages built in $((SECONDS - start)) s; testing" >&2
python3 -m pytest -q -p no:cacheprovider "${tests[@]}"
echo "==> package tests done in $((SECONDS - start)) s" >&2
