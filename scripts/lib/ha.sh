# Sourceable: Home Assistant Core for the Home Assistant tests (Tests/homeassistant), one
# virtualenv per tested version, kept outside the git tree so later runs reuse it.
#
# The policy (docs/home-assistant.md, "Supported Home Assistant versions"): the newest release and
# the oldest supported one are tested; every version between is expected to work.
#
# - HA_E2E_VERSION, the newest Home Assistant Core: the end-to-end tests (a real Home Assistant
#   against the daemon and cast2mqtt's simulated devices).
# - HA_UNIT_VERSION, the newest Core that pytest-homeassistant-custom-component supports (the
#   plugin pins one Core release and trails Core by a few weeks): the unit tests and the coverage
#   gate. `mypy --strict` reads the newest Core's types (in HA_E2E_VERSION's venv).
# - HA_OLDEST_VERSION, the oldest supported release (hacs.json and manifest.json say it too): its
#   unit tests and the end-to-end modules of the integration and of the bridge's discovery.
#
# Home Assistant 2026.x needs Python >= 3.14.2, which Debian stable does not have: those versions
# live in a Debian testing ("forky") root filesystem made with mmdebstrap once and cached
# ($HA_CACHE/ha-root-forky, remade after CAST2MQTT_ROOTFS_MAX_AGE_DAYS, default 14, like the
# packaging root filesystems), each version in its venv /opt/homeassistant-<version> inside it.
# scripts/lib/ha-root-run runs a command there (chroot in a private mount namespace that binds
# /dev, /proc, /sys, /tmp and the repository at the same paths), and scripts/lib/ha-hass starts
# that Home Assistant for the end-to-end tests, which themselves run on the host (they start the
# daemon, cast-sim and mosquitto, built for and installed on the host) with the oldest version's
# interpreter. The oldest version installs on the host's python3.13 (pyenv's is found too).
#
#   ensure_home_assistant VERSION    creates/reuses the venv of VERSION (on the host or in the
#                                    root filesystem, by version); returns non-zero on failure.
#                                    A venv is complete only when "<venv>/.complete" exists.
#   ha_venv VERSION                  the venv's path as seen from the host
#   ha_in_root VERSION               true when VERSION lives in the root filesystem
#
# Each venv gets Core, the requirements of every integration the test's Home Assistant loads (the
# default ones plus mqtt), pinned by Core's own package_constraints.txt, so Home Assistant never
# pip-installs anything at runtime (the tests start it with --skip-pip), and, for the versions
# whose unit tests run, the pytest-homeassistant-custom-component release built from that Core.

HA_E2E_VERSION=2026.11.0
HA_UNIT_VERSION=2026.10.4
HA_OLDEST_VERSION=2024.11.3
# Every version installed, oldest last (the order the background install takes them in).
HA_VERSIONS="$HA_E2E_VERSION $HA_UNIT_VERSION $HA_OLDEST_VERSION"
HA_CACHE="${CAST2MQTT_CACHE:-$HOME/.cache/cast2mqtt}"
HA_ROOT="$HA_CACHE/ha-root-forky"
# The Debian suite of the root filesystem and what it holds: Python 3.14 with venv and headers,
# a compiler for the few requirements without 3.14 wheels (pymicro-vad, pyspeex-noise), and the
# JPEG library Home Assistant's camera integration loads at start (an error in its log without).
HA_ROOT_SUITE=forky
HA_ROOT_PACKAGES="python3,python3-venv,python3-dev,libpython3.14-dev,g++,ca-certificates,libturbojpeg0"
HA_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

ha_in_root() {
  case "$1" in
    2024.*|2025.*) return 1 ;;
    *) return 0 ;;
  esac
}

ha_venv() {
  if ha_in_root "$1"; then echo "$HA_ROOT/opt/homeassistant-$1"; else echo "$HA_CACHE/homeassistant-$1"; fi
}

