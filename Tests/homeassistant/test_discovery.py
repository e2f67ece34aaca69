"""The bridge's Home Assistant discovery, checked by a real Home Assistant Core (2025.4.4).

One scenario in steps (file order): entities appear, follow the devices, drive the devices (the
subtitle and audio selects with a movie's tracks), survive bridge and Home Assistant restarts,
and go away when a device is removed.
"""

from __future__ import annotations

import signal

import pytest

from harness import KITCHEN, LIVING_ROOM, log_problems, wait_for

DEVICE_OBJECTS = [
    ("sensor", "state"), ("sensor", "media_title"), ("sensor", "media_artist"), ("sensor", "media_album"),
    ("sensor", "media_duration"), ("sensor", "media_position"), ("image", "artwork"), ("sensor", "app"),
    ("number", "volume"), ("switch", "mute"), ("select", "playback_rate"), ("button", "play"), ("button", "pause"),
    ("button", "stop"), ("button", "next"), ("button", "previous"), ("text", "load_url"), ("event", "last_command"),
    ("select", "subtitles"), ("select", "audio_language"),
]
BRIDGE_OBJECTS = [("binary_sensor", "connection"), ("sensor", "devices"), ("sensor", "online_devices"),
                  ("button", "refresh")]

LR_ID, KITCHEN_ID = LIVING_ROOM[1], KITCHEN[1]
LR, KT = "living_room_tv", "kitchen"
MEDIA = "http://127.0.0.1:9/media/song.mp3"


def entities(topic: str) -> set[str]:
    return {f"{platform}.{topic}_{obj}" for platform, obj in DEVICE_OBJECTS}


BRIDGE_ENTITIES = {f"{platform}.cast2mqtt_bridge_{obj}" for platform, obj in BRIDGE_OBJECTS}
UNAVAILABLE = "unavailable"


def all_entities() -> set[str]:
    return entities(LR) | entities(KT) | BRIDGE_ENTITIES


def conditional_entities(topic: str) -> set[str]:
    """Entities available only while the media has them: artwork, text tracks, audio tracks."""
    return {f"image.{topic}_artwork", f"select.{topic}_subtitles", f"select.{topic}_audio_language"}


def available_entities() -> set[str]:
    """Every entity that is available whenever the bridge and the devices are up (artwork and the
    track selects only while the media has them)."""
    return all_entities() - conditional_entities(LR) - conditional_entities(KT)


def assert_clean_log(ha) -> None:
    problems = log_problems(ha.log())
    assert not problems, "home-assistant.log:\n" + "\n".join(problems[:20])


def wait_available(ha, ids: set[str], timeout: float = 60) -> None:
    def ok():
        states = ha.states()
        return all(i in states and states[i]["state"] != UNAVAILABLE for i in ids)
    try:
        wait_for(ok, timeout, 0.5, "every entity to be available")
    except AssertionError:
        states = ha.states()
        bad = {i: states.get(i, {}).get("state") for i in ids if states.get(i, {}).get("state") in (None, UNAVAILABLE)}
        raise AssertionError(f"not available: {bad}") from None


def sim_receiver(sim, device_id: str) -> dict:
    return sim.state(device_id)["receiverStatus"]


def sim_media(sim, device_id: str) -> dict | None:
    status = sim.state(device_id).get("mediaStatus")
    if isinstance(status, list):
        return status[0] if status else None
    return status


def test_entities_of_every_device_and_of_the_bridge(bridge, ha, mqtt):
    """The exact entity list per device and for the bridge, every entity available, with no
    discovery error and no template warning."""
    wait_for(lambda: ha.entities_of(f"cast2mqtt_{LR_ID}") == entities(LR)
             and ha.entities_of(f"cast2mqtt_{KITCHEN_ID}") == entities(KT)
             and ha.entities_of("cast2mqtt_bridge") == BRIDGE_ENTITIES, 60, 0.5, "the entities of both devices and the bridge")
    # via_device resolves: each Cast device hangs off the bridge device.
    devices = {tuple(d["identifiers"][0]): d for d in ha.device_registry() if d["identifiers"]}
    bridge_device = devices[("mqtt", "cast2mqtt_bridge")]
    assert bridge_device["sw_version"]
    for device_id, name in ((LR_ID, "Living Room TV"), (KITCHEN_ID, "Kitchen")):
        d = devices[("mqtt", f"cast2mqtt_{device_id}")]
        assert d["via_device_id"] == bridge_device["id"]
        assert d["name"] == name
    wait_available(ha, available_entities())
    # No artwork and no tracks while nothing plays: those entities say so by being unavailable.
    for entity_id in conditional_entities(LR):
        assert ha.state(entity_id)["state"] == UNAVAILABLE, entity_id
    assert ha.state("binary_sensor.cast2mqtt_bridge_connection")["state"] == "on"
    ha.wait_state("sensor.cast2mqtt_bridge_devices", "2")
    ha.wait_state("sensor.cast2mqtt_bridge_online_devices", "2")
    ha.wait_state(f"sensor.{LR}_state", "off")
    # One retained config per device (device-based discovery), none per entity.
    configs = {t for t, p in mqtt.topics("homeassistant/").items() if p}
    assert {f"homeassistant/device/cast2mqtt_{LR_ID}/config", f"homeassistant/device/cast2mqtt_{KITCHEN_ID}/config",
            "homeassistant/device/cast2mqtt_bridge/config"} <= configs
    assert all(t.startswith("homeassistant/device/") for t in configs), configs
    assert_clean_log(ha)


