# Sourceable: installs what cast2mqtt needs to build, test and run, on Debian, from zero.
# Only calls apt-get / pip when something is missing, so repeated runs are quick.

CAST2MQTT_APT_PACKAGES=(
  pkg-config libssl-dev openssl
  libmosquitto-dev mosquitto mosquitto-clients
  libavahi-client-dev avahi-daemon avahi-utils dbus
  iproute2 curl
  nftables                 # packet loss on the test network (Tests/netns): this kernel has no netem
  mmdebstrap               # root filesystems: the packages' tests and Home Assistant 2026's Python 3.14
                           # (installed here, before the background Home Assistant install needs it)
)

ensure_apt_packages() {
  local missing=()
  local pkg
  for pkg in "${CAST2MQTT_APT_PACKAGES[@]}"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "==> installing Debian packages: ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  # Debian starts nothing by itself in a container; make sure no packaged broker holds 1883 either.
  return 0
}

ensure_python_packages() {
  local requirements=$1
  [ -f "$requirements" ] || return 0
  if ! python3 -c "import pychromecast" >/dev/null 2>&1; then
    echo "==> installing Python packages from $requirements"
    python3 -m pip install --quiet --disable-pip-version-check -r "$requirements"
  fi
}

# The web page's browser tests (Tests/web): Debian's chromium, which Playwright drives (it never
# downloads a browser of its own), and the Python packages of Tests/web/requirements.txt.
ensure_browser() { ensure_debian_package chromium; }

# One Debian package that only some runs need (chromium, stress-ng), installed when missing.
ensure_debian_package() {
  dpkg -s "$1" >/dev/null 2>&1 && return 0
  echo "==> installing Debian packages: $1"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$1" >/dev/null
}

ensure_web_test_packages() {
  python3 -c "import playwright.sync_api, paho.mqtt, requests, pychromecast" >/dev/null 2>&1 && return 0
  echo "==> installing Python packages from Tests/web/requirements.txt"
  python3 -m pip install --quiet --disable-pip-version-check -r Tests/web/requirements.txt
}
