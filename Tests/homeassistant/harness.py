"""A real Home Assistant against the real bridge: reusable pieces for tests.

Every process runs on 127.0.0.1 on a free port and is stopped by its PID. Every wait is bounded
in time. Nothing here asserts timings.

    broker = Mosquitto(workdir)                      # mosquitto, set_tcp_nodelay
    sim = CastSim(workdir, [("Living Room TV", ID1), ("Kitchen", ID2)])
    bridge = Bridge(workdir, broker, sim.static_devices())
    ha = HomeAssistant(workdir, broker)              # hass -c <dir>, onboarding, MQTT config flow
    ha.start(); ha.setup()                           # setup() once per config dir
    ha.states()  /  ha.state("sensor.kitchen_state")  /  ha.call("button", "press", entity_id=...)
    ha.ws({"type": "config/entity_registry/list"})

Environment: CAST2MQTT_BIN (default .build/debug/cast2mqtt), CAST_SIM (default
.build/debug/cast-sim), HA_VENV (default ~/.cache/cast2mqtt/homeassistant-2025.4.4; see scripts/lib/ha.sh).
"""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Any, Callable, Iterable

import requests

ROOT = pathlib.Path(__file__).resolve().parents[2]
CAST2MQTT = os.environ.get("CAST2MQTT_BIN", str(ROOT / ".build/debug/cast2mqtt"))
CAST_SIM = os.environ.get("CAST_SIM", str(ROOT / ".build/debug/cast-sim"))
HA_VENV = pathlib.Path(os.environ.get("HA_VENV", str(pathlib.Path(
    os.environ.get("CAST2MQTT_CACHE", str(pathlib.Path.home() / ".cache/cast2mqtt"))) / "homeassistant-2025.4.4")))
HASS = os.environ.get("HASS_BIN", str(HA_VENV / "bin/hass"))

CLIENT_ID = "http://127.0.0.1/"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate: Callable[[], Any], timeout: float = 30, interval: float = 0.2, what: str = "condition") -> Any:
    """Polls `predicate` until it returns something truthy (returned) or `timeout` seconds pass
    (AssertionError naming `what`). Exceptions from the predicate count as "not yet"."""
    deadline = time.monotonic() + timeout
    last_error: BaseException | None = None
    while True:
        try:
            value = predicate()
            if value:
                return value
        except Exception as error:  # noqa: BLE001 - "not yet"
            last_error = error
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}"
                                 + (f" (last error: {last_error!r})" if last_error else ""))
        time.sleep(interval)


