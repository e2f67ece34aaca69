"""The Home Assistant add-on's tests' shared pieces: the add-on's options and tokens, a fake
Supervisor, a broker that wants a password, an observer, the add-on started the way the Supervisor
starts it, and the fixtures (imported by the test modules that use them).

What the tests check (deploy/home-assistant-addon, `scripts/package addon` run as the release
workflow runs it, Tests/packaging/release_step.py):

  - the repository walked as the Supervisor's store walks it and config.yaml against the
    Supervisor's app schema, written down in test_addon_repository.py (no image needed);
  - the image is the one the Supervisor pulls on this machine: config.yaml's `image` for its
    architecture, at the build's version, with Home Assistant's labels (test_addon_supervisor.py);
  - the add-on image run with podman on the host's network (every address is on 127.0.0.0/8) the
    way the Supervisor starts it: SUPERVISOR_TOKEN in the environment, /data/options.json with the
    user's options, and a fake Supervisor on 127.0.0.1 that serves /services/mqtt only to that
    token. The bridge reads the broker from it and connects to a mosquitto that refuses anyone
    without that user and password; the simulated devices of the options come online (seconds
    from `podman run` printed); the password is in no log line; a wrong token is refused and
    said so in the log (test_addon_supervisor.py);
  - the web page in headless Chromium through an ingress-like proxy on 127.0.0.1 that serves it
    under /api/hassio_ingress/<token>/, adds X-Ingress-Path and connects to the bridge from
    127.0.0.2 (the ingress address the test gives the bridge, as 172.30.32.2 is in Home
    Assistant): every asset loads through the proxy, the WebSocket is live, a click reaches a
    simulated device, no console error, while a request straight to the bridge without the token
    is refused (test_addon_ingress.py).

Environment: CAST2MQTT_ADDON_IMAGE (default: dist/ADDON_IMAGE), CAST_SIM, CHROMIUM,
CAST2MQTT_PODMAN_RUNTIME. Needs root and podman.
"""

from __future__ import annotations

import http.server
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import threading

import pytest


HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "Tests/homeassistant"))

from harness import CastSim, Process, free_port, wait_for  # noqa: E402
from test_image import Container, podman  # noqa: E402

DEVICES = [("Living Room TV", "0123456789abcdef0123456789abcdef"), ("Kitchen", "fedcba9876543210fedcba9876543210")]
SUPERVISOR_TOKEN = "supervisor-token-for-the-test-0123456789"
MQTT_USER, MQTT_PASSWORD = "addons", "Pa55-w0rd-only-the-broker-knows"
WEB_TOKEN = "web-token-for-the-test"
INGRESS_ADDRESS = "127.0.0.2"
INGRESS_PATH = "/api/hassio_ingress/Xy12_ingress-token"
CHROMIUM = os.environ.get("CHROMIUM", shutil.which("chromium") or "/usr/bin/chromium")

# Skipped without root or podman, except under CI (CI=true), where a missing tool is a failure.
needs_podman = pytest.mark.skipif(os.environ.get("CI") != "true" and (os.geteuid() != 0 or not shutil.which("podman")),
                                  reason="needs root and podman")


class FakeSupervisor:
    """GET /services/mqtt with the right bearer token: the broker; anything else: 401/404."""

    def __init__(self, broker_port: int):
        answer = json.dumps({"result": "ok", "data": {
            "addon": "core_mosquitto", "host": "127.0.0.1", "port": broker_port, "ssl": False,
            "protocol": "3.1.1", "username": MQTT_USER, "password": MQTT_PASSWORD}}).encode()
        self.requests: list[tuple[str, bool]] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                good = self.headers.get("Authorization") == f"Bearer {SUPERVISOR_TOKEN}"
                outer.requests.append((self.path, good))
                if not good:
                    self.reply(401, {"result": "error", "message": "Unauthorized"})
                elif self.path == "/services/mqtt":
                    self.reply(200, answer)
                else:
                    self.reply(404, {"result": "error", "message": "not found"})

            def reply(self, status: int, body) -> None:
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class PasswordBroker:
    """mosquitto on 127.0.0.1 that lets in MQTT_USER with MQTT_PASSWORD only."""

    def __init__(self, workdir: pathlib.Path):
        self.port = free_port()
        # mosquitto started as root reads its password file as the mosquitto user.
        workdir.chmod(0o755)
        passwords = workdir / "passwords"
        subprocess.run(["mosquitto_passwd", "-c", "-b", str(passwords), MQTT_USER, MQTT_PASSWORD], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)
        passwords.chmod(0o644)
        conf = workdir / "mosquitto.conf"
        conf.write_text(f"listener {self.port} 127.0.0.1\nallow_anonymous false\npassword_file {passwords}\n"
                        "set_tcp_nodelay true\npersistence false\nlog_type all\n")
        self.log = workdir / "mosquitto.log"
        self.process = Process("mosquitto", ["mosquitto", "-c", str(conf)], self.log)

        def listening() -> bool:
            import socket
            if not self.process.alive():
                raise AssertionError("mosquitto exited:\n" + self.process.output())
            with socket.socket() as s:
                return s.connect_ex(("127.0.0.1", self.port)) == 0

        wait_for(listening, 10, 0.05, "mosquitto to listen")

    def stop(self) -> None:
        self.process.stop()


