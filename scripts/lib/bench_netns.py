#!/usr/bin/env python3
"""Scale on a real network: N simulated devices on N addresses of a test network (issue #20)
against the same N devices on 127.0.0.1, one after the other in one run (the machine's load
moves the numbers by more than the difference between runs an hour apart).

Started by `scripts/bench netns`. The rows, each a fresh broker, cast-sim and release daemon:

  loopback   mosquitto, cast-sim (N devices, one port each) and the daemon on 127.0.0.1 with a
             static device list: the `N devices` row of `scripts/bench e2e`
  network    the broker on a test host of its own, the N devices on N addresses of one test host
             (each on port 8009, eureka_info on 8008/8443), the daemon in the root namespace with
             a static list of those addresses; traffic crosses veth pairs and a Linux bridge
  mdns       the same network, the devices announced over mDNS (avahi, an address record each) and
             found by the daemon's discovery instead of a static list

Each row: bridge process start -> every `<dev>/availability` is `online` (as seen by an MQTT
client in the root namespace), then --settle-seconds, then RSS, threads and CPU (utime+stime of
/proc/<pid>/stat) over --idle-seconds, as % of one core. Numbers only: it exits non-zero when
something broke (a process died, devices never came online), never because something is slow.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import paho.mqtt.client as mqtt  # noqa: E402

import testnet  # noqa: E402
from bench_e2e import BenchError, Proc, proc_sample  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(address: str, port: int, proc: Proc, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not proc.alive():
            raise BenchError(f"{proc.name} exited:\n{proc.tail()}")
        try:
            socket.create_connection((address, port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise BenchError(f"{proc.name} does not listen on {address}:{port}")


class Online:
    """An MQTT client counting the devices whose availability is `online`."""

    def __init__(self, address: str, port: int, base: str):
        self.cond = threading.Condition()
        self.online: set[str] = set()
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"bench-netns-{os.getpid()}-{base}")
        self.client.on_message = self._on_message
        self.client.connect(address, port, keepalive=60)
        self.client.subscribe(f"{base}/+/availability", qos=1)
        self.client.loop_start()

    def _on_message(self, _client, _userdata, message) -> None:  # noqa: ANN001
        device = message.topic.split("/")[1]
        with self.cond:
            if message.payload == b"online":
                self.online.add(device)
            else:
                self.online.discard(device)
            self.cond.notify_all()

    def wait(self, n: int, timeout: float, proc: Proc) -> bool:
        deadline = time.monotonic() + timeout
        with self.cond:
            while len(self.online) < n:
                left = deadline - time.monotonic()
                if left <= 0 or not proc.alive():
                    return False
                self.cond.wait(min(left, 0.5))
        return True

    def close(self) -> None:
        self.client.loop_stop()
        self.client.disconnect()


def run_row(kind: str, args: argparse.Namespace, workdir: str, net: testnet.TestNetwork | None) -> dict:
    n = args.devices
    row_dir = os.path.join(workdir, kind)
    os.makedirs(row_dir)
    procs: list[Proc] = []
    try:
        # The broker.
        conf = os.path.join(row_dir, "mosquitto.conf")
        if net is None:
            broker_address, broker_port = "127.0.0.1", free_port()
            listener = f"listener {broker_port} 127.0.0.1"
            broker_argv = ["mosquitto", "-c", conf]
        else:
            broker_address, broker_port = net.address(0, 2), 1883
            listener = "listener 1883"
            broker_argv = net.argv("mq", ["mosquitto", "-c", conf])
        with open(conf, "w") as f:
            f.write(f"{listener}\nallow_anonymous true\nset_tcp_nodelay true\npersistence false\n"
                    "max_queued_messages 0\nmax_inflight_messages 0\n")
        broker = Proc("mosquitto", broker_argv, os.path.join(row_dir, "mosquitto.log"))
        procs.append(broker)
        wait_listening(broker_address, broker_port, broker)

        # The devices.
        sim_argv = [args.sim, "--reply-latency-ms", "0", "--launch-latency-ms", "10", "--media-tick-ms", "1000",
                    "--log-level", "warning"]
        sim_argv += [arg for i in range(n) for arg in ("--device", f"Bench {i:04d}:0")]
        if net is not None:
            sim_argv = net.argv("fleet", sim_argv + ["--own-addresses", net.address(1, 1)]
                                + (["--mdns"] if kind == "mdns" else []))
        sim = Proc("cast-sim", sim_argv, os.path.join(row_dir, "cast-sim.log"), capture_stdout=True)
        procs.append(sim)
        devices = sim.read_json_lines(n, timeout=60 + n * 0.1)
        if kind == "mdns":
            time.sleep(1)  # cast-sim publishes its records right after printing the devices

        # The bridge.
        state_dir = os.path.join(row_dir, "state")
        os.makedirs(state_dir)
        lines = ["mqtt:", f"  url: mqtt://{broker_address}:{broker_port}", "  base_topic: c2m",
                 f"  client_id: c2m-bench-{kind}", "discovery:"]
        if kind == "mdns":
            lines += ["  mdns: true", "  include:"] + [f"    - \"{d['id']}\"" for d in devices]
        else:
            lines += ["  mdns: false", "  devices:"]
            lines += [f"    - {{host: {d['host']}, port: {d['port']}, name: \"{d['name']}\", id: \"{d['id']}\"}}"
                      for d in devices]
        # As `scripts/bench e2e`: Home Assistant discovery and the web page on (nobody looking).
        lines += [f"state_dir: {state_dir}", "log:", "  level: warning", "web:", f'  listen: "127.0.0.1:{free_port()}"', ""]
        config = os.path.join(row_dir, "cast2mqtt.yaml")
        with open(config, "w") as f:
            f.write("\n".join(lines))
        watch = Online(broker_address, broker_port, "c2m")
        try:
            bridge = Proc("cast2mqtt", [args.daemon, "run", "--config", config], os.path.join(row_dir, "cast2mqtt.log"))
            procs.append(bridge)
            if net is not None:
                net.track(bridge.pid)
            ok = watch.wait(n, args.online_timeout, bridge)
            online_s = (time.monotonic_ns() - bridge.started_ns) / 1e9
            if not ok:
                raise BenchError(f"{kind}: {n - len(watch.online)} of {n} devices not online after "
                                 f"{args.online_timeout:.0f} s:\n{bridge.tail()}")
        finally:
            watch.close()
        time.sleep(args.settle_seconds)
        a = proc_sample(bridge.pid)
        time.sleep(args.idle_seconds)
        b = proc_sample(bridge.pid)
        if not bridge.alive():
            raise BenchError(f"{kind}: the daemon died while idle:\n{bridge.tail()}")
        sim_sample = proc_sample(sim.pid)
        return {"online_s": online_s, "rss": b["rss"], "threads": b["threads"],
                "cpu_pct": 100 * (b["cpu"] - a["cpu"]) / args.idle_seconds, "sim_rss": sim_sample["rss"]}
    finally:
        for proc in reversed(procs):
            proc.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--daemon", required=True, help="the release cast2mqtt binary")
    ap.add_argument("--sim", required=True, help="the cast-sim binary")
    ap.add_argument("--devices", type=int, default=200)
    ap.add_argument("--rows", default="loopback,network,mdns", help="comma-separated: loopback,network,mdns")
    ap.add_argument("--idle-seconds", type=float, default=30)
    ap.add_argument("--settle-seconds", type=float, default=5)
    ap.add_argument("--online-timeout", type=float, default=120)
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args()
    rows = [r.strip() for r in args.rows.split(",") if r.strip()]
    if any(r not in ("loopback", "network", "mdns") for r in rows):
        ap.error("--rows: loopback, network, mdns")
    if args.devices > 250:
        ap.error("--devices: at most 250 (one 10.N.1.0/24 of the test network)")
    if "mdns" in rows and (shutil.which("avahi-browse") is None or subprocess.run(
            ["avahi-browse", "-a", "-t", "-p"], capture_output=True, timeout=10).returncode != 0):
        ap.error("the mdns row needs an avahi-daemon on the system bus (scripts/bench netns starts one)")

    workdir = tempfile.mkdtemp(prefix="cast2mqtt-netns-bench.")
    print(f"==> network scale benchmark: {args.devices} devices, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.2f}, logs in {workdir}")
    results: dict[str, dict] = {}
    net = None
    status = 0
    try:
        if any(r != "loopback" for r in rows):
            reason = testnet.unavailable()
            if reason:
                raise BenchError(reason)
            net = testnet.TestNetwork()
            net.add_host("mq", net.address(0, 2))
            net.add_host("fleet")
            net.add_addresses("fleet", net.address(1, 1), args.devices)
            print(f"    test network {net.subnet} (prefix {net.prefix}): broker {net.address(0, 2)}, devices "
                  f"{net.address(1, 1)}-{net.address(1, args.devices)}")
        for kind in rows:
            print(f"==> {kind}: {args.devices} devices")
            results[kind] = run_row(kind, args, workdir, None if kind == "loopback" else net)
            print(f"    {results[kind]}")
    except (BenchError, OSError, testnet.NetworkError, KeyError, ValueError) as error:
        print(f"!! {type(error).__name__}: {error}", file=sys.stderr)
        status = 1
    finally:
        if net is not None:
            left = net.down()
            if left:
                print("!! the test network left things behind:\n" + "\n".join(left), file=sys.stderr)
                status = 1

    print()
    print(f"| {args.devices} devices | all online s | idle RSS MiB | idle CPU % of a core | threads |")
    print("|---|---|---|---|---|")
    labels = {"loopback": "loopback (127.0.0.1, one port each)", "network": "test network, static addresses",
              "mdns": "test network, found over mDNS"}
    for kind in rows:
        r = results.get(kind)
        if r:
            print(f"| {labels[kind]} | {r['online_s']:.2f} | {r['rss']:.1f} | {r['cpu_pct']:.2f} | {r['threads']} |")
    print("RESULT netns " + " ".join(f"{k}_online_s={v['online_s']:.3f} {k}_cpu_pct={v['cpu_pct']:.3f} "
                                     f"{k}_rss_mib={v['rss']:.1f}" for k, v in results.items()))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return status


if __name__ == "__main__":
    sys.exit(main())
