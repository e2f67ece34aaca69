"""Fixtures for the tests on a real network (issue #20): test hosts in network namespaces on one
Linux bridge (scripts/lib/netns.sh), each simulated device in a namespace of its own on its own
address and port 8009, announced over mDNS through the root namespace's avahi-daemon with its own
address record; the broker on a host of its own; the bridge (cast2mqtt) and these tests in the
root namespace. Everything a user sees is read through MQTT by an observer that sits on the
broker's host (like Home Assistant next to the broker), so taking a device's or the broker's link
down never cuts the observer off.

Every process is stopped by its PID; the root-namespace ones are also tracked in the network's
state so `netns.sh down` stops them when this run is killed. The session's last step removes the
network and fails when anything is left (namespaces, interfaces, processes).

Environment: CAST2MQTT_BIN, CAST_SIM (built binaries), CAST2MQTT_NETNS_PREFIX / _RANGE (set by
scripts/test so its trap can remove the network whatever happens), CI=true (a missing
requirement fails instead of skipping).
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts/lib"))
sys.path.insert(0, str(ROOT / "Tests/homeassistant"))

import testnet  # noqa: E402
from harness import Process, free_port, wait_for  # noqa: E402

CAST2MQTT = os.environ.get("CAST2MQTT_BIN", str(ROOT / ".build/debug/cast2mqtt"))
CAST_SIM = os.environ.get("CAST_SIM", str(ROOT / ".build/debug/cast-sim"))

# The bridge's settings the bounds below are computed from (the contract's defaults, except a
# short reconnect backoff and MQTT keepalive so a run stays short).
HEARTBEAT_TIMEOUT = 15.0
REQUEST_TIMEOUT = 10.0
CONNECT_TIMEOUT = 10.0
RECONNECT_INITIAL = 0.5
RECONNECT_MAX = 4.0
JITTER = 1.2  # the backoff is scaled by a factor in 0.8-1.2
KEEPALIVE = 5
# Scheduling and delivery (device -> bridge -> broker -> observer) on a busy 2-core machine.
SLACK = 2.0


def need(reason: str | None) -> None:
    if reason:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason)
        pytest.skip(reason)


def report(what: str, seconds: float) -> None:
    """One line with a measured time, printed (pytest -s, or the captured output of a failure)
    and collected for the session's summary."""
    line = f"{what}: {seconds:.2f} s"
    MEASURED.append(line)
    print(f"[netns] {line}", flush=True)


MEASURED: list[str] = []


def pytest_terminal_summary(terminalreporter) -> None:  # noqa: ANN001
    if MEASURED:
        terminalreporter.section("times measured on the test network")
        for line in MEASURED:
            terminalreporter.write_line(line)


# --- the network ---------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def network():
    reason = testnet.unavailable()
    for path in (CAST2MQTT, CAST_SIM):
        if not os.access(path, os.X_OK):
            reason = reason or f"{path} is missing (scripts/test builds it)"
    if shutil.which("mosquitto") is None:
        reason = reason or "mosquitto is not installed"
    need(reason)
    net = testnet.TestNetwork()
    try:
        yield net
    finally:
        left = net.down()
        assert not left, "the test network left things behind:\n" + "\n".join(left)


@pytest.fixture(scope="session")
def workdir(tmp_path_factory) -> pathlib.Path:
    return tmp_path_factory.mktemp("netns")


@pytest.fixture(scope="session")
def avahi() -> None:
    """The root namespace's avahi-daemon (scripts/test starts one, on lo and the test bridge)."""
    ok = shutil.which("avahi-browse") is not None and subprocess.run(
        ["avahi-browse", "-a", "-t", "-p"], capture_output=True, timeout=10).returncode == 0
    need(None if ok else "no avahi-daemon answers on the system bus (scripts/test starts one)")


# --- MQTT, seen from the broker's host ------------------------------------------------------------

@dataclass
class Message:
    at: float  # time.monotonic() on arrival at the observer
    topic: str
    payload: bytes

    def json(self) -> Any:
        try:
            return json.loads(self.payload)
        except ValueError:
            return None


