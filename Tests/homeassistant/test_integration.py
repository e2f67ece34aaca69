"""The cast2mqtt custom integration (custom_components/cast2mqtt) in a real Home Assistant.

The fixtures of conftest.py (one broker, cast-sim with two devices, the bridge and Home Assistant
per module), with Home Assistant loading the integration from the repository folder (a symlink,
see `HOME_ASSISTANT`). Tests run in file order and build on each other: the config flow first,
the removal of a device last. Every wait is bounded; nothing asserts timings.
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
import time
from datetime import datetime
from typing import Any

import pytest
import requests

from conftest import KITCHEN as KITCHEN_DEVICE, LIVING_ROOM
from harness import HA_VENV, ROOT, HomeAssistant, wait_for

TV_ID = LIVING_ROOM[1]
KITCHEN_ID = KITCHEN_DEVICE[1]
TV = "media_player.living_room_tv"
KITCHEN = "media_player.kitchen"
MEDIA = "urn:x-cast:com.google.cast.media"
RECEIVER = "urn:x-cast:com.google.cast.receiver"
ECHO = "urn:x-cast:com.cast2mqtt.echo"
SONG = "http://127.0.0.1:9/music/song.mp3"
SONG2 = "http://127.0.0.1:9/music/second.mp3"
SONG3 = "http://127.0.0.1:9/music/third.mp3"
CHIME = "media-source://media_source/local/chime.mp3"

# The `ha` fixture (conftest.py) starts Home Assistant with these: the integration loaded from the
# repository folder, a test TTS engine, media_source for media-source:// items, and a local media
# folder with a clip.
HOME_ASSISTANT = {
    "custom_components": [ROOT / "custom_components" / "cast2mqtt",
                          ROOT / "Tests" / "homeassistant" / "custom_components" / "sim_tts"],
    # tts needs the ffmpeg integration, which only asks the binary for its version at start;
    # the test never converts audio, so /bin/true stands in for an ffmpeg that is not installed.
    "extra_config": "media_source:\ntts:\n  - platform: sim_tts\nffmpeg:\n  ffmpeg_bin: /bin/true\n",
    "media_files": {"chime.mp3": b"ID3 not really an mp3"},
}


class Env:
    """The module's fixtures in one object."""

    def __init__(self, sim, bridge, mqtt, ha):
        self.sim, self.bridge, self.observer, self.ha = sim, bridge, mqtt, ha


@pytest.fixture(scope="module")
def env(sim, bridge, mqtt, ha) -> Env:
    wait_for(lambda: mqtt.get("cast2mqtt/living_room_tv/availability") == b"online"
             and mqtt.get("cast2mqtt/kitchen/availability") == b"online", 30, what="both devices online on MQTT")
    return Env(sim, bridge, mqtt, ha)


def call_ws(ha: HomeAssistant, domain: str, service: str, data: dict[str, Any],
            return_response: bool = False, timeout: float = 60) -> dict[str, Any]:
    """`call_service` over the websocket; returns the whole result message (success or error)."""

    async def run() -> dict[str, Any]:
        import aiohttp

        token = ha.headers()["Authorization"].split(" ", 1)[1]
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(f"{ha.base}/api/websocket") as ws:
                await ws.receive_json(timeout=timeout)
                await ws.send_json({"type": "auth", "access_token": token})
                assert (await ws.receive_json(timeout=timeout))["type"] == "auth_ok"
                message = {"id": 1, "type": "call_service", "domain": domain, "service": service,
                           "service_data": data}
                if return_response:
                    message["return_response"] = True
                await ws.send_json(message)
                while True:
                    reply = await ws.receive_json(timeout=timeout)
                    if reply.get("id") == 1 and reply.get("type") == "result":
                        return reply

    return asyncio.run(run())


def service(ha: HomeAssistant, domain: str, name: str, return_response: bool = False, **data: Any) -> Any:
    reply = call_ws(ha, domain, name, data, return_response)
    assert reply.get("success"), f"{domain}.{name} {data}: {reply}"
    return (reply.get("result") or {}).get("response")


