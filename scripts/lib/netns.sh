#!/usr/bin/env bash
# A test network of network namespaces on one Linux bridge (issue #20): each test host is a
# namespace with a veth pair whose other end is a port of the bridge; the root namespace (the
# cast2mqtt bridge, avahi-daemon, the tests) is a host too, holding the first address of the range
# on the bridge interface. Every name carries a per-run prefix, so a run finds and removes exactly
# what it made, and two runs on one machine never touch each other's hosts.
#
#   p=$(scripts/lib/netns.sh prefix)                 # c2n + 4 random characters
#   q=$(scripts/lib/netns.sh prefix "$p")            # $p + 1: a second network of the same run
#   net=$(scripts/lib/netns.sh subnet)                # a free 10.N.0.0/16 (no route or address overlaps it)
#   scripts/lib/netns.sh up "$p" "$net"              # bridge ${p}br holding 10.N.0.1/16
#   scripts/lib/netns.sh host "$p" d1 10.N.0.11      # namespace ${p}-d1, eth0 with 10.N.0.11 (more: repeat)
#   scripts/lib/netns.sh addresses "$p" fleet 10.N.1.1 200   # 200 consecutive addresses on one host
#   scripts/lib/netns.sh exec "$p" d1 cast-sim ...   # run a command on a host (execs `ip netns exec`)
#   scripts/lib/netns.sh link "$p" d1 down           # its cable out: packets vanish, nobody answers
#   scripts/lib/netns.sh unplug "$p" d1              # cable out, power off, host gone
#   scripts/lib/netns.sh track "$p" PID              # a root-namespace process to stop at `down`
#   scripts/lib/netns.sh down "$p"                   # everything of the run: processes, hosts, bridge
#   scripts/lib/netns.sh leftovers "$p"              # lists what is left; exit 1 when anything is
#
# Host names: 1-6 characters [a-z0-9] (the root end of a host's veth is named ${p}<name>, and
# Linux interface names have at most 15 characters). Inside a host the interface is `eth0`, with
# a MAC address derived from the prefix and the name: a host unplugged and made again is the same
# hardware (the others' ARP caches stay right), as a device that was power cycled.
# `down PREFIX` and `leftovers PREFIX` cover every network whose prefix starts with PREFIX (a run's
# second network made with `prefix PREFIX` is removed with the run's).
# `down` stops the processes it knows by their PIDs: those running in the run's namespaces
# (`ip netns pids`) and the tracked ones (checked against their start time, so a reused PID is
# never signalled), SIGTERM first, SIGKILL after 5 s. It is idempotent and safe on a half-built
# network, so a trap may call it on any exit path.
#
# Needs root and iproute2. State: /run/cast2mqtt-netns/<prefix>/ (removed by `down` once clean).
set -euo pipefail

STATE_ROOT=${CAST2MQTT_NETNS_STATE:-/run/cast2mqtt-netns}

die() { echo "netns.sh: $*" >&2; exit 2; }

check_prefix() {
  [[ "${1:-}" =~ ^c2n[a-z0-9]{1,5}$ ]] || die "a prefix is c2n and 1-5 characters [a-z0-9] (got '${1:-}')"
}

check_name() {
  [[ "${1:-}" =~ ^[a-z0-9]{1,6}$ ]] || die "a host name is 1-6 characters [a-z0-9] (got '${1:-}')"
}

state() { echo "$STATE_ROOT/$1"; }

