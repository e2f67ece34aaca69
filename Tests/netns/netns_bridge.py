"""The bridge under test on the test network (conftest.py re-exports it) and the steps the tests
share: its sockets and connections, a device's last message, commands and their responses, the
events and bridge/devices it published."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import time
from typing import Any

# netns_settings first: it puts scripts/lib and Tests/homeassistant on sys.path.
from netns_settings import (CAST2MQTT, HEARTBEAT_TIMEOUT, KEEPALIVE, RECONNECT_INITIAL, RECONNECT_MAX,
                            REQUEST_TIMEOUT)
import testnet  # noqa: E402
from harness import Process, free_port  # noqa: E402
from netns_devices import GROUP_HOST, Device, GroupHost  # noqa: E402
from netns_mqtt import Broker, Message, Observer  # noqa: E402


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
