"""The integration's actions (registered in async_setup) against loaded players."""

from __future__ import annotations

import json

import pytest

from homeassistant.core import HomeAssistant
from homeassistant.exceptions import ServiceValidationError

from conftest import SPEAKER, TV, answer, until_published


async def test_transfer_to_a_media_player_sends_its_topic(hass: HomeAssistant, mqtt_mock, loaded) -> None:
    task = hass.async_create_task(hass.services.async_call(
        "cast2mqtt", "transfer", {"entity_id": TV, "to": SPEAKER}, blocking=True, return_response=True))
    body = json.loads((await until_published(mqtt_mock, "/living_room_tv/command/transfer"))[-1])
    assert body["to"] == "kitchen" and body["keep_source"] is False
    answer(hass, mqtt_mock, data={"from": "living_room_tv", "to": "kitchen", "position": 3.5})
    assert await task == {TV: {"from": "living_room_tv", "to": "kitchen", "position": 3.5}}


async def test_transfer_to_something_else_is_refused(hass: HomeAssistant, mqtt_mock, loaded) -> None:
    with pytest.raises(ServiceValidationError) as raised:
        await hass.services.async_call("cast2mqtt", "transfer", {"entity_id": TV, "to": "media_player.nope"},
                                       blocking=True)
    assert raised.value.translation_key == "not_a_player"


async def test_send_message_returns_the_reply(hass: HomeAssistant, mqtt_mock, loaded) -> None:
    task = hass.async_create_task(hass.services.async_call(
        "cast2mqtt", "send_message", {"entity_id": SPEAKER, "namespace": "urn:x-cast:com.example", "data": {"a": 1}},
        blocking=True, return_response=True))
    body = json.loads((await until_published(mqtt_mock, "/kitchen/command/send"))[-1])
    assert body["reply"] is True and body["data"] == {"a": 1}
    answer(hass, mqtt_mock, topic="kitchen", data={"namespace": "urn:x-cast:com.example", "data": {"b": 2}})
    assert await task == {SPEAKER: {"namespace": "urn:x-cast:com.example", "reply": {"b": 2}}}


async def test_rate_and_launch(hass: HomeAssistant, mqtt_mock, loaded) -> None:
    task = hass.async_create_task(hass.services.async_call(
        "cast2mqtt", "set_playback_rate", {"entity_id": TV, "rate": 1.25}, blocking=True))
    assert json.loads((await until_published(mqtt_mock, "/command/rate"))[-1])["rate"] == 1.25
    answer(hass, mqtt_mock)
    await task
    task = hass.async_create_task(hass.services.async_call(
        "cast2mqtt", "launch", {"entity_id": TV, "app_id": "E7C0A1B0"}, blocking=True))
    assert json.loads((await until_published(mqtt_mock, "/command/launch"))[-1])["app_id"] == "E7C0A1B0"
    answer(hass, mqtt_mock)
    await task


async def test_unavailable_targets_are_refused(hass: HomeAssistant, mqtt_mock, loaded) -> None:
    from pytest_homeassistant_custom_component.common import async_fire_mqtt_message

    async_fire_mqtt_message(hass, "cast2mqtt/living_room_tv/availability", "offline")
    await hass.async_block_till_done()
    with pytest.raises(ServiceValidationError) as raised:
        await hass.services.async_call("cast2mqtt", "launch", {"entity_id": TV, "app_id": "CC1AD845"}, blocking=True)
    assert raised.value.translation_key == "target_unavailable"
