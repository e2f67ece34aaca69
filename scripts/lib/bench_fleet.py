#!/usr/bin/env python3
"""Fleet benchmark: thousands of simulated devices, each on a loopback address of its own and
port 8009 as real devices, through one mosquitto and the release daemon (Home Assistant
discovery on, the default; static device list).

Started by `scripts/bench fleet [--devices N,...] [--quick] [--peer]`. The devices are spread
over several `cast-sim` processes (--per-sim, 2 500 by default: a device on its own address
holds three listening sockets and one connection, and a process may open 20 000 files here).

Measured per size, one bridge at a time, on a broker restarted empty before each bridge:
  online    seconds from the bridge's start until every <dev>/availability is `online`, with the
            CPU seconds the bridge and the simulators used meanwhile (who the start waited for)
  idle      RSS, threads and open fds, and CPU (% of one core) over --idle-seconds
  command   volume command -> the device has SET_VOLUME, and -> the response, p50/p99, one
            device at a time with every other device idle around it
  status    the device writes a MEDIA_STATUS -> a subscriber has the media document, p50/p99
  burst     --burst volume commands round-robin over --burst-devices devices: answered, lost,
            publish -> response p50/p99
  restart   the broker stopped and started again on its port (no persistence: it forgets every
            retained message): seconds until every retained topic the bridge had (availability,
            state, Home Assistant discovery...) has been published again, with their bytes and
            the CPU seconds of the bridge, mosquitto and this driver (its paho subscriber reads
            them all) meanwhile
  snapshot  the web page's first message (the WebSocket snapshot it draws everything from):
            bytes and time from connect
and the curve: bytes of RSS per device between sizes, idle CPU per device (µs per second).

With --peer the Python peer bridge (pychromecast + paho, a thread per device) runs at the same
sizes after cast2mqtt; the first size where it fails (not all online within the bound, or it
died) is reported and larger sizes are skipped for it. Numbers only: it exits non-zero when
cast2mqtt broke, never because something is slow. Every wait has a deadline; every process it
starts is stopped by its PID.
"""
from __future__ import annotations

import argparse
import base64
import concurrent.futures
import json
import os
import socket
import sys
import tempfile
import time
from typing import Any

from bench_bridge import Bridge, bench_arguments, bridges_under_test, Watcher, measure_burst, measure_command, measure_idle, measure_status
from bench_procs import HOST, BenchError, Broker, Simulator, fmt_lat, free_port, now_ns, percentiles, proc_sample


class Fleet:
    """N devices over ceil(N / per_sim) cast-sim processes, started in parallel, on consecutive
    loopback addresses from `first_address`."""

    def __init__(self, binary: str, n: int, per_sim: int, workdir: str, first_address: str):
        base = ip_value(first_address)
        chunks = [(i, min(per_sim, n - i)) for i in range(0, n, per_sim)]
        self.sims: list[Simulator] = []
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(chunks)) as pool:
            futures = [pool.submit(Simulator, binary, size, workdir, f"f{n}-{k}", ip_text(base + first), first)
                       for k, (first, size) in enumerate(chunks)]
            errors = []
            for f in futures:
                try:
                    self.sims.append(f.result())
                except (BenchError, OSError) as e:
                    errors.append(e)
        if errors:
            self.stop()
            raise BenchError(f"cast-sim: {errors[0]}")
        self.devices = [d for sim in self.sims for d in sim.devices]

    def fds(self) -> list[int]:
        return [count_fds(sim.proc.pid) for sim in self.sims]

    def stop(self) -> None:
        for sim in self.sims:
            sim.stop()


def ip_value(text: str) -> int:
    a, b, c, d = (int(x) for x in text.split("."))
    return a << 24 | b << 16 | c << 8 | d


def ip_text(value: int) -> str:
    return ".".join(str(value >> s & 0xFF) for s in (24, 16, 8, 0))


def count_fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return -1


# --- retained topics -------------------------------------------------------------------------

