"""The integration's actions (registered in async_setup) against loaded players."""

from __future__ import annotations

import json

import pytest

from homeassistant.core import HomeAssistant
from homeassistant.exceptions import ServiceValidationError
from homeassistant.helpers import service

from conftest import SPEAKER, TV, answer, published, until_published


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


# Home Assistant 2025.x and later resolve the targets of the integration's actions themselves
# (service.async_register_platform_entity_service): as for their own entity services, a target
# that is unavailable or missing is skipped with a warning in the log, and the call does nothing.
# Older releases get the integration's own resolution, with translated errors.
PLATFORM_SERVICES = hasattr(service, "async_register_platform_entity_service")


async def test_unavailable_targets_are_refused(hass: HomeAssistant, mqtt_mock, loaded, caplog) -> None:
    from pytest_homeassistant_custom_component.common import async_fire_mqtt_message

    async_fire_mqtt_message(hass, "cast2mqtt/living_room_tv/availability", "offline")
    await hass.async_block_till_done()
    if PLATFORM_SERVICES:
        await hass.services.async_call("cast2mqtt", "launch", {"entity_id": TV, "app_id": "CC1AD845"}, blocking=True)
        assert not published(mqtt_mock, "/command/launch")
        return
    with pytest.raises(ServiceValidationError) as raised:
        await hass.services.async_call("cast2mqtt", "launch", {"entity_id": TV, "app_id": "CC1AD845"}, blocking=True)
    assert raised.value.translation_key == "target_unavailable"


async def test_an_unmatched_target_is_refused(hass: HomeAssistant, mqtt_mock, loaded, caplog) -> None:
    data = {"entity_id": "media_player.elsewhere", "app_id": "CC1AD845"}
    if PLATFORM_SERVICES:
        await hass.services.async_call("cast2mqtt", "launch", data, blocking=True)
        assert not published(mqtt_mock, "/command/launch")
        assert "media_player.elsewhere are missing or not currently available" in caplog.text
        return
    with pytest.raises(ServiceValidationError) as raised:
        await hass.services.async_call("cast2mqtt", "launch", data, blocking=True)
    assert raised.value.translation_key == "no_target"


async def test_all_targets_every_loaded_player(hass: HomeAssistant, mqtt_mock, loaded) -> None:
    task = hass.async_create_task(hass.services.async_call(
        "cast2mqtt", "set_playback_rate", {"entity_id": "all", "rate": 1.5}, blocking=True))
    await until_published(mqtt_mock, "/living_room_tv/command/rate")
    await until_published(mqtt_mock, "/kitchen/command/rate")
    answer(hass, mqtt_mock)
    answer(hass, mqtt_mock, topic="kitchen")
    await task


async def test_a_target_by_device(hass: HomeAssistant, mqtt_mock, loaded) -> None:
    from homeassistant.helpers import entity_registry as er

    device_id = er.async_get(hass).async_get(TV).device_id  # type: ignore[union-attr]
    task = hass.async_create_task(hass.services.async_call(
        "cast2mqtt", "launch", {"device_id": device_id, "app_id": "E7C0A1B0"}, blocking=True, return_response=False))
    assert json.loads((await until_published(mqtt_mock, "/living_room_tv/command/launch"))[-1])["app_id"] == "E7C0A1B0"
    answer(hass, mqtt_mock)
    await task


async def test_the_platform_entity_service_api_is_used_where_it_exists(
        hass: HomeAssistant, mqtt_mock, monkeypatch: pytest.MonkeyPatch) -> None:
    """Newer Home Assistant registers entity services of an integration's platform itself
    (`service.async_register_platform_entity_service`; neither tested release has it): a stand-in
    that resolves targets among the platform's entities the way Core does is handed our actions."""
    from homeassistant.core import SupportsResponse

    from conftest import setup_with_platform_registration

    registered: dict[str, dict[str, object]] = {}
    await setup_with_platform_registration(hass, monkeypatch, registered)
    assert set(registered) == {"transfer", "set_playback_rate", "launch", "send_message", "show_lovelace_view"}
    assert {r["entity_domain"] for r in registered.values()} == {"media_player"}
    assert registered["transfer"]["supports_response"] == SupportsResponse.OPTIONAL
    task = hass.async_create_task(hass.services.async_call(
        "cast2mqtt", "transfer", {"entity_id": TV, "to": SPEAKER}, blocking=True, return_response=True))
    await until_published(mqtt_mock, "/living_room_tv/command/transfer")
    answer(hass, mqtt_mock, data={"from": "living_room_tv", "to": "kitchen", "position": 1.0})
    assert await task == {TV: {"from": "living_room_tv", "to": "kitchen", "position": 1.0}}


@pytest.mark.parametrize(("action", "data"), [
    ("launch", {"app_id": "not an id!"}),
    ("send_message", {"namespace": "urn:x-cast:", "data": "x"}),
    ("send_message", {"namespace": "com.example", "data": "x"}),
])
async def test_bad_fields_are_refused_before_anything_is_sent(hass: HomeAssistant, mqtt_mock, loaded,
                                                              action: str, data: dict[str, str]) -> None:
    import voluptuous as vol

    with pytest.raises(vol.Invalid):
        await hass.services.async_call("cast2mqtt", action, {"entity_id": TV, **data}, blocking=True)
