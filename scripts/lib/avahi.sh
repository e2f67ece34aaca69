# shellcheck shell=bash
# Sourceable helpers that run a private avahi-daemon restricted to the loopback interface, for
# the Discovery tests. Usage (scripts/test):
#
#   source scripts/lib/avahi.sh
#   start_avahi            # returns non-zero (with a message) when avahi could not be started
#   swift test ...
#   stop_avahi             # stops exactly the processes start_avahi started
#
# Environment:
#   CAST2MQTT_AVAHI_DIR   state directory (config, logs, pid list); default: a fresh mktemp dir
#   CAST2MQTT_AVAHI_IPV6  "yes" to enable IPv6 in the daemon (default "no")
#   CAST2MQTT_AVAHI_INTERFACES  allow-interfaces (default "lo"); scripts/test adds the bridge of
#                         the test network (Tests/netns), which appears later: avahi-daemon takes an
#                         allowed interface into use when it comes up
#
# When start_avahi fails half-way, call stop_avahi anyway: it stops whatever was started.
# Needs root (or passwordless sudo): it toggles multicast on `lo`, may start a system dbus-daemon
# and runs avahi-daemon without dropping privileges. An avahi-daemon that is already running and
# reachable over D-Bus is reused and left alone (stop_avahi will not touch it).

_avahi_as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo -n "$@"
    else
        echo "avahi.sh: need root (or sudo) to run: $*" >&2
        return 1
    fi
}

_avahi_log() { echo "avahi.sh: $*" >&2; }

# True while process $1 exists and is not a zombie.
_avahi_alive() {
    kill -0 "$1" 2>/dev/null || return 1
    local state
    state="$(ps -o stat= -p "$1" 2>/dev/null)"
    [ -n "$state" ] && [ "${state#Z}" = "$state" ]
}

# True when an avahi-daemon answers on the system bus.
_avahi_reachable() {
    timeout 5 avahi-browse -a -t -p >/dev/null 2>&1
}