def test_the_bridge_refresh_button(bridge, ha, sim):
    """Refresh on the bridge device queries every device again."""
    def status_reads() -> int:
        return len(sim.received(KITCHEN_ID, namespace="urn:x-cast:com.google.cast.receiver", type="GET_STATUS"))
    before = status_reads()
    ha.call("button", "press", entity_id="button.cast2mqtt_bridge_refresh")
    wait_for(lambda: status_reads() > before, 20, 0.2, "a receiver GET_STATUS after Refresh")


def test_states_follow_the_device(bridge, ha, sim, mqtt):
    """Volume and mute changed on the device itself, media loaded through the bridge, and a
    stream moved to the other device by the cloud (another sender)."""
    sim.fault(LR_ID, {"action": "remote_volume", "level": 0.3})
    ha.wait_state(f"number.{LR}_volume", lambda s: float(s["state"]) == 30)
    sim.fault(LR_ID, {"action": "remote_volume", "muted": True})
    ha.wait_state(f"switch.{LR}_mute", "on")
    sim.fault(LR_ID, {"action": "remote_volume", "muted": False})
    ha.wait_state(f"switch.{LR}_mute", "off")

    mqtt.publish(f"cast2mqtt/{LR}/command/load",
                 '{"url": "%s", "title": "Song", "artist": "Artist", "album": "Album", '
                 '"images": ["http://127.0.0.1:9/art.jpg"], "metadata_type": "music_track"}' % MEDIA)
    ha.wait_state(f"sensor.{LR}_state", "playing")
    ha.wait_state(f"sensor.{LR}_media_title", "Song")
    ha.wait_state(f"sensor.{LR}_media_artist", "Artist")
    ha.wait_state(f"sensor.{LR}_media_album", "Album")
    ha.wait_state(f"sensor.{LR}_app", "Default Media Receiver")
    ha.wait_state(f"select.{LR}_playback_rate", "1")
    position = ha.wait_state(f"sensor.{LR}_media_position", lambda s: s["state"] not in ("unknown", UNAVAILABLE))
    assert position["attributes"].get("position_updated_at")
    assert position["attributes"]["unit_of_measurement"] == "s"
    image = ha.wait_state(f"image.{LR}_artwork", lambda s: s["state"] not in ("unknown", UNAVAILABLE))
    assert image["attributes"].get("entity_picture")

    # The cloud moves the stream to the kitchen: nothing the bridge sent.
    import requests
    response = requests.post(sim.url("/transfer"), json={"from": LR_ID, "to": KITCHEN_ID}, timeout=10)
    assert response.json().get("ok"), response.text
    ha.wait_state(f"sensor.{KT}_state", "playing")
    ha.wait_state(f"sensor.{KT}_media_title", "Song")
    ha.wait_state(f"sensor.{LR}_state", lambda s: s["state"] in ("off", "idle"))
    ha.wait_state(f"sensor.{LR}_media_title", "unknown")
    assert_clean_log(ha)


