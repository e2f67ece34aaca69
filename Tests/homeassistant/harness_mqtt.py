"""The broker side of the test harness (harness.py re-exports it): mosquitto on a free port, a
TCP proxy a test can cut, and an MQTT observer that records every message."""

from __future__ import annotations

import json
import os
import pathlib
import socket
import threading
from typing import Any, Iterable


from harness_base import Process, free_port, wait_for


class Mosquitto:
    def __init__(self, workdir: pathlib.Path):
        self.port = free_port()
        self.host = "127.0.0.1"
        conf = workdir / "mosquitto.conf"
        conf.write_text(f"listener {self.port} 127.0.0.1\nallow_anonymous true\nset_tcp_nodelay true\n"
                        "persistence false\n")
        self.process = Process("mosquitto", ["mosquitto", "-c", str(conf)], workdir / "mosquitto.log")
        wait_for(self._listening, 10, 0.05, "mosquitto to listen")

    @property
    def url(self) -> str:
        return f"mqtt://127.0.0.1:{self.port}"

    def _listening(self) -> bool:
        if not self.process.alive():
            raise AssertionError("mosquitto exited:\n" + self.process.output())
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", self.port)) == 0

    def stop(self) -> None:
        self.process.stop()


class TCPProxy:
    """A TCP forwarder on 127.0.0.1 in front of a port: `cut()` closes every connection through it
    and refuses new ones (a network that fails for one client only), `restore()` accepts again
    on the same port. One thread per connection direction, stopped by closing its sockets."""

    def __init__(self, target_port: int):
        self.target_port = target_port
        self.port = free_port()
        self.lock = threading.Lock()
        self.connections: list[socket.socket] = []
        self.listener: socket.socket | None = None
        self.restore()

    def restore(self) -> None:
        with self.lock:
            if self.listener is not None:
                return
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind(("127.0.0.1", self.port))
            listener.listen(16)
            self.listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # closed by cut() or stop()
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=10)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            for sock in (client, upstream):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self.lock:
                self.connections += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        for sock in (source, sink):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self) -> None:
        with self.lock:
            listener, self.listener = self.listener, None
            connections, self.connections = self.connections, []
        if listener is not None:
            # shutdown() wakes the thread blocked in accept(); close() alone would leave the
            # socket listening until that accept() returns.
            try:
                listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            listener.close()
        for sock in connections:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()

    def stop(self) -> None:
        self.cut()


class MQTTObserver:
    """A paho client subscribed to `#`: the latest message per topic (retained ones included)."""

    def __init__(self, broker: Mosquitto, topics: Iterable[str] = ("#",)):
        import paho.mqtt.client as mqtt

        self.lock = threading.Lock()
        self.latest: dict[str, bytes] = {}
        self.count: dict[str, int] = {}
        client_id = f"ha-test-{os.getpid()}-{free_port()}"
        if hasattr(mqtt, "CallbackAPIVersion"):  # paho 2 (Home Assistant 2024.12 and later)
            self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id)
        else:  # paho 1.6 (Home Assistant 2024.11); on_message has the same signature
            self.client = mqtt.Client(client_id=client_id)
        self.client.on_message = self._on_message
        self.client.connect("127.0.0.1", broker.port, keepalive=30)
        for t in topics:
            self.client.subscribe(t, qos=1)
        self.client.loop_start()

    def _on_message(self, _client, _userdata, message) -> None:
        with self.lock:
            self.latest[message.topic] = bytes(message.payload)
            self.count[message.topic] = self.count.get(message.topic, 0) + 1

    def get(self, topic: str) -> bytes | None:
        with self.lock:
            return self.latest.get(topic)

    def json(self, topic: str) -> Any:
        payload = self.get(topic)
        return json.loads(payload) if payload else None

    def topics(self, prefix: str = "") -> dict[str, bytes]:
        with self.lock:
            return {t: p for t, p in self.latest.items() if t.startswith(prefix)}

    def publish(self, topic: str, payload: str | bytes, retain: bool = False) -> None:
        self.client.publish(topic, payload, qos=1, retain=retain).wait_for_publish(10)

    def close(self) -> None:
        self.client.loop_stop()
        self.client.disconnect()


