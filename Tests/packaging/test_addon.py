"""The Home Assistant add-on (deploy/home-assistant-addon, `scripts/package addon`):

  - config.yaml, build.yaml and the repository checked against the add-on rules of Home
    Assistant's developer documentation ("Add-on configuration"), written down below;
  - the add-on image run with podman on the host's network (every address is on 127.0.0.0/8) the
    way the Supervisor starts it: SUPERVISOR_TOKEN in the environment, /data/options.json with the
    user's options, and a fake Supervisor on 127.0.0.1 that serves /services/mqtt only to that
    token. The bridge reads the broker from it and connects to a mosquitto that refuses anyone
    without that user and password; the simulated devices of the options come online (seconds
    from `podman run` printed); the password is in no log line; a wrong token is refused and
    said so in the log;
  - the web page in headless Chromium through an ingress-like proxy on 127.0.0.1 that serves it
    under /api/hassio_ingress/<token>/, adds X-Ingress-Path and connects to the bridge from
    127.0.0.2 (the ingress address the test gives the bridge, as 172.30.32.2 is in Home
    Assistant): every asset loads through the proxy, the WebSocket is live, a click reaches a
    simulated device, no console error, while a request straight to the bridge without the token
    is refused.

Environment: CAST2MQTT_ADDON_IMAGE (default: dist/ADDON_IMAGE), CAST_SIM, CHROMIUM,
CAST2MQTT_PODMAN_RUNTIME. Needs root and podman.
"""

from __future__ import annotations

import asyncio
import http.server
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

import pytest
import yaml

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
ADDON = ROOT / "deploy/home-assistant-addon"
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "Tests/homeassistant"))

from chroot import wait_until  # noqa: E402
from harness import CastSim, Process, free_port, wait_for  # noqa: E402
from test_image import Container, podman  # noqa: E402

DEVICES = [("Living Room TV", "0123456789abcdef0123456789abcdef"), ("Kitchen", "fedcba9876543210fedcba9876543210")]
SUPERVISOR_TOKEN = "supervisor-token-for-the-test-0123456789"
MQTT_USER, MQTT_PASSWORD = "addons", "Pa55-w0rd-only-the-broker-knows"
WEB_TOKEN = "web-token-for-the-test"
INGRESS_ADDRESS = "127.0.0.2"
INGRESS_PATH = "/api/hassio_ingress/Xy12_ingress-token"
CHROMIUM = os.environ.get("CHROMIUM", shutil.which("chromium") or "/usr/bin/chromium")

needs_podman = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("podman"), reason="needs root and podman")


# ---------------------------------------------------------------------------------------------
# (a) config.yaml against the add-on rules

# The rules as Home Assistant's developer documentation gives them ("Add-on configuration"):
REQUIRED = {"name": str, "version": str, "slug": str, "description": str, "arch": list}
ARCHES = {"amd64", "aarch64"}  # armhf, armv7 and i386 are no longer supported
SLUG = re.compile(r"^[a-z0-9_]+$")  # lower case, digits, underscore: it names folders and URLs
SERVICE = re.compile(r"^(mqtt|mysql):(provide|want|need)$")
STARTUP = {"initialize", "system", "services", "application", "once"}
BOOT = {"auto", "manual"}
STAGE = {"stable", "experimental", "deprecated"}
# A schema element: bool, email, url, port, match(...), list(a|b), str/password/int/float with an
# optional (min,max), device(...), each optional with a trailing "?".
ELEMENT = re.compile(r"^(?:bool|email|url|port|device(?:\(subsystem=[a-z]+\))?|match\(.*\)|list\([^()|]+(?:\|[^()|]+)*\)"
                     r"|(?:str|password)(?:\(\d*,\d*\))?|(?:int|float)(?:\(-?[\d.]*,-?[\d.]*\))?)\??$")
