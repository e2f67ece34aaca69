"""The media player against a mocked broker: deadlines, older bridges, Home Assistant's own MQTT
connection, relative volume, power that leaves apps alone, announcements, device class."""

from __future__ import annotations

import asyncio
import json

import pytest

from homeassistant.components.mqtt.const import MQTT_CONNECTION_STATE
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers.dispatcher import async_dispatcher_send
from pytest_homeassistant_custom_component.common import async_fire_mqtt_message

from conftest import (BASE, SPEAKER, TV, answer, publish_bridge, published, refused_expires_then_sent_again,
                      until_published)


def call(hass: HomeAssistant, service: str, domain: str = "media_player", **data):
    return hass.async_create_task(hass.services.async_call(domain, service, {"entity_id": TV, **data}, blocking=True))


async def test_every_command_carries_a_deadline(hass: HomeAssistant, mqtt_mock, loaded) -> None:
    task = call(hass, "media_pause")
    payload = json.loads((await until_published(mqtt_mock, "/living_room_tv/command/pause"))[-1])
    # Seconds the bridge counts on its own clock from when it got the command.
    assert 9 <= payload["expires"] <= 11
    assert payload["id"].startswith("ha-")
    answer(hass, mqtt_mock)
    await task


async def test_a_bridge_without_expires_gets_the_command_again_without_it(hass: HomeAssistant, mqtt_mock, loaded) -> None:
    await refused_expires_then_sent_again(hass, mqtt_mock, call(hass, "media_pause"))
    # Remembered until the bridge restarts.
    task = call(hass, "media_play")
    assert "expires" not in json.loads((await until_published(mqtt_mock, "/command/play"))[-1])
    answer(hass, mqtt_mock)
    await task
    async_fire_mqtt_message(hass, f"{BASE}/bridge/state", "offline")
    async_fire_mqtt_message(hass, f"{BASE}/bridge/state", "online")
    task = call(hass, "media_play")
    assert "expires" in json.loads((await until_published(mqtt_mock, "/command/play", 2))[-1])
    answer(hass, mqtt_mock)
    await task


async def test_other_invalid_payload_errors_are_not_retried(hass: HomeAssistant, mqtt_mock, loaded) -> None:
    task = call(hass, "media_seek", seek_position=5)
    await until_published(mqtt_mock, "/command/seek")
    answer(hass, mqtt_mock, status="error", error={"code": "invalid_payload", "message": "seek position is out of range"})
    with pytest.raises(HomeAssistantError) as raised:
        await task
    assert raised.value.translation_key == "command_failed"
    assert "invalid_payload: seek position is out of range" in str(raised.value)
    assert len(published(mqtt_mock, "/command/seek")) == 1


async def test_players_follow_home_assistants_mqtt_connection(hass: HomeAssistant, mqtt_mock, loaded) -> None:
    assert hass.states.get(TV).state == "playing"
    mqtt_mock.connected = False
    async_dispatcher_send(hass, MQTT_CONNECTION_STATE, False)
    await hass.async_block_till_done()
    assert hass.states.get(TV).state == "unavailable" and hass.states.get(SPEAKER).state == "unavailable"
    # Home Assistant skips unavailable entities: nothing is published.
    await hass.services.async_call("media_player", "volume_set", {"entity_id": TV, "volume_level": 0.2}, blocking=True)
    assert published(mqtt_mock, "/command/volume") == []
    mqtt_mock.connected = True
    async_dispatcher_send(hass, MQTT_CONNECTION_STATE, True)
    await hass.async_block_till_done()
    assert hass.states.get(TV).state == "playing"


async def test_a_lost_connection_fails_a_waiting_command_at_once(hass: HomeAssistant, mqtt_mock, loaded) -> None:
    task = call(hass, "media_pause")
    await until_published(mqtt_mock, "/command/pause")
    async_dispatcher_send(hass, MQTT_CONNECTION_STATE, False)
    with pytest.raises(HomeAssistantError) as raised:
        await asyncio.wait_for(task, 5)
    assert raised.value.translation_key == "mqtt_lost"


async def test_volume_steps_are_relative(hass: HomeAssistant, mqtt_mock, loaded) -> None:
    first, second = call(hass, "volume_up"), call(hass, "volume_up")
    assert await until_published(mqtt_mock, "/living_room_tv/command/volume", 2) == ["+5", "+5"]
    for _ in range(2):  # the short form's answers carry no id
        async_fire_mqtt_message(hass, f"{BASE}/living_room_tv/response",
                                json.dumps({"command": "volume", "status": "ok", "data": {"level": 0.6}}))
    await first
    await second
    task = call(hass, "volume_down")
    assert (await until_published(mqtt_mock, "/living_room_tv/command/volume", 3))[-1] == "-5"
    async_fire_mqtt_message(hass, f"{BASE}/living_room_tv/response",
                            json.dumps({"command": "volume", "status": "error",
                                        "error": {"code": "device_offline", "message": "gone"}}))
    with pytest.raises(HomeAssistantError):
        await task


