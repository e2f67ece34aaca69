#!/bin/bash
# HEALTHCHECK: GET /healthz on the bridge's web address (CAST2MQTT_WEB_LISTEN) with bash's
# /dev/tcp (no curl in the image); healthy on HTTP 200. Sends the web token when one is set.
set -u
listen=${CAST2MQTT_WEB_LISTEN:-127.0.0.1:8199}
port=${listen##*:}
host=${listen%:*}
host=${host#[}
host=${host%]}
case $host in 0.0.0.0|"") host=127.0.0.1 ;; ::) host=::1 ;; esac
auth=""
token=${CAST2MQTT_WEB_TOKEN:-}
if [[ -z $token && -n ${CAST2MQTT_WEB_PASSWORD_FILE:-} && -r $CAST2MQTT_WEB_PASSWORD_FILE ]]; then
    read -r token < "$CAST2MQTT_WEB_PASSWORD_FILE"
fi
[[ -n $token ]] && auth="Authorization: Bearer $token"$'\r\n'
exec 3<>"/dev/tcp/$host/$port" || exit 1
printf 'GET /healthz HTTP/1.0\r\nHost: %s\r\n%sConnection: close\r\n\r\n' "$host" "$auth" >&3
IFS= read -r -t 4 status <&3 || exit 1
[[ $status == HTTP/1.?\ 200* ]]