def service_error(ha: HomeAssistant, domain: str, name: str, **data: Any) -> dict[str, Any]:
    reply = call_ws(ha, domain, name, data)
    assert not reply.get("success"), f"{domain}.{name} {data} should have failed: {reply}"
    return reply["error"]


def received(env: Env, device_id: str, namespace: str, type_: str) -> list[dict[str, Any]]:
    return env.sim.received(device_id, namespace=namespace, type=type_)


def wait_received(env: Env, device_id: str, namespace: str, type_: str, count: int, what: str) -> dict[str, Any]:
    messages = wait_for(lambda: (m := received(env, device_id, namespace, type_)) and len(m) >= count and m,
                        30, what=what)
    return messages[-1]


def live_position(state: dict[str, Any]) -> float:
    """What Home Assistant's progress bar shows: position + time since its timestamp."""
    attrs = state["attributes"]
    updated = datetime.fromisoformat(attrs["media_position_updated_at"])
    return attrs["media_position"] + max(0.0, time.time() - updated.timestamp())


def test_config_flow_creates_a_media_player_per_device(env: Env):
    ha = env.ha
    flow = requests.post(f"{ha.base}/api/config/config_entries/flow", headers=ha.headers(), timeout=30,
                         json={"handler": "cast2mqtt", "show_advanced_options": False}).json()
    assert flow.get("type") == "form" and flow.get("step_id") == "user", flow
    assert [f["name"] for f in flow["data_schema"]] == ["base_topic"]
    # A wildcard is refused with a form error, the default base topic is accepted.
    bad = requests.post(f"{ha.base}/api/config/config_entries/flow/{flow['flow_id']}", headers=ha.headers(),
                        json={"base_topic": "cast2mqtt/#"}, timeout=30).json()
    assert bad.get("errors") == {"base_topic": "invalid_topic"}, bad
    done = requests.post(f"{ha.base}/api/config/config_entries/flow/{flow['flow_id']}", headers=ha.headers(),
                         json={"base_topic": "cast2mqtt"}, timeout=30).json()
    assert done.get("type") == "create_entry", done
    assert done["result"]["state"] == "loaded", done

    for entity_id in (TV, KITCHEN):
        ha.wait_state(entity_id, "off", timeout=60)
    # Each media player belongs to the device the bridge's MQTT discovery created.
    wait_for(lambda: TV in ha.entities_of(f"cast2mqtt_{TV_ID}"), 30, what="the TV media player on the MQTT device")
    assert KITCHEN in ha.entities_of(f"cast2mqtt_{KITCHEN_ID}")
    registry = {e["entity_id"]: e for e in ha.entity_registry()}
    assert registry[TV]["platform"] == "cast2mqtt"
    assert registry[TV]["unique_id"] == f"cast2mqtt_{TV_ID}_media_player"
    # A second entry for the same base topic is refused.
    again = requests.post(f"{ha.base}/api/config/config_entries/flow", headers=ha.headers(), timeout=30,
                          json={"handler": "cast2mqtt"}).json()
    again = requests.post(f"{ha.base}/api/config/config_entries/flow/{again['flow_id']}", headers=ha.headers(),
                          json={"base_topic": "cast2mqtt"}, timeout=30).json()
    assert again.get("type") == "abort" and again.get("reason") == "already_configured", again


