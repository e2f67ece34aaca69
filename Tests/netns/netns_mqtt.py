"""MQTT on the test network, seen from the broker's host (conftest.py re-exports it): the
messages an observer recorded, the observer, the broker."""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

import netns_settings  # noqa: F401 - first: it puts scripts/lib and Tests/homeassistant on sys.path
import testnet  # noqa: E402
from harness import Process  # noqa: E402


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
