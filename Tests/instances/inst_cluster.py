"""Several cast2mqtt instances on one base topic (issue #31, contract §10), on the test network of
scripts/lib/netns.sh: the pieces the tests in this directory share.

    two segments:  seg1 (10.N.1.1-100) and seg2 (10.N.2.1-100), one cast-sim each (100 devices,
                   every device on an address of its own, Cast on 8009, eureka_info on 8008/8443)
    two brokers:   mq1 (10.N.0.2) and mq2 (10.N.0.3), mosquitto on 1883 each
    three instances in the root namespace: a sees seg1, b sees both, c sees seg2 (static device
                   lists that differ per instance: what an instance per VLAN sees)
    observers:     a paho client on each broker's host, subscribed to everything

What the tests read: the retained claims (`bridge/claims/<id>`), the instances' documents
(`bridge/instances/<id>`), each device's `info.owner` and `availability`, command responses, and
the simulator's per-device counters (`GET /devices`: open sender connections, the most at once,
the longest overlap, LAUNCHes). Every process is stopped by its PID; every wait is bounded.
"""

from __future__ import annotations

import json
import os
import pathlib
import signal
import socket
import sys
import time
from dataclasses import dataclass
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "Tests/netns"))

from netns_settings import CAST2MQTT, CAST_SIM, MEASURED, need  # noqa: E402
import testnet  # noqa: E402
from harness import Process, free_port, wait_for  # noqa: E402
from netns_mqtt import Message, Observer  # noqa: E402

__all__ = ["CAST2MQTT", "CAST_SIM", "MEASURED", "Message", "Observer", "Process", "free_port", "need", "report",
           "wait_for", "testnet"]


def report(what: str, value: float, unit: str = "s") -> None:
    """One measured line, printed and collected for the session's summary."""
    line = f"{what}: {value:.2f} s" if unit == "s" else f"{what}: {value:g} {unit}"
    MEASURED.append(line)
    print(f"[instances] {line}", flush=True)

BASE = "inst"
PER_SEGMENT = 100
SEGMENTS = (1, 2)
# Short timings so a run stays short: the MQTT keepalive and the will delay bound the SIGKILL and
# SIGSTOP cases.
KEEPALIVE = 5
WILL_DELAY = 3
# The bounds of the contract's targets (§10, issue #31) plus scheduling slack on a busy 2-core
# machine with three debug builds and 200 devices.
SIGTERM_BOUND = 5.0
SIGKILL_BOUND = WILL_DELAY + 5.0
SLACK = 5.0
# Which segments each instance reaches.
REACH = {"a": (1,), "b": (1, 2), "c": (2,)}


@dataclass(frozen=True)
class SimDevice:
    segment: int
    index: int
    address: str

    @property
    def name(self) -> str:
        return f"S{self.segment} D{self.index:03d}"

    @property
    def topic(self) -> str:
        return f"s{self.segment}_d{self.index:03d}"

    @property
    def id(self) -> str:
        return f"1257{self.segment:02x}00000000000000000000{self.index:06x}"


class Segment:
    """One cast-sim with PER_SEGMENT devices on consecutive addresses of test host seg<N>."""

    def __init__(self, net: testnet.TestNetwork, workdir: pathlib.Path, number: int):
        self.net = net
        self.number = number
        self.host = f"seg{number}"
        first = net.address(number, 1)
        net.add_host(self.host)
        net.add_addresses(self.host, first, PER_SEGMENT)
        self.devices = [SimDevice(number, i, net.address(number, i)) for i in range(1, PER_SEGMENT + 1)]
        argv = [CAST_SIM, "--own-addresses", first, "--control-address", first, "--control-port", "0",
                "--launch-latency-ms", "20", "--reply-latency-ms", "1", "--media-tick-ms", "1000",
                "--log-level", "warning"]
        argv += [arg for d in self.devices for arg in ("--device", f"{d.name}:0:{d.id}")]
        out = workdir / f"{self.host}.out"
        self.process = Process(f"cast-sim {self.host}", ["sh", "-c", 'exec "$@" 2>>"$0"', str(workdir / f"{self.host}.log"),
                                                          *net.argv(self.host, argv)], out)
        self.address = first
        self.control_port = 0

        def ready() -> bool:
            if not self.process.alive():
                raise AssertionError(f"cast-sim {self.host} exited:\n{(workdir / f'{self.host}.log').read_text()}")
            for line in out.read_text(errors="replace").splitlines():
                if line.startswith("{") and "control_port" in line:
                    self.control_port = json.loads(line)["control_port"]
                    return True
            return False
        wait_for(ready, 60, 0.1, f"cast-sim on {self.host} to listen")

    def counters(self) -> dict[str, dict[str, Any]]:
        """Every device's counters by id (one request)."""
        import requests

        answer = requests.get(f"http://{self.address}:{self.control_port}/devices", timeout=10)
        answer.raise_for_status()
        return {d["id"].replace("-", ""): d["counters"] for d in answer.json() if "counters" in d}

    def stop(self) -> None:
        self.process.stop()


