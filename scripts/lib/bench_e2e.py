#!/usr/bin/env python3
"""End-to-end benchmark: what a user feels, cast2mqtt side by side with the Python peer.

Started by `scripts/bench e2e [--peer]`. Everything runs on 127.0.0.1: one mosquitto
(`set_tcp_nodelay true`), `cast-sim` devices and the bridge(s) under test as processes. Every
latency is taken on this host's CLOCK_MONOTONIC: Python's `time.monotonic_ns()` on the MQTT
side, the simulator's `monotonic_ns` (same clock) on the device side.

Measured, per bridge, in one run:
  floor    MQTT publish -> subscriber (QoS 1), no bridge involved
  command  publish to <dev>/command/volume -> the simulated device has SET_VOLUME
  status   the device writes a MEDIA_STATUS with a new title -> a subscriber has the media doc
  hops     the same two paths cold (inputs --cold-spacing-ms apart, so every thread on the path
           has gone to sleep), end to end and inside the bridge process: from the packet that
           carries the input to the packet that carries the output, from packet timestamps
           (tcpdump on lo; scripts/lib/pcap_hops.py); with --stages also the daemon's own
           timestamps at each stage of the two paths (CAST2MQTT_STAGE_TRACE,
           scripts/lib/stage_trace.py), as a table of the steps between them
  scale    N devices: time from bridge start until every device is `online`, then idle RSS,
           threads and CPU (% of one core) over --idle-seconds
  burst    --burst volume commands round-robin over --burst-devices devices, published as fast
           as possible: responses received (by status), lost, publish -> response p50/p99/max
  page     with --web-page, after the idle measurement of each fleet: headless chromium (Debian's,
           through Playwright) opens cast2mqtt's web page; time until every card is drawn, a
           search applied, then the daemon's CPU and RSS over --idle-seconds with the page open

Numbers only: it exits non-zero when something broke (a process died, devices never came
online), never because something is slow. Every wait has a deadline; every process it starts
is stopped by its PID.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from typing import Any

from bench_bridge import (Bridge, bench_arguments, bridges_under_test, Watcher, measure_burst, measure_command, measure_idle, measure_status)
from bench_procs import BenchError, Broker, Simulator, fmt_lat, free_port, now_ns, percentiles
from pcap_hops import Capture, hop_times, other_port
import stage_trace


def measure_floor(port: int, samples: int, warmup: int) -> list[float]:
    sub = Watcher(port, "floor-sub")
    pub = Watcher(port, "floor-pub")
    got: dict[int, int] = {}
    sub.subscribe("bench/floor", lambda t, p, ts: got.__setitem__(int(p), ts))
    lat: list[float] = []
    try:
        for i in range(samples + warmup):
            t0 = now_ns()
            pub.client.publish("bench/floor", str(i), qos=1)
            if not sub.wait_for(lambda: i in got, 5):
                raise BenchError(f"floor: message {i} never arrived")
            if i >= warmup:
                lat.append((got[i] - t0) / 1e6)
    finally:
        sub.close()
        pub.close()
    return lat


def measure_hops(bridge: Bridge, sim: Simulator, mport: int, workdir: str, commands: int, statuses: int,
                 spacing: float) -> dict[str, Any]:
    """Cold command and status paths: end to end, and inside the bridge from packet timestamps."""
    cmd_dev, st_dev = sim.devices[0], sim.devices[1 % len(sim.devices)]
    cap = Capture([mport, cmd_dev["port"], st_dev["port"]], os.path.join(workdir, f"hops-{bridge.kind}.pcap"))
    try:
        command = measure_command(bridge, sim, commands, 5, spacing)
        status = measure_status(bridge, sim, statuses, 5, spacing)
    finally:
        packets = cap.stop()
    own = bridge.watch.client.socket()
    exclude = {own.getsockname()[1]} if own is not None else set()
    bport = other_port(packets, mport, exclude)
    if bport is None:
        raise BenchError(f"hops: no MQTT traffic of {bridge.kind} in the capture")
    # Command: the broker's PUBLISH to the bridge -> the bridge's TLS record to the device.
    cmd_hop = hop_times(packets, lambda p: p.sport == mport and p.dport == bport,
                        lambda p: p.dport == cmd_dev["port"])
    # Status: the device's TLS record to the bridge -> the bridge's first PUBLISH to the broker.
    st_hop = hop_times(packets, lambda p: p.sport == st_dev["port"],
                       lambda p: p.sport == bport and p.dport == mport, min_in=1, min_out=9)
    return {"command_e2e": percentiles(command), "status_e2e": percentiles(status),
            "command_hop": percentiles(cmd_hop), "status_hop": percentiles(st_hop)}


def measure_page(bridge: Bridge, n: int, chromium: str, settle: float, seconds: float) -> dict[str, float]:
    """The web page open on `n` devices: first full render, a search, then the daemon at rest."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1360, "height": 900})
            cards = page.locator("article.card")
            shown = page.locator("article.card:not([hidden])")

            def until(done, timeout: float, what: str) -> None:
                # Polled from here: the page's Content-Security-Policy forbids the eval that
                # Playwright's wait_for_function needs.
                deadline = time.monotonic() + timeout
                while not done():
                    if time.monotonic() > deadline:
                        raise BenchError(f"the web page: {what} not within {timeout:.0f} s")
                    time.sleep(0.01)

            t0 = time.monotonic()
            page.goto(bridge.web_url)
            until(lambda: cards.count() >= n, 120, f"{n} cards")
            render_s = time.monotonic() - t0
            t1 = time.monotonic()
            page.fill('input[type="search"]', "no-such-device")
            until(lambda: shown.count() == 0, 30, "the search")
            search_ms = (time.monotonic() - t1) * 1000
            page.fill('input[type="search"]', "")
            row = measure_idle(bridge, settle, seconds)
        finally:
            browser.close()
    return {"render_s": render_s, "search_ms": search_ms, "cpu_pct": row["cpu_pct"], "rss": row["rss"]}