def test_media_services_reach_the_device(env: Env):
    ha = env.ha
    service(ha, "media_player", "play_media", entity_id=TV, media_content_id=SONG, media_content_type="music",
            extra={"title": "Song", "metadata": {"artist": "Artist", "album": "Album"}})
    load = wait_received(env, TV_ID, MEDIA, "LOAD", 1, "LOAD on the TV")
    assert load["payload"]["media"]["contentId"] == SONG
    state = ha.wait_state(TV, "playing")
    attrs = state["attributes"]
    assert attrs["media_title"] == "Song" and attrs["media_artist"] == "Artist"
    assert attrs["media_album_name"] == "Album" and attrs["app_name"] == "Default Media Receiver"
    assert attrs["media_content_id"] == SONG and attrs["media_content_type"] == "music"
    features = attrs["supported_features"]
    # PAUSE 1, SEEK 2, VOLUME_SET 4, VOLUME_MUTE 8, PREVIOUS 16, NEXT 32, PLAY_MEDIA 512, PLAY 16384
    for bit in (1, 2, 4, 8, 16, 32, 512, 16384):
        assert features & bit, f"feature {bit} missing from {features}"

    service(ha, "media_player", "volume_set", entity_id=TV, volume_level=0.3)
    ha.wait_state(TV, lambda s: s["attributes"].get("volume_level") == pytest.approx(0.3))
    service(ha, "media_player", "volume_up", entity_id=TV)
    ha.wait_state(TV, lambda s: s["attributes"].get("volume_level") == pytest.approx(0.35))
    service(ha, "media_player", "volume_mute", entity_id=TV, is_volume_muted=True)
    ha.wait_state(TV, lambda s: s["attributes"].get("is_volume_muted") is True)
    service(ha, "media_player", "volume_mute", entity_id=TV, is_volume_muted=False)
    ha.wait_state(TV, lambda s: s["attributes"].get("is_volume_muted") is False)

    service(ha, "media_player", "media_pause", entity_id=TV)
    ha.wait_state(TV, "paused")
    service(ha, "media_player", "media_play", entity_id=TV)
    ha.wait_state(TV, "playing")
    service(ha, "media_player", "media_seek", entity_id=TV, seek_position=42)
    seek = wait_received(env, TV_ID, MEDIA, "SEEK", 1, "SEEK")
    assert seek["payload"]["currentTime"] == 42

    # enqueue: add -> the queue is loaded again with the current item first and the new one last.
    service(ha, "media_player", "play_media", entity_id=TV, media_content_id=SONG2, media_content_type="music",
            enqueue="add")
    queue_load = wait_received(env, TV_ID, MEDIA, "QUEUE_LOAD", 1, "QUEUE_LOAD for enqueue")
    items = [item["media"]["contentId"] for item in queue_load["payload"]["items"]]
    assert items == [SONG, SONG2]
    assert queue_load["payload"].get("currentTime", 0) >= 42
    ha.wait_state(TV, lambda s: s["state"] == "playing" and s["attributes"].get("media_content_id") == SONG)
    service(ha, "media_player", "media_next_track", entity_id=TV)
    wait_received(env, TV_ID, MEDIA, "QUEUE_NEXT", 1, "QUEUE_NEXT")
    ha.wait_state(TV, lambda s: s["attributes"].get("media_content_id") == SONG2)
    service(ha, "media_player", "media_previous_track", entity_id=TV)
    wait_received(env, TV_ID, MEDIA, "QUEUE_PREV", 1, "QUEUE_PREV")
    ha.wait_state(TV, lambda s: s["attributes"].get("media_content_id") == SONG)
    # enqueue: next -> the new item right after the current one, the rest of the queue after it.
    service(ha, "media_player", "play_media", entity_id=TV, media_content_id=SONG3, media_content_type="music",
            enqueue="next")
    queue_load = wait_received(env, TV_ID, MEDIA, "QUEUE_LOAD", 2, "QUEUE_LOAD for enqueue next")
    assert [item["media"]["contentId"] for item in queue_load["payload"]["items"]] == [SONG, SONG3, SONG2]
    ha.wait_state(TV, lambda s: s["state"] == "playing" and s["attributes"].get("media_content_id") == SONG)

    service(ha, "cast2mqtt", "set_playback_rate", entity_id=TV, rate=1.5)
    rate = wait_received(env, TV_ID, MEDIA, "SET_PLAYBACK_RATE", 1, "SET_PLAYBACK_RATE")
    assert rate["payload"]["playbackRate"] == 1.5
    ha.wait_state(TV, lambda s: s["attributes"].get("playback_rate") == 1.5)

    service(ha, "media_player", "media_stop", entity_id=TV)
    wait_received(env, TV_ID, MEDIA, "STOP", 1, "media STOP")
    ha.wait_state(TV, "idle")

    service(ha, "media_player", "turn_off", entity_id=TV)
    wait_received(env, TV_ID, RECEIVER, "STOP", 1, "receiver STOP")
    ha.wait_state(TV, "off")
    launches = len(received(env, TV_ID, RECEIVER, "LAUNCH"))
    service(ha, "media_player", "turn_on", entity_id=TV)
    launch = wait_received(env, TV_ID, RECEIVER, "LAUNCH", launches + 1, "LAUNCH for turn_on")
    assert launch["payload"]["appId"] == "CC1AD845"
    ha.wait_state(TV, "idle")


