"""Fixtures for the web page's tests: one broker, one cast-sim with five devices, a small HTTP
server for artwork, the bridge with its page on a free loopback port, and headless Chromium
(Debian's package, driven by Playwright) with every console error collected.

The broker, cast-sim and the bridge come from Tests/homeassistant/harness.py. Every process is
stopped by its PID; every wait has a deadline. Without chromium, the built binaries or mosquitto
the tests are skipped, and under CI=true they fail.

CAST2MQTT_SCREENSHOTS=DIR copies the screenshots the tests take into DIR (docs/images).
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import pathlib
import shutil
import sys
import threading

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "Tests/homeassistant"))

import harness  # noqa: E402
from harness import Bridge, CastSim, Mosquitto, MQTTObserver, free_port, need, wait_for  # noqa: E402

CHROMIUM = os.environ.get("CHROMIUM", shutil.which("chromium") or "/usr/bin/chromium")

DEVICES = [
    ("Living Room TV", "0123456789abcdef0123456789abcd11"),
    ("Kitchen", "0123456789abcdef0123456789abcd12"),
    ("Bedroom Speaker", "0123456789abcdef0123456789abcd13"),
    ("Office Display", "0123456789abcdef0123456789abcd14"),
    ("Garden Speaker", "0123456789abcdef0123456789abcd15"),
]
ID = {name: device_id for name, device_id in DEVICES}


def _missing() -> str | None:
    if reason := harness.missing_bridge():
        return reason
    if not os.access(CHROMIUM, os.X_OK):
        return "chromium is not installed (scripts/test installs Debian's chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install -r Tests/web/requirements.txt)"
    return None


@pytest.fixture(scope="session")
def requirements() -> None:
    need(_missing())


@pytest.fixture(scope="session")
def workdir(tmp_path_factory) -> pathlib.Path:
    return tmp_path_factory.mktemp("web")


@pytest.fixture(scope="session")
def broker(requirements, workdir) -> Mosquitto:
    b = Mosquitto(workdir)
    yield b
    b.stop()


@pytest.fixture(scope="session")
def mqtt(broker) -> MQTTObserver:
    o = MQTTObserver(broker)
    yield o
    o.close()


@pytest.fixture(scope="session")
def sim(requirements, workdir) -> CastSim:
    s = CastSim(workdir, DEVICES)
    yield s
    s.stop()


ART = {
    "jazz": ("#ff7a59", "#7b2ff7", "Morning Jazz"),
    "news": ("#00b4db", "#0083b0", "Evening News"),
    "rain": ("#43cea2", "#185a9d", "Rain Sounds"),
    "film": ("#f7971e", "#ffd200", "Big Buck Bunny"),
    "blue": ("#3a1c71", "#d76d77", "Blue in Green"),
}


def artwork_svg(first: str, second: str, label: str) -> bytes:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 480 480"><defs><linearGradient id="g" x1="0" y1="0" '
            f'x2="1" y2="1"><stop offset="0" stop-color="{first}"/><stop offset="1" stop-color="{second}"/></linearGradient>'
            f'</defs><rect width="480" height="480" fill="url(#g)"/><circle cx="240" cy="210" r="110" fill="#fff" '
            f'fill-opacity=".22"/><text x="240" y="420" font-family="sans-serif" font-size="40" fill="#fff" '
            f'text-anchor="middle">{label}</text></svg>').encode()


class ArtServer:
    """Artwork for the simulated media, on 127.0.0.1 (the page loads it like a real cover)."""

    def __init__(self, directory: pathlib.Path):
        directory.mkdir(exist_ok=True)
        for name, (a, b, label) in ART.items():
            (directory / f"{name}.svg").write_bytes(artwork_svg(a, b, label))
        handler = functools.partial(_QuietHandler, directory=str(directory))
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}.svg"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="session")
def art(workdir) -> ArtServer:
    a = ArtServer(workdir / "art")
    yield a
    a.stop()


class WebBridge(Bridge):
    """The harness's bridge with a `web` section, its own client id and directory."""

    def __init__(self, workdir: pathlib.Path, broker: Mosquitto, devices, web: dict, name: str,
                 base_topic: str = "cast2mqtt", environment: dict | None = None):
        directory = workdir / name
        directory.mkdir(exist_ok=True)
        super().__init__(directory, broker, devices, base_topic=base_topic)
        self.web = web
        self.client_id = f"cast2mqtt-web-{name}"
        self.environment = environment or {}
        host, _, port = web["listen"].rpartition(":")
        self.url = f"http://{host}:{port}"

    def write_config(self) -> None:
        super().write_config()
        text = self.config_path.read_text().replace('client_id: "cast2mqtt-ha-test"', f"client_id: {json.dumps(self.client_id)}")
        text = text.replace("  level: debug", "  level: info")  # the page's log tail shows what an operator sees
        text += "web:\n" + "".join(f"  {key}: {json.dumps(value)}\n" for key, value in self.web.items())
        self.config_path.write_text(text)

    def start(self) -> None:
        saved = {key: os.environ.get(key) for key in self.environment}
        os.environ.update(self.environment)
        try:
            super().start()
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value

    def wait_listening(self, headers: dict | None = None) -> None:
        import requests

        def up() -> bool:
            if self.process is not None and not self.process.alive():
                raise AssertionError("the bridge exited:\n" + self.output()[-4000:])
            return requests.get(f"{self.url}/api/session", timeout=2, headers=headers or {}).status_code == 200
        wait_for(up, 30, 0.1, "the web page to answer")


@pytest.fixture(scope="session")
def bridge(workdir, broker, sim, mqtt) -> WebBridge:
    b = WebBridge(workdir, broker, sim.static_devices(), {"listen": f"127.0.0.1:{free_port()}"}, "loopback",
                  environment={"CAST2MQTT_TEST_HOOKS": "1"})
    b.start()
    b.wait_listening()
    wait_for(lambda: all(mqtt.get(f"cast2mqtt/{topic}/availability") == b"online" for topic in TOPICS.values()), 30, 0.1,
             "every device online")
    yield b
    code = b.stop()
    assert code == 0, f"the bridge exited with {code}:\n{b.output()[-3000:]}"


TOPICS = {name: name.lower().replace(" ", "_") for name, _ in DEVICES}


@pytest.fixture(scope="session")
def playwright_instance(requirements):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="session")
def browser(playwright_instance):
    b = playwright_instance.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
    yield b
    b.close()


class ConsoleWatch:
    """Every console error and uncaught exception of a page."""

    def __init__(self, page):
        self.errors: list[str] = []
        page.on("console", lambda m: self.errors.append(f"console.{m.type}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))


@pytest.fixture
def page(browser, bridge):
    context = browser.new_context(viewport={"width": 1360, "height": 900}, color_scheme="light")
    p = context.new_page()
    watch = ConsoleWatch(p)
    p.watch = watch
    p.base = bridge.url
    yield p
    context.close()
    assert watch.errors == [], "the page logged errors:\n" + "\n".join(watch.errors)


@pytest.fixture(scope="session")
def screenshots(workdir) -> pathlib.Path:
    directory = workdir / "screenshots"
    directory.mkdir(exist_ok=True)
    yield directory
    target = os.environ.get("CAST2MQTT_SCREENSHOTS")
    if target:
        pathlib.Path(target).mkdir(parents=True, exist_ok=True)
        for shot in directory.glob("*.png"):
            shutil.copy(shot, pathlib.Path(target) / shot.name)