class Process:
    """One child process, output to a log file, stopped by its PID."""

    def __init__(self, name: str, argv: list[str], log: pathlib.Path, env: dict[str, str] | None = None,
                 cwd: str | None = None):
        self.name = name
        self.argv = argv
        self.log_path = log
        self._log = open(log, "ab")
        self.proc = subprocess.Popen(argv, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     env=env, cwd=cwd)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def send_signal(self, sig: int) -> None:
        if self.alive():
            os.kill(self.proc.pid, sig)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20) -> int | None:
        """Sends `sig` and waits; SIGKILL after `timeout`. Returns the exit code."""
        if self.alive():
            try:
                os.kill(self.proc.pid, sig)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self._log.close()
        return self.proc.returncode

    def output(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""


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


class HomeAssistant:
    """Home Assistant Core, headless on 127.0.0.1, with only what the tests need loaded."""

    def __init__(self, workdir: pathlib.Path, broker: Mosquitto, extra_config: str = "",
                 custom_components: Iterable[pathlib.Path] = (), media_files: dict[str, bytes] | None = None,
                 mqtt_port: int | None = None):
        """`extra_config` is appended to configuration.yaml. `custom_components`: integration
        folders (`<domain>/manifest.json` ...) to load, symlinked into
        `<config>/custom_components/<folder name>` so the repository's code is what runs.
        `media_files`: files for the local media folder (`media-source://media_source/local/...`).
        `mqtt_port`: where Home Assistant's MQTT integration connects (a TCPProxy in front of the
        broker, to cut Home Assistant's connection alone); the broker's port by default."""
        self.mqtt_port = mqtt_port or broker.port
        self.config_dir = workdir / "ha-config"
        self.config_dir.mkdir(parents=True, exist_ok=True)
        self.broker = broker
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.process: Process | None = None
        self.starts = 0
        self.access_token: str | None = None
        self.refresh_token: str | None = None
        self.token_expires = 0.0
        (self.config_dir / "configuration.yaml").write_text(
            "homeassistant:\n"
            "  name: cast2mqtt test\n"
            "  latitude: 0\n  longitude: 0\n  elevation: 0\n"
            "  unit_system: metric\n  time_zone: UTC\n  country: DE\n  currency: EUR\n"
            # The URL media players get for Home Assistant's own media (media_source, TTS).
            f"  internal_url: {self.base}\n"
            # Explicit: in a container (/.dockerenv) the default would be /media.
            f"  media_dirs:\n    local: {json.dumps(str(self.config_dir / 'media'))}\n"
            "http:\n"
            "  server_host: 127.0.0.1\n"
            f"  server_port: {self.port}\n"
            "api:\n"
            "websocket_api:\n"
            "logger:\n"
            "  default: info\n"
            + extra_config)
        for folder in custom_components:
            target = self.config_dir / "custom_components" / pathlib.Path(folder).name
            target.parent.mkdir(exist_ok=True)
            if not target.is_symlink():
                target.symlink_to(pathlib.Path(folder).resolve(), target_is_directory=True)
        (self.config_dir / "media").mkdir(exist_ok=True)
        for name, content in (media_files or {}).items():
            path = self.config_dir / "media" / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)

    @property
    def log_path(self) -> pathlib.Path:
        return self.config_dir / "home-assistant.log"

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def start(self, timeout: float = 120) -> None:
        assert self.process is None or not self.process.alive(), "Home Assistant is already running"
        self.starts += 1
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)
        self.process = Process("hass", [HASS, "-c", str(self.config_dir), "--skip-pip", "--log-no-color"],
                               self.config_dir.parent / f"hass-{self.starts}.out", env=env)
        wait_for(self._up, timeout, 0.25, "Home Assistant to answer HTTP")

    def _up(self) -> bool:
        if self.process is not None and not self.process.alive():
            raise AssertionError("Home Assistant exited:\n" + self.process.output()[-4000:])
        try:
            response = requests.get(f"{self.base}/api/onboarding", timeout=2)
        except requests.RequestException:
            return False
        return response.status_code in (200, 401, 404)

    def stop(self, timeout: float = 60) -> int | None:
        if self.process is None:
            return None
        return self.process.stop(signal.SIGTERM, timeout)

    # -- authentication ------------------------------------------------------------------------

    def onboard(self) -> None:
        """Creates the owner through onboarding and logs in (first start of a config dir only)."""
        response = requests.post(f"{self.base}/api/onboarding/users", timeout=30, json={
            "client_id": CLIENT_ID, "name": "Test", "username": "test", "password": "test-password-1",
            "language": "en"})
        response.raise_for_status()
        self._token({"grant_type": "authorization_code", "code": response.json()["auth_code"], "client_id": CLIENT_ID})
        # The core_config step is left out: it sets up Google Translate TTS, weather and more,
        # which need packages the test's Home Assistant does not install.

    def _token(self, form: dict[str, str]) -> None:
        response = requests.post(f"{self.base}/auth/token", data=form, timeout=30)
        response.raise_for_status()
        body = response.json()
        self.access_token = body["access_token"]
        self.refresh_token = body.get("refresh_token", self.refresh_token)
        self.token_expires = time.monotonic() + float(body.get("expires_in", 1800)) - 60

    def headers(self) -> dict[str, str]:
        if self.access_token is None:
            raise AssertionError("not logged in: call onboard() first")
        if time.monotonic() >= self.token_expires and self.refresh_token:
            self._token({"grant_type": "refresh_token", "refresh_token": self.refresh_token, "client_id": CLIENT_ID})
        return {"Authorization": f"Bearer {self.access_token}"}

    # -- the MQTT integration ------------------------------------------------------------------

    def add_mqtt(self) -> dict[str, Any]:
        """The MQTT config flow through the REST API, pointed at the test broker."""
        flow = requests.post(f"{self.base}/api/config/config_entries/flow", headers=self.headers(), timeout=30,
                             json={"handler": "mqtt", "show_advanced_options": False}).json()
        for _ in range(5):
            if flow.get("type") == "create_entry":
                return flow
            if flow.get("type") == "menu":
                options = flow.get("menu_options") or []
                choice = "broker" if "broker" in options else options[0]
                flow = requests.post(f"{self.base}/api/config/config_entries/flow/{flow['flow_id']}",
                                     headers=self.headers(), json={"next_step_id": choice}, timeout=30).json()
                continue
            if flow.get("type") == "form":
                names = {field["name"] for field in flow.get("data_schema", [])}
                data: dict[str, Any] = {}
                if "broker" in names:
                    data = {"broker": "127.0.0.1", "port": self.mqtt_port}
                flow = requests.post(f"{self.base}/api/config/config_entries/flow/{flow['flow_id']}",
                                     headers=self.headers(), json=data, timeout=30).json()
                continue
            raise AssertionError(f"unexpected MQTT config flow step: {flow}")
        raise AssertionError(f"the MQTT config flow did not finish: {flow}")

    def setup(self) -> None:
        """First start of a fresh config dir: onboarding, then the MQTT integration."""
        self.onboard()
        entry = self.add_mqtt()
        assert entry.get("type") == "create_entry", entry

    def login(self) -> None:
        """After a restart: a fresh access token from the refresh token."""
        assert self.refresh_token, "no refresh token: call setup() on the first start"
        self._token({"grant_type": "refresh_token", "refresh_token": self.refresh_token, "client_id": CLIENT_ID})

    # -- REST ------------------------------------------------------------------------------------

    def get(self, path: str) -> Any:
        response = requests.get(f"{self.base}{path}", headers=self.headers(), timeout=30)
        response.raise_for_status()
        return response.json()

    def states(self) -> dict[str, dict[str, Any]]:
        return {s["entity_id"]: s for s in self.get("/api/states")}

    def state(self, entity_id: str) -> dict[str, Any] | None:
        response = requests.get(f"{self.base}/api/states/{entity_id}", headers=self.headers(), timeout=30)
        if response.status_code == 404:
            return None
        response.raise_for_status()
        return response.json()

    def call(self, domain: str, service: str, **data: Any) -> Any:
        response = requests.post(f"{self.base}/api/services/{domain}/{service}", headers=self.headers(),
                                 json=data, timeout=30)
        if response.status_code >= 400:
            raise AssertionError(f"{domain}.{service} {data}: HTTP {response.status_code} {response.text}")
        return response.json()

    def wait_state(self, entity_id: str, expected: str | Callable[[dict[str, Any]], bool], timeout: float = 30) -> dict[str, Any]:
        def check() -> dict[str, Any] | None:
            s = self.state(entity_id)
            if s is None:
                return None
            ok = expected(s) if callable(expected) else s["state"] == expected
            return s if ok else None
        try:
            return wait_for(check, timeout, 0.2, f"{entity_id} to be {expected!r}")
        except AssertionError as error:
            raise AssertionError(f"{error}; it is {self.state(entity_id)}") from None

    # -- websocket -------------------------------------------------------------------------------

    def ws(self, *messages: dict[str, Any], timeout: float = 30) -> list[Any]:
        """Sends each command over one authenticated websocket; returns each one's `result`."""
        return asyncio.run(self._ws(list(messages), timeout))

    async def _ws(self, messages: list[dict[str, Any]], timeout: float) -> list[Any]:
        import aiohttp

        token = self.headers()["Authorization"].split(" ", 1)[1]
        results = []
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(f"{self.base}/api/websocket", max_msg_size=0) as ws:
                assert (await ws.receive_json(timeout=timeout))["type"] == "auth_required"
                await ws.send_json({"type": "auth", "access_token": token})
                reply = await ws.receive_json(timeout=timeout)
                assert reply["type"] == "auth_ok", reply
                for number, message in enumerate(messages, start=1):
                    await ws.send_json({"id": number, **message})
                    while True:
                        reply = await ws.receive_json(timeout=timeout)
                        if reply.get("id") == number and reply.get("type") == "result":
                            break
                    if not reply.get("success"):
                        raise AssertionError(f"websocket {message}: {reply}")
                    results.append(reply.get("result"))
        return results

    def entity_registry(self) -> list[dict[str, Any]]:
        return self.ws({"type": "config/entity_registry/list"})[0]

    def device_registry(self) -> list[dict[str, Any]]:
        return self.ws({"type": "config/device_registry/list"})[0]

    def entities_of(self, identifier: str) -> set[str]:
        """Entity ids of the Home Assistant device with identifier ("mqtt", identifier)."""
        devices = [d for d in self.device_registry() if ["mqtt", identifier] in d.get("identifiers", [])]
        if not devices:
            return set()
        ids = {d["id"] for d in devices}
        return {e["entity_id"] for e in self.entity_registry() if e.get("device_id") in ids}


def log_problems(log: str) -> list[str]:
    """Warnings and errors in home-assistant.log that mean the bridge's discovery, templates or
    payloads are wrong: anything the MQTT integration or the template engine complains about."""
    needles = ("when processing MQTT discovery message", "Template variable warning", "Template variable error",
               "Error parsing value", "Invalid discovery", "Error rendering", "has no attribute",
               "homeassistant.components.mqtt", "Invalid image URL", "Ignoring invalid option")
    levels = (" WARNING ", " ERROR ", " CRITICAL ")
    return [line for line in log.splitlines()
            if any(level in line for level in levels) and any(n in line for n in needles)]


def python_ok() -> bool:
    return sys.version_info[:2] == (3, 13)


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
