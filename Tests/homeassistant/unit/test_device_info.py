"""One Home Assistant device per Cast device (device_link.py).

Before 2026.8 the media player names the device the bridge's MQTT discovery made (same
identifier), Home Assistant adds this entry to it, and the player adds only what it knows: a model
missing from `bridge/devices` does not clear the model (or manufacturer) the discovery gave.

From 2026.8 on (a device has one config entry) the player joins the MQTT integration's device
through `device_entry`; while there is none it has a device of its own, which goes when the MQTT
device comes; and the two devices that earlier releases left (Home Assistant's 2026.8 migration
split the shared device) become one, the player keeping its entity id, area and name.

Each model's tests run on the Home Assistant versions that have it (scripts/test runs the unit
tests on the oldest supported release and on the newest the test plugin supports)."""

from __future__ import annotations

import json

import pytest
from homeassistant.core import HomeAssistant
from homeassistant.helpers import area_registry as ar, device_registry as dr, entity_registry as er
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_fire_mqtt_message

from custom_components.cast2mqtt.device_link import ONE_OWNER
from conftest import DEVICES, SPEAKER, SPEAKER_ID, TV, TV_ID, make_entry

old_registry = pytest.mark.skipif(ONE_OWNER, reason="a device of several config entries: before Home Assistant 2026.8")
one_owner = pytest.mark.skipif(not ONE_OWNER, reason="a device of one config entry: Home Assistant 2026.8 and later")


def identifier(device_id: str) -> tuple[str, str]:
    return ("mqtt", f"cast2mqtt_{device_id}")


def mqtt_entry_id(hass: HomeAssistant) -> str:
    return hass.config_entries.async_entries("mqtt")[0].entry_id


def discovered(hass: HomeAssistant, owner: str, device_id: str, **fields: str) -> dr.DeviceEntry:
    """The device the MQTT integration makes from the bridge's discovery config."""
    return dr.async_get(hass).async_get_or_create(
        config_entry_id=owner, identifiers={identifier(device_id)},
        **({"name": "from discovery", "model": "Model from discovery", "manufacturer": "Maker"} | fields))


async def start(hass: HomeAssistant, entry: MockConfigEntry, listed: list[dict] | None = None) -> None:
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    async_fire_mqtt_message(hass, "cast2mqtt/bridge/state", "online")
    async_fire_mqtt_message(hass, "cast2mqtt/bridge/devices", json.dumps(listed or DEVICES))
    await hass.async_block_till_done()


def all_devices(hass: HomeAssistant) -> list[dr.DeviceEntry]:
    """Every device in the registry (2026's registry iterates its entries; older ones are a
    mapping by id)."""
    registry = dr.async_get(hass)
    if ONE_OWNER:
        return list(registry.devices)
    return list(registry.devices.values())


def device_of(hass: HomeAssistant, entity_id: str) -> dr.DeviceEntry | None:
    registry_entry = er.async_get(hass).async_get(entity_id)
    assert registry_entry is not None, entity_id
    return dr.async_get(hass).async_get(registry_entry.device_id) if registry_entry.device_id else None


@old_registry
async def test_the_player_joins_the_discovered_device_without_clearing_it(hass: HomeAssistant, mqtt_mock) -> None:
    devices = dr.async_get(hass)
    discovery = MockConfigEntry(domain="mqtt_discovery_stand_in")
    discovery.add_to_hass(hass)
    for device_id in (TV_ID, SPEAKER_ID):
        discovered(hass, discovery.entry_id, device_id)
    entry = make_entry()
    await start(hass, entry, [dict(DEVICES[0]), {**DEVICES[1], "model": None}])
    tv = devices.async_get_device(identifiers={identifier(TV_ID)})
    speaker = devices.async_get_device(identifiers={identifier(SPEAKER_ID)})
    assert tv is not None and speaker is not None
    assert entry.entry_id in tv.config_entries and entry.entry_id in speaker.config_entries
    assert tv.model == "Chromecast" and tv.manufacturer == "Maker"
    assert speaker.model == "Model from discovery" and speaker.manufacturer == "Maker"
    assert len(all_devices(hass)) == 2  # no second device for either