def test_launch_and_send_message_with_the_reply(env: Env):
    ha = env.ha
    service(ha, "cast2mqtt", "launch", entity_id=KITCHEN, app_id="E7C0A1B0")
    launch = wait_received(env, KITCHEN_ID, RECEIVER, "LAUNCH", 1, "LAUNCH of the echo app")
    assert launch["payload"]["appId"] == "E7C0A1B0"
    ha.wait_state(KITCHEN, lambda s: s["attributes"].get("app_name") == "cast2mqtt Echo")

    response = service(ha, "cast2mqtt", "send_message", return_response=True, entity_id=KITCHEN,
                       namespace=ECHO, data={"cmd": "ping", "n": 1})
    assert response == {KITCHEN: {"namespace": ECHO, "reply": {"cmd": "ping", "n": 1}}}
    sent = env.sim.received(KITCHEN_ID, namespace=ECHO)
    assert sent and sent[-1]["payload"] == {"cmd": "ping", "n": 1}
    # Without a response asked for, the message is only sent.
    assert service(ha, "cast2mqtt", "send_message", entity_id=KITCHEN, namespace=ECHO, data="hello") is None
    wait_for(lambda: any(m.get("payload") == "hello" for m in env.sim.received(KITCHEN_ID, namespace=ECHO)),
             30, what="the text message at the echo app")


def test_position_advances_while_playing(env: Env):
    ha = env.ha
    service(ha, "media_player", "play_media", entity_id=TV, media_content_id=SONG, media_content_type="music")
    playing = ha.wait_state(TV, lambda s: s["state"] == "playing"
                            and s["attributes"].get("media_position_updated_at") is not None)
    # Home Assistant's progress bar runs by itself from position and its timestamp ...
    wait_for(lambda: live_position(playing) >= 1.5, 30, what="the live position to pass 1.5 s")
    # ... and agrees with the device: paused, the device's position has moved on too.
    service(ha, "media_player", "media_pause", entity_id=TV)
    paused = ha.wait_state(TV, "paused")
    assert paused["attributes"]["media_position"] >= 1.0
    assert (datetime.fromisoformat(paused["attributes"]["media_position_updated_at"])
            > datetime.fromisoformat(playing["attributes"]["media_position_updated_at"]))
    service(ha, "media_player", "media_play", entity_id=TV)
    ha.wait_state(TV, "playing")


def test_announce_restores_the_previous_media(env: Env):
    ha = env.ha
    service(ha, "media_player", "play_media", entity_id=TV, media_content_id=SONG, media_content_type="music",
            extra={"title": "Before"})
    ha.wait_state(TV, lambda s: s["state"] == "playing" and s["attributes"].get("media_title") == "Before")
    service(ha, "media_player", "volume_set", entity_id=TV, volume_level=0.4)
    ha.wait_state(TV, lambda s: s["attributes"].get("volume_level") == pytest.approx(0.4))
    service(ha, "media_player", "media_seek", entity_id=TV, seek_position=30)
    ha.wait_state(TV, lambda s: s["attributes"].get("media_position", 0) >= 30)
    loads = len(received(env, TV_ID, MEDIA, "LOAD"))

    # The media browser lists Home Assistant's media sources, down to the clip.
    root, local = ha.ws({"type": "media_player/browse_media", "entity_id": TV},
                        {"type": "media_player/browse_media", "entity_id": TV,
                         "media_content_id": "media-source://media_source/local/.", "media_content_type": "app"})
    assert "media-source://media_source" in [child["media_content_id"] for child in root["children"]], root
    assert CHIME in [child["media_content_id"] for child in local["children"]], local

    # What tts.speak does: play_media with announce and a media-source:// item, which Home
    # Assistant resolves to a signed URL of its own.
    service(ha, "media_player", "play_media", entity_id=TV, media_content_id=CHIME,
            media_content_type="music", announce=True, extra={"volume": 0.8})
    clip = wait_received(env, TV_ID, MEDIA, "LOAD", loads + 1, "the announcement's LOAD")
    clip_url = clip["payload"]["media"]["contentId"]
    assert clip_url.startswith(f"{ha.base}/media/local/chime.mp3?authSig="), clip_url
    assert clip["payload"]["media"]["contentType"] == "audio/mpeg"
    ha.wait_state(TV, lambda s: s["attributes"].get("media_content_id") == clip_url
                  and s["attributes"].get("volume_level") == pytest.approx(0.8))
    env.sim.fault(TV_ID, {"action": "finish_media"})  # the clip ends
    restored = ha.wait_state(TV, lambda s: s["state"] == "playing"
                             and s["attributes"].get("media_content_id") == SONG
                             and s["attributes"].get("volume_level") == pytest.approx(0.4))
    assert restored["attributes"]["media_position"] >= 30
    assert restored["attributes"]["media_title"] == "Before"


