"""The media player names the Home Assistant device the bridge's MQTT discovery made (same
identifier) and adds only what it knows: a model missing from `bridge/devices` does not clear the
model (or manufacturer) the discovery device block gave."""

from __future__ import annotations

import json

from homeassistant.core import HomeAssistant
from homeassistant.helpers import device_registry as dr
from pytest_homeassistant_custom_component.common import MockConfigEntry, async_fire_mqtt_message

from conftest import DEVICES, SPEAKER_ID, TV_ID, make_entry


async def test_the_player_joins_the_discovered_device_without_clearing_it(hass: HomeAssistant, mqtt_mock) -> None:
    devices = dr.async_get(hass)
    discovery = MockConfigEntry(domain="mqtt_discovery_stand_in")
    discovery.add_to_hass(hass)
    for device_id in (TV_ID, SPEAKER_ID):
        devices.async_get_or_create(config_entry_id=discovery.entry_id, identifiers={("mqtt", f"cast2mqtt_{device_id}")},
                                    name="from discovery", model="Model from discovery", manufacturer="Maker")
    entry = make_entry()
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    listed = [dict(DEVICES[0]), {**DEVICES[1], "model": None}]
    async_fire_mqtt_message(hass, "cast2mqtt/bridge/state", "online")
    async_fire_mqtt_message(hass, "cast2mqtt/bridge/devices", json.dumps(listed))
    await hass.async_block_till_done()
    tv = devices.async_get_device(identifiers={("mqtt", f"cast2mqtt_{TV_ID}")})
    speaker = devices.async_get_device(identifiers={("mqtt", f"cast2mqtt_{SPEAKER_ID}")})
    assert tv is not None and speaker is not None
    assert entry.entry_id in tv.config_entries and entry.entry_id in speaker.config_entries
    assert tv.model == "Chromecast" and tv.manufacturer == "Maker"
    assert speaker.model == "Model from discovery" and speaker.manufacturer == "Maker"
    assert len(devices.devices) == 2  # no second device for either