start_avahi() {
    local dir="${CAST2MQTT_AVAHI_DIR:-}"
    if [ -z "$dir" ]; then
        dir="$(mktemp -d "${TMPDIR:-/tmp}/cast2mqtt-avahi.XXXXXX")" || return 1
    fi
    mkdir -p "$dir" || return 1
    export CAST2MQTT_AVAHI_DIR="$dir"
    local pids="$dir/pids"
    : >"$pids"

    for tool in avahi-daemon avahi-browse dbus-daemon ip; do
        if ! command -v "$tool" >/dev/null 2>&1 && [ ! -x "/usr/sbin/$tool" ] && [ ! -x "/sbin/$tool" ]; then
            _avahi_log "$tool is not installed (apt-get install avahi-daemon avahi-utils dbus iproute2)"
            return 1
        fi
    done
    local daemon
    daemon="$(command -v avahi-daemon || echo /usr/sbin/avahi-daemon)"

    # Multicast on lo: avahi only uses interfaces that are up and multicast capable (or loopback).
    _avahi_as_root ip link set lo up 2>/dev/null || true
    if ! _avahi_as_root ip link set lo multicast on; then
        _avahi_log "could not enable multicast on lo (continuing; avahi may still accept loopback)"
    fi

    # A system bus: reuse a running one, otherwise start our own.
    if [ -S /run/dbus/system_bus_socket ] && timeout 5 dbus-send --system --print-reply \
        --dest=org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus.GetId >/dev/null 2>&1; then
        _avahi_log "reusing the running system dbus-daemon"
    else
        _avahi_as_root rm -f /run/dbus/system_bus_socket /run/dbus/pid
        _avahi_as_root mkdir -p /run/dbus
        local dbus_pid
        dbus_pid="$(_avahi_as_root dbus-daemon --system --fork --print-pid)" || {
            _avahi_log "dbus-daemon --system failed to start"
            return 1
        }
        dbus_pid="$(echo "$dbus_pid" | head -n 1 | tr -dc '0-9')"
        if [ -z "$dbus_pid" ]; then
            _avahi_log "dbus-daemon did not print its pid"
            return 1
        fi
        echo "dbus $dbus_pid" >>"$pids"
        local i
        for i in $(seq 1 50); do
            [ -S /run/dbus/system_bus_socket ] && break
            sleep 0.1
        done
        if [ ! -S /run/dbus/system_bus_socket ]; then
            _avahi_log "dbus-daemon started (pid $dbus_pid) but /run/dbus/system_bus_socket never appeared"
            return 1
        fi
    fi

    if _avahi_reachable; then
        _avahi_log "reusing the running avahi-daemon"
        return 0
    fi

    local ipv6="${CAST2MQTT_AVAHI_IPV6:-no}"
    cat >"$dir/avahi-daemon.conf" <<EOF
[server]
host-name=cast2mqtt-test
use-ipv4=yes
use-ipv6=$ipv6
allow-interfaces=${CAST2MQTT_AVAHI_INTERFACES:-lo}
enable-dbus=yes
disallow-other-stacks=no
ratelimit-interval-usec=1000000
ratelimit-burst=1000

[wide-area]
enable-wide-area=no

[publish]
disable-publishing=no
disable-user-service-publishing=no
publish-addresses=yes
publish-hinfo=no
publish-workstation=no
publish-domain=yes

[reflector]
enable-reflector=no

[rlimits]
EOF

    # A stale pid file from an earlier (killed) run makes avahi-daemon refuse to start.
    _avahi_as_root rm -f /run/avahi-daemon/pid
    _avahi_as_root mkdir -p /run/avahi-daemon
    # Foreground in the background, so $! is the daemon's own pid (not a subshell's).
    local args=(-f "$dir/avahi-daemon.conf" --no-drop-root --no-chroot --no-rlimits --no-proc-title)
    if [ "$(id -u)" -eq 0 ]; then
        "$daemon" "${args[@]}" >"$dir/avahi-daemon.log" 2>&1 &
    else
        sudo -n "$daemon" "${args[@]}" >"$dir/avahi-daemon.log" 2>&1 &
    fi
    local avahi_pid=$!

    local i
    for i in $(seq 1 100); do
        if _avahi_reachable; then
            # Under sudo, $! is sudo's pid: record the daemon's own pid from its pid file.
            local real_pid
            real_pid="$(tr -dc '0-9' </run/avahi-daemon/pid 2>/dev/null)"
            echo "avahi ${real_pid:-$avahi_pid}" >>"$pids"
            _avahi_log "avahi-daemon running on ${CAST2MQTT_AVAHI_INTERFACES:-lo} (pid ${real_pid:-$avahi_pid}, log $dir/avahi-daemon.log)"
            return 0
        fi
        if ! _avahi_alive "$avahi_pid"; then
            _avahi_log "avahi-daemon exited; its log:"
            cat "$dir/avahi-daemon.log" >&2
            return 1
        fi
        sleep 0.1
    done
    echo "avahi $avahi_pid" >>"$pids"
    _avahi_log "avahi-daemon (pid $avahi_pid) did not become reachable within 10 s; its log:"
    cat "$dir/avahi-daemon.log" >&2
    return 1
}

stop_avahi() {
    local dir="${CAST2MQTT_AVAHI_DIR:-}"
    [ -n "$dir" ] && [ -f "$dir/pids" ] || return 0
    # Stop in reverse start order (avahi before the bus it talks to).
    local name pid
    while read -r name pid; do
        [ -n "$pid" ] || continue
        if _avahi_alive "$pid"; then
            _avahi_as_root kill -TERM "$pid" 2>/dev/null || true
            local i
            for i in $(seq 1 30); do
                _avahi_alive "$pid" || break
                sleep 0.1
            done
            if _avahi_alive "$pid"; then
                _avahi_log "$name (pid $pid) ignored SIGTERM; sending SIGKILL"
                _avahi_as_root kill -KILL "$pid" 2>/dev/null || true
            fi
        fi
        wait "$pid" 2>/dev/null || true
        if [ "$name" = dbus ]; then
            _avahi_as_root rm -f /run/dbus/system_bus_socket /run/dbus/pid 2>/dev/null || true
        fi
    done < <(tac "$dir/pids")
    : >"$dir/pids"
    return 0
}
