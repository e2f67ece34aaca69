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

import argparse
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from typing import Any

import paho.mqtt.client as mqtt

from pcap_hops import Capture, hop_times, other_port
import stage_trace

HOST = "127.0.0.1"
RECEIVER_NS = "urn:x-cast:com.google.cast.receiver"
CLK_TCK = os.sysconf("SC_CLK_TCK")


class BenchError(Exception):
    pass


def now_ns() -> int:
    return time.monotonic_ns()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {"n": 0}
    v = sorted(values)

    def p(q: float) -> float:
        return v[min(len(v) - 1, max(0, int(round(q * (len(v) - 1)))))]

    return {"n": len(v), "p10": p(0.10), "p50": p(0.50), "p90": p(0.90), "p99": p(0.99), "max": v[-1]}


# --- processes -------------------------------------------------------------------------------

class Proc:
    """A child process, stopped by its PID (SIGTERM, then SIGKILL after a grace period)."""

    def __init__(self, name: str, argv: list[str], log_path: str, env: dict[str, str] | None = None,
                 capture_stdout: bool = False):
        self.name = name
        self.log_path = log_path
        self.log = open(log_path, "wb")
        self.popen = subprocess.Popen(
            argv, stdout=subprocess.PIPE if capture_stdout else self.log, stderr=self.log,
            stdin=subprocess.DEVNULL, env=env)
        self.started_ns = now_ns()

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def stop(self, grace: float = 10.0) -> None:
        if self.alive():
            try:
                os.kill(self.pid, signal.SIGTERM)
                self.popen.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                os.kill(self.pid, signal.SIGKILL)
                self.popen.wait(timeout=5)
            except ProcessLookupError:
                pass
        if self.popen.stdout:
            self.popen.stdout.close()
        self.log.close()

    def tail(self, n: int = 3000) -> str:
        try:
            with open(self.log_path, "rb") as f:
                return f.read()[-n:].decode(errors="replace")
        except OSError:
            return ""

    def read_json_lines(self, count: int, timeout: float) -> list[dict]:
        """Reads `count` JSON lines from stdout within `timeout` seconds."""
        assert self.popen.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(self.popen.stdout, selectors.EVENT_READ)
        buf = b""
        lines: list[dict] = []
        deadline = time.monotonic() + timeout
        while len(lines) < count:
            left = deadline - time.monotonic()
            if left <= 0 or not self.alive():
                raise BenchError(f"{self.name}: {len(lines)}/{count} lines before timeout or exit:\n{self.tail()}")
            if not sel.select(timeout=min(left, 1.0)):
                continue
            chunk = os.read(self.popen.stdout.fileno(), 1 << 16)
            if not chunk:
                continue
            buf += chunk
            while b"\n" in buf and len(lines) < count:
                line, buf = buf.split(b"\n", 1)
                if line.strip():
                    lines.append(json.loads(line))
        sel.close()
        return lines