async def test_turn_on_only_when_off_and_turn_off_only_when_on(hass: HomeAssistant, mqtt_mock, loaded) -> None:
    # Off: turn_off does nothing, turn_on launches the Default Media Receiver.
    publish_bridge(hass, state="off")
    await hass.async_block_till_done()
    await hass.services.async_call("media_player", "turn_off", {"entity_id": TV}, blocking=True)
    assert published(mqtt_mock, "/command/quit") == []
    task = call(hass, "turn_on")
    assert json.loads((await until_published(mqtt_mock, "/command/launch"))[-1])["app_id"] == "CC1AD845"
    answer(hass, mqtt_mock)
    await task
    # An app plays: turn_on leaves it alone.
    publish_bridge(hass, state="playing", media={"state": "playing", "media_session_id": 3},
                   receiver={"app_id": "CC32E753", "app_name": "Spotify", "volume": {"level": 0.5}})
    await hass.async_block_till_done()
    await hass.services.async_call("media_player", "turn_on", {"entity_id": TV}, blocking=True)
    assert len(published(mqtt_mock, "/command/launch")) == 1
    # turn_off racing an app that already quit: `no_app` is what was wanted.
    task = call(hass, "turn_off")
    await until_published(mqtt_mock, "/command/quit")
    answer(hass, mqtt_mock, status="error", error={"code": "no_app", "message": "no app is running"})
    await task


async def test_announce_waits_for_the_clip(hass: HomeAssistant, mqtt_mock, loaded) -> None:
    task = call(hass, "play_media", media_content_id="http://example.com/ding.mp3", media_content_type="music",
                announce=True, extra={"volume": 0.7})
    body = json.loads((await until_published(mqtt_mock, "/command/announce"))[-1])
    assert body["wait"] is True and body["volume"] == 0.7 and body["url"] == "http://example.com/ding.mp3"
    # An announcement may queue behind another one: its deadline is longer than a command's.
    assert body["expires"] > 30
    answer(hass, mqtt_mock)
    await task


async def test_a_bridge_without_wait_still_announces(hass: HomeAssistant, mqtt_mock, loaded) -> None:
    task = call(hass, "play_media", media_content_id="http://example.com/ding.mp3", media_content_type="music",
                announce=True)
    await until_published(mqtt_mock, "/command/announce")
    answer(hass, mqtt_mock, status="error", error={
        "code": "invalid_payload", "message": 'unknown key "wait" for announce; it takes "content_type", "title"'})
    second = json.loads((await until_published(mqtt_mock, "/command/announce", 2))[-1])
    assert "wait" not in second and "expires" in second
    answer(hass, mqtt_mock)
    await task


async def test_enqueue_inserts_into_the_queue(hass: HomeAssistant, mqtt_mock, loaded) -> None:
    publish_bridge(hass, state="playing", media={"state": "playing", "media_session_id": 1, "content_id": "a",
                                                 "queue": {"current_item_id": 1, "items": [
                                                     {"item_id": 1, "content_id": "a"}, {"item_id": 2, "content_id": None}]}})
    await hass.async_block_till_done()
    task = call(hass, "play_media", media_content_id="http://example.com/b.mp3", media_content_type="music",
                enqueue="next")
    body = json.loads((await until_published(mqtt_mock, "/command/queue"))[-1])
    assert body["insert"] == [{"url": "http://example.com/b.mp3"}] and body["before"] == "next"
    answer(hass, mqtt_mock)
    await task
    assert published(mqtt_mock, "/command/load") == []


async def test_enqueue_on_a_bridge_without_queue_refuses_to_drop_items(hass: HomeAssistant, mqtt_mock, loaded) -> None:
    publish_bridge(hass, state="playing", media={"state": "playing", "media_session_id": 1, "content_id": "a",
                                                 "queue": {"current_item_id": 1, "items": [
                                                     {"item_id": 1, "content_id": "a"}, {"item_id": 2, "content_id": None}]}})
    await hass.async_block_till_done()
    task = call(hass, "play_media", media_content_id="http://example.com/b.mp3", media_content_type="music",
                enqueue="add")
    await until_published(mqtt_mock, "/command/queue")
    answer(hass, mqtt_mock, status="error", error={"code": "unknown_command", "message": 'there is no command "queue"'})
    with pytest.raises(HomeAssistantError) as raised:
        await task
    assert raised.value.translation_key == "enqueue_needs_queue"
    assert published(mqtt_mock, "/command/load") == []


async def test_device_class_follows_the_cast_type(hass: HomeAssistant, mqtt_mock, loaded) -> None:
    assert hass.states.get(TV).attributes["device_class"] == "tv"
    assert hass.states.get(SPEAKER).attributes["device_class"] == "speaker"
