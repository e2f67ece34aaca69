#!/usr/bin/env python3
"""`scripts/bench keep`: what keeping a page on displays costs (mqtt-api.md §13, docs/displays.md).

N simulated displays (cast-sim, idle screen, DashCast) behind one mosquitto and the release
daemon. The daemon's idle CPU is sampled three times over the same window: without keeps, with
a DashCast keep on every display (all `showing`), and after the keeps are forgotten again. A keep
acts only on the statuses the bridge already receives and on its own deadlines at the bridge's
one-second tick, so the middle row should equal the others within noise. It also reports how long
the keeps took to show and how many launches they made (one per display).

Numbers only: exits 0 however slow the machine is, non-zero when something broke.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_bridge import Bridge, Watcher, bench_arguments, bridges_under_test, measure_idle  # noqa: E402
from bench_procs import BenchError, Broker, Simulator, proc_sample  # noqa: E402


def main() -> int:
    ap = bench_arguments(__doc__, "(not used)")
    ap.add_argument("--displays", type=int, default=50)
    ap.add_argument("--idle-seconds", type=float, default=30)
    ap.add_argument("--settle-seconds", type=float, default=5)
    args = ap.parse_args()
    _, argv_for = bridges_under_test(args.daemon, None, False)
    n = args.displays
    with tempfile.TemporaryDirectory(prefix="cast2mqtt-bench-keep-") as workdir:
        broker = Broker(workdir)
        sim = None
        bridge = None
        try:
            sim = Simulator(args.sim, n, workdir, "keep")
            bridge = Bridge("cast2mqtt", argv_for("cast2mqtt"), broker.port, sim, workdir, online_timeout=120)
            print(f"{n} displays online in {bridge.online_s:.1f} s", flush=True)

            def idle(label: str) -> dict:
                before = proc_sample(sim.proc.pid)
                row = measure_idle(bridge, args.settle_seconds, args.idle_seconds)
                after = proc_sample(sim.proc.pid)
                row["sim_cpu_pct"] = 100 * (after["cpu"] - before["cpu"]) / (args.idle_seconds + args.settle_seconds)
                print(f"  {label:<28} bridge idle CPU {row['cpu_pct']:.2f} % of a core, RSS {row['rss']:.1f} MiB", flush=True)
                return row

            rows = {"no keep": idle("no keep")}

            # A keep on every display.
            w = Watcher(broker.port, "keep")
            states: dict[str, dict] = {}
            lock = threading.Lock()

            def on_keep(topic: str, payload: bytes, t: int) -> None:
                dev = topic.split("/")[1]
                with lock:
                    if payload:
                        try:
                            states[dev] = json.loads(payload)
                        except ValueError:
                            pass
                    else:
                        states.pop(dev, None)

            w.subscribe(f"{bridge.base}/+/keep", on_keep)
            start = time.monotonic()
            for i, d in enumerate(sim.devices):
                body = {"app": "dashcast", "url": f"http://127.0.0.1/dash/{i}"}
                w.client.publish(f"{bridge.base}/{d['topic']}/command/keep", json.dumps(body), qos=1)

            def showing() -> int:
                with lock:
                    return sum(1 for s in states.values() if s.get("state") == "showing")

            if not w.wait_for(lambda: showing() >= n, 120):
                raise BenchError(f"only {showing()} of {n} keeps showing after 120 s:\n{bridge.proc.tail()}")
            shown_s = time.monotonic() - start
            with lock:
                launches = sum(int(s.get("launches") or 0) for s in states.values())
            print(f"{n} keeps showing in {shown_s:.1f} s with {launches} launches", flush=True)
            rows[f"{n} keeps showing"] = idle(f"{n} keeps showing")
            with lock:
                still = sum(1 for s in states.values() if s.get("state") == "showing")
                launches_after = sum(int(s.get("launches") or 0) for s in states.values())
            if still < n or launches_after != launches:
                raise BenchError(f"while idle: {still} of {n} showing, launches {launches} -> {launches_after}")

            # Forgotten again.
            for d in sim.devices:
                w.client.publish(f"{bridge.base}/{d['topic']}/command/keep", b"", qos=1)
            if not w.wait_for(lambda: len(states) == 0, 60):
                raise BenchError(f"{len(states)} keeps still published after forgetting them")
            rows["keeps forgotten"] = idle("keeps forgotten")
            w.close()

            print()
            print(f"| {n} displays | bridge idle CPU (% of a core) | RSS (MiB) | cast-sim CPU (%) |")
            print("|---|---|---|---|")
            for label, r in rows.items():
                print(f"| {label} | {r['cpu_pct']:.2f} | {r['rss']:.1f} | {r['sim_cpu_pct']:.2f} |")
            base = (rows["no keep"]["cpu_pct"] + rows["keeps forgotten"]["cpu_pct"]) / 2
            print(f"\nkeeps - without: {rows[f'{n} keeps showing']['cpu_pct'] - base:+.2f} points of a core "
                  f"({n} keeps, {launches} launches, all showing after {shown_s:.1f} s)")
            return 0
        except BenchError as e:
            print(f"bench keep: {e}", file=sys.stderr)
            return 1
        finally:
            if bridge is not None:
                bridge.stop()
            if sim is not None:
                sim.stop()
            broker.stop()


if __name__ == "__main__":
    sys.exit(main())
