"""Speaker groups in the integration against a mocked broker: the group's player lists its
members' players (`group_members`, sorted, only those this bridge has a player for), follows its
`members` topic, ignores hostile ones, and members carry `playing_in`."""

from __future__ import annotations

import json

from homeassistant.core import HomeAssistant
from pytest_homeassistant_custom_component.common import async_fire_mqtt_message

from conftest import BASE, DEVICES, SPEAKER, SPEAKER_ID, TV, TV_ID, make_entry

GROUP_ID = "0123456789abcdef0123456789abcd20"
GROUP = "media_player.downstairs"
GROUP_DEVICE = {"id": GROUP_ID, "name": "Downstairs", "topic": "downstairs", "model": "Google Cast Group",
                "cast_type": "group"}


def members(*ids: str) -> str:
    return json.dumps([{"id": i, "name": None, "topic": None, "volume": 0.5, "muted": False} for i in ids])


async def set_up(hass: HomeAssistant) -> None:
    entry = make_entry()
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    async_fire_mqtt_message(hass, f"{BASE}/bridge/state", "online")
    # The group first, before its members have players: its list fills in as they are added.
    async_fire_mqtt_message(hass, f"{BASE}/bridge/devices", json.dumps([GROUP_DEVICE]))
    async_fire_mqtt_message(hass, f"{BASE}/downstairs/members", members(SPEAKER_ID, "ffffffffffffffffffffffffffffffff", TV_ID))
    await hass.async_block_till_done()
    async_fire_mqtt_message(hass, f"{BASE}/bridge/devices", json.dumps([GROUP_DEVICE, *DEVICES]))
    for topic in ("downstairs", "living_room_tv", "kitchen"):
        async_fire_mqtt_message(hass, f"{BASE}/{topic}/availability", "online")
        async_fire_mqtt_message(hass, f"{BASE}/{topic}/state", "off")
    await hass.async_block_till_done()


async def test_the_group_player_lists_its_members_players(hass: HomeAssistant, mqtt_mock) -> None:
    await set_up(hass)
    # Sorted (leader-independent); a member without a player of this bridge is left out.
    assert hass.states.get(GROUP).attributes["group_members"] == [SPEAKER, TV]
    assert "group_members" not in hass.states.get(SPEAKER).attributes
    async_fire_mqtt_message(hass, f"{BASE}/downstairs/members", members(TV_ID))
    await hass.async_block_till_done()
    assert hass.states.get(GROUP).attributes["group_members"] == [TV]
    # What is not a JSON array changes nothing; an array of no valid member is no member.
    for payload in ("{}", "not json", "null", b"\xff\xfe", "[" * 10000):
        async_fire_mqtt_message(hass, f"{BASE}/downstairs/members", payload)
        await hass.async_block_till_done()
        assert hass.states.get(GROUP).attributes["group_members"] == [TV], payload
    async_fire_mqtt_message(hass, f"{BASE}/downstairs/members", json.dumps([1, {"id": "../../x"}, {"id": 5}]))
    await hass.async_block_till_done()
    assert hass.states.get(GROUP).attributes["group_members"] == []
    # An empty payload: the group is gone.
    async_fire_mqtt_message(hass, f"{BASE}/downstairs/members", members(TV_ID))
    await hass.async_block_till_done()
    assert hass.states.get(GROUP).attributes["group_members"] == [TV]
    async_fire_mqtt_message(hass, f"{BASE}/downstairs/members", "")
    await hass.async_block_till_done()
    assert hass.states.get(GROUP).attributes["group_members"] == []


async def test_a_member_shows_where_it_plays(hass: HomeAssistant, mqtt_mock) -> None:
    await set_up(hass)
    async_fire_mqtt_message(hass, f"{BASE}/kitchen/state", "playing")
    async_fire_mqtt_message(hass, f"{BASE}/kitchen/media", json.dumps({
        "state": "playing", "media_session_id": 7, "title": "Song", "content_id": "http://example.com/a.mp3",
        "supported_commands": ["pause"], "playing_in": "downstairs"}))
    await hass.async_block_till_done()
    state = hass.states.get(SPEAKER)
    assert state.state == "playing"
    assert state.attributes["media_title"] == "Song" and state.attributes["playing_in"] == "downstairs"
