"""Setup, unload and reload; ConfigEntryNotReady; the unique id migration; actions registered
in async_setup."""

from __future__ import annotations

from unittest.mock import patch

import pytest

from homeassistant.config_entries import ConfigEntryState
from homeassistant.core import HomeAssistant
from homeassistant.helpers import service as ha_service
from homeassistant.exceptions import HomeAssistantError, ServiceValidationError
from homeassistant.helpers import entity_registry as er
from homeassistant.setup import async_setup_component

from conftest import BASE, SPEAKER, TV, TV_ID, make_entry, publish_bridge

DOMAIN = "cast2mqtt"


async def test_setup_unload_and_reload(hass: HomeAssistant, mqtt_mock) -> None:
    entry = make_entry()
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    publish_bridge(hass)
    await hass.async_block_till_done()
    assert entry.state is ConfigEntryState.LOADED
    assert hass.states.get(TV).state == "off" and hass.states.get(SPEAKER).state == "off"

    assert await hass.config_entries.async_unload(entry.entry_id)
    await hass.async_block_till_done()
    assert entry.state is ConfigEntryState.NOT_LOADED
    assert hass.states.get(TV).state == "unavailable"  # restored, not removed: the entity stays registered
    # Unsubscribed: the bridge's messages no longer reach a player.
    publish_bridge(hass, state="playing")
    await hass.async_block_till_done()
    assert hass.states.get(TV).state == "unavailable"

    assert await hass.config_entries.async_setup(entry.entry_id)
    publish_bridge(hass, state="playing", media={"state": "playing", "media_session_id": 1})
    await hass.async_block_till_done()
    assert entry.state is ConfigEntryState.LOADED
    assert hass.states.get(TV).state == "playing"

    await hass.config_entries.async_reload(entry.entry_id)
    await hass.async_block_till_done()
    assert entry.state is ConfigEntryState.LOADED
    # Retained messages come again after the reload's new subscriptions.
    publish_bridge(hass, state="paused", media={"state": "paused", "media_session_id": 1})
    await hass.async_block_till_done()
    assert hass.states.get(TV).state == "paused"


async def test_a_failed_subscription_is_not_ready(hass: HomeAssistant, mqtt_mock) -> None:
    entry = make_entry()
    entry.add_to_hass(hass)
    with patch(
        "homeassistant.components.mqtt.async_subscribe",
        side_effect=HomeAssistantError("Cannot subscribe to topic"),
    ):
        assert not await hass.config_entries.async_setup(entry.entry_id)
    assert entry.state is ConfigEntryState.SETUP_RETRY
    assert hass.states.get(TV) is None


async def test_old_unique_ids_are_migrated_and_keep_the_entity(hass: HomeAssistant, mqtt_mock) -> None:
    entry = make_entry(minor_version=1)
    entry.add_to_hass(hass)
    registry = er.async_get(hass)
    old = registry.async_get_or_create(
        "media_player", DOMAIN, f"cast2mqtt_{TV_ID}_media_player", config_entry=entry,
        suggested_object_id="my_tv",
    )
    registry.async_update_entity(old.entity_id, name="My TV")
    assert await hass.config_entries.async_setup(entry.entry_id)
    publish_bridge(hass)
    await hass.async_block_till_done()
    assert entry.minor_version == 2
    migrated = registry.async_get(old.entity_id)
    assert migrated.unique_id == f"{BASE}:{TV_ID}:media_player"
    assert migrated.name == "My TV"
    # The player took over the migrated entry instead of creating a second entity.
    assert hass.states.get("media_player.my_tv").state == "off"
    assert hass.states.get(TV) is None