# The venv's path as a process inside the root filesystem sees it (the host's path otherwise).
ha_venv_inside() {
  if ha_in_root "$1"; then echo "/opt/homeassistant-$1"; else ha_venv "$1"; fi
}

# pytest-homeassistant-custom-component pins one Core release exactly; the versions whose unit
# tests run have one here.
ha_test_plugin() {
  case "$1" in
    2026.10.4) echo "pytest-homeassistant-custom-component==0.13.375" ;;
    2024.11.3) echo "pytest-homeassistant-custom-component==0.13.184" ;;
    *) return 1 ;;
  esac
}

# The type checker for `mypy --strict` of the integration (mypy.ini), in HA_E2E_VERSION's venv:
# it reads the newest Home Assistant's own type hints there. Pinned: a new mypy finds new things.
HA_MYPY="mypy==1.18.2"

ha_extra_pins() {
  case "$1" in
    2024.11.3) echo "josepy<2" ;;
  esac
}

ha_python313() {
  local candidate
  # A pyenv shim answers only when its version is selected; the interpreter itself always does.
  for candidate in python3.13 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.13*/bin/python3.13 \
                   /root/.pyenv/versions/3.13*/bin/python3.13; do
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 13))' 2>/dev/null; then
      echo "$candidate"; return 0
    fi
  done
  return 1
}

# The first Debian mirror of the host's sources (the root filesystem uses the same mirror).
ha_debian_mirror() {
  local uri
  uri=$(grep -hE '^(URIs:|deb )' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null \
    | grep -v security | head -1 | sed -E 's/^URIs:[[:space:]]*//; s/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?//' | awk '{print $1}')
  echo "${uri:-http://deb.debian.org/debian}"
}