class Broker:
    def __init__(self, net: testnet.TestNetwork, workdir: pathlib.Path, host: str, address: str):
        self.net = net
        self.host = host
        self.address = address
        self.url = f"mqtt://{address}:1883"
        net.add_host(host, address)
        self.conf = workdir / f"{host}.conf"
        self.conf.write_text("listener 1883\nallow_anonymous true\nset_tcp_nodelay true\npersistence false\n"
                             "max_queued_messages 0\nconnection_messages true\n")
        self.log = workdir / f"{host}.log"
        self.process: Process | None = None
        self.start()

    def start(self) -> None:
        self.process = Process(f"mosquitto {self.host}", self.net.argv(self.host, ["mosquitto", "-c", str(self.conf)]),
                               self.log)

        def listening() -> bool:
            assert self.process is not None
            if not self.process.alive():
                raise AssertionError(f"mosquitto on {self.host} exited:\n{self.process.output()}")
            with socket.socket() as s:
                s.settimeout(1)
                return s.connect_ex((self.address, 1883)) == 0
        wait_for(listening, 15, 0.05, f"mosquitto on {self.host}")

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
            self.process = None


class Instance:
    """`cast2mqtt run` with `instance: <name>` in the root namespace, reaching the segments
    REACH[name] names (static devices, no mDNS)."""

    def __init__(self, net: testnet.TestNetwork, workdir: pathlib.Path, name: str, brokers: list[Broker],
                 segments: dict[int, Segment]):
        self.net = net
        self.name = name
        self.directory = workdir / f"instance-{name}"
        self.directory.mkdir(exist_ok=True)
        self.devices = [d for n in REACH[name] for d in segments[n].devices]
        config = {
            "instance": name,
            "mqtt": {"url": [b.url for b in brokers], "base_topic": BASE, "keepalive": KEEPALIVE,
                     "will_delay": WILL_DELAY},
            "discovery": {"mdns": False, "devices": [{"host": d.address, "port": 8009, "name": d.name, "id": d.id}
                                                     for d in self.devices]},
            "cast": {"device_auth": "off", "heartbeat_interval": 5, "heartbeat_timeout": 15, "request_timeout": 10,
                     "reconnect": {"initial": 0.5, "max": 4}},
            "homeassistant": {"enabled": False},
            "state_dir": str(self.directory / "state"),
            "log": {"level": "info"},
            "web": {"enabled": False},
        }
        self.config_path = self.directory / "cast2mqtt.yaml"
        self.config_path.write_text(json.dumps(config, indent=1) + "\n")  # JSON is YAML
        self.starts = 0
        self.process: Process | None = None
        self.start()

    def start(self) -> float:
        assert self.process is None or not self.process.alive(), f"instance {self.name} runs already"
        self.starts += 1
        self.process = Process(f"cast2mqtt {self.name}", [CAST2MQTT, "run", "--config", str(self.config_path)],
                               self.directory / f"cast2mqtt-{self.starts}.log")
        self.net.track(self.process.pid)
        return time.monotonic()

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def signal(self, sig: int) -> float:
        assert self.process is not None
        os.kill(self.process.pid, sig)
        return time.monotonic()

    def wait_exit(self, timeout: float) -> int | None:
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while self.process.alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.process.proc.poll()

    def stop(self) -> int | None:
        if self.process is None:
            return None
        self.process.send_signal(signal.SIGCONT)  # a frozen instance must be able to stop
        code = self.process.stop()
        return code

    def output(self) -> str:
        return "".join(p.read_text(errors="replace") for p in sorted(self.directory.glob("cast2mqtt-*.log")))