class Observer:
    """A paho client with the broker's credentials, subscribed to everything."""

    def __init__(self, broker: PasswordBroker):
        import paho.mqtt.client as mqtt
        self.lock = threading.Lock()
        self.latest: dict[str, bytes] = {}
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"addon-test-{os.getpid()}")
        self.client.username_pw_set(MQTT_USER, MQTT_PASSWORD)
        self.client.on_message = self._on_message
        self.client.connect("127.0.0.1", broker.port, keepalive=30)
        self.client.subscribe("#", qos=1)
        self.client.loop_start()

    def _on_message(self, _c, _u, message) -> None:
        with self.lock:
            self.latest[message.topic] = bytes(message.payload)

    def get(self, topic: str) -> bytes | None:
        with self.lock:
            return self.latest.get(topic)

    def availability(self) -> dict[str, bytes]:
        with self.lock:
            return {t: v for t, v in self.latest.items() if t.startswith("cast2mqtt/") and t.endswith("/availability")}

    def close(self) -> None:
        self.client.loop_stop()
        self.client.disconnect()


@pytest.fixture(scope="module")
def addon_image() -> str:
    name = os.environ.get("CAST2MQTT_ADDON_IMAGE") or (ROOT / "dist/ADDON_IMAGE").read_text().strip()
    podman("image", "exists", name)
    return name


class Addon:
    """The add-on started the way the Supervisor starts it, with what it needs on 127.0.0.0/8."""

    def __init__(self, image: str, workdir: pathlib.Path, token: str = SUPERVISOR_TOKEN, web_token: str = ""):
        self.workdir = workdir
        self.broker = PasswordBroker(workdir)
        self.supervisor = FakeSupervisor(self.broker.port)
        self.sim = CastSim(workdir, DEVICES)
        self.observer = Observer(self.broker)
        self.data = workdir / "data"
        self.data.mkdir()
        options = {"log_level": "debug", "base_topic": "cast2mqtt", "web_token": web_token,
                   "devices": [{"host": d["host"], "port": d["port"], "name": d["name"]} for d in self.sim.static_devices()]}
        (self.data / "options.json").write_text(json.dumps(options))
        (self.data / "options.json").chmod(0o600)  # for root only, as the Supervisor writes it
        self.web_port = free_port()
        self.container: Container | None = None
        args = ["--network", "host", "-v", f"{self.data}:/data",
                "-e", f"SUPERVISOR_TOKEN={token}", "-e", f"CAST2MQTT_SUPERVISOR_URL={self.supervisor.url}",
                "-e", f"CAST2MQTT_WEB_LISTEN=127.0.0.1:{self.web_port}",
                "-e", f"CAST2MQTT_WEB_INGRESS_ADDRESS={INGRESS_ADDRESS}",
                "-e", f"CAST2MQTT_MQTT_CLIENT_ID=cast2mqtt-addon-{os.getpid()}",
                # On the host's network an avahi-daemon would announce on the machine's real
                # interfaces: the test's devices are static.
                "-e", "CAST2MQTT_DISCOVERY_MDNS=false"]
        self.container = Container(image, f"cast2mqtt-addon-test-{os.getpid()}", args)

    def online(self) -> bool:
        assert self.container and self.container.running(), "the add-on exited:\n" + (self.container.logs() if self.container else "")
        states = self.observer.availability()
        return len(states) == len(DEVICES) and all(v == b"online" for v in states.values())

    def stop(self) -> None:
        try:
            if self.container:
                print(self.container.logs()[-3000:])
                self.container.remove()
        finally:
            self.observer.close()
            self.sim.stop()
            self.supervisor.stop()
            self.broker.stop()


@pytest.fixture()
def workdir():
    with tempfile.TemporaryDirectory(prefix="cast2mqtt-addon-test-") as d:
        yield pathlib.Path(d)