@one_owner
async def test_the_player_joins_the_mqtt_device_and_makes_none(hass: HomeAssistant, mqtt_mock) -> None:
    owner = mqtt_entry_id(hass)
    # The bridge's device block names the device as the bridge does (the player takes its name).
    tv_device = discovered(hass, owner, TV_ID, name="Living Room TV")
    speaker_device = discovered(hass, owner, SPEAKER_ID, name="Kitchen")
    entry = make_entry()
    await start(hass, entry, [dict(DEVICES[0]), {**DEVICES[1], "model": None}])
    assert device_of(hass, TV) == dr.async_get(hass).async_get(tv_device.id)
    assert device_of(hass, SPEAKER) == dr.async_get(hass).async_get(speaker_device.id)
    # Nothing of this entry's own, and the MQTT device as discovery made it.
    assert dr.async_entries_for_config_entry(dr.async_get(hass), entry.entry_id) == []
    assert len(all_devices(hass)) == 2
    tv = dr.async_get(hass).async_get(tv_device.id)
    assert tv is not None and tv.model == "Model from discovery" and tv.config_entry_id == owner
    # A reload finds the same device again.
    assert await hass.config_entries.async_reload(entry.entry_id)
    await hass.async_block_till_done()
    assert device_of(hass, TV) is not None and device_of(hass, TV).id == tv_device.id


@one_owner
async def test_a_player_before_its_mqtt_device_moves_to_it_when_it_comes(hass: HomeAssistant, mqtt_mock) -> None:
    entry = make_entry()
    await start(hass, entry)
    own = device_of(hass, TV)
    assert own is not None and own.config_entry_id == entry.entry_id and own.name == "Living Room TV"
    mqtt_device = discovered(hass, mqtt_entry_id(hass), TV_ID, name="Living Room TV")
    await hass.async_block_till_done()
    assert device_of(hass, TV) is not None and device_of(hass, TV).id == mqtt_device.id
    assert dr.async_get(hass).async_get(own.id) is None
    assert hass.states.get(TV) is not None
    # The speaker, still without an MQTT device, keeps its own.
    speaker = device_of(hass, SPEAKER)
    assert speaker is not None and speaker.config_entry_id == entry.entry_id


@one_owner
async def test_two_devices_from_an_earlier_release_become_one(hass: HomeAssistant, mqtt_mock) -> None:
    """The layout an earlier release left on 2026.8+: Home Assistant split the shared device into
    the MQTT integration's and this entry's, the media player on the latter, which the user had
    put in a room and renamed. After the upgrade: one device, the player on it with the same
    entity id, still in that room and under that name."""
    devices, entities = dr.async_get(hass), er.async_get(hass)
    den = ar.async_get(hass).async_create("Den")
    mqtt_device = discovered(hass, mqtt_entry_id(hass), TV_ID, name="Living Room TV")
    entry = make_entry()
    entry.add_to_hass(hass)
    split = devices.async_get_or_create(config_entry_id=entry.entry_id, identifiers={identifier(TV_ID)},
                                        name="Living Room TV")
    devices.async_update_device(split.id, area_id=den.id, name_by_user="Den TV")
    player = entities.async_get_or_create("media_player", "cast2mqtt", f"cast2mqtt:{TV_ID}:media_player",
                                          config_entry=entry, device_id=split.id,
                                          suggested_object_id="living_room_tv")
    assert player.entity_id == TV
    await start(hass, entry)
    assert devices.async_get(split.id) is None
    moved = entities.async_get(TV)
    assert moved is not None and moved.device_id == mqtt_device.id
    assert moved.area_id == den.id and moved.name == "Den TV"
    state = hass.states.get(TV)
    assert state is not None and state.attributes["friendly_name"] == "Den TV"
    assert [d.id for d in all_devices(hass) if identifier(TV_ID) in d.identifiers] == [mqtt_device.id]


@one_owner
async def test_a_forgotten_device_loses_the_player_and_its_own_device(hass: HomeAssistant, mqtt_mock) -> None:
    """The bridge forgets a device (`device_removed`): its player goes, and so does the player's
    own device of a Cast device without an MQTT device. (That an MQTT device the MQTT integration
    kept because the player was on it goes too is seen end to end: test_5_devices_and_restarts.)"""
    discovered(hass, mqtt_entry_id(hass), TV_ID, name="Living Room TV")
    entry = make_entry()
    await start(hass, entry)
    own = device_of(hass, SPEAKER)
    assert own is not None and own.config_entry_id == entry.entry_id
    async_fire_mqtt_message(hass, "cast2mqtt/bridge/event", json.dumps({"type": "device_removed", "id": TV_ID}))
    await hass.async_block_till_done()
    assert hass.states.get(TV) is None and er.async_get(hass).async_get(TV) is None
    async_fire_mqtt_message(hass, "cast2mqtt/bridge/event", json.dumps({"type": "device_removed", "id": SPEAKER_ID}))
    await hass.async_block_till_done()
    assert hass.states.get(SPEAKER) is None
    assert dr.async_get(hass).async_get(own.id) is None