def retained_topics(port: int, prefixes: list[str], quiet: float, bound: float) -> set[str]:
    """The topics under `prefixes` a fresh subscriber gets as retained messages (non-empty),
    once nothing new arrived for `quiet` seconds (at most `bound` seconds)."""
    w = Watcher(port, "retained")
    seen: set[str] = set()
    last = [time.monotonic()]

    def on_message(client, userdata, msg) -> None:  # noqa: ANN001
        # Only what the broker keeps: a bridge still busy publishes events live meanwhile.
        if msg.retain and msg.payload and msg.topic not in seen:
            seen.add(msg.topic)
            last[0] = time.monotonic()

    w.client.on_message = on_message
    try:
        for prefix in prefixes:
            w.subscribe(f"{prefix}/#", lambda t, p, ts: None)
        deadline = time.monotonic() + bound
        while time.monotonic() < deadline and time.monotonic() - last[0] < quiet:
            time.sleep(0.2)
        return set(seen)
    finally:
        w.close()


def measure_restart(bridge: Bridge, broker: Broker, prefixes: list[str], before: set[str], n: int,
                    bound: float) -> dict[str, Any]:
    """Restarts the broker (it forgets everything) and times until every topic of `before` was
    published again and all `n` devices are online."""
    bridge.watch.close()
    t_stop = now_ns()
    broker.restart()
    t_up = now_ns()
    bridge_cpu0 = proc_sample(bridge.proc.pid)["cpu"]
    driver_cpu0 = time.process_time()
    w = Watcher(broker.port, f"{bridge.kind}-after-restart")
    seen: set[str] = set()
    online: set[str] = set()
    size = [0]

    def on_msg(t: str, p: bytes, ts: int) -> None:
        if not p:
            return
        if t not in seen:
            size[0] += len(p)
        seen.add(t)
        if t.endswith("/availability") and t.startswith(bridge.base + "/"):
            if p == b"online":
                online.add(t)
            else:
                online.discard(t)

    for prefix in prefixes:
        w.subscribe(f"{prefix}/#", on_msg)
    ok = w.wait_for(lambda: before <= seen and len(online) >= n, bound)
    done = now_ns()
    cpu = {"bridge_cpu_s": proc_sample(bridge.proc.pid)["cpu"] - bridge_cpu0,
           "broker_cpu_s": proc_sample(broker.proc.pid)["cpu"],
           "driver_cpu_s": time.process_time() - driver_cpu0, "bytes": size[0]}
    for prefix in prefixes:
        w.unsubscribe(f"{prefix}/#")
    w.clear_handlers()
    bridge.watch = w
    missing = sorted(before - seen)
    return {"ok": ok and bridge.proc.alive(), "republished_s": (done - t_up) / 1e9, "down_s": (t_up - t_stop) / 1e9,
            "retained": len(before), "missing": len(missing), "missing_sample": missing[:5], "online": len(online), **cpu}


# --- the web page's snapshot -----------------------------------------------------------------

def read_exact(sock: socket.socket, n: int, buf: bytearray) -> bytes:
    while len(buf) < n:
        chunk = sock.recv(max(65536, n - len(buf)))
        if not chunk:
            raise BenchError("web page: connection closed mid-message")
        buf += chunk
    out = bytes(buf[:n])
    del buf[:n]
    return out


