#!/bin/bash
# The container's supervisor, under tini (which reaps every orphan):
#  - mDNS: with the host's D-Bus socket mounted at /run/dbus/system_bus_socket, the host's
#    avahi-daemon is used; otherwise (and unless CAST2MQTT_DISCOVERY_MDNS is false) a
#    dbus-daemon and an avahi-daemon of the container's own are started (as root they drop to
#    their own users, as on Debian; started as non-root they are skipped and the bridge works
#    with its static devices, saying so once);
#  - the bridge, as uid 10001 when started as root, with /data/config.yaml when there is one;
#  - SIGTERM or SIGINT: the bridge first (it publishes offline), then avahi-daemon, dbus-daemon.
# Exits with the bridge's status.
set -uo pipefail

log() { printf 'cast2mqtt-entrypoint: %s\n' "$*" >&2; }

pids=()
stop_helpers() {
    local pid
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null; done
}

mdns=${CAST2MQTT_DISCOVERY_MDNS:-true}
case ${mdns,,} in false|0|no|off) mdns=false ;; *) mdns=true ;; esac
socket=/run/dbus/system_bus_socket

if [[ $mdns == true && -S $socket ]]; then
    log "using the D-Bus socket mounted at $socket (the host's avahi-daemon)"
elif [[ $mdns == true && $(id -u) -eq 0 ]]; then
    mkdir -p /run/dbus /run/avahi-daemon
    rm -f /run/dbus/pid /run/avahi-daemon/pid
    dbus-daemon --system --nofork --nopidfile &
    pids+=($!)
    for _ in $(seq 50); do [[ -S $socket ]] && break; sleep 0.1; done
    if [[ -S $socket ]]; then
        avahi-daemon --no-rlimits &
        pids+=($!)
        # The bridge browses as soon as it starts: give avahi-daemon (bounded, 10 s) the time to
        # take its name on the bus, so a normal start logs no "avahi-daemon is not reachable".
        # Should it be slower, the bridge waits for it anyway (and says so).
        avahi_up() {
            dbus-send --system --print-reply --reply-timeout=1000 --dest=org.freedesktop.DBus \
                /org/freedesktop/DBus org.freedesktop.DBus.NameHasOwner string:org.freedesktop.Avahi \
                2>/dev/null | grep -q 'boolean true'
        }
        for _ in $(seq 100); do avahi_up && break; kill -0 "${pids[1]}" 2>/dev/null || break; sleep 0.1; done
        if avahi_up; then
            log "started dbus-daemon and avahi-daemon"
        else
            log "started dbus-daemon and avahi-daemon (avahi-daemon not on the bus yet; the bridge waits for it)"
        fi
    else
        log "dbus-daemon did not start: mDNS off, static devices only"
    fi
elif [[ $mdns == true ]]; then
    log "not root and no D-Bus socket mounted: no avahi-daemon here, static devices only"
fi

args=("$@")
[[ ${#args[@]} -gt 0 ]] || args=(run)
if [[ -f /data/config.yaml && " ${args[*]} " != *" --config "* && " ${args[*]} " != *" -c "* ]]; then
    case ${args[0]} in run|check-config|devices) args+=(--config /data/config.yaml) ;; esac
fi

if [[ $(id -u) -eq 0 ]]; then
    # /data may be a fresh volume owned by root.
    [[ -w /data && $(stat -c %u /data) -eq 10001 ]] || chown 10001:10001 /data 2>/dev/null || true
    setpriv --reuid=10001 --regid=10001 --init-groups --no-new-privs --inh-caps=-all --bounding-set=-all \
        -- /usr/bin/cast2mqtt "${args[@]}" &
else
    /usr/bin/cast2mqtt "${args[@]}" &
fi
bridge=$!

trap 'kill -TERM "$bridge" 2>/dev/null' TERM INT
# wait returns early when a trapped signal arrives; go on until the bridge has exited.
while kill -0 "$bridge" 2>/dev/null; do
    wait "$bridge"
    status=$?
done
wait "$bridge" 2>/dev/null
status=${status:-$?}
stop_helpers
exit "$status"
