# Sourceable: a Home Assistant Core for the end-to-end Home Assistant tests (Tests/homeassistant),
# in a virtualenv kept outside the git tree so later runs reuse it.
#
#   ensure_home_assistant   creates/reuses the venv; prints nothing on reuse; returns non-zero on
#                           failure. The venv is complete only when "$HA_VENV/.complete" exists.
#
# 2025.4.4 is the newest Home Assistant Core that installs on Python 3.13.0 (later releases need
# 3.13.2+). Besides Core it installs the requirements of every integration the test's Home
# Assistant loads (the default ones plus mqtt), pinned by Core's own package_constraints.txt,
# so Home Assistant never pip-installs anything at runtime (the tests start it with --skip-pip),
# and pytest for the test client.

HA_VERSION=2025.4.4
HA_VENV="${CAST2MQTT_CACHE:-$HOME/.cache/cast2mqtt}/ha-$HA_VERSION"

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
  [ -f "$HA_VENV/.complete" ] && return 0
  local here
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  mkdir -p "$(dirname "$HA_VENV")"
  # One installer at a time; a second caller waits and then finds the marker.
  (
    flock -w 1800 9 || { echo "ha.sh: timed out waiting for another Home Assistant install" >&2; exit 1; }
    [ -f "$HA_VENV/.complete" ] && exit 0
    local py
    py=$(ha_python313) || { echo "ha.sh: python3.13 not found (needed for Home Assistant $HA_VERSION)" >&2; exit 1; }
    echo "==> installing Home Assistant Core $HA_VERSION into $HA_VENV (once; several minutes)"
    rm -rf "$HA_VENV"
    "$py" -m venv "$HA_VENV" || exit 1
    local pip=("$HA_VENV/bin/python" -m pip install --quiet --disable-pip-version-check)
    "${pip[@]}" --upgrade pip wheel || exit 1
    "${pip[@]}" "homeassistant==$HA_VERSION" || exit 1
    local constraints requirements
    constraints=$("$HA_VENV/bin/python" -c 'import homeassistant, os; print(os.path.join(os.path.dirname(homeassistant.__file__), "package_constraints.txt"))') || exit 1
    requirements=$(mktemp) || exit 1
    "$HA_VENV/bin/python" "$here/ha_requirements.py" >"$requirements" || { rm -f "$requirements"; exit 1; }
    echo "==> integration requirements: $(tr '\n' ' ' <"$requirements")"
    "${pip[@]}" -c "$constraints" -r "$requirements" pytest || { rm -f "$requirements"; exit 1; }
    rm -f "$requirements"
    touch "$HA_VENV/.complete"
  ) 9>"$HA_VENV.lock"
}