class Observer:
    """A paho client on the broker's host (its socket made inside that namespace), subscribed to
    everything: every message with its arrival time."""

    def __init__(self, net: testnet.TestNetwork, host: str, port: int):
        import paho.mqtt.client as mqtt

        self.cond = threading.Condition()
        self.messages: list[Message] = []
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"netns-observer-{os.getpid()}")
        self.client.on_message = self._on_message
        with net.inside(host):
            self.client.connect("127.0.0.1", port, keepalive=60)
        self.client.subscribe("#", qos=1)
        self.client.loop_start()

    def _on_message(self, _client, _userdata, message) -> None:  # noqa: ANN001
        with self.cond:
            self.messages.append(Message(time.monotonic(), message.topic, bytes(message.payload)))
            self.cond.notify_all()

    def publish(self, topic: str, payload: Any) -> None:
        data = payload if isinstance(payload, (bytes, str)) else json.dumps(payload)
        self.client.publish(topic, data, qos=1).wait_for_publish(10)

    def since(self, t: float, topic: str | None = None) -> list[Message]:
        with self.cond:
            return [m for m in self.messages if m.at >= t and (topic is None or m.topic == topic)]

    def latest(self, topic: str) -> Message | None:
        with self.cond:
            for m in reversed(self.messages):
                if m.topic == topic:
                    return m
        return None

    def wait(self, match: Callable[[Message], bool], after: float, timeout: float, what: str) -> Message:
        """The first message at or after `after` that `match`es, waiting up to `timeout` s."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for m in self.messages:
                    if m.at >= after and match(m):
                        return m
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
                self.cond.wait(min(left, 0.5))

    def wait_payload(self, topic: str, payload: bytes, after: float, timeout: float) -> float:
        return self.wait(lambda m: m.topic == topic and m.payload == payload, after, timeout,
                         f"{topic} = {payload.decode()}").at

    def close(self) -> None:
        self.client.loop_stop()
        self.client.disconnect()


@dataclass
class Broker:
    host: str
    address: str
    port: int
    process: Process


@pytest.fixture(scope="session")
def broker(network, workdir) -> Broker:
    address = network.address(0, 2)
    network.add_host("mq", address)
    conf = workdir / "mosquitto.conf"
    conf.write_text("listener 1883\nallow_anonymous true\nset_tcp_nodelay true\npersistence false\n")
    process = Process("mosquitto", network.argv("mq", ["mosquitto", "-c", str(conf)]), workdir / "mosquitto.log")

    def listening() -> bool:
        if not process.alive():
            raise AssertionError("mosquitto exited:\n" + process.output())
        with socket.socket() as s:
            s.settimeout(1)
            return s.connect_ex((address, 1883)) == 0
    wait_for(listening, 10, 0.05, "mosquitto on the broker host")
    yield Broker("mq", address, 1883, process)
    process.stop()


@pytest.fixture(scope="session")
def mqtt(network, broker) -> Observer:
    observer = Observer(network, broker.host, broker.port)
    yield observer
    observer.close()


# --- simulated devices ------------------------------------------------------------------------------

class Device:
    """One cast-sim process on a test host of its own: its devices (and groups) on the host's
    addresses, announced over mDNS, the control endpoint on the first address."""

    def __init__(self, net: testnet.TestNetwork, workdir: pathlib.Path, host: str, address: str, name: str,
                 device_id: str):
        self.net = net
        self.workdir = workdir
        self.host = host
        self.address = address
        self.name = name
        self.id = device_id
        self.topic = name.lower().replace(" ", "_")
        self.process: Process | None = None
        self.control_port = 0
        self.starts = 0

    def argv(self) -> list[str]:
        return ["--own-addresses", self.address, "--device", f"{self.name}:0:{self.id}"]

    def start(self) -> None:
        assert self.process is None or not self.process.alive(), f"{self.name} runs already"
        self.starts += 1
        out = self.workdir / f"{self.host}-{self.starts}.out"
        argv = [CAST_SIM, *self.argv(), "--control-address", self.address, "--control-port", "0", "--mdns",
                "--launch-latency-ms", "50", "--reply-latency-ms", "1", "--log-level", "info"]
        # cast-sim prints its JSON lines on stdout, its log on stderr: both into one file is
        # fine for reading the control port (the log lines are not JSON).
        self.process = Process(f"cast-sim {self.name}", ["sh", "-c", 'exec "$@" 2>>"$0"',
                                                            str(self.workdir / f"{self.host}-{self.starts}.log"),
                                                            *self.net.argv(self.host, argv)], out)

        def ready() -> bool:
            if not self.process.alive():
                raise AssertionError(f"cast-sim exited:\n{self.log()}")
            for line in out.read_text(errors="replace").splitlines():
                if line.startswith("{") and "control_port" in line:
                    self.control_port = json.loads(line)["control_port"]
                    return True
            return False
        wait_for(ready, 20, 0.05, f"cast-sim {self.name} to listen")

    def log(self) -> str:
        return "".join(p.read_text(errors="replace") for p in sorted(self.workdir.glob(f"{self.host}-*.log")))

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()

    def url(self, path: str) -> str:
        return f"http://{self.address}:{self.control_port}{path}"

    def control(self, method: str, path: str, body: Any = None) -> Any:
        import requests

        answer = requests.request(method, self.url(path), json=body, timeout=10)
        answer.raise_for_status()
        return answer.json()

    def fault(self, body: dict[str, Any]) -> None:
        answer = self.control("POST", f"/devices/{self.id}/fault", body)
        assert answer.get("ok"), answer

    def volume(self) -> float:
        state = self.control("GET", f"/devices/{self.id}/state")
        return float(state["receiverStatus"]["volume"]["level"])


DEVICES = {
    # host: (last octet, name, id)
    "d0": (10, "Net Other", "6e657400000000000000000000000010"),
    "d1": (11, "Net Link", "6e657400000000000000000000000011"),
    "d2": (12, "Net Reboot", "6e657400000000000000000000000012"),
    "d3": (13, "Net Cycle", "6e657400000000000000000000000013"),
    "d4": (14, "Net Move", "6e657400000000000000000000000014"),
    "d5": (15, "Net Gone", "6e657400000000000000000000000015"),
    "d6": (16, "Net Lossy", "6e657400000000000000000000000016"),
}
GROUP_HOST = "grp"
GROUP_MEMBERS = [(31, "Net Den", "6e657400000000000000000000000031"),
                 (32, "Net Hall", "6e657400000000000000000000000032")]
GROUP_NAME = "Net Group"
GROUP_PORT = 32190


class GroupHost(Device):
    """Two speakers on two addresses of one host and a group of them (one cast-sim process: a
    leader move needs both addresses in one simulator)."""

    def __init__(self, net: testnet.TestNetwork, workdir: pathlib.Path):
        members = [(net.address(0, octet), name, device_id) for octet, name, device_id in GROUP_MEMBERS]
        super().__init__(net, workdir, GROUP_HOST, members[0][0], members[0][1], members[0][2])
        self.members = members
        self.config = workdir / "group.yaml"
        lines = ["devices:"]
        lines += [f"  - {{name: {name}, address: {address}, cast_type: audio, id: {device_id}}}"
                  for address, name, device_id in members]
        lines += ["groups:", f"  - {{name: {GROUP_NAME}, members: [{', '.join(n for _, n, _ in members)}], "
                  f"port: {GROUP_PORT}}}", ""]
        self.config.write_text("\n".join(lines))

    def argv(self) -> list[str]:
        return ["--config", str(self.config)]

    def group(self) -> dict[str, Any]:
        groups = self.control("GET", "/groups")
        return next(g for g in groups if g["name"] == GROUP_NAME)


@pytest.fixture(scope="session")
def devices(network, workdir, avahi) -> dict[str, Device]:
    made: dict[str, Device] = {}
    try:
        for host, (octet, name, device_id) in DEVICES.items():
            address = network.address(0, octet)
            network.add_host(host, address)
            made[host] = Device(network, workdir, host, address, name, device_id)
            made[host].start()
        network.add_host(GROUP_HOST, *(network.address(0, octet) for octet, _, _ in GROUP_MEMBERS))
        made[GROUP_HOST] = GroupHost(network, workdir)
        made[GROUP_HOST].start()
        yield made
    finally:
        for device in made.values():
            device.stop()


# --- the bridge -----------------------------------------------------------------------------------

class Bridge:
    """cast2mqtt in the root namespace, discovering over mDNS only the devices it is given."""

    def __init__(self, net: testnet.TestNetwork, workdir: pathlib.Path, broker: Broker, name: str, base: str,
                 include: list[str], reconnect: tuple[float, float] = (RECONNECT_INITIAL, RECONNECT_MAX)):
        self.net = net
        self.base = base
        self.directory = workdir / name
        self.directory.mkdir(exist_ok=True)
        self.web_port = free_port()
        config = {
            "mqtt": {"url": f"mqtt://{broker.address}:{broker.port}", "base_topic": base,
                     "client_id": f"netns-{name}-{os.getpid()}", "keepalive": KEEPALIVE},
            "discovery": {"mdns": True, "include": include},
            "cast": {"heartbeat_interval": 5, "heartbeat_timeout": HEARTBEAT_TIMEOUT,
                     "request_timeout": REQUEST_TIMEOUT,
                     "reconnect": {"initial": reconnect[0], "max": reconnect[1]}},
            "homeassistant": {"enabled": False},
            "state_dir": str(self.directory / "state"),
            "log": {"level": "debug"},
            "web": {"listen": f"127.0.0.1:{self.web_port}"},
        }
        self.config_path = self.directory / "cast2mqtt.yaml"
        self.config_path.write_text(json.dumps(config, indent=1) + "\n")  # JSON is YAML
        self.log_path = self.directory / "cast2mqtt.log"
        self.process = Process(f"cast2mqtt {name}", [CAST2MQTT, "run", "--config", str(self.config_path)],
                               self.log_path)
        net.track(self.process.pid)

    def topic(self, device: Device | str, leaf: str) -> str:
        name = device if isinstance(device, str) else device.topic
        return f"{self.base}/{name}/{leaf}"

    def health(self) -> dict[str, Any]:
        import requests

        answer = requests.get(f"http://127.0.0.1:{self.web_port}/healthz", timeout=5)
        return answer.json()

    def output(self) -> str:
        return self.process.output()

    def stop(self) -> None:
        code = self.process.stop()
        assert code == 0, f"the bridge exited with {code}:\n{self.output()[-3000:]}"


def established(address: str, port: int) -> int:
    """TCP connections from this (root) namespace to address:port that are ESTABLISHED."""
    result = subprocess.run(["ss", "-Htn", "state", "established", "dst", f"{address}:{port}"],
                            capture_output=True, text=True, timeout=10)
    return len([line for line in result.stdout.splitlines() if line.strip()])


def open_sockets(pid: int) -> int:
    """The process's descriptors that are sockets."""
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            count += os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
        except OSError:
            pass  # closed meanwhile
    return count