def measure_snapshot(port: int, timeout: float) -> dict[str, Any]:
    """Opens the page's WebSocket (/ws) and reads its first message, the snapshot."""
    key = base64.b64encode(os.urandom(16)).decode()
    t0 = now_ns()
    with socket.create_connection((HOST, port), timeout=timeout) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.sendall((f"GET /ws HTTP/1.1\r\nHost: {HOST}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                      f"Origin: http://{HOST}:{port}\r\n\r\n").encode())
        buf = bytearray()
        while b"\r\n\r\n" not in buf:
            chunk = sock.recv(4096)
            if not chunk:
                raise BenchError("web page: no WebSocket upgrade")
            buf += chunk
        head, _, rest = bytes(buf).partition(b"\r\n\r\n")
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise BenchError(f"web page: upgrade refused: {head[:200]!r}")
        buf = bytearray(rest)
        message = bytearray()
        while True:
            b0, b1 = read_exact(sock, 2, buf)
            length = b1 & 0x7F
            if length == 126:
                length = int.from_bytes(read_exact(sock, 2, buf), "big")
            elif length == 127:
                length = int.from_bytes(read_exact(sock, 8, buf), "big")
            payload = read_exact(sock, length, buf)
            if b0 & 0x0F in (0x1, 0x0):
                message += payload
                if b0 & 0x80:
                    break
    elapsed = (now_ns() - t0) / 1e6
    doc = json.loads(message)
    return {"bytes": len(message), "ms": elapsed, "type": doc.get("type"),
            "documents": len(doc.get("documents") or [])}


# --- one bridge at one size ------------------------------------------------------------------

def run_bridge(kind: str, argv_for_config, broker: Broker, fleet: Fleet, workdir: str, args: argparse.Namespace,
               ha_prefix: str) -> dict[str, Any]:
    n = len(fleet.devices)
    web = free_port() if kind == "cast2mqtt" else None
    broker.restart()  # empty: nothing retained from the bridge before
    online_bound = args.online_timeout if args.online_timeout else 60 + n * 0.03
    print(f"==> {kind}: {n} devices (online bound {online_bound:.0f} s, load {os.getloadavg()[0]:.2f})", flush=True)
    sims_cpu0 = sum(proc_sample(sim.proc.pid)["cpu"] for sim in fleet.sims)
    bridge = Bridge(kind, argv_for_config, broker.port, fleet, workdir, online_timeout=online_bound, web_port=web)
    row: dict[str, Any] = {"online_s": bridge.online_s}
    # Who the start-up waited for: the bridge's CPU from its start to all online, and the
    # simulators' over the same time (they sign every TLS handshake and auth challenge).
    row["start_cpu_s"] = proc_sample(bridge.proc.pid)["cpu"]
    row["start_sims_cpu_s"] = sum(proc_sample(sim.proc.pid)["cpu"] for sim in fleet.sims) - sims_cpu0
    print(f"    all online in {bridge.online_s:.2f} s (CPU meanwhile: {kind} {row['start_cpu_s']:.1f} s, "
          f"simulators {row['start_sims_cpu_s']:.1f} s)", flush=True)
    try:
        idle = measure_idle(bridge, args.settle_seconds, args.idle_seconds)
        row.update(idle)
        row["fds"] = count_fds(bridge.proc.pid)
        row["load"] = os.getloadavg()[0]
        print(f"    idle: RSS {idle['rss']:.1f} MiB, CPU {idle['cpu_pct']:.2f} %, threads {idle['threads']}, "
              f"fds {row['fds']}", flush=True)
        sim0 = fleet.sims[0]
        to_response: list[float] = []
        row["command"] = percentiles(measure_command(bridge, sim0, args.samples, 10, to_response=to_response))
        row["command_response"] = percentiles(to_response)
        row["status"] = percentiles(measure_status(bridge, sim0, args.samples, 10))
        print(f"    command -> device {fmt_lat(row['command'])}, -> response {fmt_lat(row['command_response'])}, "
              f"status {fmt_lat(row['status'])} ms", flush=True)
        ndev = min(args.burst_devices, len(sim0.devices))
        row["burst"] = measure_burst(bridge, sim0, args.burst, ndev, timeout=60 + args.burst * 0.01)
        b = row["burst"]
        print(f"    burst {b['received']}/{b['sent']} over {ndev} devices, lost {b['lost']}, "
              f"p50/p99 {fmt_lat(b['lat'])} ms", flush=True)
        if web:
            row["snapshot"] = measure_snapshot(web, timeout=60)
            print(f"    web snapshot {row['snapshot']['bytes']} bytes in {row['snapshot']['ms']:.1f} ms", flush=True)
        prefixes = [bridge.base, ha_prefix]
        before = retained_topics(broker.port, prefixes, quiet=3, bound=30 + n * 0.01)
        row["ha_configs"] = sum(1 for t in before if t.startswith(ha_prefix + "/"))
        row["restart"] = measure_restart(bridge, broker, prefixes, before, n, bound=60 + n * 0.03)
        r = row["restart"]
        print(f"    broker restart: {r['retained'] - r['missing']}/{r['retained']} retained topics "
              f"({row['ha_configs']} HA discovery configs, {r['bytes'] / 1e6:.1f} MB) and {r['online']}/{n} online "
              f"again in {r['republished_s']:.2f} s (CPU meanwhile: {kind} {r['bridge_cpu_s']:.1f} s, "
              f"mosquitto {r['broker_cpu_s']:.1f} s, this driver {r['driver_cpu_s']:.1f} s)", flush=True)
        if not r["ok"]:
            raise BenchError(f"{kind}: after the broker restart {r['missing']} retained topics missing "
                             f"(e.g. {r['missing_sample']}), {r['online']}/{n} online")
        row["rss_end"] = measure_idle(bridge, 0, 1)["rss"]
    finally:
        bridge.stop()
    return row


# --- output ----------------------------------------------------------------------------------

def result_line(kind: str, n: int, r: dict[str, Any]) -> str:
    if "error" in r:
        return f"RESULT fleet bridge={kind} devices={n} failed=1"
    b, rs, snap = r.get("burst", {}), r.get("restart", {}), r.get("snapshot", {})
    fields = {
        "online_s": f"{r['online_s']:.2f}", "rss_mib": f"{r['rss']:.1f}", "idle_cpu_pct": f"{r['cpu_pct']:.2f}",
        "threads": r["threads"], "fds": r["fds"],
        "cmd_device_p50_ms": f"{r['command'].get('p50', 0):.2f}", "cmd_device_p99_ms": f"{r['command'].get('p99', 0):.2f}",
        "cmd_response_p50_ms": f"{r['command_response'].get('p50', 0):.2f}",
        "cmd_response_p99_ms": f"{r['command_response'].get('p99', 0):.2f}",
        "status_p50_ms": f"{r['status'].get('p50', 0):.2f}", "status_p99_ms": f"{r['status'].get('p99', 0):.2f}",
        "burst_answered": b.get("received"), "burst_lost": b.get("lost"),
        "burst_p50_ms": f"{b.get('lat', {}).get('p50', 0):.1f}", "burst_p99_ms": f"{b.get('lat', {}).get('p99', 0):.1f}",
        "start_cpu_s": f"{r.get('start_cpu_s', 0):.1f}", "start_sims_cpu_s": f"{r.get('start_sims_cpu_s', 0):.1f}",
        "restart_republished_s": f"{rs.get('republished_s', 0):.2f}", "retained_topics": rs.get("retained"),
        "restart_mb": f"{rs.get('bytes', 0) / 1e6:.1f}", "restart_bridge_cpu_s": f"{rs.get('bridge_cpu_s', 0):.1f}",
        "restart_broker_cpu_s": f"{rs.get('broker_cpu_s', 0):.1f}", "restart_driver_cpu_s": f"{rs.get('driver_cpu_s', 0):.1f}",
        "ha_configs": r.get("ha_configs"),
        "snapshot_bytes": snap.get("bytes", "-"), "snapshot_ms": f"{snap['ms']:.1f}" if snap else "-",
    }
    return f"RESULT fleet bridge={kind} devices={n} " + " ".join(f"{k}={v}" for k, v in fields.items())


def print_table(results: dict[str, dict[int, dict[str, Any]]]) -> None:
    for kind, rows in results.items():
        sizes = sorted(rows)
        if not sizes:
            continue
        print()
        print(f"{kind}:")
        print("| devices | all online s | RSS MiB | idle CPU % | threads | fds | command -> device p50 / p99 ms "
              "| -> response p50 / p99 ms | status p50 / p99 ms | burst answered / lost, p50 / p99 ms "
              "| broker restart: retained topics (HA configs) back in s | web snapshot bytes / ms |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for n in sizes:
            r = rows[n]
            if "error" in r:
                print(f"| {n} | failed: {r['error'][:160]} |||||||||||")
                continue
            b, rs, snap = r["burst"], r["restart"], r.get("snapshot")
            print(f"| {n} | {r['online_s']:.2f} | {r['rss']:.1f} | {r['cpu_pct']:.2f} | {r['threads']} | {r['fds']} "
                  f"| {fmt_lat(r['command'])} | {fmt_lat(r['command_response'])} | {fmt_lat(r['status'])} "
                  f"| {b['received']}/{b['sent']}, lost {b['lost']}, {fmt_lat(b['lat'])} "
                  f"| {rs['retained']} ({r['ha_configs']}) in {rs['republished_s']:.2f} "
                  f"| {snap['bytes'] if snap else '-'} / {snap['ms'] if snap else 0:.0f} |")
        good = [n for n in sizes if "error" not in rows[n]]
        if good:
            print()
            print(f"{kind} curve: | devices | RSS per device, KiB (from {good[0]}) | idle CPU per device, µs/s |")
            base = good[0]
            for n in good:
                r = rows[n]
                per = (r["rss"] - rows[base]["rss"]) * 1024 / (n - base) if n != base else float("nan")
                us = r["cpu_pct"] / 100 * 1e6 / n
                print(f"| {n} | {per:.1f} | {us:.2f} |")
    for kind, rows in results.items():
        for n in sorted(rows):
            print(result_line(kind, n, rows[n]))


# --- the run ---------------------------------------------------------------------------------

def main() -> int:
    ap = bench_arguments(__doc__, "peer_bridge.py: also run the peer at the same sizes")
    ap.add_argument("--devices", default="200,1000,10000", help="comma-separated fleet sizes")
    ap.add_argument("--per-sim", type=int, default=2500, help="devices per cast-sim process")
    ap.add_argument("--first-address", default=None,
                    help="the first device's address (default 127.<40 + pid %% 200>.0.1: runs side by side differ)")
    ap.add_argument("--idle-seconds", type=float, default=60)
    ap.add_argument("--settle-seconds", type=float, default=5)
    ap.add_argument("--samples", type=int, default=300, help="command and status samples")
    ap.add_argument("--burst", type=int, default=10000)
    ap.add_argument("--burst-devices", type=int, default=100)
    ap.add_argument("--online-timeout", type=float, default=0, help="bound on all-online (0: 60 s + 30 ms per device)")
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args()
    sizes = [int(x) for x in args.devices.split(",") if x.strip()]
    first = args.first_address or f"127.{40 + os.getpid() % 200}.0.1"

    workdir = tempfile.mkdtemp(prefix="cast2mqtt-fleet.")
    print(f"==> fleet benchmark: {os.cpu_count()} cores, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}, "
          f"sizes {sizes}, devices from {first}, logs in {workdir}", flush=True)
    kinds, argv_for = bridges_under_test(args.daemon, args.peer, args.only_peer)

    broker = Broker(workdir)
    results: dict[str, dict[int, dict[str, Any]]] = {kind: {} for kind in kinds}
    peer_stopped_at: int | None = None
    status = 0
    fleet: Fleet | None = None
    try:
        for n in sizes:
            t = time.monotonic()
            fleet = Fleet(args.sim, n, args.per_sim, workdir, first)
            print(f"==> {n} devices over {len(fleet.sims)} cast-sim processes, up in {time.monotonic() - t:.1f} s "
                  f"(fds per process {fleet.fds()})", flush=True)
            for kind in kinds:
                if kind == "peer" and peer_stopped_at is not None:
                    continue
                try:
                    results[kind][n] = run_bridge(kind, argv_for(kind), broker, fleet, workdir, args, "homeassistant")
                except BenchError as e:
                    print(f"!! {kind} at {n} devices: {e}", file=sys.stderr, flush=True)
                    results[kind][n] = {"error": str(e).splitlines()[0]}
                    if kind == "peer":
                        peer_stopped_at = n
                    else:
                        status = 1
            fleet.stop()
            fleet = None
    except (BenchError, OSError, KeyError, ValueError) as e:
        print(f"!! {type(e).__name__}: {e}", file=sys.stderr)
        status = 1
    finally:
        if fleet:
            fleet.stop()
        broker.stop()

    print_table(results)
    if args.peer:
        print(f"peer: {'stopped working at ' + str(peer_stopped_at) + ' devices' if peer_stopped_at else 'ran every size'}")
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"results": results, "peer_stopped_at": peer_stopped_at}, f, indent=1)
    return status


if __name__ == "__main__":
    sys.exit(main())