def test_service_calls_reach_the_device(bridge, ha, sim):
    """number, switch, select, button and text service calls, as the Home Assistant UI makes them."""
    ha.call("number", "set_value", entity_id=f"number.{KT}_volume", value=25)
    wait_for(lambda: abs(sim_receiver(sim, KITCHEN_ID)["volume"]["level"] - 0.25) < 0.001, 20, 0.2, "kitchen volume 0.25")
    ha.wait_state(f"number.{KT}_volume", lambda s: float(s["state"]) == 25)

    ha.call("switch", "turn_on", entity_id=f"switch.{KT}_mute")
    wait_for(lambda: sim_receiver(sim, KITCHEN_ID)["volume"]["muted"] is True, 20, 0.2, "kitchen muted")
    ha.wait_state(f"switch.{KT}_mute", "on")
    ha.call("switch", "turn_off", entity_id=f"switch.{KT}_mute")
    wait_for(lambda: sim_receiver(sim, KITCHEN_ID)["volume"]["muted"] is False, 20, 0.2, "kitchen unmuted")

    ha.call("select", "select_option", entity_id=f"select.{KT}_playback_rate", option="1.5")
    wait_for(lambda: (sim_media(sim, KITCHEN_ID) or {}).get("playbackRate") == 1.5, 20, 0.2, "kitchen rate 1.5")
    ha.wait_state(f"select.{KT}_playback_rate", "1.5")

    ha.call("button", "press", entity_id=f"button.{KT}_pause")
    wait_for(lambda: (sim_media(sim, KITCHEN_ID) or {}).get("playerState") == "PAUSED", 20, 0.2, "kitchen paused")
    ha.wait_state(f"sensor.{KT}_state", "paused")
    ha.call("button", "press", entity_id=f"button.{KT}_play")
    ha.wait_state(f"sensor.{KT}_state", "playing")

    ha.call("text", "set_value", entity_id=f"text.{LR}_load_url", value=MEDIA)
    wait_for(lambda: (((sim_media(sim, LR_ID) or {}).get("media") or {}).get("contentId")) == MEDIA, 20, 0.2,
             "the living room to load the URL")
    ha.wait_state(f"sensor.{LR}_state", "playing")
    event = ha.wait_state(f"event.{LR}_last_command", lambda s: s["attributes"].get("command") == "load")
    assert event["attributes"]["event_type"] == "ok"
    assert_clean_log(ha)


MOVIE = {
    "url": "http://127.0.0.1:9/media/movie.mp4", "title": "Movie", "content_type": "video/mp4",
    "tracks": [{"id": 1, "type": "text", "language": "en", "name": "English", "content_id": "http://127.0.0.1:9/en.vtt"},
               {"id": 2, "type": "text", "language": "de", "content_id": "http://127.0.0.1:9/de.vtt"},
               {"id": 3, "type": "audio", "language": "en"}, {"id": 4, "type": "audio", "language": "fr"}],
    "active_tracks": [3],
}


def test_subtitle_and_audio_selects_follow_the_tracks(bridge, ha, sim, mqtt):
    """A movie with subtitles in two languages and two audio languages: the selects become
    available with those options and the active ones, choosing an option sends EDIT_TRACKS_INFO
    with the right track ids, and media without tracks makes them unavailable again."""
    import json

    subtitles, audio = f"select.{LR}_subtitles", f"select.{LR}_audio_language"
    mqtt.publish(f"cast2mqtt/{LR}/command/load", json.dumps(MOVIE))
    state = ha.wait_state(subtitles, "off")
    assert state["attributes"]["options"] == ["off", "en", "de"]
    state = ha.wait_state(audio, "en")
    assert state["attributes"]["options"] == ["en", "fr"]

    def edits() -> list[dict]:
        return sim.received(LR_ID, namespace="urn:x-cast:com.google.cast.media", type="EDIT_TRACKS_INFO")
    ha.call("select", "select_option", entity_id=subtitles, option="de")
    wait_for(lambda: edits() and edits()[-1]["payload"].get("activeTrackIds") == [3, 2], 20, 0.2, "EDIT_TRACKS_INFO for German")
    ha.wait_state(subtitles, "de")
    ha.call("select", "select_option", entity_id=audio, option="fr")
    wait_for(lambda: edits()[-1]["payload"].get("activeTrackIds") == [2, 4], 20, 0.2, "EDIT_TRACKS_INFO for French audio")
    ha.wait_state(audio, "fr")
    ha.call("select", "select_option", entity_id=subtitles, option="off")
    wait_for(lambda: edits()[-1]["payload"].get("activeTrackIds") == [4], 20, 0.2, "subtitles off")
    ha.wait_state(subtitles, "off")

    # Music without tracks: the selects are unavailable again.
    mqtt.publish(f"cast2mqtt/{LR}/command/load", json.dumps({"url": MEDIA, "title": "Song"}))
    ha.wait_state(subtitles, UNAVAILABLE)
    ha.wait_state(audio, UNAVAILABLE)
    ha.wait_state(f"sensor.{LR}_state", "playing")
    assert_clean_log(ha)