# --- what the observer saw -------------------------------------------------------------------------

def claims(obs: Observer, after: float = 0.0) -> dict[str, dict[str, Any]]:
    """The latest claim per device id (`bridge/claims/<id>`), empty payloads removed."""
    prefix = f"{BASE}/bridge/claims/"
    out: dict[str, dict[str, Any]] = {}
    for m in obs.since(after):
        if m.topic.startswith(prefix):
            doc = m.json()
            key = m.topic[len(prefix):]
            if isinstance(doc, dict):
                out[key] = doc
            else:
                out.pop(key, None)
    return out


def claim_history(obs: Observer, device_id: str, after: float = 0.0) -> list[tuple[float, dict[str, Any]]]:
    topic = f"{BASE}/bridge/claims/{device_id}"
    return [(m.at, m.json()) for m in obs.since(after, topic) if isinstance(m.json(), dict)]


def latest_json(obs: Observer, topic: str) -> Any:
    m = obs.latest(topic)
    return m.json() if m else None


def info_owner(obs: Observer, device: SimDevice) -> str | None:
    doc = latest_json(obs, f"{BASE}/{device.topic}/info")
    return doc.get("owner") if isinstance(doc, dict) else None


def availability(obs: Observer, device: SimDevice) -> bytes | None:
    m = obs.latest(f"{BASE}/{device.topic}/availability")
    return m.payload if m else None


def all_counters(segments: dict[int, Segment]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for segment in segments.values():
        out.update(segment.counters())
    return out


def settled(obs: Observer, segments: dict[int, Segment], alive: set[str],
            why: list[str] | None = None) -> dict[str, str] | None:
    """Every device claimed by a live instance that reaches it, its `info.owner` that instance,
    `online`, and held by exactly one sender connection at the simulator: the owner by device id,
    or None while that is not so."""
    current = claims(obs)
    counters = all_counters(segments)
    owners: dict[str, str] = {}
    for segment in segments.values():
        for d in segment.devices:
            claim = current.get(d.id)
            state = (f"{d.name}: claim {claim}, info.owner {info_owner(obs, d)}, availability {availability(obs, d)!r}, "
                     f"open connections {counters.get(d.id, {}).get('openConnections')}")
            if why is not None:
                why[:] = [state]
            if not claim or claim.get("owner") not in alive:
                return None
            owner = claim["owner"]
            if d.segment not in REACH[owner]:
                raise AssertionError(f"{d.name} claimed by {owner}, which cannot reach segment {d.segment}")
            if info_owner(obs, d) != owner or availability(obs, d) != b"online":
                return None
            if counters.get(d.id, {}).get("openConnections") != 1:
                return None
            owners[d.id] = owner
    return owners


def wait_settled(obs: Observer, segments: dict[int, Segment], alive: set[str], timeout: float,
                 what: str) -> dict[str, str]:
    why: list[str] = []
    try:
        return wait_for(lambda: settled(obs, segments, alive, why), timeout, 0.25, what)
    except AssertionError as error:
        raise AssertionError(f"{error}; the first device not settled: {why[0] if why else '?'}") from None


def command(obs: Observer, device: SimDevice, name: str, payload: dict[str, Any]) -> str:
    """Publishes a command with a fresh id; returns the id."""
    command_id = payload.setdefault("id", f"{name}-{device.topic}-{time.monotonic_ns()}")
    obs.publish(f"{BASE}/{device.topic}/command/{name}", payload)
    return command_id


def responses_by_id(obs: Observer, devices: list[SimDevice], after: float) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    topics = {f"{BASE}/{d.topic}/response" for d in devices}
    for m in obs.since(after):
        if m.topic in topics and isinstance(doc := m.json(), dict) and "id" in doc:
            out.setdefault(str(doc["id"]), []).append(doc)
    return out