# IPv4 dotted quad <-> integer.
ip2int() {
  local a b c d
  IFS=. read -r a b c d <<<"$1"
  [[ "$a.$b.$c.$d" =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "not an IPv4 address: $1"
  echo $(( (a << 24) | (b << 16) | (c << 8) | d ))
}
int2ip() { echo "$(( ($1 >> 24) & 255 )).$(( ($1 >> 16) & 255 )).$(( ($1 >> 8) & 255 )).$(( $1 & 255 ))"; }

# Field N (N >= 3) of /proc/PID/stat, empty when the process is gone. The command name (field 2)
# may contain spaces and parentheses: the fields after it start behind the last ") ".
stat_field() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
  stat=${stat##*) }
  awk -v n=$(( $2 - 2 )) '{print $n}' <<<"$stat"
}

starttime() { stat_field "$1" 22; }

alive_as() {  # PID STARTTIME: true while that very process runs (not a zombie)
  local now
  now=$(starttime "$1")
  [ -n "$now" ] && [ "$now" = "$2" ] && [ "$(stat_field "$1" 3)" != "Z" ]
}

cmd_prefix() {
  local parent=${1:-} length=4
  if [ -n "$parent" ]; then
    check_prefix "$parent"
    length=1
  fi
  local suffix
  suffix=$(head -c 256 /dev/urandom | tr -dc 'a-z0-9' | head -c "$length")
  echo "${parent:-c2n}${suffix}"
}

# A 10.N.0.0/16 that no route, address or other run of this helper uses.
cmd_subnet() {
  local taken n candidate
  taken=$( { ip -4 route show table all 2>/dev/null; ip -4 -o addr show 2>/dev/null; cat "$STATE_ROOT"/*/cidr 2>/dev/null || true; } )
  for _ in $(seq 1 200); do
    n=$(( 100 + RANDOM % 150 ))
    candidate="10.$n."
    # Any mention of 10.N. or a route covering all of 10/8 (or a default-free 10.0.0.0/8) rules N out.
    if ! grep -qE "(^|[^0-9])10\.$n\.|(^|[^0-9])10\.0\.0\.0/[0-8]([^0-9]|$)" <<<"$taken"; then
      echo "${candidate}0.0/16"
      return 0
    fi
  done
  die "no free 10.N.0.0/16 found"
}

cmd_up() {
  local p=$1 cidr=$2 dir
  check_prefix "$p"
  [[ "$cidr" =~ ^([0-9.]+)/([0-9]+)$ ]] || die "up: a range like 10.123.0.0/16 (got $cidr)"
  local base len root
  base=$(ip2int "${BASH_REMATCH[1]}")
  len=${BASH_REMATCH[2]}
  (( len >= 8 && len <= 24 )) || die "up: a prefix length of 8-24"
  root=$(int2ip $(( base + 1 )))
  dir=$(state "$p")
  mkdir -p "$dir"
  echo "$cidr" >"$dir/cidr"
  echo "$len" >"$dir/len"
  touch "$dir/pids"
  ip link add "${p}br" type bridge
  # No spanning tree and no forwarding delay: a port forwards as soon as it is up.
  ip link set "${p}br" type bridge stp_state 0 forward_delay 0 2>/dev/null || true
  ip addr add "$root/$len" dev "${p}br"
  ip link set "${p}br" up
  echo "$root"
}

cmd_host() {
  local p=$1 name=$2; shift 2
  check_prefix "$p"; check_name "$name"
  local dir ns len
  dir=$(state "$p")
  [ -f "$dir/len" ] || die "host: run 'up $p RANGE' first"
  len=$(cat "$dir/len")
  ns="$p-$name"
  ip netns add "$ns"
  ip -n "$ns" link set lo up
  # A locally administered unicast MAC from the names (the same for a host made again).
  local mac
  mac=$(printf '%s' "$ns" | md5sum | sed -E 's/^(..)(..)(..)(..)(..).*/02:\1:\2:\3:\4:\5/')
  ip link add "${p}${name}" type veth peer name eth0 address "$mac" netns "$ns"
  ip link set "${p}${name}" master "${p}br"
  ip link set "${p}${name}" up
  local address
  for address in "$@"; do
    ip -n "$ns" addr add "$address/$len" dev eth0
  done
  ip -n "$ns" link set eth0 up
}

# addresses PREFIX NAME FIRST COUNT: COUNT consecutive addresses from FIRST on the host's eth0.
cmd_addresses() {
  local p=$1 name=$2 first=$3 count=$4
  check_prefix "$p"; check_name "$name"
  [[ "$count" =~ ^[0-9]+$ ]] && (( count >= 1 && count <= 4096 )) || die "addresses: a count of 1-4096"
  local len start i
  len=$(cat "$(state "$p")/len")
  start=$(ip2int "$first")
  for (( i = 0; i < count; i++ )); do
    echo "addr add $(int2ip $(( start + i )))/$len dev eth0"
  done | ip -n "$p-$name" -batch -
}

cmd_link() {
  local p=$1 name=$2 how=$3
  check_prefix "$p"; check_name "$name"
  [[ "$how" = up || "$how" = down ]] || die "link: up or down"
  ip link set "${p}${name}" "$how"
}

cmd_exec() {
  local p=$1 name=$2; shift 2
  check_prefix "$p"; check_name "$name"
  exec ip netns exec "$p-$name" "$@"
}

# Stops every process in namespace $1 by PID: SIGTERM (or $2), then SIGKILL after 5 s.
stop_namespace_processes() {
  local ns=$1 signal=${2:-TERM} pids pid i
  pids=$(ip netns pids "$ns" 2>/dev/null || true)
  [ -n "$pids" ] || return 0
  for pid in $pids; do kill "-$signal" "$pid" 2>/dev/null || true; done
  for i in $(seq 1 50); do
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [ -n "$pids" ] || return 0
    # Zombies count as gone: their parent (the test) reaps them.
    local living=""
    for pid in $pids; do
      [ "$(stat_field "$pid" 3)" = "Z" ] || living="$living $pid"
    done
    [ -n "$living" ] || return 0
    sleep 0.1
  done
  for pid in $(ip netns pids "$ns" 2>/dev/null || true); do
    echo "netns.sh: pid $pid in $ns ignored SIG$signal; SIGKILL" >&2
    kill -KILL "$pid" 2>/dev/null || true
  done
}

cmd_unplug() {
  local p=$1 name=$2
  check_prefix "$p"; check_name "$name"
  # The cable first, so nothing the host says while it dies (FIN, RST) reaches anyone.
  ip link del "${p}${name}" 2>/dev/null || true
  stop_namespace_processes "$p-$name" KILL
  ip netns delete "$p-$name" 2>/dev/null || true
}

cmd_track() {
  local p=$1 pid=$2 started
  check_prefix "$p"
  [[ "$pid" =~ ^[0-9]+$ ]] || die "track: a PID"
  started=$(starttime "$pid")
  [ -n "$started" ] || return 0
  echo "$pid $started" >>"$(state "$p")/pids"
}

cmd_down() {
  local p=$1 ns link pids
  check_prefix "$p"
  # Root-namespace processes the tests started and tracked (the daemon, ...).
  for pids in "$STATE_ROOT/$p"*/pids; do
    [ -f "$pids" ] || continue
    local pid started i
    while read -r pid started; do
      [ -n "$pid" ] || continue
      if alive_as "$pid" "$started"; then
        kill -TERM "$pid" 2>/dev/null || true
        for i in $(seq 1 50); do alive_as "$pid" "$started" || break; sleep 0.1; done
        if alive_as "$pid" "$started"; then
          echo "netns.sh: tracked pid $pid ignored SIGTERM; SIGKILL" >&2
          kill -KILL "$pid" 2>/dev/null || true
        fi
      fi
    done <"$pids"
  done
  # Every namespace of the run: its processes, then the namespace (its end of the veth goes with it).
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$p" || true); do
    stop_namespace_processes "$ns"
    ip netns delete "$ns" 2>/dev/null || true
  done
  # Root ends of veths whose namespace is gone already vanish with it; anything else of the run.
  for link in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep -E "^$p" || true); do
    ip link del "$link" 2>/dev/null || true
  done
  if cmd_leftovers "$p" >/dev/null 2>&1; then
    rm -rf "$STATE_ROOT/$p"*
  else
    cmd_leftovers "$p" >&2 || true
    return 1
  fi
}

cmd_leftovers() {
  local p=$1 found=0 line pids
  check_prefix "$p"
  while read -r line; do
    [ -n "$line" ] || continue
    echo "namespace $line"; found=1
  done < <(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$p" || true)
  while read -r line; do
    [ -n "$line" ] || continue
    echo "interface $line"; found=1
  done < <(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 | grep -E "^$p" || true)
  for pids in "$STATE_ROOT/$p"*/pids; do
    [ -f "$pids" ] || continue
    local pid started
    while read -r pid started; do
      [ -n "$pid" ] || continue
      if alive_as "$pid" "$started"; then echo "process $pid $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)"; found=1; fi
    done <"$pids"
  done
  return $(( found ))
}

main() {
  [ $# -ge 1 ] || die "usage: netns.sh prefix|subnet|up|host|addresses|link|exec|unplug|track|down|leftovers ..."
  local command=$1; shift
  case "$command" in
    prefix) cmd_prefix "$@" ;;
    subnet) cmd_subnet ;;
    up) [ $# -eq 2 ] || die "usage: up PREFIX RANGE"; cmd_up "$@" ;;
    host) [ $# -ge 2 ] || die "usage: host PREFIX NAME [ADDRESS...]"; cmd_host "$@" ;;
    addresses) [ $# -eq 4 ] || die "usage: addresses PREFIX NAME FIRST COUNT"; cmd_addresses "$@" ;;
    link) [ $# -eq 3 ] || die "usage: link PREFIX NAME up|down"; cmd_link "$@" ;;
    exec) [ $# -ge 3 ] || die "usage: exec PREFIX NAME COMMAND..."; cmd_exec "$@" ;;
    unplug) [ $# -eq 2 ] || die "usage: unplug PREFIX NAME"; cmd_unplug "$@" ;;
    track) [ $# -eq 2 ] || die "usage: track PREFIX PID"; cmd_track "$@" ;;
    down) [ $# -eq 1 ] || die "usage: down PREFIX"; cmd_down "$@" ;;
    leftovers) [ $# -eq 1 ] || die "usage: leftovers PREFIX"; cmd_leftovers "$@" ;;
    *) die "unknown command $command" ;;
  esac
}

main "$@"
