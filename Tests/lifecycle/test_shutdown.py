"""An orderly shutdown under load (issue #40): the daemon is stopped with SIGTERM 50 times while
devices flood it with statuses, commands arrive and a page is open, and each time it must exit 0
within its bound with nothing in its log that says the order was wrong — SwiftNIO's "Cannot
schedule tasks on an EventLoop that has already shut down" (a crash in a future SwiftNIO), a
crash, an error line. A SIGTERM while the bridge is still starting (before its service group
runs) is an orderly shutdown too, not the kernel's default action (exit status -15).

One broker and one cast-sim (24 devices playing) serve every round; the bridge starts fresh
each round (its own state_dir) with the web page on a free port. Load, per round: the devices
broadcast a new media title every few milliseconds (cast-sim's bench action), a thread publishes
commands, and a WebSocket client holds the page's live feed. SIGTERM comes at a random moment
between 0.2 s and 1.5 s after the bridge is online, or, every third round, while it is still
starting. Every process is stopped by its PID; every
wait has a deadline.
"""

from __future__ import annotations

import os
import pathlib
import random
import re
import signal
import socket
import sys
import threading
import time

import pytest
import requests

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "Tests/homeassistant"))

import harness  # noqa: E402
from harness import CastSim, Mosquitto, MQTTObserver, Process, free_port, missing_bridge, need, wait_for  # noqa: E402

ROUNDS = int(os.environ.get("CAST2MQTT_SHUTDOWN_ROUNDS", "50"))
DEVICES = [(f"Load {n}", f"0123456789abcdef0123456789ab{n:04x}") for n in range(24)]
# What an orderly end never logs. The first is the fault this test was written for.
FORBIDDEN = [
    re.compile(r"Cannot schedule tasks on an EventLoop that has already shut down"),
    re.compile(r"Fatal error|fatal error|Precondition failed|Assertion failed|Illegal instruction|Segmentation fault"),
    re.compile(r"^\S+ (error|critical) ", re.M),
    re.compile(r"leaked|Leaking promise|EventLoopFuture.*leak", re.I),
]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    need(missing_bridge())
    workdir = tmp_path_factory.mktemp("shutdown")
    broker = Mosquitto(workdir)
    sim = CastSim(workdir, DEVICES)
    observer = MQTTObserver(broker, topics=("cast2mqtt/+/availability",))
    yield workdir, broker, sim, observer
    observer.close()
    sim.stop()
    broker.stop()


def _config(workdir: pathlib.Path, broker: Mosquitto, sim: CastSim, port: int, round_: int) -> pathlib.Path:
    state = workdir / f"state-{round_}"
    lines = [
        "mqtt:", f"  url: {broker.url}", "  base_topic: cast2mqtt", f"  client_id: shutdown-{round_}",
        "discovery:", "  mdns: false", "  devices:",
        *[f"    - {{host: 127.0.0.1, port: {d['port']}, name: {d['name']!r}, id: {d['id']}}}" for d in sim.devices],
        "cast:", "  reconnect: {initial: 0.2, max: 2}", "  device_auth: report",
        "homeassistant:", "  enabled: true",
        "web:", "  enabled: true", f"  listen: 127.0.0.1:{port}",
        f"state_dir: {state}", "log:", "  level: info",
    ]
    path = workdir / f"cast2mqtt-{round_}.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