# The root filesystem with Python 3.14, made once (root and mmdebstrap needed). Its key is the
# suite and the package list: a change of either makes it anew, as does its age.
ensure_ha_root() {
  local key
  key=$(printf '%s\n' "$HA_ROOT_SUITE" "$HA_ROOT_PACKAGES" | sha256sum | cut -c1-12)
  if [ -f "$HA_ROOT/.complete" ] && [ "$(cat "$HA_ROOT/.complete")" = "$key" ] &&
     [ -z "$(find "$HA_ROOT/.complete" -mtime +"${CAST2MQTT_ROOTFS_MAX_AGE_DAYS:-14}")" ]; then
    return 0
  fi
  [ "$(id -u)" -eq 0 ] || { echo "ha.sh: the Home Assistant root filesystem needs root (mmdebstrap, chroot)" >&2; return 1; }
  if ! command -v mmdebstrap >/dev/null; then
    apt-get install -y -qq mmdebstrap >/dev/null || { echo "ha.sh: mmdebstrap could not be installed" >&2; return 1; }
  fi
  local started
  started=$(date +%s)
  echo "==> mmdebstrap: $HA_ROOT_SUITE with $HA_ROOT_PACKAGES into $HA_ROOT (once)"
  rm -rf "$HA_ROOT"
  # The archive's testing snapshot is frozen: its Release file's Valid-Until has passed.
  mmdebstrap --variant=apt --mode=root --aptopt='Acquire::Check-Valid-Until "false"' \
    --include="$HA_ROOT_PACKAGES" "$HA_ROOT_SUITE" "$HA_ROOT" "$(ha_debian_mirror)" >/dev/null || return 1
  # This machine's extra certificate authorities (pip reaches PyPI through them).
  if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    mkdir -p "$HA_ROOT/usr/local/share/ca-certificates"
    cp /usr/local/share/ca-certificates/*.crt "$HA_ROOT/usr/local/share/ca-certificates/"
  fi
  "$HA_HERE/ha-root-run" "$HA_ROOT" update-ca-certificates >/dev/null || return 1
  echo "==> Home Assistant root filesystem made in $(( $(date +%s) - started )) s"
  echo "$key" >"$HA_ROOT/.complete"
}

# Installs the development tools into a venv that lacks them; returns non-zero when pip fails.
ensure_ha_dev_tools() {
  local version=${1:-$HA_E2E_VERSION}
  ha_run_in "$version" python -c 'import mypy' 2>/dev/null && return 0
  echo "==> installing $HA_MYPY into $(ha_venv "$version")"
  ha_run_in "$version" python -m pip install --quiet --disable-pip-version-check "$HA_MYPY"
}

# ha_run_in VERSION PROGRAM ARGS...: PROGRAM of VERSION's venv (python, hass, pip), in the root
# filesystem when the version lives there. The working directory is kept.
ha_run_in() {
  local version=$1 program=$2
  shift 2
  if ha_in_root "$version"; then
    "$HA_HERE/ha-root-run" "$HA_ROOT" "$(ha_venv_inside "$version")/bin/$program" "$@"
  else
    "$(ha_venv "$version")/bin/$program" "$@"
  fi
}

ensure_home_assistant() {
  local version=${1:?version}
  local venv
  venv=$(ha_venv "$version")
  [ -f "$venv/.complete" ] && return 0
  mkdir -p "$HA_CACHE"
  # One installer at a time; a second caller waits and then finds the marker.
  (
    flock -w 1800 9 || { echo "ha.sh: timed out waiting for another Home Assistant install" >&2; exit 1; }
    [ -f "$venv/.complete" ] && exit 0
    local started plugin="" pins inside
    started=$(date +%s)
    plugin=$(ha_test_plugin "$version") || plugin=""
    pins=$(ha_extra_pins "$version")
    inside=$(ha_venv_inside "$version")
    if ha_in_root "$version"; then
      ensure_ha_root || exit 1
      echo "==> installing Home Assistant Core $version into $venv (once; a few minutes)"
      rm -rf "$venv"
      "$HA_HERE/ha-root-run" "$HA_ROOT" python3 -m venv "$inside" || exit 1
    else
      local py
      py=$(ha_python313) || { echo "ha.sh: python3.13 not found (needed for Home Assistant $version)" >&2; exit 1; }
      echo "==> installing Home Assistant Core $version into $venv (once; several minutes)"
      rm -rf "$venv"
      "$py" -m venv "$venv" || exit 1
    fi
    local pip=(ha_run_in "$version" python -m pip install --quiet --disable-pip-version-check)
    "${pip[@]}" --upgrade pip wheel || exit 1
    # shellcheck disable=SC2086 # $pins: zero or more requirement words
    "${pip[@]}" "homeassistant==$version" $pins || exit 1
    local constraints requirements
    constraints=$(ha_run_in "$version" python -c 'import homeassistant, os; print(os.path.join(os.path.dirname(homeassistant.__file__), "package_constraints.txt"))') || exit 1
    # A file both sides see: /tmp is bound into the root filesystem.
    requirements=$(mktemp -p /tmp cast2mqtt-ha-requirements.XXXXXX) || exit 1
    ha_run_in "$version" python "$HA_HERE/ha_requirements.py" >"$requirements" || { rm -f "$requirements"; exit 1; }
    echo "==> integration requirements: $(grep -v '^#' "$requirements" | tr '\n' ' ')"
    local extra=()
    [ -n "$plugin" ] && extra+=("$plugin")
    [ "$version" = "$HA_E2E_VERSION" ] && extra+=("$HA_MYPY")
    # The oldest version's interpreter also runs the end-to-end tests of every version (on the
    # host: they start the daemon, cast-sim and mosquitto); pytest comes with its plugin.
    # shellcheck disable=SC2086
    "${pip[@]}" -c "$constraints" -r "$requirements" "${extra[@]}" $pins || { rm -f "$requirements"; exit 1; }
    rm -f "$requirements"
    local check="import homeassistant.bootstrap"
    [ -n "$plugin" ] && check="$check, pytest_homeassistant_custom_component"
    ha_run_in "$version" python -c "$check" || exit 1
    echo "==> Home Assistant $version installed in $(( $(date +%s) - started )) s"
    touch "$venv/.complete"
  ) 9>"$HA_CACHE/homeassistant-$version.lock"
}
