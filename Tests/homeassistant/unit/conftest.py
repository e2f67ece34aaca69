"""Unit tests of the integration in an in-process Home Assistant (pytest-homeassistant-custom-
component, the release built from the same Core as the venv; see scripts/lib/ha.sh), with
Home Assistant's MQTT integration on a mocked client: messages are fired at it, and what the
integration publishes is read from the mock.

Run with the Home Assistant venv's python, separately from the end-to-end tests (this plugin
replaces the event loop and blocks sockets for every test in its session):

    ~/.cache/cast2mqtt/homeassistant-2025.4.4/bin/python -m pytest -q -p no:cacheprovider Tests/homeassistant/unit
"""

from __future__ import annotations

import json
import pathlib
import sys
from typing import Any

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
# Imported now, as the namespace package of the repository's custom_components/: Home Assistant's
# loader imports `custom_components` with its test config dir first on sys.path, whose regular
# package would otherwise hide the repository's folder.
import custom_components  # noqa: E402, F401

from pytest_homeassistant_custom_component.common import MockConfigEntry, async_fire_mqtt_message  # noqa: E402

from homeassistant.core import HomeAssistant  # noqa: E402

BASE = "cast2mqtt"
TV_ID = "0123456789abcdef0123456789abcd01"
SPEAKER_ID = "0123456789abcdef0123456789abcd02"
DEVICES = [
    {"id": TV_ID, "name": "Living Room TV", "topic": "living_room_tv", "model": "Chromecast", "cast_type": "video"},
    {"id": SPEAKER_ID, "name": "Kitchen", "topic": "kitchen", "model": "Google Home", "cast_type": "audio"},
]
TV = "media_player.living_room_tv"
PLAYING = {"state": "playing", "media_session_id": 1, "content_id": "http://example.com/a.mp3",
           "supported_commands": ["pause", "seek", "volume", "mute", "queue_next", "queue_prev"]}
SPEAKER = "media_player.kitchen"


@pytest.fixture(autouse=True)
def auto_enable_custom_integrations(enable_custom_integrations):
    yield


@pytest.fixture
def expected_lingering_timers() -> bool:
    """The MQTT integration's own periodic timer outlives a test that leaves its entry loaded."""
    return True


def make_entry(base: str = BASE, minor_version: int = 2, **kwargs: Any) -> MockConfigEntry:
    return MockConfigEntry(domain="cast2mqtt", title=base, unique_id=base, data={"base_topic": base},
                           version=1, minor_version=minor_version, **kwargs)


def publish_bridge(hass: HomeAssistant, base: str = BASE, *, state: str = "off",
                   media: dict[str, Any] | None = None, receiver: dict[str, Any] | None = None) -> None:
    """What a running bridge publishes: online, two devices online, `state`, `media`. Published
    live (not retained: Home Assistant hands a retained message to a subscription only once, as a
    broker does)."""
    async_fire_mqtt_message(hass, f"{base}/bridge/state", "online")
    async_fire_mqtt_message(hass, f"{base}/bridge/devices", json.dumps(DEVICES))
    for device in DEVICES:
        topic = device["topic"]
        async_fire_mqtt_message(hass, f"{base}/{topic}/availability", "online")
        async_fire_mqtt_message(hass, f"{base}/{topic}/state", state)
        async_fire_mqtt_message(hass, f"{base}/{topic}/receiver", json.dumps(receiver or {
            "app_id": None, "volume": {"level": 0.5, "muted": False, "control_type": "attenuation", "step": 0.05}}),
            )
        async_fire_mqtt_message(hass, f"{base}/{topic}/media", json.dumps(media or {"state": state}))


@pytest.fixture
async def loaded(hass: HomeAssistant, mqtt_mock) -> MockConfigEntry:
    """One entry for the bridge under `cast2mqtt`, set up, with both devices' players, playing."""
    entry = make_entry()
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    publish_bridge(hass, state="playing", media=PLAYING)
    await hass.async_block_till_done()
    assert hass.states.get(TV) is not None
    return entry