@pytest.fixture(scope="session")
def bridge(network, workdir, broker, mqtt, devices) -> Bridge:
    """The bridge for every test but the re-announcement one (which needs a long backoff)."""
    ids = [d.id for host, d in devices.items() if host not in ("d2", GROUP_HOST)]
    ids += [device_id for _, _, device_id in GROUP_MEMBERS]
    started = time.monotonic()
    b = Bridge(network, workdir, broker, "main", "netA", ids + [group_id(devices)])
    topics = [d.topic for host, d in devices.items() if host not in ("d2", GROUP_HOST)]
    topics += [name.lower().replace(" ", "_") for _, name, _ in GROUP_MEMBERS] + [GROUP_NAME.lower().replace(" ", "_")]
    for topic in topics:
        mqtt.wait_payload(b.topic(topic, "availability"), b"online", started, 60)
    report(f"bridge start -> all {len(topics)} devices of the main bridge online (mDNS, own addresses)",
           time.monotonic() - started)
    yield b
    b.stop()


def group_id(devices: dict[str, Device]) -> str:
    group = devices[GROUP_HOST]
    assert isinstance(group, GroupHost)
    return group.group()["id"].replace("-", "")


def mark_last_message(mqtt: Observer, bridge: Bridge, device: Device, level: float) -> float:
    """Makes the device send something now (a volume change by a remote) and returns when the
    bridge's `receiver` document showing it reached the observer: the device's last message
    before a fault is at most a few milliseconds later than this."""
    t = time.monotonic()
    device.fault({"action": "remote_volume", "level": level})
    message = mqtt.wait(lambda m: m.topic == bridge.topic(device, "receiver")
                        and abs(((m.json() or {}).get("volume") or {}).get("level", -1) - level) < 1e-6,
                        t, 10, f"{device.name}'s volume {level}")
    return message.at