# --- the run ---------------------------------------------------------------------------------

def main() -> int:
    ap = bench_arguments(__doc__, "peer_bridge.py: also run the peer the same way and print ratios")
    ap.add_argument("--samples", type=int, default=1000)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--scale", default="200,1000", help="comma-separated fleet sizes ('' = none)")
    ap.add_argument("--idle-seconds", type=float, default=30)
    ap.add_argument("--settle-seconds", type=float, default=5)
    ap.add_argument("--burst", type=int, default=10000)
    ap.add_argument("--burst-devices", type=int, default=100)
    ap.add_argument("--parts", default="floor,command,status,hops,scale,burst",
                    help="what to measure (comma-separated subset of floor,command,status,hops,scale,burst)")
    ap.add_argument("--cold-commands", type=int, default=120, help="hops: commands, spaced --cold-spacing-ms apart")
    ap.add_argument("--cold-statuses", type=int, default=80, help="hops: device statuses, spaced likewise")
    ap.add_argument("--cold-spacing-ms", type=float, default=50)
    ap.add_argument("--stages", action="store_true",
                    help="hops: also time the stages inside cast2mqtt (CAST2MQTT_STAGE_TRACE) and print them")
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--web-page", metavar="CHROMIUM", nargs="?", const="/usr/bin/chromium",
                    help="also measure cast2mqtt with its web page open in this headless chromium (scale rows)")
    args = ap.parse_args()
    parts = {p.strip() for p in args.parts.split(",")}

    workdir = tempfile.mkdtemp(prefix="cast2mqtt-e2e.")
    print(f"==> e2e benchmark: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}, logs in {workdir}")
    kinds, argv_for = bridges_under_test(args.daemon, args.peer, args.only_peer)

    broker = Broker(workdir)
    mport = broker.port
    results: dict[str, Any] = {kind: {} for kind in kinds}
    procs_to_stop: list[Any] = []
    status = 0
    try:
        if "floor" in parts:
            print(f"==> floor: MQTT publish -> subscriber, QoS 1, {args.samples} samples")
            results["floor"] = percentiles(measure_floor(mport, args.samples, args.warmup))
            print(f"    {results['floor']}")

        # Latency: a small fleet, one bridge at a time.
        if parts & {"command", "status", "hops"}:
            sim = Simulator(args.sim, 4, workdir, "lat")
            procs_to_stop.append(sim)
            for kind in kinds:
                print(f"==> {kind}: command and status latency, {args.samples} samples each")
                trace = (os.path.join(workdir, "stages.txt")
                         if args.stages and "hops" in parts and kind == "cast2mqtt" else None)
                bridge = Bridge(kind, argv_for(kind), mport, sim, workdir, online_timeout=60, stage_trace=trace)
                try:
                    if "command" in parts:
                        results[kind]["command"] = percentiles(measure_command(bridge, sim, args.samples, args.warmup))
                        print(f"    command {results[kind]['command']}")
                    if "status" in parts:
                        results[kind]["status"] = percentiles(measure_status(bridge, sim, args.samples, args.warmup))
                        print(f"    status  {results[kind]['status']}")
                    if "hops" in parts:
                        results[kind]["hops"] = measure_hops(bridge, sim, mport, workdir, args.cold_commands,
                                                             args.cold_statuses, args.cold_spacing_ms / 1000)
                        print(f"    cold    {results[kind]['hops']}")
                finally:
                    bridge.stop()
                if trace:
                    if not os.path.exists(trace):
                        raise BenchError("--stages: the daemon wrote no stage trace")
                    results[kind]["stages"] = stage_trace.summarize(trace, gap_ms=args.cold_spacing_ms * 0.4)
            sim.stop()
            procs_to_stop.remove(sim)

        scales = [int(x) for x in args.scale.split(",") if x.strip()] if parts & {"scale", "burst"} else []
        for n in scales:
            sim = Simulator(args.sim, n, workdir, f"s{n}")
            procs_to_stop.append(sim)
            for kind in kinds:
                print(f"==> {kind}: {n} devices")
                web = free_port() if args.web_page and kind == "cast2mqtt" else None
                bridge = Bridge(kind, argv_for(kind), mport, sim, workdir, online_timeout=120, web_port=web)
                try:
                    if "scale" in parts:
                        row = {"online_s": bridge.online_s}
                        row.update(measure_idle(bridge, args.settle_seconds, args.idle_seconds))
                        print(f"    {row}")
                        results[kind][f"scale{n}"] = row
                        if web:
                            page = measure_page(bridge, n, args.web_page, args.settle_seconds, args.idle_seconds)
                            print(f"    page open {page}")
                            results[kind][f"page{n}"] = page
                    if ("burst" in parts and args.burst > 0 and n >= args.burst_devices
                            and "burst" not in results[kind]):
                        b = measure_burst(bridge, sim, args.burst, args.burst_devices, timeout=120)
                        results[kind]["burst"] = b
                        print(f"    burst {b}")
                finally:
                    bridge.stop()
            sim.stop()
            procs_to_stop.remove(sim)
    except (BenchError, OSError, KeyError, ValueError) as e:
        print(f"!! {type(e).__name__}: {e}", file=sys.stderr)
        status = 1
    finally:
        for p in procs_to_stop:
            p.stop()
        broker.stop()

    print_table(results, kinds)
    if "stages" in results.get("cast2mqtt", {}):
        print()
        print(stage_trace.render(results["cast2mqtt"]["stages"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return status


def fmt_cold(r: dict, hop: bool) -> str:
    if not r or not r.get("n"):
        return "-"
    if hop:
        return f"{r['p50']:.3f} / {r.get('p10', 0):.3f} / {r['p90']:.3f} (n {r['n']})"
    return f"{r['p50']:.3f} / {r['p90']:.3f}"


def print_table(results: dict[str, Any], kinds: list[str]) -> None:
    floor = results.get("floor", {})
    c = results.get("cast2mqtt", {})
    p = results.get("peer", {})
    peer = "peer" in kinds

    def ratio(a: float | None, b: float | None) -> str:
        return f"{a / b:.2f}" if a is not None and b else "-"

    rows: list[tuple[str, str, str, str, str]] = []
    for key, label in (("command", "command: publish -> device has SET_VOLUME, p50 / p99 ms"),
                       ("status", "status: device writes MEDIA_STATUS -> subscriber has media, p50 / p99 ms")):
        a, b = c.get(key, {}), p.get(key, {})
        rows.append((label, fmt_lat(floor), fmt_lat(b) if peer else "", fmt_lat(a),
                     f"{ratio(a.get('p50'), b.get('p50'))} / {ratio(a.get('p99'), b.get('p99'))}" if peer else ""))
    for key, label in (("command_e2e", "cold command (inputs 50 ms apart): publish -> device, p50 / p90 ms"),
                       ("command_hop", "cold command inside the bridge: MQTT packet in -> Cast packet out, p50 / p10 / p90 ms"),
                       ("status_e2e", "cold status: device writes -> subscriber has media, p50 / p90 ms"),
                       ("status_hop", "cold status inside the bridge: Cast packet in -> first MQTT packet out, p50 / p10 / p90 ms")):
        a, b = c.get("hops", {}).get(key, {}), p.get("hops", {}).get(key, {})
        if not a and not b:
            continue
        hop = key.endswith("_hop")
        rows.append((label, "", fmt_cold(b, hop) if peer else "", fmt_cold(a, hop),
                     ratio(a.get("p50"), b.get("p50")) if peer else ""))
    for key in sorted((k for k in {**c, **p} if k.startswith("scale")), key=lambda k: int(k[5:])):
        a, b = c.get(key, {}), p.get(key, {})

        def cell(r: dict) -> str:
            return f"{r['online_s']:.2f} / {r['rss']:.1f} / {r['cpu_pct']:.2f} / {r['threads']}" if r else "-"

        rows.append((f"{key[5:]} devices: all online s / idle RSS MiB / idle CPU % / threads", "",
                     cell(b) if peer else "", cell(a),
                     " / ".join(ratio(a.get(f), b.get(f)) for f in ("online_s", "rss", "cpu_pct")) if peer else ""))
    for key in sorted((k for k in c if k.startswith("page")), key=lambda k: int(k[4:])):
        r = c[key]
        rows.append((f"{key[4:]} devices, web page open: all cards drawn s / search ms / daemon CPU % / RSS MiB", "", "",
                     f"{r['render_s']:.2f} / {r['search_ms']:.0f} / {r['cpu_pct']:.2f} / {r['rss']:.1f}", ""))
    if "burst" in c or "burst" in p:
        a, b = c.get("burst", {}), p.get("burst", {})

        def bcell(r: dict) -> str:
            if not r:
                return "-"
            st = ",".join(f"{k} {v}" for k, v in sorted(r["by_status"].items()))
            return f"{r['received']}/{r['sent']} ({st}), lost {r['lost']}, p50 / p99 {r['lat'].get('p50', 0):.1f} / {r['lat'].get('p99', 0):.1f} ms"

        rows.append(("burst: commands over devices -> responses", "", bcell(b) if peer else "", bcell(a),
                     ratio(a.get("lat", {}).get("p99"), b.get("lat", {}).get("p99")) if peer else ""))
    print()
    print("| metric | broker floor | peer | cast2mqtt | cast2mqtt / peer |")
    print("|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    summary = {k: v for k, v in c.items() if k in ("command", "status")}
    print("RESULT e2e " + " ".join(
        f"{k}_p50_ms={v.get('p50', 0):.3f} {k}_p99_ms={v.get('p99', 0):.3f}" for k, v in summary.items()))


if __name__ == "__main__":
    sys.exit(main())