def proc_sample(pid: int) -> dict[str, float]:
    """CPU seconds (user+system), RSS MiB and threads of a process from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / CLK_TCK
    rss_kib = 0
    threads = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss_kib = int(line.split()[1])
            elif line.startswith("Threads:"):
                threads = int(line.split()[1])
    return {"cpu": cpu, "rss": rss_kib / 1024, "threads": threads}


# --- MQTT side -------------------------------------------------------------------------------

class Watcher:
    """One paho client: subscriptions with a callback that timestamps every message on arrival."""

    def __init__(self, port: int, name: str):
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"bench-{name}-{os.getpid()}",
                                  protocol=mqtt.MQTTv311)
        self.client.max_inflight_messages_set(1000)
        self.cond = threading.Condition()
        self.handlers: list[Any] = []
        self.connected = threading.Event()
        self.client.on_connect = lambda c, u, f, rc, p: self.connected.set()
        self.client.on_message = self._on_message
        self.client.connect(HOST, port, keepalive=60)
        # Like the bridges and the broker: without it, a PUBACK followed by the next PUBLISH on
        # the same socket waits for the broker's delayed ACK (Nagle), ~40 ms per sample.
        sock = self.client.socket()
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.client.loop_start()
        if not self.connected.wait(10):
            raise BenchError(f"MQTT client {name} did not connect")

    def _on_message(self, client, userdata, msg) -> None:  # noqa: ANN001
        t = now_ns()
        with self.cond:
            for h in self.handlers:
                h(msg.topic, msg.payload, t)
            self.cond.notify_all()

    def subscribe(self, topic: str, handler) -> None:  # noqa: ANN001
        done = threading.Event()
        self.client.on_subscribe = lambda c, u, mid, rc, p: done.set()
        with self.cond:
            self.handlers.append(handler)
        self.client.subscribe(topic, qos=1)
        if not done.wait(10):
            raise BenchError(f"no SUBACK for {topic}")

    def clear_handlers(self) -> None:
        with self.cond:
            self.handlers.clear()

    def wait_for(self, predicate, timeout: float) -> bool:  # noqa: ANN001
        deadline = time.monotonic() + timeout
        with self.cond:
            while not predicate():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(left)
        return True

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


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


# --- simulator -------------------------------------------------------------------------------

class Simulator:
    def __init__(self, binary: str, n: int, workdir: str, tag: str):
        self.devices: list[dict] = []
        argv = [binary, "--control-port", "0", "--reply-latency-ms", "0", "--launch-latency-ms", "10",
                "--media-tick-ms", "1000", "--log-level", "warning"]
        for i in range(n):
            argv += ["--device", f"Bench {tag} {i:04d}:0"]
        self.proc = Proc(f"cast-sim({n})", argv, os.path.join(workdir, f"cast-sim-{tag}-{n}.log"),
                         capture_stdout=True)
        lines = self.proc.read_json_lines(n + 1, timeout=60 + n * 0.05)
        self.devices = [line for line in lines if "id" in line]
        for i, d in enumerate(self.devices):
            d["topic"] = f"d{i:04d}"
        self.control = next(line["control_port"] for line in lines if "control_port" in line)

    def http(self, method: str, path: str, body: Any = None, timeout: float = 10) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"http://{HOST}:{self.control}{path}", data=data, method=method)
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.loads(r.read())

    def stop(self) -> None:
        self.proc.stop()


# --- bridges ---------------------------------------------------------------------------------

def write_config(path: str, mqtt_port: int, base: str, sim: Simulator, state_dir: str, web_port: int | None = None) -> None:
    lines = [
        "mqtt:", f"  url: mqtt://{HOST}:{mqtt_port}", f"  base_topic: {base}", f"  client_id: {base}-bench",
        "discovery:", "  mdns: false", "  devices:",
    ]
    for d in sim.devices:
        lines.append(f"    - {{host: {HOST}, port: {d['port']}, name: \"{d['name']}\", id: \"{d['id']}\", "
                     f"topic: {d['topic']}}}")
    lines += [f"state_dir: {state_dir}", "log:", "  level: warning"]
    if web_port:
        lines += ["web:", f'  listen: "{HOST}:{web_port}"']
    lines.append("")
    with open(path, "w") as f:
        f.write("\n".join(lines))


class Bridge:
    """A bridge under test, started against `sim` and the broker; waits until all devices are online."""

    def __init__(self, kind: str, argv_for_config, mqtt_port: int, sim: Simulator, workdir: str,
                 online_timeout: float, web_port: int | None = None, stage_trace: str | None = None):
        self.kind = kind
        self.base = "c2m" if kind == "cast2mqtt" else "peer"
        n = len(sim.devices)
        tag = f"{kind}-{n}-{int(time.time() * 1000) % 100000}"
        config = os.path.join(workdir, f"{tag}.yaml")
        state_dir = os.path.join(workdir, f"{tag}-state")
        os.makedirs(state_dir, exist_ok=True)
        write_config(config, mqtt_port, self.base, sim, state_dir, web_port)
        self.web_url = f"http://{HOST}:{web_port}/" if web_port else None
        self.watch = Watcher(mqtt_port, f"{kind}-watch")
        online: set[str] = set()

        def on_avail(topic: str, payload: bytes, t: int) -> None:
            dev = topic.split("/")[1]
            if payload == b"online":
                online.add(dev)
            else:
                online.discard(dev)

        # Clear retained availability a previous bridge left on this base topic.
        self.watch.subscribe(f"{self.base}/+/availability", on_avail)
        time.sleep(0.3)
        online.clear()
        env = dict(os.environ)
        if stage_trace:
            env["CAST2MQTT_STAGE_TRACE"] = stage_trace
        self.proc = Proc(kind, argv_for_config(config), os.path.join(workdir, f"{tag}.log"), env=env)
        ok = self.watch.wait_for(lambda: len(online) >= n or not self.proc.alive(), online_timeout)
        self.online_s = (now_ns() - self.proc.started_ns) / 1e9
        if not ok or len(online) < n:
            missing = n - len(online)
            self.stop()
            raise BenchError(f"{kind}: {missing} of {n} devices not online after {online_timeout:.0f} s:\n"
                             f"{self.proc.tail()}")
        self.watch.clear_handlers()

    def stop(self) -> None:
        self.watch.close()
        self.proc.stop(grace=20)


def topic(bridge: Bridge, dev: dict, leaf: str) -> str:
    return f"{bridge.base}/{dev['topic']}/{leaf}"


def await_response(w: Watcher, responses: dict, key: Any, timeout: float = 15) -> dict:
    if not w.wait_for(lambda: key in responses, timeout):
        raise BenchError(f"no response for command id {key!r}")
    return responses[key]


def json_or_none(payload: bytes) -> Any:
    """The JSON document in an MQTT payload, or None when it is not JSON."""
    try:
        return json.loads(payload)
    except ValueError:
        return None


def measure_command(bridge: Bridge, sim: Simulator, samples: int, warmup: int, spacing: float = 0.0) -> list[float]:
    dev = sim.devices[0]
    responses: dict[Any, dict] = {}

    def on_resp(t: str, p: bytes, ts: int) -> None:
        doc = json_or_none(p)
        if doc is None:
            return
        responses[doc.get("id")] = doc

    bridge.watch.subscribe(topic(bridge, dev, "response"), on_resp)
    sim.http("DELETE", f"/devices/{dev['id']}/received")
    sent: list[int] = []
    for i in range(samples + warmup):
        if spacing:
            time.sleep(spacing)
        percent = 30 if i % 2 == 0 else 40
        t0 = now_ns()
        bridge.watch.client.publish(topic(bridge, dev, "command/volume"),
                                    json.dumps({"percent": percent, "id": i}), qos=1)
        sent.append(t0)
        resp = await_response(bridge.watch, responses, i)
        if resp.get("status") != "ok":
            raise BenchError(f"volume command {i}: {resp}")
    bridge.watch.clear_handlers()
    got = sim.http("GET", f"/devices/{dev['id']}/received?namespace={RECEIVER_NS}&type=SET_VOLUME", timeout=30)
    if len(got) != len(sent):
        raise BenchError(f"command: {len(sent)} published, the device has {len(got)} SET_VOLUME")
    return [(m["monotonic_ns"] - t0) / 1e6 for m, t0 in zip(got[warmup:], sent[warmup:])]


def measure_status(bridge: Bridge, sim: Simulator, samples: int, warmup: int, spacing: float = 0.0) -> list[float]:
    dev = sim.devices[1 % len(sim.devices)]
    responses: dict[Any, dict] = {}
    seen: dict[str, int] = {}

    def on_msg(t: str, p: bytes, ts: int) -> None:
        doc = json_or_none(p)
        if doc is None:
            return
        if t.endswith("/response"):
            responses[doc.get("id")] = doc
        elif isinstance(doc, dict) and isinstance(doc.get("title"), str):
            seen.setdefault(doc["title"], ts)

    bridge.watch.subscribe(topic(bridge, dev, "response"), on_msg)
    bridge.watch.subscribe(topic(bridge, dev, "media"), on_msg)
    bridge.watch.client.publish(topic(bridge, dev, "command/load"), json.dumps(
        {"url": "http://127.0.0.1:9/bench.mp3", "content_type": "audio/mpeg", "title": "start", "id": "load"}),
        qos=1)
    resp = await_response(bridge.watch, responses, "load", timeout=30)
    if resp.get("status") != "ok":
        raise BenchError(f"load: {resp}")
    if not bridge.watch.wait_for(lambda: "start" in seen, 10):
        raise BenchError("status: the loaded media never showed up")
    lat: list[float] = []
    run = f"{bridge.kind[:1]}{os.getpid()}-"
    for i in range(samples + warmup):
        if spacing:
            time.sleep(spacing)
        title = f"{run}{i}"
        written = sim.http("POST", f"/devices/{dev['id']}/bench", {"action": "media_title", "title": title})
        if not bridge.watch.wait_for(lambda: title in seen, 10):
            raise BenchError(f"status: title {title} never reached the subscriber")
        if i >= warmup:
            lat.append((seen[title] - written["monotonic_ns"]) / 1e6)
    bridge.watch.clear_handlers()
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


def measure_idle(bridge: Bridge, settle: float, seconds: float) -> dict[str, float]:
    time.sleep(settle)
    a = proc_sample(bridge.proc.pid)
    time.sleep(seconds)
    b = proc_sample(bridge.proc.pid)
    if not bridge.proc.alive():
        raise BenchError(f"{bridge.kind} died while idle:\n{bridge.proc.tail()}")
    return {"rss": b["rss"], "threads": b["threads"], "cpu_pct": 100 * (b["cpu"] - a["cpu"]) / seconds}


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


def measure_burst(bridge: Bridge, sim: Simulator, total: int, ndev: int, timeout: float) -> dict[str, Any]:
    devs = sim.devices[:ndev]
    responses: dict[str, tuple[str, int]] = {}

    def on_resp(t: str, p: bytes, ts: int) -> None:
        doc = json_or_none(p)
        if doc is None:
            return
        rid = doc.get("id")
        if isinstance(rid, str) and rid.startswith("b") and rid not in responses:
            status = str(doc.get("status"))
            if status != "ok" and isinstance(doc.get("error"), dict):
                status = str(doc["error"].get("code"))
            responses[rid] = (status, ts)

    bridge.watch.subscribe(f"{bridge.base}/+/response", on_resp)
    sent: dict[str, int] = {}
    t_start = now_ns()
    for i in range(total):
        dev = devs[i % len(devs)]
        rid = f"b{i}"
        sent[rid] = now_ns()
        bridge.watch.client.publish(topic(bridge, dev, "command/volume"),
                                    json.dumps({"percent": 10 + i % 80, "id": rid}), qos=1)
    publish_s = (now_ns() - t_start) / 1e9
    bridge.watch.wait_for(lambda: len(responses) >= total, timeout)
    done_s = (now_ns() - t_start) / 1e9
    bridge.watch.clear_handlers()
    by_status: dict[str, int] = {}
    lat: list[float] = []
    for rid, (status, ts) in list(responses.items()):
        by_status[status] = by_status.get(status, 0) + 1
        lat.append((ts - sent[rid]) / 1e6)
    return {"sent": total, "received": len(responses), "lost": total - len(responses), "by_status": by_status,
            "lat": percentiles(lat), "publish_s": publish_s, "done_s": done_s}


# --- the run ---------------------------------------------------------------------------------

def fmt_lat(p: dict) -> str:
    if not p or not p.get("n"):
        return "-"
    return f"{p['p50']:.2f} / {p['p99']:.2f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--daemon", required=True, help="the release cast2mqtt binary")
    ap.add_argument("--sim", required=True, help="the cast-sim binary")
    ap.add_argument("--peer", help="peer_bridge.py: also run the peer the same way and print ratios")
    ap.add_argument("--only-peer", action="store_true", help="run the peer only (with --peer)")
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
    kinds = [] if args.only_peer else ["cast2mqtt"]
    if args.peer:
        kinds.append("peer")

    def argv_for(kind: str):  # noqa: ANN202
        if kind == "cast2mqtt":
            return lambda cfg: [args.daemon, "run", "--config", cfg]
        return lambda cfg: [sys.executable, args.peer, "run", "--config", cfg]

    mport = free_port()
    mconf = os.path.join(workdir, "mosquitto.conf")
    with open(mconf, "w") as f:
        f.write(f"listener {mport} {HOST}\nallow_anonymous true\nset_tcp_nodelay true\npersistence false\n"
                "max_queued_messages 0\nmax_inflight_messages 0\n")
    broker = Proc("mosquitto", ["mosquitto", "-c", mconf], os.path.join(workdir, "mosquitto.log"))
    results: dict[str, Any] = {kind: {} for kind in kinds}
    procs_to_stop: list[Any] = []
    status = 0
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection((HOST, mport), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
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