def test_a_failed_press_is_visible(bridge, ha, sim, mqtt):
    """Stop on the kitchen, then Pause with the media stopped, then Pause with no app at all: the
    last-command event says why each time."""
    ha.call("button", "press", entity_id=f"button.{KT}_stop")
    ha.wait_state(f"sensor.{KT}_state", lambda s: s["state"] in ("off", "idle"))
    ha.call("button", "press", entity_id=f"button.{KT}_pause")
    event = ha.wait_state(f"event.{KT}_last_command",
                          lambda s: s["attributes"].get("command") == "pause" and s["attributes"].get("event_type") == "error")
    assert event["attributes"]["error_code"] in ("invalid_player_state", "no_media_session"), event
    assert event["attributes"]["message"]
    mqtt.publish(f"cast2mqtt/{KT}/command/quit", "")
    ha.wait_state(f"sensor.{KT}_state", "off")
    ha.wait_state(f"sensor.{KT}_app", "unknown")
    before = ha.state(f"event.{KT}_last_command")["state"]
    ha.call("button", "press", entity_id=f"button.{KT}_pause")
    event = ha.wait_state(f"event.{KT}_last_command", lambda s: s["state"] != before
                          and s["attributes"].get("command") == "pause")
    assert event["attributes"]["event_type"] == "error"
    assert event["attributes"]["error_code"] == "no_app", event
    assert_clean_log(ha)


def test_bridge_stop_and_kill_make_everything_unavailable(bridge, ha):
    """SIGTERM (clean `offline`) and SIGKILL (the broker's last will): every entity unavailable,
    the bridge's connectivity sensor off; back after each restart."""
    device_and_bridge_sensors = all_entities() - {"binary_sensor.cast2mqtt_bridge_connection"}
    for sig in (signal.SIGTERM, signal.SIGKILL):
        bridge.stop(sig)
        wait_for(lambda: all(ha.state(e)["state"] == UNAVAILABLE for e in device_and_bridge_sensors), 60, 0.5,
                 f"every entity unavailable after {sig.name}")
        ha.wait_state("binary_sensor.cast2mqtt_bridge_connection", "off", timeout=60)
        bridge.start()
        wait_available(ha, available_entities())
        ha.wait_state("binary_sensor.cast2mqtt_bridge_connection", "on")
        ha.wait_state(f"sensor.{LR}_state", "playing")
    assert_clean_log(ha)


def test_home_assistant_restart_brings_everything_back(bridge, ha):
    ha.stop()
    ha.start()
    ha.login()
    wait_for(lambda: ha.entities_of(f"cast2mqtt_{LR_ID}") == entities(LR), 60, 0.5, "the entities after the restart")
    wait_available(ha, available_entities())
    ha.wait_state(f"sensor.{LR}_state", "playing")
    ha.wait_state(f"sensor.{LR}_app", "Default Media Receiver")
    ha.wait_state(f"number.{KT}_volume", lambda s: float(s["state"]) == 25)
    assert_clean_log(ha)


def test_removal_drops_the_entities(bridge, ha, mqtt):
    """`bridge/request/remove` forgets the kitchen; a restart with the living room excluded
    clears it although that run never sees it."""
    mqtt.publish("cast2mqtt/bridge/request/remove", '{"device": "kitchen"}')
    wait_for(lambda: not ha.entities_of(f"cast2mqtt_{KITCHEN_ID}"), 60, 0.5, "the kitchen's entities to go")
    wait_for(lambda: all(ha.state(e) is None for e in entities(KT)), 30, 0.5, "no kitchen states")
    assert not mqtt.get(f"homeassistant/device/cast2mqtt_{KITCHEN_ID}/config")
    assert not mqtt.get(f"cast2mqtt/{KT}/state")

    bridge.stop()
    bridge.exclude = ["Living Room TV"]
    bridge.start()
    wait_for(lambda: not ha.entities_of(f"cast2mqtt_{LR_ID}"), 60, 0.5, "the living room's entities to go")
    assert not mqtt.get(f"homeassistant/device/cast2mqtt_{LR_ID}/config")
    for leaf in ("availability", "info", "receiver", "media", "state"):
        assert not mqtt.get(f"cast2mqtt/{LR}/{leaf}"), leaf
    # The kitchen (a static device) is back after the restart: `remove` forgets until seen again.
    wait_for(lambda: ha.entities_of(f"cast2mqtt_{KITCHEN_ID}") == entities(KT), 60, 0.5, "the kitchen back")
    ha.wait_state("sensor.cast2mqtt_bridge_devices", "1")
    assert_clean_log(ha)