def events(mqtt: Observer, bridge: Bridge, device: Device, after: float, kind: str) -> list[dict[str, Any]]:
    return [doc for m in mqtt.since(after, bridge.topic(device, "event"))
            if isinstance(doc := m.json(), dict) and doc.get("type") == kind]


def command(mqtt: Observer, bridge: Bridge, device: Device | str, name: str, payload: dict[str, Any],
            timeout: float = 30) -> tuple[dict[str, Any], float]:
    """Publishes a command with a fresh id and waits for its one response: (response, seconds)."""
    t = time.monotonic()
    command_id = payload.setdefault("id", f"{name}-{time.monotonic_ns()}")
    mqtt.publish(bridge.topic(device, f"command/{name}"), payload)
    message = mqtt.wait(lambda m: m.topic == bridge.topic(device, "response")
                        and (m.json() or {}).get("id") == command_id, t, timeout, f"the response to {command_id}")
    return message.json(), message.at - t


def responses(mqtt: Observer, bridge: Bridge, device: Device, command_id: str, after: float) -> list[dict[str, Any]]:
    return [doc for m in mqtt.since(after, bridge.topic(device, "response"))
            if isinstance(doc := m.json(), dict) and doc.get("id") == command_id]


def device_entry(mqtt: Observer, bridge: Bridge, device_id: str, address: str | None = None,
                 after: float = 0.0, timeout: float = 10) -> list[dict[str, Any]]:
    """The entries with this id in the latest bridge/devices document, once there is one that
    lists the device (at `address`, when given) at or after `after`."""
    def lists(m: Message) -> bool:
        doc = m.json()
        return (m.topic == f"{bridge.base}/bridge/devices" and isinstance(doc, list)
                and any(d.get("id") == device_id and address in (None, d.get("address")) for d in doc))
    mqtt.wait(lists, after, timeout, f"bridge/devices listing {device_id}" + (f" at {address}" if address else ""))
    latest = mqtt.latest(f"{bridge.base}/bridge/devices")
    return [d for d in (latest.json() if latest else []) or [] if d.get("id") == device_id]
