# Sourceable: Home Assistant Core for the Home Assistant tests (Tests/homeassistant), one
# virtualenv per tested version, kept outside the git tree so later runs reuse it.
#
#   ensure_home_assistant [VERSION]   creates/reuses the venv of VERSION (default $HA_VERSION);
#                                     prints nothing on reuse; returns non-zero on failure. A venv
#                                     is complete only when "<venv>/.complete" exists.
#   ha_venv VERSION                   the venv's path
#
# Tested versions ($HA_VERSIONS):
# - 2025.4.4, the newest Home Assistant Core that installs on Python 3.13.0 (later releases need
#   3.13.2+): the full suite.
# - 2024.11.3, the oldest release with device-based MQTT discovery (2024.11) that installs here:
#   2024.11.0-2024.11.2 are older patch releases of the same; it needs josepy<2 (its hass-nabucasa
#   pulls an acme that fails to import with josepy 2, which pip picks when nothing pins it).
#
# Each venv gets Core, the requirements of every integration the test's Home Assistant loads (the
# default ones plus mqtt), pinned by Core's own package_constraints.txt, so Home Assistant never
# pip-installs anything at runtime (the tests start it with --skip-pip), and the
# pytest-homeassistant-custom-component release built from that same Core for the unit tests
# (Tests/homeassistant/unit).

HA_VERSION=2025.4.4
HA_VERSIONS="2025.4.4 2024.11.3"
HA_CACHE="${CAST2MQTT_CACHE:-$HOME/.cache/cast2mqtt}"

ha_venv() { echo "$HA_CACHE/homeassistant-$1"; }
HA_VENV=$(ha_venv "$HA_VERSION")

# pytest-homeassistant-custom-component pins one Core release exactly.
ha_test_plugin() {
  case "$1" in
    2025.4.4) echo "pytest-homeassistant-custom-component==0.13.236" ;;
    2024.11.3) echo "pytest-homeassistant-custom-component==0.13.184" ;;
    *) return 1 ;;
  esac
}

# The type checker for `mypy --strict` of the integration (mypy.ini), in the newest venv only:
# it reads Home Assistant's own type hints there. Pinned: a new mypy finds new things.
HA_MYPY="mypy==1.15.0"

# Installs the development tools into a venv that lacks them (a venv installed before they were
# added too); returns non-zero when pip fails.
ensure_ha_dev_tools() {
  local venv
  venv=$(ha_venv "${1:-$HA_VERSION}")
  "$venv/bin/python" -c 'import mypy' 2>/dev/null && return 0
  echo "==> installing $HA_MYPY into $venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$HA_MYPY"
}

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

ensure_home_assistant() {
  local version=${1:-$HA_VERSION}
  local venv
  venv=$(ha_venv "$version")
  [ -f "$venv/.complete" ] && return 0
  local here
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  mkdir -p "$HA_CACHE"
  # One installer at a time; a second caller waits and then finds the marker.
  (
    flock -w 1800 9 || { echo "ha.sh: timed out waiting for another Home Assistant install" >&2; exit 1; }
    [ -f "$venv/.complete" ] && exit 0
    local py plugin started
    started=$(date +%s)
    py=$(ha_python313) || { echo "ha.sh: python3.13 not found (needed for Home Assistant $version)" >&2; exit 1; }
    plugin=$(ha_test_plugin "$version") || { echo "ha.sh: no test plugin known for Home Assistant $version" >&2; exit 1; }
    echo "==> installing Home Assistant Core $version into $venv (once; several minutes)"
    rm -rf "$venv"
    "$py" -m venv "$venv" || exit 1
    local pip=("$venv/bin/python" -m pip install --quiet --disable-pip-version-check)
    "${pip[@]}" --upgrade pip wheel || exit 1
    local pins
    pins=$(ha_extra_pins "$version")
    # shellcheck disable=SC2086 # $pins: zero or more requirement words
    "${pip[@]}" "homeassistant==$version" $pins || exit 1
    local constraints requirements
    constraints=$("$venv/bin/python" -c 'import homeassistant, os; print(os.path.join(os.path.dirname(homeassistant.__file__), "package_constraints.txt"))') || exit 1
    requirements=$(mktemp) || exit 1
    "$venv/bin/python" "$here/ha_requirements.py" >"$requirements" || { rm -f "$requirements"; exit 1; }
    echo "==> integration requirements: $(tr '\n' ' ' <"$requirements")"
    # shellcheck disable=SC2086
    "${pip[@]}" -c "$constraints" -r "$requirements" "$plugin" $pins || { rm -f "$requirements"; exit 1; }
    rm -f "$requirements"
    "$venv/bin/python" -c "import homeassistant.bootstrap, pytest_homeassistant_custom_component" || exit 1
    if [ "$version" = "$HA_VERSION" ]; then
      "${pip[@]}" "$HA_MYPY" || exit 1
    fi
    echo "==> Home Assistant $version installed in $(( $(date +%s) - started )) s"
    touch "$venv/.complete"
  ) 9>"$venv.lock"
}
