"""The device side of the test harness (harness.py re-exports it): cast-sim, the bridge under
test, and a tiny file server."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import threading
from typing import Any

import requests

from harness_base import CAST2MQTT, CAST_SIM, Process, wait_for
from harness_mqtt import Mosquitto


# The two devices of the end-to-end tests (name, 32-hex id).
LIVING_ROOM = ("Living Room TV", "0123456789abcdef0123456789abcd01")
KITCHEN = ("Kitchen", "0123456789abcdef0123456789abcd02")


class CastSim:
    """`cast-sim` with the given devices (name, 32-hex id) on free ports and a control endpoint."""

    def __init__(self, workdir: pathlib.Path, devices: list[tuple[str, str]], extra: list[str] | None = None,
                 expected: int | None = None):
        """`expected`: how many devices to wait for when `extra` adds some (`--config`)."""
        argv = [CAST_SIM, "--control-port", "0", "--launch-latency-ms", "50", "--reply-latency-ms", "1"]
        for name, device_id in devices:
            argv += ["--device", f"{name}:0:{device_id}"]
        argv += extra or []
        self.stdout_path = workdir / "cast-sim.out"
        self._out = open(self.stdout_path, "wb")
        self.proc = subprocess.Popen(argv, stdout=self._out, stderr=open(workdir / "cast-sim.log", "wb"),
                                     stdin=subprocess.DEVNULL)
        self.devices: list[dict[str, Any]] = []
        self.control_port = 0

        def ready() -> bool:
            if self.proc.poll() is not None:
                raise AssertionError("cast-sim exited: " + (workdir / "cast-sim.log").read_text(errors="replace"))
            lines = [json.loads(line) for line in self.stdout_path.read_text().splitlines() if line.strip()]
            self.devices = [line for line in lines if "id" in line]
            ports = [line["control_port"] for line in lines if "control_port" in line]
            if ports:
                self.control_port = ports[0]
            return bool(ports) and len(self.devices) == (len(devices) if expected is None else expected)

        wait_for(ready, 20, 0.05, "cast-sim to listen")

    def static_devices(self) -> list[dict[str, Any]]:
        return [{"host": "127.0.0.1", "port": d["port"], "name": d["name"], "id": d["id"]} for d in self.devices]

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.control_port}{path}"

    def state(self, device_id: str) -> dict[str, Any]:
        return requests.get(self.url(f"/devices/{device_id}/state"), timeout=10).json()

    def received(self, device_id: str, namespace: str | None = None, type: str | None = None) -> list[dict[str, Any]]:
        params = {k: v for k, v in (("namespace", namespace), ("type", type)) if v}
        return requests.get(self.url(f"/devices/{device_id}/received"), params=params, timeout=10).json()

    def fault(self, device_id: str, body: dict[str, Any]) -> dict[str, Any]:
        return requests.post(self.url(f"/devices/{device_id}/fault"), json=body, timeout=10).json()

    def forget_received(self, device_id: str) -> None:
        requests.delete(self.url(f"/devices/{device_id}/received"), timeout=10).raise_for_status()

    def reset(self, device_id: str, volume: float = 0.5) -> None:
        """Back to a fresh device: no fault, no app (a reboot: every connection and session is
        dropped, so senders reconnect), volume `volume` unmuted, nothing recorded."""
        for body in ({"action": "behave"}, {"action": "resume"}, {"action": "reply_latency", "ms": None},
                     {"action": "volume_after_reply", "level": None}, {"action": "pings_only", "enabled": False},
                     {"action": "swallow_first", "count": 0}, {"action": "restart", "refuse_seconds": 0},
                     {"action": "remote_volume", "level": volume, "muted": False}):
            answer = self.fault(device_id, body)
            assert answer.get("ok"), f"cast-sim {body}: {answer}"
        self.forget_received(device_id)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self._out.close()


def yaml_value(value: Any) -> str:
    return json.dumps(value)  # JSON is YAML


class Bridge:
    """The cast2mqtt daemon with static devices and its own state_dir; restartable."""

    def __init__(self, workdir: pathlib.Path, broker: Mosquitto, devices: list[dict[str, Any]],
                 homeassistant: dict[str, Any] | None = None, exclude: list[str] | None = None,
                 base_topic: str = "cast2mqtt"):
        self.workdir = workdir
        self.broker = broker
        self.devices = devices
        self.homeassistant = homeassistant or {}
        self.exclude = exclude or []
        self.base_topic = base_topic
        self.state_dir = workdir / "bridge-state"
        self.config_path = workdir / "cast2mqtt.yaml"
        self.process: Process | None = None
        self.starts = 0

    def write_config(self) -> None:
        lines = [
            "mqtt:",
            f"  url: {yaml_value(self.broker.url)}",
            f"  base_topic: {yaml_value(self.base_topic)}",
            f"  client_id: {yaml_value('cast2mqtt-ha-test')}",
            "discovery:",
            "  mdns: false",
            "  devices:",
        ]
        lines += [f"    - {json.dumps(d)}" for d in self.devices]
        lines.append(f"  exclude: {json.dumps(self.exclude)}")
        lines += ["cast:", "  reconnect: {initial: 0.2, max: 2}"]
        if self.homeassistant:
            lines.append("homeassistant:")
            lines += [f"  {k}: {yaml_value(v)}" for k, v in self.homeassistant.items()]
        lines += [f"state_dir: {yaml_value(str(self.state_dir))}", "log:", "  level: debug"]
        self.config_path.write_text("\n".join(lines) + "\n")

    def start(self) -> None:
        assert self.process is None or not self.process.alive(), "the bridge is already running"
        self.write_config()
        self.starts += 1
        self.process = Process("cast2mqtt", [CAST2MQTT, "run", "--config", str(self.config_path)],
                               self.workdir / f"cast2mqtt-{self.starts}.log")

    def stop(self, sig: int = signal.SIGTERM) -> int | None:
        if self.process is None:
            return None
        code = self.process.stop(sig)
        return code

    def output(self) -> str:
        return "".join((self.workdir / f"cast2mqtt-{n}.log").read_text(errors="replace")
                       for n in range(1, self.starts + 1) if (self.workdir / f"cast2mqtt-{n}.log").exists())



class FileServer:
    """A tiny HTTP server on 127.0.0.1 (a free port, its own thread) that serves `files`:
    path -> (content type, body); anything else is 404. Records the paths it was asked for."""

    def __init__(self, files: dict[str, tuple[str, bytes]]):
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.files = files
        self.requested: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                path = self.path.split("?", 1)[0]
                server.requested.append(path)
                if path not in server.files:
                    self.send_error(404)
                    return
                content_type, body = server.files[path]
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="file-server", daemon=True)
        self.thread.start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(10)