async def test_two_bridges_seeing_one_device_give_two_players(hass: HomeAssistant, mqtt_mock) -> None:
    for base in (BASE, "upstairs"):
        entry = make_entry(base)
        entry.add_to_hass(hass)
        assert await hass.config_entries.async_setup(entry.entry_id)
        publish_bridge(hass, base)
    await hass.async_block_till_done()
    unique_ids = {e.unique_id for e in er.async_get(hass).entities.values() if e.platform == DOMAIN}
    assert f"{BASE}:{TV_ID}:media_player" in unique_ids and f"upstairs:{TV_ID}:media_player" in unique_ids


async def test_actions_exist_without_an_entry_and_say_why_they_cannot_run(hass: HomeAssistant, mqtt_mock) -> None:
    assert await async_setup_component(hass, DOMAIN, {})
    for service in ("transfer", "set_playback_rate", "launch", "send_message"):
        assert hass.services.has_service(DOMAIN, service), service
    if hasattr(ha_service, "async_register_platform_entity_service"):
        # Home Assistant resolves the targets (test_services.py): a missing one is skipped with
        # its warning, and nothing runs.
        await hass.services.async_call(DOMAIN, "launch", {"entity_id": TV, "app_id": "CC1AD845"}, blocking=True)
        assert not [c for c in mqtt_mock.async_publish.call_args_list if "/command/" in c.args[0]]
        return
    with pytest.raises(ServiceValidationError) as raised:
        await hass.services.async_call(DOMAIN, "launch", {"entity_id": TV, "app_id": "CC1AD845"}, blocking=True)
    assert raised.value.translation_key == "no_target"


async def test_without_the_mqtt_client_the_entry_is_not_ready(hass: HomeAssistant, mqtt_mock) -> None:
    entry = make_entry()
    entry.add_to_hass(hass)
    with patch("homeassistant.components.mqtt.async_wait_for_mqtt_client", return_value=False):
        assert not await hass.config_entries.async_setup(entry.entry_id)
    assert entry.state is ConfigEntryState.SETUP_RETRY


async def test_a_newer_entry_is_not_downgraded(hass: HomeAssistant, mqtt_mock) -> None:
    from pytest_homeassistant_custom_component.common import MockConfigEntry

    entry = MockConfigEntry(domain=DOMAIN, title=BASE, unique_id=BASE, data={"base_topic": BASE}, version=2)
    entry.add_to_hass(hass)
    assert not await hass.config_entries.async_setup(entry.entry_id)
    assert entry.state is ConfigEntryState.MIGRATION_ERROR


async def test_the_migration_leaves_other_unique_ids_alone(hass: HomeAssistant, mqtt_mock) -> None:
    entry = make_entry(minor_version=1)
    entry.add_to_hass(hass)
    registry = er.async_get(hass)
    others = [
        registry.async_get_or_create("sensor", DOMAIN, f"cast2mqtt_{TV_ID}_media_player", config_entry=entry),
        registry.async_get_or_create("media_player", DOMAIN, "something_else", config_entry=entry),
        registry.async_get_or_create("media_player", DOMAIN, f"cast2mqtt_{TV_ID}_volume", config_entry=entry),
    ]
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    assert entry.minor_version == 2
    for other in others:
        assert registry.async_get(other.entity_id).unique_id == other.unique_id  # type: ignore[union-attr]


async def test_only_a_device_the_bridge_no_longer_lists_can_be_deleted(hass: HomeAssistant, mqtt_mock) -> None:
    from homeassistant.helpers import device_registry as dr

    from custom_components.cast2mqtt import async_remove_config_entry_device
    from custom_components.cast2mqtt.const import device_identifier

    entry = make_entry()
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    publish_bridge(hass)
    await hass.async_block_till_done()
    devices = dr.async_get(hass)
    listed = devices.async_get_or_create(config_entry_id=entry.entry_id, identifiers={device_identifier(TV_ID)})
    gone = devices.async_get_or_create(config_entry_id=entry.entry_id, identifiers={device_identifier("f" * 32)})
    assert not await async_remove_config_entry_device(hass, entry, listed)
    assert await async_remove_config_entry_device(hass, entry, gone)