def test_tts_announcement_restores_the_previous_media(env: Env):
    ha = env.ha
    service(ha, "media_player", "play_media", entity_id=TV, media_content_id=SONG2, media_content_type="music",
            extra={"title": "Second"})
    ha.wait_state(TV, lambda s: s["state"] == "playing" and s["attributes"].get("media_title") == "Second")
    service(ha, "media_player", "media_pause", entity_id=TV)
    ha.wait_state(TV, "paused")
    loads = len(received(env, TV_ID, MEDIA, "LOAD"))

    # A TTS service: play_media with announce and a media-source://tts/... item.
    service(ha, "tts", "sim_tts_say", entity_id=TV, message="Dinner is ready")
    clip = wait_received(env, TV_ID, MEDIA, "LOAD", loads + 1, "the TTS clip's LOAD")
    clip_url = clip["payload"]["media"]["contentId"]
    assert clip_url.startswith(f"{ha.base}/api/tts_proxy/"), clip_url
    ha.wait_state(TV, lambda s: s["state"] == "playing" and s["attributes"].get("media_content_id") == clip_url)
    env.sim.fault(TV_ID, {"action": "finish_media"})
    ha.wait_state(TV, lambda s: s["state"] == "paused" and s["attributes"].get("media_content_id") == SONG2
                  and s["attributes"].get("media_title") == "Second")


def test_bridge_errors_become_service_errors(env: Env):
    ha = env.ha
    error = service_error(ha, "media_player", "play_media", entity_id=TV,
                          media_content_id="http://127.0.0.1:9/fail-104.mp3", media_content_type="music")
    assert error["code"] == "home_assistant_error", error
    assert "load_failed" in error["message"] and "Living Room TV" in error["message"], error

    error = service_error(ha, "cast2mqtt", "launch", entity_id=TV, app_id="DEADBEEF")
    assert "launch_error" in error["message"], error

    error = service_error(ha, "cast2mqtt", "send_message", entity_id=TV,
                          namespace="urn:x-cast:com.google.cast.tp.heartbeat", data={"type": "PING"})
    assert "namespace_not_allowed" in error["message"], error

    # No reply from the app within the bridge's wait: the bridge's `timeout` reaches the user.
    error = service_error(ha, "cast2mqtt", "send_message", entity_id=TV, namespace="urn:x-cast:com.google.cast.cac",
                          data={"type": "NOTHING"}, reply=True, timeout=1)
    assert "timeout" in error["message"], error

    # No response at all (the bridge is stopped with SIGSTOP; it still looks online): the
    # integration gives up after its 20 s and says so.
    env.bridge.process.send_signal(signal.SIGSTOP)
    try:
        error = service_error(ha, "media_player", "volume_mute", entity_id=TV, is_volume_muted=False)
    finally:
        env.bridge.process.send_signal(signal.SIGCONT)
    assert "timeout" in error["message"] and "no response from the cast2mqtt bridge" in error["message"], error

    # Home Assistant's own validation stops bad input before it reaches the bridge.
    error = service_error(ha, "cast2mqtt", "set_playback_rate", entity_id=TV, rate=3)
    assert error["code"] == "invalid_format", error


