"""Speaker groups in a real Home Assistant: the group's media player lists its members'
players (`group_members`), members show what their group plays and hand their transport controls
to it, and a leader that moves keeps one set of entities.

cast-sim serves three speakers on addresses of their own (Cast on 8009, eureka_info on 8008 and
8443) and "Downstairs" (Kitchen and Den, led by Kitchen); the bridge gets the speakers as static
devices and finds the group through Kitchen's eureka_info. The tests run in file order, each
saying what it leaves.
"""

from __future__ import annotations

import pathlib
import random
from typing import Any

import pytest
import requests

from harness import ROOT, Bridge, CastSim, wait_for
from ha_calls import service

KITCHEN_ID = "0123456789abcdef0123456789abcd11"
DEN_ID = "0123456789abcdef0123456789abcd12"
HALL_ID = "0123456789abcdef0123456789abcd13"
GROUP_ID = "0123456789abcdef0123456789abcd20"
GROUP = "media_player.downstairs"
KITCHEN = "media_player.kitchen"
DEN = "media_player.den"
HALL = "media_player.hall"
SONG = "http://127.0.0.1:9/music/song.mp3"
MEDIA = "urn:x-cast:com.google.cast.media"

HOME_ASSISTANT = {
    "custom_components": [ROOT / "custom_components" / "cast2mqtt"],
}


def _address() -> str:
    return f"127.{random.randint(100, 250)}.{random.randint(0, 255)}.{random.randint(1, 254)}"


ADDRESSES = {KITCHEN_ID: _address(), DEN_ID: _address(), HALL_ID: _address()}


@pytest.fixture(scope="module")
def sim(requirements, workdir) -> CastSim:
    config = workdir / "cast-sim-groups.yaml"
    config.write_text(
        "devices:\n"
        f"  - {{name: Kitchen, id: {KITCHEN_ID}, address: {ADDRESSES[KITCHEN_ID]}, cast_type: audio}}\n"
        f"  - {{name: Den, id: {DEN_ID}, address: {ADDRESSES[DEN_ID]}, cast_type: audio}}\n"
        f"  - {{name: Hall, id: {HALL_ID}, address: {ADDRESSES[HALL_ID]}, cast_type: audio}}\n"
        "groups:\n"
        f"  - {{name: Downstairs, id: {GROUP_ID}, members: [Kitchen, Den]}}\n")
    s = CastSim(workdir, [], extra=["--config", str(config), "--heartbeat-interval", "1"], expected=3)
    yield s
    s.stop()


@pytest.fixture(scope="module")
def bridge(workdir, broker, sim) -> Bridge:
    devices = [{"host": ADDRESSES[i], "name": n, "id": i} for i, n in ((KITCHEN_ID, "Kitchen"), (DEN_ID, "Den"), (HALL_ID, "Hall"))]
    b = Bridge(workdir, broker, devices)
    b.start()
    yield b
    b.stop()


@pytest.fixture(scope="module")
def env(sim, bridge, mqtt, ha) -> dict[str, Any]:
    wait_for(lambda: all(mqtt.get(f"cast2mqtt/{t}/availability") == b"online" for t in ("kitchen", "den", "hall", "downstairs")),
             30, what="the speakers and the group online on MQTT")
    started = requests.post(f"{ha.base}/api/config/config_entries/flow", headers=ha.headers(),
                            json={"handler": "cast2mqtt", "show_advanced_options": False}, timeout=30).json()
    done = requests.post(f"{ha.base}/api/config/config_entries/flow/{started['flow_id']}", headers=ha.headers(),
                         json={"base_topic": "cast2mqtt"}, timeout=30).json()
    assert done.get("type") == "create_entry", done
    for entity_id in (GROUP, KITCHEN, DEN, HALL):
        ha.wait_state(entity_id, lambda s: s["state"] != "unavailable", 60)
    return {"sim": sim, "bridge": bridge, "mqtt": mqtt, "ha": ha}