def published(mqtt_mock, topic_suffix: str) -> list[Any]:
    """Payloads the integration published to topics ending in `topic_suffix`, oldest first."""
    return [call.args[1] for call in mqtt_mock.async_publish.call_args_list if call.args[0].endswith(topic_suffix)]


def answer(hass: HomeAssistant, mqtt_mock, topic: str = "living_room_tv", status: str = "ok",
           data: dict[str, Any] | None = None, error: dict[str, Any] | None = None) -> dict[str, Any]:
    """Answers the last JSON command published for the device; returns that command."""
    commands = [c for c in mqtt_mock.async_publish.call_args_list if f"/{topic}/command/" in c.args[0]]
    command = json.loads(commands[-1].args[1])
    response: dict[str, Any] = {"command": commands[-1].args[0].rsplit("/", 1)[1], "id": command["id"], "status": status}
    if status == "ok":
        response["data"] = data or {}
    else:
        response["error"] = error
    async_fire_mqtt_message(hass, f"{BASE}/{topic}/response", json.dumps(response))
    return command


async def until_published(mqtt_mock, topic_suffix: str, count: int = 1) -> list[Any]:
    """Lets the event loop run until `count` payloads went to `topic_suffix` (bounded)."""
    import asyncio

    for _ in range(5000):
        payloads = published(mqtt_mock, topic_suffix)
        if len(payloads) >= count:
            return payloads
        await asyncio.sleep(0)
    raise AssertionError(f"nothing published to *{topic_suffix}: {mqtt_mock.async_publish.call_args_list}")


async def refused_expires_then_sent_again(hass: HomeAssistant, mqtt_mock, task: Any) -> None:
    """A bridge from before `expires` refuses the pause `task` sent: the same command comes again
    without it, is answered, and the action succeeds."""
    await until_published(mqtt_mock, "/command/pause")
    answer(hass, mqtt_mock, status="error", error={
        "code": "invalid_payload", "message": 'unknown key "expires" for pause; it takes no keys besides "id"'})
    second = json.loads((await until_published(mqtt_mock, "/command/pause", 2))[-1])
    assert "expires" not in second
    answer(hass, mqtt_mock)
    await task


async def setup_with_platform_registration(hass: HomeAssistant, monkeypatch: pytest.MonkeyPatch,
                                           registered: dict[str, dict[str, object]] | None = None) -> None:
    """Sets the integration up as newer Home Assistant does, which registers the entity services of
    an integration's platform itself (`service.async_register_platform_entity_service`; the
    tested releases may not have it): a stand-in resolves the targets among the platform's
    entities the way Core does. `registered` collects each action's entity domain and
    `supports_response`. Then a playing bridge."""
    from homeassistant.core import HassJob, ServiceCall, ServiceResponse, SupportsResponse
    from homeassistant.helpers import config_validation as cv, service
    from homeassistant.helpers.entity_platform import DATA_DOMAIN_PLATFORM_ENTITIES

    def register(hass: HomeAssistant, service_domain: str, service_name: str, *, entity_domain: str,
                 func: object, schema: dict[object, object],
                 supports_response: SupportsResponse = SupportsResponse.NONE) -> None:
        if registered is not None:
            registered[service_name] = {"entity_domain": entity_domain, "supports_response": supports_response}

        async def handle(call: ServiceCall) -> ServiceResponse:
            entities = hass.data[DATA_DOMAIN_PLATFORM_ENTITIES][(entity_domain, service_domain)]
            return await service.entity_service_call(hass, entities, HassJob(func), call)  # type: ignore[arg-type]

        hass.services.async_register(service_domain, service_name, handle, cv.make_entity_service_schema(schema),
                                     supports_response)

    monkeypatch.setattr(service, "async_register_platform_entity_service", register, raising=False)
    entry = make_entry()
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    publish_bridge(hass, state="playing", media=PLAYING)
    await hass.async_block_till_done()
