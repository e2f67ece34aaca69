"""The players show what a device's `info` says about who it is and who holds it: the owning
bridge instance (several bridges on one base topic) and the result of device authentication.
Hostile or missing fields show nothing, and a document that changes nothing of them writes no
state."""

from __future__ import annotations

import json

from homeassistant.core import HomeAssistant
from pytest_homeassistant_custom_component.common import async_fire_mqtt_message

from conftest import BASE, DEVICES, SPEAKER, TV, make_entry


async def set_up(hass: HomeAssistant) -> None:
    entry = make_entry()
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    async_fire_mqtt_message(hass, f"{BASE}/bridge/state", "online")
    async_fire_mqtt_message(hass, f"{BASE}/bridge/devices", json.dumps(DEVICES))
    for topic in ("living_room_tv", "kitchen"):
        async_fire_mqtt_message(hass, f"{BASE}/{topic}/availability", "online")
        async_fire_mqtt_message(hass, f"{BASE}/{topic}/state", "off")
    await hass.async_block_till_done()


async def test_owner_and_authentication_from_info(hass: HomeAssistant, mqtt_mock) -> None:
    await set_up(hass)
    for key in ("bridge_instance", "authenticated", "auth_error"):
        assert key not in hass.states.get(TV).attributes
    async_fire_mqtt_message(hass, f"{BASE}/living_room_tv/info", json.dumps(
        {"name": "Living Room TV", "owner": "attic-pi", "authenticated": True, "auth_error": None}))
    async_fire_mqtt_message(hass, f"{BASE}/kitchen/info", json.dumps(
        {"name": "Kitchen", "authenticated": False, "auth_error": "untrusted_chain"}))
    await hass.async_block_till_done()
    tv, speaker = hass.states.get(TV).attributes, hass.states.get(SPEAKER).attributes
    assert tv["bridge_instance"] == "attic-pi" and tv["authenticated"] is True and "auth_error" not in tv
    assert "bridge_instance" not in speaker
    assert speaker["authenticated"] is False and speaker["auth_error"] == "untrusted_chain"
    # The device moves to another instance: the attribute follows.
    async_fire_mqtt_message(hass, f"{BASE}/living_room_tv/info", json.dumps(
        {"name": "Living Room TV", "owner": "cellar", "authenticated": True}))
    await hass.async_block_till_done()
    assert hass.states.get(TV).attributes["bridge_instance"] == "cellar"


async def test_hostile_info_shows_nothing(hass: HomeAssistant, mqtt_mock) -> None:
    await set_up(hass)
    for payload in (
        json.dumps({"owner": "../../etc", "authenticated": "yes", "auth_error": "<script>"}),
        json.dumps({"owner": 5, "authenticated": 1, "auth_error": ["expired"]}),
        json.dumps({"owner": "x" * 65}),
        "not json", "[1, 2]", b"\xff\xfe", "{" * 10000,
    ):
        async_fire_mqtt_message(hass, f"{BASE}/living_room_tv/info", payload)
        await hass.async_block_till_done()
        attributes = hass.states.get(TV).attributes
        for key in ("bridge_instance", "authenticated", "auth_error"):
            assert key not in attributes, (payload, key)
    # The bridge's own info is no device's.
    async_fire_mqtt_message(hass, f"{BASE}/bridge/info", json.dumps({"version": "1.0.0", "owner": "attic-pi"}))
    await hass.async_block_till_done()
    assert "bridge_instance" not in hass.states.get(TV).attributes
    # A cleared info topic (the device was forgotten) clears what it said.
    async_fire_mqtt_message(hass, f"{BASE}/living_room_tv/info", json.dumps({"owner": "attic-pi"}))
    await hass.async_block_till_done()
    assert hass.states.get(TV).attributes["bridge_instance"] == "attic-pi"
    async_fire_mqtt_message(hass, f"{BASE}/living_room_tv/info", "")
    await hass.async_block_till_done()
    assert "bridge_instance" not in hass.states.get(TV).attributes