def test_transfer_moves_playback(env: Env):
    ha = env.ha
    service(ha, "media_player", "play_media", entity_id=TV, media_content_id=SONG, media_content_type="music")
    ha.wait_state(TV, "playing")
    response = service(ha, "cast2mqtt", "transfer", return_response=True, entity_id=TV, to=KITCHEN)
    assert response[TV]["from"] == "living_room_tv" and response[TV]["to"] == "kitchen", response
    ha.wait_state(KITCHEN, lambda s: s["state"] == "playing" and s["attributes"].get("media_content_id") == SONG)
    ha.wait_state(TV, lambda s: s["state"] in ("idle", "off"))


def test_availability_follows_the_bridge(env: Env):
    ha = env.ha
    env.bridge.stop()
    ha.wait_state(TV, "unavailable")
    env.bridge.start()
    ha.wait_state(TV, lambda s: s["state"] != "unavailable", timeout=60)


def restart_bridge(env: Env, exclude: list[str] | None = None) -> None:
    env.bridge.stop()
    env.bridge.exclude = exclude or []
    env.bridge.start()


def kitchen_gone(ha: HomeAssistant) -> None:
    wait_for(lambda: ha.state(KITCHEN) is None, 60, what="media_player.kitchen to go")
    assert KITCHEN not in {e["entity_id"] for e in ha.entity_registry()}
    wait_for(lambda: not any(["mqtt", f"cast2mqtt_{KITCHEN_ID}"] in d["identifiers"] for d in ha.device_registry()),
             30, what="the kitchen's device to go")


def kitchen_back(ha: HomeAssistant) -> None:
    ha.wait_state(KITCHEN, lambda s: s["state"] not in ("unavailable", "unknown"), timeout=60)
    assert KITCHEN in ha.entities_of(f"cast2mqtt_{KITCHEN_ID}")


def test_devices_follow_removal_and_addition(env: Env):
    ha = env.ha
    # 1. `bridge/request/remove`: the bridge publishes `device_removed` and clears the kitchen's
    #    topics; its media player goes with its device. A restart finds the (static) kitchen again.
    env.observer.publish("cast2mqtt/bridge/request/remove", '{"device": "kitchen"}')
    kitchen_gone(ha)
    assert ha.state(TV)["state"] != "unavailable"
    restart_bridge(env)
    kitchen_back(ha)

    # 2. A restart with the kitchen excluded: that run never sees the kitchen, so there is no
    #    event; it clears the kitchen's retained topics and lists only the TV.
    restart_bridge(env, exclude=["Kitchen"])
    kitchen_gone(ha)
    restart_bridge(env)
    kitchen_back(ha)

    # 3. Missing from the list alone is not removal (a restarting bridge lists devices as it
    #    finds them): the media player stays.
    devices = env.observer.json("cast2mqtt/bridge/devices")
    env.observer.publish("cast2mqtt/bridge/devices", json.dumps([d for d in devices if d["id"] != KITCHEN_ID]))
    time.sleep(1)  # give a wrong removal the chance to show
    assert ha.state(KITCHEN) is not None


def test_home_assistant_restart_keeps_the_media_players(env: Env):
    ha = env.ha
    before = {e["entity_id"]: e["unique_id"] for e in ha.entity_registry() if e["platform"] == "cast2mqtt"}
    ha.stop()
    ha.start()
    ha.login()
    for entity_id in (TV, KITCHEN):
        ha.wait_state(entity_id, lambda s: s["state"] not in ("unavailable", "unknown"), timeout=60)
    after = {e["entity_id"]: e["unique_id"] for e in ha.entity_registry() if e["platform"] == "cast2mqtt"}
    assert after == before


