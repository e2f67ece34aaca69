"""Home Assistant in the test harness (harness.py re-exports it): Home Assistant Core headless on
127.0.0.1 with onboarding, the MQTT config flow, its REST and websocket APIs, and the log check."""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
import re
import signal
import time
from typing import Any, Callable, Iterable

import requests

from harness_base import CLIENT_ID, HASS, Process, free_port, wait_for
from harness_mqtt import Mosquitto


class HomeAssistant:
    """Home Assistant Core, headless on 127.0.0.1, with only what the tests need loaded."""

    def __init__(self, workdir: pathlib.Path, broker: Mosquitto, extra_config: str = "",
                 custom_components: Iterable[pathlib.Path] = (), media_files: dict[str, bytes] | None = None,
                 mqtt_port: int | None = None, hass: str | None = None):
        """`extra_config` is appended to configuration.yaml. `custom_components`: integration
        folders (`<domain>/manifest.json` ...) to load, symlinked into
        `<config>/custom_components/<folder name>` so the repository's code is what runs.
        `media_files`: files for the local media folder (`media-source://media_source/local/...`).
        `mqtt_port`: where Home Assistant's MQTT integration connects (a TCPProxy in front of the
        broker, to cut Home Assistant's connection alone); the broker's port by default. `hass`:
        the `hass` program to start (HASS by default; set `self.hass` before a restart to upgrade
        the same configuration to another version)."""
        self.hass = hass or HASS
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
        self.process = Process("hass", [self.hass, "-c", str(self.config_dir), "--skip-pip", "--log-no-color"],
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
                    # Every required field at its default (2026's broker step has a required
                    # section, `other_settings`, with required fields of its own), then ours.
                    data = form_defaults(flow.get("data_schema", []))
                    data.update({"broker": "127.0.0.1", "port": self.mqtt_port})
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


def form_defaults(fields: list[dict[str, Any]]) -> dict[str, Any]:
    """The values a user who changes nothing sends for a serialized data flow form: each required
    field's default (a section's own fields inside it); a required field without one takes
    `false` for a boolean and the first option of a select."""
    data: dict[str, Any] = {}
    for field in fields:
        name = field.get("name")
        if field.get("type") == "expandable":
            data[name] = form_defaults(field.get("schema", []))
        elif "default" in field:
            data[name] = field["default"]
        elif field.get("required"):
            selector = field.get("selector") or {}
            if "boolean" in selector:
                data[name] = False
            elif "select" in selector:
                options = (selector["select"] or {}).get("options") or []
                if options:
                    first = options[0]
                    data[name] = first["value"] if isinstance(first, dict) else first
    return data


# A record's first line: time, level, (thread), [logger]. The time is `2025-04-01 18:30:00.123`,
# and from 2026 on with the UTC offset, `2026-12-07 18:30:00.123+00:00`.
LOG_RECORD = re.compile(r"^\d{4}-\d\d-\d\d [\d:.]+(?:[+-]\d\d:\d\d)? (\w+) \([^)]*\) \[([^\]]+)\] ")


def log_records(log: str) -> list[tuple[str, str, str]]:
    """home-assistant.log as (level, logger, text with continuation lines) records."""
    records: list[tuple[str, str, str]] = []
    for line in log.splitlines():
        match = LOG_RECORD.match(line)
        if match:
            records.append((match.group(1), match.group(2), line))
        elif records:
            level, logger, text = records[-1]
            records[-1] = (level, logger, text + "\n" + line)
    return records


def log_problems(log: str) -> list[str]:
    """Warnings and errors in home-assistant.log that mean the bridge's discovery, templates or
    payloads are wrong: anything the MQTT integration or the template engine complains about."""
    needles = ("when processing MQTT discovery message", "Template variable warning", "Template variable error",
               "Error parsing value", "Invalid discovery", "Error rendering", "has no attribute",
               "homeassistant.components.mqtt", "Invalid image URL", "Ignoring invalid option")
    levels = (" WARNING ", " ERROR ", " CRITICAL ")
    return [line for line in log.splitlines()
            if any(level in line for level in levels) and any(n in line for n in needles)]