KNOWN_KEYS = set(REQUIRED) | {
    "url", "startup", "boot", "init", "host_network", "services", "ingress", "ingress_port", "ingress_entry",
    "ingress_stream", "panel_icon", "panel_title", "panel_admin", "watchdog", "stage", "options", "schema", "map",
    "image", "ports", "ports_description", "hassio_api", "hassio_role", "homeassistant_api", "host_dbus", "apparmor",
    "privileged", "full_access", "udev", "devices", "webui", "timeout", "discovery", "environment", "journald",
    "backup", "backup_exclude", "tmpfs", "advanced", "homeassistant", "auth_api", "audio", "video", "usb", "uart",
}


def load(path: pathlib.Path):
    with path.open() as f:
        return yaml.safe_load(f)


def check_value(value, element: str, where: str) -> None:
    """An option's default fits its schema element."""
    kind = element.rstrip("?")
    if kind == "bool":
        assert isinstance(value, bool), where
    elif kind == "port":
        assert isinstance(value, int) and 1 <= value <= 65535, where
    elif kind.startswith("int"):
        assert isinstance(value, int) and not isinstance(value, bool), where
    elif kind.startswith("float"):
        assert isinstance(value, (int, float)) and not isinstance(value, bool), where
    elif kind.startswith("list("):
        assert value in kind[5:-1].split("|"), f"{where}: {value!r} is not one of {kind}"
    else:  # str, password, email, url, match, device
        assert isinstance(value, str), where
        if value == "":
            assert element.endswith("?"), f"{where}: an empty default needs an optional ({element}?)"


def check_schema(options, schema, where: str) -> None:
    if isinstance(schema, str):
        assert ELEMENT.match(schema), f"{where}: {schema!r} is not a schema type"
        if options is not None:
            check_value(options, schema, where)
    elif isinstance(schema, list):
        assert len(schema) == 1, f"{where}: a list schema has one element"
        assert isinstance(options, list), f"{where}: the default of a list is a list"
        for n, item in enumerate(options):
            check_schema(item, schema[0], f"{where}[{n}]")
        if isinstance(schema[0], dict):
            for key, element in schema[0].items():
                assert isinstance(element, str) and ELEMENT.match(element), f"{where}[].{key}: {element!r}"
    elif isinstance(schema, dict):
        assert isinstance(options, dict), f"{where}: the default must be a mapping"
        for key, value in options.items():
            assert key in schema, f"{where}.{key}: an option without a schema entry"
            check_schema(value, schema[key], f"{where}.{key}")
        for key, element in schema.items():
            optional = isinstance(element, str) and element.endswith("?")
            assert key in options or optional, f"{where}.{key}: required by the schema but has no default"
    else:
        raise AssertionError(f"{where}: unexpected schema {schema!r}")


def test_config_yaml_follows_the_addon_rules():
    config = load(ADDON / "cast2mqtt/config.yaml")
    for key, kind in REQUIRED.items():
        assert isinstance(config.get(key), kind), f"{key} is required and a {kind.__name__}"
    assert not set(config) - KNOWN_KEYS, f"unknown keys {set(config) - KNOWN_KEYS}"
    assert SLUG.match(config["slug"]), config["slug"]
    assert config["arch"] and set(config["arch"]) <= ARCHES, config["arch"]
    assert re.match(r"^\d+\.\d+\.\d+", config["version"]), "a version the store can compare"
    assert config.get("startup", "application") in STARTUP
    assert config.get("boot", "auto") in BOOT
    assert config.get("stage", "stable") in STAGE
    assert all(isinstance(s, str) and SERVICE.match(s) for s in config.get("services", [])), config.get("services")
    assert "mqtt:need" in config["services"]
    # The image's own PID 1 (tini): no init of Docker's.
    assert config["init"] is False
    assert config["host_network"] is True, "mDNS needs the host's network"
    if config.get("ingress"):
        port = config.get("ingress_port", 8099)
        assert isinstance(port, int) and 1 <= port <= 65535
        # The port the web page listens on in the image.
        dockerfile = (ADDON / "cast2mqtt/Dockerfile").read_text()
        assert f"CAST2MQTT_WEB_LISTEN=0.0.0.0:{port}" in dockerfile
        assert str(config.get("panel_icon", "mdi:x")).startswith("mdi:")
    if "watchdog" in config:
        assert re.match(r"^(?:https?|tcp)://\[HOST\]:\[PORT:\d+\]", config["watchdog"]), config["watchdog"]
    assert isinstance(config.get("options"), dict) and isinstance(config.get("schema"), dict)
    check_schema(config["options"], config["schema"], "options")
    assert set(config["options"]) == {"log_level", "base_topic", "devices", "web_token"}
    assert config["schema"]["web_token"].startswith("password"), "the token is shown masked"