def test_hostile_payloads_change_nothing_they_should_not(env: Env):
    """Anything on the bridge's topics is parsed before use: bad payloads are dropped, the player
    stays, and nothing is logged (the last test checks the log). Runs last but one: it leaves
    the TV's media player with whatever the bad documents left (the bridge republishes only on
    change)."""
    ha, mqtt = env.ha, env.observer
    before = ha.wait_state(TV, lambda s: s["state"] not in ("unavailable", "unknown"))
    bad = [
        ("cast2mqtt/living_room_tv/state", b"exploded"),
        ("cast2mqtt/living_room_tv/state", b"\xff\xfe"),
        ("cast2mqtt/living_room_tv/availability", b"maybe"),
        ("cast2mqtt/living_room_tv/receiver", b"[1, 2, 3]"),
        ("cast2mqtt/living_room_tv/receiver", json.dumps({"volume": {"level": 7, "muted": "yes", "step": -1},
                                                          "app_name": ["x"]}).encode()),
        ("cast2mqtt/living_room_tv/media", b"{not json"),
        ("cast2mqtt/living_room_tv/media", json.dumps({
            "state": "playing", "media_session_id": 1, "position": "NaN", "duration": -5, "title": 5,
            "images": [1, {"url": "javascript:alert(1)"}], "supported_commands": "pause",
            "position_updated_at": "2026-99-99T00:00:00Z", "season": True, "track": "x", "queue": [1]}).encode()),
        ("cast2mqtt/living_room_tv/media", b'{"position": NaN, "duration": Infinity}'),
        ("cast2mqtt/bridge/devices", b"{}"),
        ("cast2mqtt/bridge/devices", json.dumps([{"id": "../x", "topic": "a/b"}, {"id": 5}, 7, None]).encode()),
        ("cast2mqtt/bridge/event", b'{"type": "device_removed", "id": {"a": 1}}'),
        ("cast2mqtt/bridge/event", b'{"type": "device_removed", "id": "not-a-known-device"}'),
        ("cast2mqtt/living_room_tv/response", b'{"id": ["x"], "status": "ok"}'),
        ("cast2mqtt/living_room_tv/response", b"\x00" * 1000),
        ("cast2mqtt/Bad Name/media", b"{}"),
        ("cast2mqtt/living_room_tv/media", b"x" * (2 * 1024 * 1024)),
    ]
    for topic, payload in bad:
        mqtt.publish(topic, payload)
    # A last good message shows that everything before it was handled.
    mqtt.publish("cast2mqtt/living_room_tv/receiver", json.dumps({"app_name": "After", "volume": {"level": 0.25}}))
    after = ha.wait_state(TV, lambda s: s["attributes"].get("app_name") == "After")
    assert after["state"] == before["state"]
    assert after["attributes"]["volume_level"] == 0.25
    assert ha.state(KITCHEN) is not None


def log_records(log: str) -> list[tuple[str, str, str]]:
    """home-assistant.log as (level, logger, text with continuation lines) records."""
    records: list[tuple[str, str, str]] = []
    for line in log.splitlines():
        match = re.match(r"^\d{4}-\d\d-\d\d [\d:.]+ (\w+) \([^)]*\) \[([^\]]+)\] ", line)
        if match:
            records.append((match.group(1), match.group(2), line))
        elif records:
            level, logger, text = records[-1]
            records[-1] = (level, logger, text + "\n" + line)
    return records


def test_home_assistant_logs_nothing_about_the_integration(env: Env):
    """No warning or error in home-assistant.log that concerns the integration. Not counted:
    Home Assistant's note that it has not tested a custom integration (logged for every one), the
    service errors the tests above cause on purpose (the websocket logs them), and the MQTT
    integration's records about the bridge's discovery configs (test_discovery.py checks those)."""
    venv = str(HA_VENV)
    # Home Assistant moves the previous run's log to home-assistant.log.1 when it starts (this
    # module restarts it once).
    previous = env.ha.config_dir / "home-assistant.log.1"
    log = (previous.read_text(errors="replace") if previous.exists() else "") + env.ha.log()
    problems = [
        text for level, logger, text in log_records(log)
        if level in ("WARNING", "ERROR", "CRITICAL")
        and "cast2mqtt" in text.replace(venv, "")
        and "which has not been tested by Home Assistant" not in text
        and not logger.startswith("homeassistant.components.websocket_api")
        and not logger.startswith("homeassistant.components.mqtt")
    ]
    assert problems == [], "\n".join(problems)
