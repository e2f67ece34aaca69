"""The bridge client against hostile and edge-case MQTT traffic, and its command exchange: deadlines
(relative `expires`), timeouts, commands abandoned when MQTT goes or the entry unloads, short-form
answers, the bound on commands in flight, device removal."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_fire_mqtt_message

from homeassistant.core import HomeAssistant

from custom_components.cast2mqtt import bridge_commands, bridge_state
from custom_components.cast2mqtt.bridge import Bridge
from custom_components.cast2mqtt.errors import CommandError, InvalidCommandError
from custom_components.cast2mqtt.payloads import DeviceInfoRecord
from conftest import BASE, DEVICES, TV_ID, SPEAKER_ID, published, until_published

TV_TOPIC = "living_room_tv"


def bridge_of(entry: MockConfigEntry) -> Bridge:
    bridge: Bridge = entry.runtime_data
    return bridge


def tv(bridge: Bridge) -> DeviceInfoRecord:
    device = bridge.device_by_reference(TV_ID)
    assert device is not None
    return device


def respond(hass: HomeAssistant, mqtt_mock: Any, command: str, **response: Any) -> None:
    payload = json.loads(published(mqtt_mock, f"/{TV_TOPIC}/command/{command}")[-1])
    async_fire_mqtt_message(hass, f"{BASE}/{TV_TOPIC}/response",
                            json.dumps({"command": command, "id": payload["id"], **response}))


async def test_commands_carry_a_relative_deadline_and_return_data(
        hass: HomeAssistant, mqtt_mock: Any, loaded: MockConfigEntry) -> None:
    bridge = bridge_of(loaded)
    task = hass.async_create_task(bridge.async_command(tv(bridge), "volume", {"level": 0.3}, deadline=42.5))
    body = json.loads((await until_published(mqtt_mock, "/command/volume"))[-1])
    assert body["expires"] == 42.5 and body["level"] == 0.3 and body["id"].startswith("ha-")
    respond(hass, mqtt_mock, "volume", status="ok", data={"level": 0.3})
    assert await task == {"level": 0.3}
    assert bridge.recent[-1]["status"] == "ok" and bridge.recent[-1]["command"] == "volume"
    # `data` that is not an object reads as empty.
    task = hass.async_create_task(bridge.async_command(tv(bridge), "play"))
    await until_published(mqtt_mock, "/command/play")
    respond(hass, mqtt_mock, "play", status="ok", data=[1])
    assert await task == {}


@pytest.mark.parametrize(("error", "kind", "code"), [
    ({"code": "device_offline", "message": "offline"}, InvalidCommandError, "device_offline"),
    ({"code": "load_failed", "message": "no"}, CommandError, "load_failed"),
    ("not an object", CommandError, "unknown"),
    ({"code": 5, "message": None}, CommandError, "unknown"),
    ({"code": "invalid_payload", "message": 7}, InvalidCommandError, "invalid_payload"),
])
async def test_errors_keep_the_bridge_code(hass: HomeAssistant, mqtt_mock: Any, loaded: MockConfigEntry,
                                           error: Any, kind: type[CommandError], code: str) -> None:
    bridge = bridge_of(loaded)
    task = hass.async_create_task(bridge.async_command(tv(bridge), "stop"))
    await until_published(mqtt_mock, "/command/stop")
    respond(hass, mqtt_mock, "stop", status="error", error=error)
    with pytest.raises(kind) as raised:
        await task
    assert raised.value.code == code


async def test_a_key_refused_every_time_is_given_up_after_one_retry_each(
        hass: HomeAssistant, mqtt_mock: Any, loaded: MockConfigEntry) -> None:
    bridge = bridge_of(loaded)
    task = hass.async_create_task(bridge.async_command(tv(bridge), "announce", {"url": "http://x/a.mp3", "wait": True}))
    for attempt, key in enumerate(("expires", "wait", "expires"), start=1):
        await until_published(mqtt_mock, "/command/announce", attempt)
        respond(hass, mqtt_mock, "announce", status="error",
                error={"code": "invalid_payload", "message": f'unknown key "{key}" for announce'})
    with pytest.raises(InvalidCommandError):
        await task
    assert bridge.unsupported_keys == {"expires", "wait"}


async def test_no_answer_is_a_timeout(hass: HomeAssistant, mqtt_mock: Any, loaded: MockConfigEntry,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bridge_commands, "RESPONSE_GRACE", 0.0)
    monkeypatch.setattr(bridge_commands, "COMMAND_DEADLINE", 0.05)
    bridge = bridge_of(loaded)
    with pytest.raises(CommandError) as raised:
        await bridge.async_command(tv(bridge), "pause", deadline=0.05)
    assert raised.value.translation_key == "command_timeout" and raised.value.code == "timeout"
    assert bridge.recent[-1]["status"] == "no_response"
    with pytest.raises(CommandError) as raised:
        await bridge.async_command_text(tv(bridge), "volume", "+5")
    assert raised.value.translation_key == "command_timeout"


async def test_short_form_answers_go_to_the_oldest_waiting(
        hass: HomeAssistant, mqtt_mock: Any, loaded: MockConfigEntry) -> None:
    bridge = bridge_of(loaded)
    first = hass.async_create_task(bridge.async_command_text(tv(bridge), "volume", "+5"))
    second = hass.async_create_task(bridge.async_command_text(tv(bridge), "volume", "-5"))
    await until_published(mqtt_mock, "/command/volume", 2)
    # Answers without an id: to other commands, not JSON, or for no one, change nothing.
    for payload in ("[]", "nope", json.dumps({"command": 5, "status": "ok"}), json.dumps({"id": 3})):
        async_fire_mqtt_message(hass, f"{BASE}/{TV_TOPIC}/response", payload)
    async_fire_mqtt_message(hass, f"{BASE}/{TV_TOPIC}/response",
                            json.dumps({"command": "volume", "status": "ok", "data": {"level": 0.55}}))
    assert await first == {"level": 0.55}
    assert not second.done()
    async_fire_mqtt_message(hass, f"{BASE}/{TV_TOPIC}/response",
                            json.dumps({"command": "volume", "status": "ok", "data": {"level": 0.5}}))
    assert await second == {"level": 0.5}
    assert bridge.recent[-1]["id"] is None


async def test_waiting_commands_fail_when_mqtt_goes_and_none_is_sent_while_it_is_away(
        hass: HomeAssistant, mqtt_mock: Any, loaded: MockConfigEntry) -> None:
    bridge = bridge_of(loaded)
    named = hass.async_create_task(bridge.async_command(tv(bridge), "pause"))
    unnamed = hass.async_create_task(bridge.async_command_text(tv(bridge), "volume", "+5"))
    await until_published(mqtt_mock, "/command/pause")
    await until_published(mqtt_mock, "/command/volume")
    bridge._connection_changed(True)  # no change: nothing happens
    bridge._connection_changed(False)
    for task in (named, unnamed):
        with pytest.raises(CommandError) as raised:
            await task
        assert raised.value.translation_key == "mqtt_lost"
    with pytest.raises(CommandError) as raised:
        await bridge.async_command(tv(bridge), "play")
    assert raised.value.translation_key == "mqtt_not_connected"
    bridge._connection_changed(True)
    assert bridge.mqtt_connected


async def test_commands_in_flight_are_bounded(hass: HomeAssistant, mqtt_mock: Any, loaded: MockConfigEntry,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bridge_commands, "MAX_PENDING_COMMANDS", 1)
    bridge = bridge_of(loaded)
    first = hass.async_create_task(bridge.async_command(tv(bridge), "pause"))
    await until_published(mqtt_mock, "/command/pause")
    with pytest.raises(CommandError) as raised:
        await bridge.async_command(tv(bridge), "play")
    assert raised.value.translation_key == "busy"
    # Unloading the entry abandons what still waits.
    assert await hass.config_entries.async_unload(loaded.entry_id)
    with pytest.raises(CommandError) as raised:
        await first
    assert raised.value.translation_key == "unloaded"


async def test_hostile_and_odd_messages_are_dropped(hass: HomeAssistant, mqtt_mock: Any,
                                                    loaded: MockConfigEntry) -> None:
    bridge = bridge_of(loaded)
    before = bridge.topics(TV_TOPIC)
    state, availability, receiver = before.state, before.availability, dict(before.receiver)
    for topic, payload in [
        (f"{BASE}/bridge/devices", "{}"),
        (f"{BASE}/bridge/devices", b"\xff\xfe"),
        (f"{BASE}/bridge/info", "[]"),
        (f"{BASE}/bridge/event", "not json"),
        (f"{BASE}/bridge/event", json.dumps({"type": "device_removed", "id": 5})),
        (f"{BASE}/{TV_TOPIC}/state", "dancing"),
        (f"{BASE}/{TV_TOPIC}/state", b"\xff"),
        (f"{BASE}/{TV_TOPIC}/availability", "maybe"),
        (f"{BASE}/{TV_TOPIC}/availability", b"\xff"),
        (f"{BASE}/{TV_TOPIC}/receiver", "[1, 2]"),
        (f"{BASE}/{TV_TOPIC}/members", "{}"),
        (f"{BASE}/{TV_TOPIC}/members", b"\xff"),
        (f"{BASE}/Bad-Topic/state", "idle"),
        (f"{BASE}/bridge/availability", "online"),
        (f"{BASE}/bridge/receiver", "{}"),
        (f"{BASE}/bridge/members", "[]"),
    ]:
        async_fire_mqtt_message(hass, topic, payload)
    await hass.async_block_till_done()
    after = bridge.topics(TV_TOPIC)
    assert (after.state, after.availability, after.receiver) == (state, availability, receiver)
    assert set(bridge.devices) == {TV_ID, SPEAKER_ID}
    assert "Bad-Topic" not in bridge._topics and "bridge" not in bridge._topics
    # The state and membership topics, cleared.
    async_fire_mqtt_message(hass, f"{BASE}/{TV_TOPIC}/state", "")
    async_fire_mqtt_message(hass, f"{BASE}/{TV_TOPIC}/members", "")
    await hass.async_block_till_done()
    assert bridge.topics(TV_TOPIC).state is None and bridge.topics(TV_TOPIC).members == []


async def test_topics_tracked_before_they_are_listed_are_bounded(
        hass: HomeAssistant, mqtt_mock: Any, loaded: MockConfigEntry, monkeypatch: pytest.MonkeyPatch) -> None:
    bridge = bridge_of(loaded)
    monkeypatch.setattr(bridge_state, "MAX_TRACKED_TOPICS", len(bridge._topics))
    async_fire_mqtt_message(hass, f"{BASE}/stranger/state", "idle")
    async_fire_mqtt_message(hass, f"{BASE}/stranger/receiver", "{}")
    await hass.async_block_till_done()
    assert "stranger" not in bridge._topics


async def test_a_device_goes_by_event_or_when_unlisted_and_cleared(
        hass: HomeAssistant, mqtt_mock: Any, loaded: MockConfigEntry) -> None:
    bridge = bridge_of(loaded)
    removed: list[list[str]] = []
    stop = bridge.async_listen_devices(lambda added, gone: removed.append(gone))
    # Unlisted after a restart: kept while its availability is retained.
    async_fire_mqtt_message(hass, f"{BASE}/bridge/devices", json.dumps([DEVICES[0]]))
    await hass.async_block_till_done()
    assert SPEAKER_ID in bridge.devices and bridge.listed == {TV_ID}
    async_fire_mqtt_message(hass, f"{BASE}/kitchen/availability", "")
    await hass.async_block_till_done()
    assert SPEAKER_ID not in bridge.devices and removed[-1] == [SPEAKER_ID]
    # Renamed in the list: its listeners hear it.
    heard: list[bool] = []
    bridge.async_listen_device(TV_ID, lambda: heard.append(True))
    async_fire_mqtt_message(hass, f"{BASE}/bridge/devices", json.dumps([{**DEVICES[0], "name": "Den TV"}]))
    await hass.async_block_till_done()
    assert heard and tv(bridge).name == "Den TV"
    assert bridge.device_by_reference("Den TV") == tv(bridge) and bridge.device_by_reference("nope") is None
    async_fire_mqtt_message(hass, f"{BASE}/bridge/event", json.dumps({"type": "device_removed", "id": TV_ID}))
    await hass.async_block_till_done()
    assert TV_ID not in bridge.devices and removed[-1] == [TV_ID]
    stop()
    stop()  # twice: harmless
    async_fire_mqtt_message(hass, f"{BASE}/bridge/event", json.dumps({"type": "device_removed", "id": TV_ID}))
    await hass.async_block_till_done()


async def test_listeners_can_be_removed(hass: HomeAssistant, mqtt_mock: Any, loaded: MockConfigEntry) -> None:
    bridge = bridge_of(loaded)
    heard: list[str] = []
    remove = bridge.async_listen_device(TV_ID, lambda: heard.append("tv"))
    remove()
    remove()
    async_fire_mqtt_message(hass, f"{BASE}/{TV_TOPIC}/state", "paused")
    await hass.async_block_till_done()
    assert heard == []


async def test_media_without_a_position_stamp_is_dated_on_arrival(
        hass: HomeAssistant, mqtt_mock: Any, loaded: MockConfigEntry) -> None:
    bridge = bridge_of(loaded)
    async_fire_mqtt_message(hass, f"{BASE}/{TV_TOPIC}/media", json.dumps({"state": "paused", "position": 3}))
    await hass.async_block_till_done()
    assert bridge.topics(TV_TOPIC).position_updated_at is not None
    await asyncio.sleep(0)