def members_of(ha, entity_id: str = GROUP) -> list[str] | None:
    state = ha.state(entity_id)
    return state["attributes"].get("group_members") if state else None


def test_the_group_player_lists_its_members(env):
    ha = env["ha"]
    wait_for(lambda: members_of(ha) == [DEN, KITCHEN], 30, what=f"group_members of {GROUP}: {ha.state(GROUP)}")
    assert ha.state(GROUP)["attributes"].get("device_class") == "speaker"
    # Only the group's player has them.
    assert "group_members" not in ha.state(KITCHEN)["attributes"]
    # A member joins and leaves: the list follows.
    requests.post(env["sim"].url(f"/groups/{GROUP_ID}/members"), json={"id": HALL_ID}, timeout=10).raise_for_status()
    wait_for(lambda: members_of(ha) == [DEN, HALL, KITCHEN], 30, what="Hall in group_members")
    requests.delete(env["sim"].url(f"/groups/{GROUP_ID}/members/{HALL_ID}"), timeout=10).raise_for_status()
    wait_for(lambda: members_of(ha) == [DEN, KITCHEN], 30, what="Hall gone from group_members")


def test_members_show_what_the_group_plays_and_pause_it(env):
    ha, sim = env["ha"], env["sim"]
    service(ha, "media_player", "play_media", entity_id=GROUP, media_content_id=SONG, media_content_type="music",
            extra={"title": "Downstairs Song"})
    for member in (KITCHEN, DEN):
        state = ha.wait_state(member, lambda s: s["state"] == "playing"
                              and s["attributes"].get("media_title") == "Downstairs Song", 30)
        assert state["attributes"].get("playing_in") == "downstairs"
        assert state["attributes"].get("media_content_id") == SONG
    assert ha.state(HALL)["state"] == "off"
    # The kitchen's pause button pauses the group.
    service(ha, "media_player", "media_pause", entity_id=KITCHEN)
    for entity_id in (GROUP, KITCHEN, DEN):
        ha.wait_state(entity_id, "paused", 30)
    assert len(sim.received(GROUP_ID, MEDIA, "PAUSE")) == 1
    assert sim.received(KITCHEN_ID, MEDIA, "PAUSE") == []
    # Stopped: the members show their own state again.
    service(ha, "media_player", "media_stop", entity_id=DEN)
    for member in (KITCHEN, DEN):
        ha.wait_state(member, lambda s: s["state"] != "paused" and "playing_in" not in s["attributes"], 30)


def test_a_leader_move_keeps_one_set_of_entities(env):
    ha, mqtt = env["ha"], env["mqtt"]
    before = ha.entities_of(f"cast2mqtt_{GROUP_ID}")
    assert GROUP in before and len(before) > 5, before
    moved = requests.post(env["sim"].url(f"/groups/{GROUP_ID}/leader"), json={}, timeout=10).json()
    assert moved.get("host") == ADDRESSES[DEN_ID], moved
    wait_for(lambda: (mqtt.json("cast2mqtt/downstairs/info") or {}).get("address") == ADDRESSES[DEN_ID], 30,
             what="the group at its new leader")
    ha.wait_state(GROUP, lambda s: s["state"] != "unavailable", 30)
    assert ha.entities_of(f"cast2mqtt_{GROUP_ID}") == before
    assert len([d for d in ha.device_registry() if ["mqtt", f"cast2mqtt_{GROUP_ID}"] in d.get("identifiers", [])]) == 1
    wait_for(lambda: members_of(ha) == [DEN, KITCHEN], 30, what="group_members after the move")
    # And it still plays.
    service(ha, "media_player", "volume_set", entity_id=GROUP, volume_level=0.4)
    assert len(env["sim"].received(GROUP_ID, "urn:x-cast:com.google.cast.receiver", "SET_VOLUME")) >= 1