def test_build_yaml_repository_and_the_files_of_an_addon():
    config = load(ADDON / "cast2mqtt/config.yaml")
    build = load(ADDON / "cast2mqtt/build.yaml")
    assert set(build["build_from"]) == set(config["arch"]), "a base for every architecture"
    for arch, image in build["build_from"].items():
        assert f"{arch}-base-debian" in image, f"{arch}: Home Assistant's Debian base (the binary is glibc): {image}"
    dockerfile = (ADDON / "cast2mqtt/Dockerfile").read_text()
    assert re.search(r"^ARG BUILD_FROM$", dockerfile, re.M) and re.search(r"^FROM \$\{?BUILD_FROM\}?$", dockerfile, re.M)
    repository = load(ADDON / "repository.yaml")
    assert {"name", "url", "maintainer"} <= set(repository)
    for name in ("DOCS.md", "CHANGELOG.md", "translations/en.yaml"):
        assert (ADDON / "cast2mqtt" / name).is_file(), name
    translations = load(ADDON / "cast2mqtt/translations/en.yaml")["configuration"]
    assert set(translations) == set(config["options"]), "every option is named and described"
    assert all({"name", "description"} <= set(t) for t in translations.values())
    for name, size in (("icon.png", (128, 128)), ("logo.png", (250, 100))):
        data = (ADDON / "cast2mqtt" / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", f"{name} is a PNG"
        assert (int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")) == size, name


# ---------------------------------------------------------------------------------------------
# (b) the image with a fake Supervisor and a broker that wants a password

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


@needs_podman
def test_the_addon_takes_its_broker_from_the_supervisor(addon_image, workdir):
    addon = Addon(addon_image, workdir)
    try:
        wait_until(addon.online, 90, "both devices online")
        seconds = time.monotonic() - addon.container.started
        print(f"\nadd-on: {seconds:.2f} s from podman run to every device online")
        assert (("/services/mqtt", True)) in addon.supervisor.requests
        assert all(good for _, good in addon.supervisor.requests)
        logs = addon.container.logs()
        assert "MQTT broker from the Supervisor" in logs
        assert f"mqtt://127.0.0.1:{addon.broker.port}" in logs
        assert MQTT_PASSWORD not in logs and SUPERVISOR_TOKEN not in logs
        # The broker let the bridge in as that user (it refuses anyone else).
        assert re.search(rf"u'{MQTT_USER}'", addon.broker.log.read_text()), "the bridge logged in as the Supervisor's user"
        # The options: log level debug, the static devices by the names given.
        assert "debug" in logs.lower()
        # The bridge runs as uid 10001, and its copy of the options is its own.
        users = {comm.strip(): user for user, comm in addon.container.top()}
        assert users.get("cast2mqtt") == "cast2mqtt", users
        # podman stop: the bridge ends on SIGTERM (status 0, not podman's SIGKILL after 10 s).
        took = addon.container.stop()
        print(f"add-on: podman stop took {took:.2f} s")
        assert addon.container.exit_code() == 0, addon.container.logs()
        assert addon.observer.get("cast2mqtt/bridge/state") == b"offline"
    finally:
        addon.stop()


@needs_podman
def test_a_wrong_supervisor_token_is_refused_and_said(addon_image, workdir):
    addon = Addon(addon_image, workdir, token="not-the-supervisors-token")
    try:
        wait_until(lambda: "asking the Supervisor for the MQTT broker failed" in addon.container.logs(), 30,
                   "the refusal in the log")
        logs = addon.container.logs()
        assert "HTTP status 401" in logs
        assert addon.supervisor.requests and not any(good for _, good in addon.supervisor.requests)
        assert addon.observer.availability() == {}, "no broker, no devices"
        assert MQTT_PASSWORD not in logs
    finally:
        addon.stop()


# ---------------------------------------------------------------------------------------------
# (c) the web page through an ingress-like proxy

class IngressProxy:
    """Serves the bridge's page under INGRESS_PATH on 127.0.0.1, as the Supervisor's proxy does:
    the prefix is taken off, X-Ingress-Path is added, and the connection to the bridge comes from
    INGRESS_ADDRESS. One upstream connection per request (Connection: close); an upgrade is
    piped both ways, so the WebSocket passes through. Runs an asyncio loop in a thread."""

    def __init__(self, upstream_port: int):
        self.upstream_port = upstream_port
        self.requests: list[tuple[str, int]] = []
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(self.loop)
            self.server = self.loop.run_until_complete(asyncio.start_server(self.handle, "127.0.0.1", 0))
            self.port = self.server.sockets[0].getsockname()[1]
            ready.set()
            self.loop.run_forever()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        assert ready.wait(10)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{INGRESS_PATH}/"

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream_writer = None
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
            lines = head.decode("latin-1").split("\r\n")
            method, target, version = lines[0].split(" ", 2)
            if target == "/frame":
                # Home Assistant's panel: the add-on's page in a frame of the proxy's origin.
                body = f'<!doctype html><title>panel</title><iframe src="{INGRESS_PATH}/" width="900" height="700"></iframe>'.encode()
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n"
                             + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
                await writer.drain()
                return
            if not (target == INGRESS_PATH or target.startswith(INGRESS_PATH + "/")):
                writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
            path = target[len(INGRESS_PATH):] or "/"
            headers = [line for line in lines[1:] if line and not line.lower().startswith(("x-ingress-path:", "connection:"))]
            upgrade = any(line.lower().startswith("upgrade:") for line in headers)
            headers.append("Connection: Upgrade" if upgrade else "Connection: close")
            headers.append(f"X-Ingress-Path: {INGRESS_PATH}")
            upstream_reader, upstream_writer = await asyncio.open_connection(
                "127.0.0.1", self.upstream_port, local_addr=(INGRESS_ADDRESS, 0))
            upstream_writer.write(f"{method} {path} {version}\r\n".encode("latin-1")
                                  + "\r\n".join(headers).encode("latin-1") + b"\r\n\r\n")
            await upstream_writer.drain()
            status = {"code": 0}

            async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter, first: bool) -> None:
                try:
                    while data := await src.read(65536):
                        if first and status["code"] == 0:
                            m = re.match(rb"HTTP/1\.1 (\d+)", data)
                            status["code"] = int(m.group(1)) if m else -1
                        dst.write(data)
                        await dst.drain()
                except (ConnectionError, asyncio.CancelledError):
                    pass
                finally:
                    try:
                        dst.close()
                    except Exception:
                        pass

            await asyncio.wait_for(asyncio.gather(pipe(upstream_reader, writer, True), pipe(reader, upstream_writer, False)),
                                   timeout=600)
            self.requests.append((path, status["code"]))
        except (asyncio.IncompleteReadError, asyncio.TimeoutError, ConnectionError, ValueError):
            pass
        finally:
            for w in (writer, upstream_writer):
                if w is not None:
                    w.close()

    def stop(self) -> None:
        def close() -> None:
            self.server.close()
            for task in asyncio.all_tasks(self.loop):
                task.cancel()
            self.loop.stop()
        self.loop.call_soon_threadsafe(close)
        self.thread.join(10)


@needs_podman
@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs Debian's chromium")
def test_the_page_works_under_the_ingress_path(addon_image, workdir):
    from playwright.sync_api import sync_playwright

    addon = Addon(addon_image, workdir, web_token=WEB_TOKEN)
    proxy = None
    try:
        wait_until(addon.online, 90, "both devices online")
        direct = f"http://127.0.0.1:{addon.web_port}"
        wait_until(lambda: _status(f"{direct}/api/session") == 200, 30, "the page to listen")
        # Straight to the bridge: today's rules, the token is needed.
        assert _status(f"{direct}/healthz") == 401
        assert _session(f"{direct}/api/session") == {"auth_required": True, "authenticated": False}
        proxy = IngressProxy(addon.web_port)
        # Through the ingress proxy: no token.
        assert _session(proxy.url + "api/session") == {"auth_required": True, "authenticated": True}

        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            try:
                page = browser.new_page()
                errors: list[str] = []
                failed: list[str] = []
                responses: list[tuple[str, int]] = []
                sockets: list[str] = []
                page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
                page.on("pageerror", lambda e: errors.append(f"uncaught: {e}"))
                page.on("requestfailed", lambda r: failed.append(r.url))
                page.on("response", lambda r: responses.append((r.url, r.status)))
                page.on("websocket", lambda ws: sockets.append(ws.url))
                page.goto(proxy.url)
                kitchen = 'article.card[data-device="kitchen"]'
                page.wait_for_selector(f'{kitchen} [data-role="status"]', timeout=30_000)
                page.wait_for_selector('#connection[data-state="live"]', timeout=30_000)
                # Every asset and request went through the ingress path and succeeded.
                prefix = f"http://127.0.0.1:{proxy.port}{INGRESS_PATH}/"
                assert responses and all(url.startswith(prefix) for url, _ in responses), responses
                assert all(status < 400 for _, status in responses), responses
                loaded = {url[len(prefix):] for url, _ in responses}
                assert {"", "app.css", "app.js", "connection.js", "favicon.svg", "api/session"} <= loaded, loaded
                assert failed == [], failed
                assert sockets == [f"ws://127.0.0.1:{proxy.port}{INGRESS_PATH}/ws"], sockets
                # A click reaches the simulated device (the mute button: SET_VOLUME).
                device_id = DEVICES[1][1]
                before = len(addon.sim.received(device_id, "urn:x-cast:com.google.cast.receiver", "SET_VOLUME"))
                page.locator(f'{kitchen} button[data-command="mute"]').click()
                wait_until(lambda: len(addon.sim.received(device_id, "urn:x-cast:com.google.cast.receiver", "SET_VOLUME")) > before,
                           15, "SET_VOLUME from the click to reach the simulated device")
                # A page of the page (client-side route) stays under the ingress path.
                page.locator(f'{kitchen} a[data-role="name"]').click()
                page.wait_for_url(f"{prefix}device/kitchen", timeout=10_000)
                page.reload()
                page.wait_for_selector('#connection[data-state="live"]', timeout=30_000)
                page.screenshot(path=str(workdir / "ingress.png"))
                assert errors == [], errors
                # In Home Assistant's panel (a frame of the proxy's origin) the page is shown: through
                # the proxy it may be framed by that origin; straight from the bridge by nobody.
                panel = browser.new_page()
                panel.goto(f"http://127.0.0.1:{proxy.port}/frame")
                panel.frame_locator("iframe").locator('#connection[data-state="live"]').wait_for(timeout=30_000)
                with urllib.request.urlopen(proxy.url, timeout=5) as answer:
                    assert answer.headers["X-Frame-Options"] == "SAMEORIGIN"
                    assert "frame-ancestors 'self'" in answer.headers["Content-Security-Policy"]
                with urllib.request.urlopen(direct + "/api/session", timeout=5) as answer:
                    assert answer.headers["X-Frame-Options"] == "DENY"
            finally:
                browser.close()
    finally:
        if proxy:
            proxy.stop()
        addon.stop()


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return answer.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return 0


def _session(url: str):
    with urllib.request.urlopen(url, timeout=5) as answer:
        return json.loads(answer.read())