class Load:
    """Statuses from every device, commands from MQTT and a page's live feed, until `stop()`."""

    def __init__(self, sim: CastSim, observer: MQTTObserver, web_port: int):
        self.sim, self.observer, self.web_port = sim, observer, web_port
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self._statuses, daemon=True),
                        threading.Thread(target=self._commands, daemon=True),
                        threading.Thread(target=self._page, daemon=True)]
        for t in self.threads:
            t.start()

    def _statuses(self) -> None:
        n = 0
        session = requests.Session()
        deadline = time.monotonic() + 60
        while not self.stopping.is_set() and time.monotonic() < deadline:
            device = self.sim.devices[n % len(self.sim.devices)]
            try:
                session.post(self.sim.url(f"/devices/{device['id']}/bench"),
                             json={"action": "media_title", "title": f"title {n}"}, timeout=5)
            except requests.RequestException:
                pass
            n += 1

    def _commands(self) -> None:
        n = 0
        deadline = time.monotonic() + 60
        while not self.stopping.is_set() and time.monotonic() < deadline:
            device = self.sim.devices[n % len(self.sim.devices)]
            topic = "cast2mqtt/" + device["name"].lower().replace(" ", "_") + "/command/"
            command = ("volume", f"{20 + n % 50}") if n % 3 else ("pause" if n % 2 else "play", "")
            self.observer.publish(topic + command[0], command[1])
            n += 1
            time.sleep(0.002)

    def _page(self) -> None:
        # The page's live feed (a WebSocket, held open and read across the SIGTERM) and its
        # plain requests.
        deadline = time.monotonic() + 60
        feed = None
        try:
            feed = socket.create_connection(("127.0.0.1", self.web_port), timeout=2)
            feed.sendall((f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{self.web_port}\r\nUpgrade: websocket\r\n"
                          "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                          "Sec-WebSocket-Version: 13\r\n\r\n").encode())
            feed.settimeout(0.01)
        except OSError:
            feed = None
        while not self.stopping.is_set() and time.monotonic() < deadline:
            for path in ("/", "/api/session", "/metrics", "/healthz"):
                try:
                    requests.get(f"http://127.0.0.1:{self.web_port}{path}", timeout=2)
                except requests.RequestException:
                    pass
            if feed is not None:
                try:
                    if not feed.recv(65536):
                        feed.close()
                        feed = None
                except socket.timeout:
                    pass
                except OSError:
                    feed = None
        if feed is not None:
            feed.close()

    def stop(self) -> None:
        self.stopping.set()
        for t in self.threads:
            t.join(10)


def test_sigterm_under_load_is_orderly_every_time(setup):
    workdir, broker, sim, observer = setup
    # Every device plays something (so statuses flow and commands act).
    for device in sim.devices:
        answer = sim.fault(device["id"], {"action": "remote_load", "request": {
            "media": {"contentId": f"http://127.0.0.1:9/{device['id']}.mp3", "contentType": "audio/mpeg",
                      "streamType": "BUFFERED", "metadata": {"metadataType": 3, "title": "start"}}, "autoplay": True}})
        assert answer.get("ok"), answer
    rng = random.Random(40)
    problems: list[str] = []
    slowest = 0.0
    for round_ in range(ROUNDS):
        port = free_port()
        config = _config(workdir, broker, sim, port, round_)
        log = workdir / f"cast2mqtt-{round_}.log"
        with observer.lock:
            observer.latest.clear()
        # SWIFTNIO_STRICT: SwiftNIO's ordering errors crash instead of printing a line (with a
        # backtrace in the log), as a future SwiftNIO will do by default.
        bridge = Process("cast2mqtt", [harness.CAST2MQTT, "run", "--config", str(config)], log,
                         env={**os.environ, "SWIFTNIO_STRICT": "1", "SWIFT_BACKTRACE": "enable=yes,interactive=no"})
        load = None
        try:
            topics = ["cast2mqtt/" + d["name"].lower().replace(" ", "_") + "/availability" for d in sim.devices]
            if round_ % 3 == 2:
                # Every third round: SIGTERM while the bridge is still starting (connecting, TLS,
                # device authentication, the first statuses, the broker's first connection).
                # (From its first log line on: a signal before the program has even started is
                # the kernel's default action, not the bridge's shutdown.)
                wait_for(lambda: log.exists() and log.stat().st_size > 0, 30, 0.005, f"round {round_}: the first log line")
                load = Load(sim, observer, port)
                # The first such round at once: the window before the service group runs.
                time.sleep(0.0 if round_ == 2 else rng.uniform(0.0, 0.4))
            else:
                wait_for(lambda: all(observer.get(t) == b"online" for t in topics), 30, 0.05,
                         f"round {round_}: every device online")
                load = Load(sim, observer, port)
                time.sleep(rng.uniform(0.2, 1.5))  # a random moment under load, not a wait for a fact
            started = time.monotonic()
            code = bridge.stop(signal.SIGTERM, timeout=30)
            slowest = max(slowest, time.monotonic() - started)
        finally:
            if load:
                load.stop()
            if bridge.alive():
                bridge.stop(signal.SIGKILL)
        output = log.read_text(errors="replace")
        if code != 0:
            problems.append(f"round {round_}: exit code {code}")
        for pattern in FORBIDDEN:
            for match in pattern.finditer(output):
                line = output[output.rfind("\n", 0, match.start()) + 1:output.find("\n", match.end())]
                problems.append(f"round {round_}: {line.strip()[:300]}")
        if "shutting down" not in output:
            problems.append(f"round {round_}: no 'shutting down' line")
    print(f"\n{ROUNDS} SIGTERMs under load; slowest exit {slowest:.2f} s")
    assert not problems, "\n".join(problems[:40])
