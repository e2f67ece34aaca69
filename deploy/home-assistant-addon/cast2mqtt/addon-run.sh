#!/bin/bash
# The add-on's start, under tini: the Supervisor writes /data/options.json for root only, and
# the bridge runs as uid 10001, so it gets a copy of its own (CAST2MQTT_ADDON_OPTIONS); then
# deploy/container's entrypoint (dbus-daemon, avahi-daemon, the bridge; SIGTERM handling).
set -euo pipefail
options=${CAST2MQTT_ADDON_OPTIONS:-/data/options.json}
if [[ -f $options && $(id -u) -eq 0 ]]; then
    mkdir -p /run/cast2mqtt
    install -m 0400 -o 10001 -g 10001 "$options" /run/cast2mqtt/options.json
    export CAST2MQTT_ADDON_OPTIONS=/run/cast2mqtt/options.json
fi
exec /usr/local/bin/cast2mqtt-entrypoint "$@"
