"""The cast2mqtt custom integration (custom_components/cast2mqtt) in a real Home Assistant.

One broker, cast-sim with two devices, the bridge and Home Assistant per module (starting Home
Assistant takes most of a run's time); Home Assistant reaches the broker through a TCPProxy so a
test can cut its connection alone. Before every test the `fresh` fixture resets both simulated
devices (a reboot: no app, volume 0.5, nothing recorded) and waits until the bridge and Home
Assistant show that, so each test stands alone and can fail alone. A test that stops the bridge
or cuts a connection puts it back in `finally`. Every wait is bounded; nothing asserts timings.

"""

from __future__ import annotations

import asyncio
from concurrent.futures import Future, ThreadPoolExecutor
import json
import os
import pathlib
import re
import signal
import time
from datetime import datetime
from typing import Any

import pytest
import requests

from conftest import KITCHEN as KITCHEN_DEVICE, LIVING_ROOM
from harness import HA_VENV, ROOT, HomeAssistant, TCPProxy, wait_for

TV_ID = LIVING_ROOM[1]
KITCHEN_ID = KITCHEN_DEVICE[1]
TV = "media_player.living_room_tv"
KITCHEN = "media_player.kitchen"
MEDIA = "urn:x-cast:com.google.cast.media"
RECEIVER = "urn:x-cast:com.google.cast.receiver"
ECHO = "urn:x-cast:com.cast2mqtt.echo"
ECHO_APP = "E7C0A1B0"
SONG = "http://127.0.0.1:9/music/song.mp3"
SONG2 = "http://127.0.0.1:9/music/second.mp3"
SONG3 = "http://127.0.0.1:9/music/third.mp3"
RADIO = "http://127.0.0.1:9/radio/stream.mp3"
CHIME = "media-source://media_source/local/chime.mp3"
DING = "media-source://media_source/local/ding.mp3"

# media_player features (MediaPlayerEntityFeature)
PAUSE, SEEK, VOLUME_SET, VOLUME_MUTE, PREVIOUS, NEXT = 1, 2, 4, 8, 16, 32
TURN_ON, TURN_OFF, PLAY_MEDIA, VOLUME_STEP, STOP, PLAY = 128, 256, 512, 1024, 4096, 16384
SHUFFLE_SET, REPEAT_SET = 32768, 262144


# The module's Home Assistant: the integration loaded from the repository folder, a test TTS
# engine, media_source for media-source:// items, diagnostics, and a local media folder.
# CAST2MQTT_INTEGRATION: another copy of the integration to run these tests against (e.g. an
# older version, to see which findings it has).
INTEGRATION = pathlib.Path(os.environ.get("CAST2MQTT_INTEGRATION", str(ROOT / "custom_components" / "cast2mqtt")))
HOME_ASSISTANT = {
    "custom_components": [INTEGRATION,
                          ROOT / "Tests" / "homeassistant" / "custom_components" / "sim_tts"],
    # tts needs the ffmpeg integration, which only asks the binary for its version at start;
    # the test never converts audio, so /bin/true stands in for an ffmpeg that is not installed.
    "extra_config": "media_source:\ntts:\n  - platform: sim_tts\nffmpeg:\n  ffmpeg_bin: /bin/true\ndiagnostics:\n",
    "media_files": {"chime.mp3": b"ID3 not really an mp3", "ding.mp3": b"ID3 not really an mp3 either"},
}


@pytest.fixture(scope="module")
def ha_link(broker) -> TCPProxy:
    proxy = TCPProxy(broker.port)
    yield proxy
    proxy.stop()


@pytest.fixture(scope="module")
def ha(workdir, broker, ha_link) -> HomeAssistant:
    h = HomeAssistant(workdir, broker, mqtt_port=ha_link.port, **HOME_ASSISTANT)
    try:
        h.start()
        h.setup()
    except BaseException:
        print(h.log()[-6000:])
        h.stop()
        raise
    yield h
    h.stop()


class Env:
    """The module's fixtures in one object."""

    def __init__(self, sim, bridge, mqtt, ha, link, entry_id):
        self.sim, self.bridge, self.observer, self.ha, self.link = sim, bridge, mqtt, ha, link
        self.entry_id = entry_id


def flow(ha: HomeAssistant, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = requests.post(f"{ha.base}/api/config/config_entries/flow{path}", headers=ha.headers(),
                             json=body, timeout=30)
    return response.json()


@pytest.fixture(scope="module")
def env(sim, bridge, mqtt, ha, ha_link) -> Env:
    wait_for(lambda: mqtt.get("cast2mqtt/living_room_tv/availability") == b"online"
             and mqtt.get("cast2mqtt/kitchen/availability") == b"online", 30, what="both devices online on MQTT")
    # The entry, through the user flow (test_config_flow checks the flow's other branches).
    started = flow(ha, "", {"handler": "cast2mqtt", "show_advanced_options": False})
    done = flow(ha, f"/{started['flow_id']}", {"base_topic": "cast2mqtt"})
    assert done.get("type") == "create_entry", done
    return Env(sim, bridge, mqtt, ha, ha_link, done["result"]["entry_id"])


def device_ready(env: Env, entity_id: str, topic: str) -> bool:
    """Off in Home Assistant (which shows no volume while off) and at volume 0.5 on MQTT."""
    s = env.ha.state(entity_id)
    receiver = env.observer.json(f"cast2mqtt/{topic}/receiver") or {}
    return (bool(s) and s["state"] == "off"
            and (receiver.get("volume") or {}).get("level") == pytest.approx(0.5))


def switch_on(env: Env, entity_id: str = TV) -> None:
    """The Default Media Receiver, idle: Home Assistant shows volume attributes only while on."""
    service(env.ha, "media_player", "turn_on", entity_id=entity_id)
    env.ha.wait_state(entity_id, "idle")


@pytest.fixture(autouse=True)
def fresh(env: Env):
    """Both devices rebooted to no app and volume 0.5, the bridge reconnected to them, Home
    Assistant showing it; the bridge and Home Assistant's broker link up."""
    env.link.restore()
    if env.bridge.process is None or not env.bridge.process.alive():
        env.bridge.start()
    availability = {topic: env.observer.count.get(f"cast2mqtt/{topic}/availability", 0)
                    for topic in ("living_room_tv", "kitchen")}
    for device_id in (TV_ID, KITCHEN_ID):
        env.sim.reset(device_id)
    for topic, before in availability.items():
        # The bridge saw the reboot (offline) and is back (online).
        wait_for(lambda topic=topic, before=before:
                 env.observer.count.get(f"cast2mqtt/{topic}/availability", 0) >= before + 2
                 and env.observer.get(f"cast2mqtt/{topic}/availability") == b"online", 30,
                 what=f"{topic} to reconnect after the reset")
    for entity_id, topic in ((TV, "living_room_tv"), (KITCHEN, "kitchen")):
        wait_for(lambda entity_id=entity_id, topic=topic: device_ready(env, entity_id, topic), 30,
                 what=f"{entity_id} to be off at volume 0.5")
    yield


def call_ws(ha: HomeAssistant, domain: str, service: str, data: dict[str, Any],
            return_response: bool = False, timeout: float = 90) -> dict[str, Any]:
    """`call_service` over the websocket; returns the whole result message (success or error)."""
    return ws_command(ha, {"type": "call_service", "domain": domain, "service": service, "service_data": data,
                           **({"return_response": True} if return_response else {})}, timeout)


def ws_command(ha: HomeAssistant, message: dict[str, Any], timeout: float = 90) -> dict[str, Any]:
    async def run() -> dict[str, Any]:
        import aiohttp

        token = ha.headers()["Authorization"].split(" ", 1)[1]
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(f"{ha.base}/api/websocket") as ws:
                await ws.receive_json(timeout=timeout)
                await ws.send_json({"type": "auth", "access_token": token})
                assert (await ws.receive_json(timeout=timeout))["type"] == "auth_ok"
                await ws.send_json({"id": 1, **message})
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


_POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="ha-call")


def in_background(function, *args, **kwargs) -> Future:
    """Runs a blocking call (a service call that answers late on purpose) on a worker thread."""
    return _POOL.submit(function, *args, **kwargs)


def received(env: Env, device_id: str, namespace: str, type_: str) -> list[dict[str, Any]]:
    return env.sim.received(device_id, namespace=namespace, type=type_)


def wait_received(env: Env, device_id: str, namespace: str, type_: str, count: int, what: str) -> dict[str, Any]:
    messages = wait_for(lambda: (m := received(env, device_id, namespace, type_)) and len(m) >= count and m,
                        30, what=what)
    return messages[-1]


def loaded_urls(env: Env, device_id: str = TV_ID) -> list[str]:
    """Every contentId the device was asked to LOAD, in order."""
    return [m["payload"]["media"]["contentId"] for m in received(env, device_id, MEDIA, "LOAD")]


def live_position(state: dict[str, Any]) -> float:
    """What Home Assistant's progress bar shows: position + time since its timestamp."""
    attrs = state["attributes"]
    updated = datetime.fromisoformat(attrs["media_position_updated_at"])
    return attrs["media_position"] + max(0.0, time.time() - updated.timestamp())


def play(env: Env, url: str = SONG, title: str | None = None, entity_id: str = TV) -> dict[str, Any]:
    """Plays `url` through the integration and waits until Home Assistant shows it playing."""
    data: dict[str, Any] = {"entity_id": entity_id, "media_content_id": url, "media_content_type": "music"}
    if title:
        data["extra"] = {"title": title}
    service(env.ha, "media_player", "play_media", **data)
    return env.ha.wait_state(entity_id, lambda s: s["state"] == "playing"
                             and s["attributes"].get("media_content_id") == url)


def load_queue(env: Env, urls: list[str]) -> None:
    """A queue on the TV, loaded over MQTT (the media player has no action that loads one)."""
    env.observer.publish("cast2mqtt/living_room_tv/command/load",
                         json.dumps({"queue": [{"url": u, "title": f"Item {n}"} for n, u in enumerate(urls, 1)]}))
    env.ha.wait_state(TV, lambda s: s["state"] == "playing" and s["attributes"].get("media_content_id") == urls[0])


def barrier(env: Env, topic: str = "living_room_tv") -> None:
    """Waits until the bridge has worked through what it had for the device: a `refresh` runs
    after every command queued before it, and its answer comes after theirs."""
    marker = f"barrier-{time.monotonic_ns()}"
    env.observer.publish(f"cast2mqtt/{topic}/command/refresh", json.dumps({"id": marker}))
    wait_for(lambda: (r := env.observer.json(f"cast2mqtt/{topic}/response")) and r.get("id") == marker,
             30, what="the bridge's answer to a refresh")


def features(env: Env, entity_id: str = TV) -> int:
    return env.ha.state(entity_id)["attributes"]["supported_features"]


def announce_and_finish(env: Env, clip: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """`play_media` with `announce` (what tts.speak does) while the test ends the clip once the
    device plays it, as a real clip would end; returns the service call's result message."""
    loads = len(received(env, TV_ID, MEDIA, "LOAD"))
    call = in_background(call_ws, env.ha, "media_player", "play_media",
                         {"entity_id": TV, "media_content_id": clip, "media_content_type": "music",
                          "announce": True, **({"extra": extra} if extra else {})})
    clip_load = wait_received(env, TV_ID, MEDIA, "LOAD", loads + 1, "the announcement's LOAD")
    clip_url = clip_load["payload"]["media"]["contentId"]
    env.ha.wait_state(TV, lambda s: s["attributes"].get("media_content_id") == clip_url)
    env.sim.fault(TV_ID, {"action": "finish_media"})  # the clip ends
    return {"reply": call.result(timeout=120), "clip_url": clip_url, "clip_load": clip_load}


# MARK: - Config flow and entities

def test_config_flow_branches_and_a_media_player_per_device(env: Env):
    ha = env.ha
    started = flow(ha, "", {"handler": "cast2mqtt", "show_advanced_options": False})
    assert started.get("type") == "form" and started.get("step_id") == "user", started
    assert [f["name"] for f in started["data_schema"]] == ["base_topic"]
    # A wildcard is refused with a form error; the configured base topic is refused as a duplicate.
    bad = flow(ha, f"/{started['flow_id']}", {"base_topic": "cast2mqtt/#"})
    assert bad.get("errors") == {"base_topic": "invalid_topic"}, bad
    again = flow(ha, f"/{started['flow_id']}", {"base_topic": "cast2mqtt"})
    assert again.get("type") == "abort" and again.get("reason") == "already_configured", again

    # Each media player belongs to the device the bridge's MQTT discovery created, has the base
    # topic in its unique id and the device class of the Cast type (cast-sim's are video: TVs).
    wait_for(lambda: TV in ha.entities_of(f"cast2mqtt_{TV_ID}"), 30, what="the TV media player on the MQTT device")
    assert KITCHEN in ha.entities_of(f"cast2mqtt_{KITCHEN_ID}")
    registry = {e["entity_id"]: e for e in ha.entity_registry()}
    assert registry[TV]["platform"] == "cast2mqtt"
    assert registry[TV]["unique_id"] == f"cast2mqtt:{TV_ID}:media_player"
    assert ha.state(TV)["attributes"].get("device_class") == "tv"


def test_diagnostics_show_devices_and_responses_without_secrets(env: Env):
    ha = env.ha
    # A media-source clip: Home Assistant signs its URL (authSig=...), which must not show.
    service(ha, "media_player", "play_media", entity_id=TV, media_content_id=CHIME, media_content_type="music")
    ha.wait_state(TV, lambda s: "authSig=" in (s["attributes"].get("media_content_id") or ""))
    diagnostics = ha.get(f"/api/diagnostics/config_entry/{env.entry_id}")["data"]
    assert diagnostics["entry"]["data"] == {"base_topic": "cast2mqtt"}
    assert diagnostics["bridge"]["online"] is True and diagnostics["bridge"]["mqtt_connected"] is True
    devices = {d["topic"]: d for d in diagnostics["devices"]}
    assert set(devices) == {"living_room_tv", "kitchen"}
    assert devices["living_room_tv"]["availability"] == "online"
    assert devices["living_room_tv"]["media"]["content_id"].startswith(f"{ha.base}/media/local/chime.mp3")
    assert any(r["command"] == "load" and r["status"] == "ok" for r in diagnostics["last_responses"])
    assert devices["living_room_tv"]["receiver"]["session_id"] == "**REDACTED**"
    assert "authSig" not in json.dumps(diagnostics)


# MARK: - Controls

def test_play_media_with_metadata_reaches_the_device(env: Env):
    ha = env.ha
    service(ha, "media_player", "play_media", entity_id=TV, media_content_id=SONG, media_content_type="music",
            extra={"title": "Song", "metadata": {"artist": "Artist", "album": "Album"}})
    load = wait_received(env, TV_ID, MEDIA, "LOAD", 1, "LOAD on the TV")
    assert load["payload"]["media"]["contentId"] == SONG
    attrs = ha.wait_state(TV, "playing")["attributes"]
    assert attrs["media_title"] == "Song" and attrs["media_artist"] == "Artist"
    assert attrs["media_album_name"] == "Album" and attrs["app_name"] == "Default Media Receiver"
    assert attrs["media_content_id"] == SONG and attrs["media_content_type"] == "music"
    for bit in (PAUSE, SEEK, VOLUME_SET, VOLUME_MUTE, PREVIOUS, NEXT, PLAY_MEDIA, STOP, PLAY):
        assert attrs["supported_features"] & bit, f"feature {bit} missing from {attrs['supported_features']}"


def test_volume_set_and_mute(env: Env):
    ha = env.ha
    switch_on(env)
    service(ha, "media_player", "volume_set", entity_id=TV, volume_level=0.3)
    ha.wait_state(TV, lambda s: s["attributes"].get("volume_level") == pytest.approx(0.3))
    service(ha, "media_player", "volume_mute", entity_id=TV, is_volume_muted=True)
    ha.wait_state(TV, lambda s: s["attributes"].get("is_volume_muted") is True)
    service(ha, "media_player", "volume_mute", entity_id=TV, is_volume_muted=False)
    ha.wait_state(TV, lambda s: s["attributes"].get("is_volume_muted") is False)


def test_quick_volume_presses_add_up(env: Env):
    """Two volume_up presses at once: each is a relative step on the bridge (`+5`), so both count
    (reading the level and setting level + step would set 0.55 twice)."""
    ha = env.ha
    switch_on(env)
    presses = [in_background(call_ws, ha, "media_player", "volume_up", {"entity_id": TV}) for _ in range(2)]
    for press in presses:
        assert press.result(timeout=60).get("success"), press.result()
    ha.wait_state(TV, lambda s: s["attributes"].get("volume_level") == pytest.approx(0.6))
    assert env.sim.state(TV_ID)["receiverStatus"]["volume"]["level"] == pytest.approx(0.6)
    service(ha, "media_player", "volume_down", entity_id=TV)
    ha.wait_state(TV, lambda s: s["attributes"].get("volume_level") == pytest.approx(0.55))


def test_pause_play_seek(env: Env):
    ha = env.ha
    play(env)
    service(ha, "media_player", "media_pause", entity_id=TV)
    ha.wait_state(TV, "paused")
    service(ha, "media_player", "media_play", entity_id=TV)
    ha.wait_state(TV, "playing")
    service(ha, "media_player", "media_seek", entity_id=TV, seek_position=42)
    seek = wait_received(env, TV_ID, MEDIA, "SEEK", 1, "SEEK")
    assert seek["payload"]["currentTime"] == 42


def test_stopped_player_offers_no_transport_controls(env: Env):
    """After media_stop the media document keeps the ended session (idle, cancelled, its id and
    supported commands): the player must not offer pause, seek, next or previous any more."""
    ha = env.ha
    play(env)
    assert features(env) & (PAUSE | SEEK | NEXT | PREVIOUS | STOP) == PAUSE | SEEK | NEXT | PREVIOUS | STOP
    service(ha, "media_player", "media_stop", entity_id=TV)
    wait_received(env, TV_ID, MEDIA, "STOP", 1, "media STOP")
    stopped = ha.wait_state(TV, "idle")
    assert stopped["attributes"]["supported_features"] & (PAUSE | SEEK | NEXT | PREVIOUS | STOP | PLAY) == 0
    # What stays: playing something new, volume, power.
    for bit in (PLAY_MEDIA, VOLUME_SET, VOLUME_STEP, TURN_ON, TURN_OFF):
        assert stopped["attributes"]["supported_features"] & bit
    # And the UI's next button is gone for a reason: the device would refuse it.
    media = env.observer.json("cast2mqtt/living_room_tv/media")
    assert media["state"] == "idle" and media.get("idle_reason") == "cancelled"


def test_next_and_previous_in_a_queue(env: Env):
    ha = env.ha
    load_queue(env, [SONG, SONG2])
    service(ha, "media_player", "media_next_track", entity_id=TV)
    wait_received(env, TV_ID, MEDIA, "QUEUE_NEXT", 1, "QUEUE_NEXT")
    ha.wait_state(TV, lambda s: s["attributes"].get("media_content_id") == SONG2)
    service(ha, "media_player", "media_previous_track", entity_id=TV)
    wait_received(env, TV_ID, MEDIA, "QUEUE_PREV", 1, "QUEUE_PREV")
    ha.wait_state(TV, lambda s: s["attributes"].get("media_content_id") == SONG)


def test_enqueue_add_inserts_at_the_end_without_interrupting(env: Env):
    """On item 1 of a 3-item queue, enqueue add puts the new item last; nothing is reloaded (a
    device describes only the current item, so a reload loses the others)."""
    ha = env.ha
    load_queue(env, [SONG, SONG2, SONG3])
    queue_loads = len(received(env, TV_ID, MEDIA, "QUEUE_LOAD"))
    service(ha, "media_player", "play_media", entity_id=TV, media_content_id=RADIO, media_content_type="music",
            enqueue="add")
    insert = wait_received(env, TV_ID, MEDIA, "QUEUE_INSERT", 1, "QUEUE_INSERT for enqueue add")
    assert [i["media"]["contentId"] for i in insert["payload"]["items"]] == [RADIO]
    assert "insertBefore" not in insert["payload"]
    barrier(env)
    assert len(received(env, TV_ID, MEDIA, "QUEUE_LOAD")) == queue_loads
    assert loaded_urls(env) == []
    media = env.observer.json("cast2mqtt/living_room_tv/media")
    assert [i["content_id"] for i in media["queue"]["items"]] == [SONG, SONG2, SONG3, RADIO]
    assert ha.state(TV)["attributes"]["media_content_id"] == SONG


def test_enqueue_next_inserts_after_the_current_item(env: Env):
    ha = env.ha
    load_queue(env, [SONG, SONG2, SONG3])
    service(ha, "media_player", "play_media", entity_id=TV, media_content_id=RADIO, media_content_type="music",
            enqueue="next")
    wait_received(env, TV_ID, MEDIA, "QUEUE_INSERT", 1, "QUEUE_INSERT for enqueue next")
    barrier(env)
    media = env.observer.json("cast2mqtt/living_room_tv/media")
    assert [i["content_id"] for i in media["queue"]["items"]] == [SONG, RADIO, SONG2, SONG3]
    assert ha.state(TV)["attributes"]["media_content_id"] == SONG


def test_enqueue_play_plays_now_and_keeps_the_queue(env: Env):
    ha = env.ha
    load_queue(env, [SONG, SONG2, SONG3])
    service(ha, "media_player", "play_media", entity_id=TV, media_content_id=RADIO, media_content_type="music",
            enqueue="play")
    ha.wait_state(TV, lambda s: s["attributes"].get("media_content_id") == RADIO)
    media = env.observer.json("cast2mqtt/living_room_tv/media")
    assert [i["content_id"] for i in media["queue"]["items"]] == [SONG, RADIO, SONG2, SONG3]
    assert len(received(env, TV_ID, MEDIA, "QUEUE_LOAD")) == 1  # only the test's own


def test_enqueue_with_nothing_playing_loads_the_item(env: Env):
    ha = env.ha
    service(ha, "media_player", "play_media", entity_id=TV, media_content_id=SONG, media_content_type="music",
            enqueue="add")
    ha.wait_state(TV, lambda s: s["state"] == "playing" and s["attributes"].get("media_content_id") == SONG)
    assert loaded_urls(env) == [SONG]


def test_repeat_follows_the_queue(env: Env):
    ha = env.ha
    load_queue(env, [SONG, SONG2])
    assert features(env) & REPEAT_SET
    service(ha, "media_player", "repeat_set", entity_id=TV, repeat="all")
    update = wait_received(env, TV_ID, MEDIA, "QUEUE_UPDATE", 1, "QUEUE_UPDATE with the repeat mode")
    assert update["payload"]["repeatMode"] == "REPEAT_ALL"
    ha.wait_state(TV, lambda s: s["attributes"].get("repeat") == "all")


def test_shuffle_reorders_the_queue_once(env: Env):
    ha = env.ha
    load_queue(env, [SONG, SONG2, SONG3])
    assert features(env) & SHUFFLE_SET
    service(ha, "media_player", "shuffle_set", entity_id=TV, shuffle=True)
    update = wait_received(env, TV_ID, MEDIA, "QUEUE_UPDATE", 1, "QUEUE_UPDATE with shuffle")
    assert update["payload"]["shuffle"] is True
    barrier(env)
    media = env.observer.json("cast2mqtt/living_room_tv/media")
    assert sorted(i["content_id"] for i in media["queue"]["items"]) == sorted([SONG, SONG2, SONG3])
    assert ha.state(TV)["attributes"]["media_content_id"] == SONG, "what plays goes on"


def test_enqueue_into_another_apps_queue_is_refused(env: Env):
    """A media app the bridge did not start (here cast-sim's Sim Music, as Spotify) owns its
    queue: enqueue is refused with a clear error instead of replacing the app."""
    ha = env.ha
    env.sim.fault(TV_ID, {"action": "remote_load", "app_id": "5E3A1C01",
                          "queue": {"items": [{"media": {"contentId": "music:track:1"}}, {"media": {"contentId": "music:track:2"}}]}})
    ha.wait_state(TV, lambda s: s["state"] == "playing" and s["attributes"].get("app_name") == "Sim Music")
    launches = len(received(env, TV_ID, RECEIVER, "LAUNCH"))
    error = service_error(ha, "media_player", "play_media", entity_id=TV, media_content_id=SONG, media_content_type="music",
                          enqueue="add")
    assert "bridge did not start" in error["message"], error
    barrier(env)
    assert received(env, TV_ID, MEDIA, "QUEUE_INSERT") == []
    assert len(received(env, TV_ID, RECEIVER, "LAUNCH")) == launches
    assert ha.state(TV)["attributes"].get("app_name") == "Sim Music"


def test_turn_on_leaves_a_running_app_alone(env: Env):
    """turn_on on a player whose app runs (here the echo app, as Spotify or Netflix would) does
    not launch the Default Media Receiver over it."""
    ha = env.ha
    service(ha, "cast2mqtt", "launch", entity_id=TV, app_id=ECHO_APP)
    ha.wait_state(TV, lambda s: s["attributes"].get("app_name") == "cast2mqtt Echo")
    launches = len(received(env, TV_ID, RECEIVER, "LAUNCH"))
    service(ha, "media_player", "turn_on", entity_id=TV)
    barrier(env)
    assert len(received(env, TV_ID, RECEIVER, "LAUNCH")) == launches
    assert ha.state(TV)["attributes"].get("app_name") == "cast2mqtt Echo"


def test_turn_off_when_off_does_nothing(env: Env):
    ha = env.ha
    assert ha.state(TV)["state"] == "off"
    service(ha, "media_player", "turn_off", entity_id=TV)  # no error
    barrier(env)
    assert received(env, TV_ID, RECEIVER, "STOP") == []


def test_turn_on_and_off(env: Env):
    ha = env.ha
    service(ha, "media_player", "turn_on", entity_id=TV)
    launch = wait_received(env, TV_ID, RECEIVER, "LAUNCH", 1, "LAUNCH for turn_on")
    assert launch["payload"]["appId"] == "CC1AD845"
    ha.wait_state(TV, "idle")
    service(ha, "media_player", "turn_off", entity_id=TV)
    wait_received(env, TV_ID, RECEIVER, "STOP", 1, "receiver STOP")
    ha.wait_state(TV, "off")


def test_set_playback_rate(env: Env):
    ha = env.ha
    play(env)
    service(ha, "cast2mqtt", "set_playback_rate", entity_id=TV, rate=1.5)
    rate = wait_received(env, TV_ID, MEDIA, "SET_PLAYBACK_RATE", 1, "SET_PLAYBACK_RATE")
    assert rate["payload"]["playbackRate"] == 1.5
    ha.wait_state(TV, lambda s: s["attributes"].get("playback_rate") == 1.5)


def test_launch_and_send_message_with_the_reply(env: Env):
    ha = env.ha
    service(ha, "cast2mqtt", "launch", entity_id=KITCHEN, app_id=ECHO_APP)
    launch = wait_received(env, KITCHEN_ID, RECEIVER, "LAUNCH", 1, "LAUNCH of the echo app")
    assert launch["payload"]["appId"] == ECHO_APP
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


def test_transfer_to_another_media_player(env: Env):
    ha = env.ha
    play(env)
    response = service(ha, "cast2mqtt", "transfer", return_response=True, entity_id=TV, to=KITCHEN)
    assert response[TV]["from"] == "living_room_tv" and response[TV]["to"] == "kitchen", response
    ha.wait_state(KITCHEN, lambda s: s["state"] == "playing" and s["attributes"].get("media_content_id") == SONG)
    ha.wait_state(TV, lambda s: s["state"] in ("idle", "off"))


# MARK: - Announcements

def test_media_browser_lists_the_media_sources(env: Env):
    root, local = env.ha.ws({"type": "media_player/browse_media", "entity_id": TV},
                            {"type": "media_player/browse_media", "entity_id": TV,
                             "media_content_id": "media-source://media_source/local/.", "media_content_type": "app"})
    assert "media-source://media_source" in [child["media_content_id"] for child in root["children"]], root
    assert CHIME in [child["media_content_id"] for child in local["children"]], local


def test_announce_restores_the_previous_media(env: Env):
    ha = env.ha
    play(env, SONG, "Before")
    service(ha, "media_player", "volume_set", entity_id=TV, volume_level=0.4)
    ha.wait_state(TV, lambda s: s["attributes"].get("volume_level") == pytest.approx(0.4))
    service(ha, "media_player", "media_seek", entity_id=TV, seek_position=30)
    ha.wait_state(TV, lambda s: s["attributes"].get("media_position", 0) >= 30)

    # What tts.speak does: play_media with announce and a media-source:// item, which Home
    # Assistant resolves to a signed URL of its own.
    done = announce_and_finish(env, CHIME, {"volume": 0.8})
    assert done["reply"].get("success"), done["reply"]
    assert done["clip_url"].startswith(f"{ha.base}/media/local/chime.mp3?authSig="), done["clip_url"]
    assert done["clip_load"]["payload"]["media"]["contentType"] == "audio/mpeg"
    restored = ha.wait_state(TV, lambda s: s["state"] == "playing"
                             and s["attributes"].get("media_content_id") == SONG
                             and s["attributes"].get("volume_level") == pytest.approx(0.4))
    assert restored["attributes"]["media_position"] >= 30
    assert restored["attributes"]["media_title"] == "Before"


def test_tts_announcement_restores_paused_media(env: Env):
    ha = env.ha
    play(env, SONG2, "Second")
    service(ha, "media_player", "media_pause", entity_id=TV)
    ha.wait_state(TV, "paused")
    loads = len(received(env, TV_ID, MEDIA, "LOAD"))
    # A TTS service: play_media with announce and a media-source://tts/... item.
    call = in_background(call_ws, ha, "tts", "sim_tts_say", {"entity_id": TV, "message": "Dinner is ready"})
    clip = wait_received(env, TV_ID, MEDIA, "LOAD", loads + 1, "the TTS clip's LOAD")
    clip_url = clip["payload"]["media"]["contentId"]
    assert clip_url.startswith(f"{ha.base}/api/tts_proxy/"), clip_url
    ha.wait_state(TV, lambda s: s["state"] == "playing" and s["attributes"].get("media_content_id") == clip_url)
    env.sim.fault(TV_ID, {"action": "finish_media"})
    assert call.result(timeout=120).get("success")
    ha.wait_state(TV, lambda s: s["state"] == "paused" and s["attributes"].get("media_content_id") == SONG2
                  and s["attributes"].get("media_title") == "Second")


def run_script(env: Env, sequence: list[dict[str, Any]]) -> Future:
    """A script as an automation would run it (websocket `execute_script`), in the background."""
    return in_background(ws_command, env.ha, {"type": "execute_script", "sequence": sequence}, 150)


def test_say_good_morning_then_play_the_radio(env: Env):
    """tts.speak, then play_media of the radio: the radio plays, and the music from before the
    announcement does not come back over it."""
    ha = env.ha
    play(env, SONG, "Old music")
    loads = len(loaded_urls(env))
    script = run_script(env, [
        {"service": "media_player.play_media", "target": {"entity_id": TV},
         "data": {"media_content_id": CHIME, "media_content_type": "music", "announce": True}},
        {"service": "media_player.play_media", "target": {"entity_id": TV},
         "data": {"media_content_id": RADIO, "media_content_type": "music"}},
    ])
    wait_for(lambda: len(loaded_urls(env)) > loads, 30, what="the announcement's LOAD")
    env.ha.wait_state(TV, lambda s: "chime.mp3" in (s["attributes"].get("media_content_id") or ""))
    env.sim.fault(TV_ID, {"action": "finish_media"})  # "good morning" has been said
    assert script.result(timeout=150).get("success"), script.result()
    barrier(env)
    assert loaded_urls(env)[-1] == RADIO, loaded_urls(env)
    assert ha.wait_state(TV, lambda s: s["state"] == "playing")["attributes"]["media_content_id"] == RADIO


def test_two_announcements_in_a_row_both_play(env: Env):
    """A doorbell chime and "someone is at the door" at once: the second waits for the first, both
    are answered ok, and the music comes back once, after the last."""
    ha = env.ha
    play(env, SONG, "Music")
    first = in_background(call_ws, ha, "media_player", "play_media",
                          {"entity_id": TV, "media_content_id": CHIME, "media_content_type": "music", "announce": True})
    wait_for(lambda: any("chime.mp3" in u for u in loaded_urls(env)), 30, what="the first clip")
    second = in_background(call_ws, ha, "media_player", "play_media",
                           {"entity_id": TV, "media_content_id": DING, "media_content_type": "music", "announce": True})
    ha.wait_state(TV, lambda s: "chime.mp3" in (s["attributes"].get("media_content_id") or ""))
    env.sim.fault(TV_ID, {"action": "finish_media"})
    wait_for(lambda: any("ding.mp3" in u for u in loaded_urls(env)), 30, what="the second clip")
    ha.wait_state(TV, lambda s: "ding.mp3" in (s["attributes"].get("media_content_id") or ""))
    env.sim.fault(TV_ID, {"action": "finish_media"})
    for call in (first, second):
        assert call.result(timeout=120).get("success"), call.result()
    ha.wait_state(TV, lambda s: s["state"] == "playing" and s["attributes"].get("media_content_id") == SONG)
    barrier(env)
    assert loaded_urls(env).count(SONG) == 2, loaded_urls(env)  # the test's play and one restore


def test_stop_during_an_announcement_stays_stopped(env: Env):
    ha = env.ha
    play(env, SONG, "Music")
    call = in_background(call_ws, ha, "media_player", "play_media",
                         {"entity_id": TV, "media_content_id": CHIME, "media_content_type": "music", "announce": True})
    ha.wait_state(TV, lambda s: "chime.mp3" in (s["attributes"].get("media_content_id") or ""))
    service(ha, "media_player", "media_stop", entity_id=TV)
    call.result(timeout=120)  # answered, whatever it says: the user stopped it
    barrier(env)
    assert loaded_urls(env).count(SONG) == 1, loaded_urls(env)
    assert ha.state(TV)["state"] in ("idle", "off")


def test_announcement_over_an_app_relaunches_the_app(env: Env):
    """An announcement over an app that is not the Default Media Receiver: afterwards the app
    runs again (its media cannot be reloaded by the bridge)."""
    ha = env.ha
    service(ha, "cast2mqtt", "launch", entity_id=TV, app_id=ECHO_APP)
    ha.wait_state(TV, lambda s: s["attributes"].get("app_name") == "cast2mqtt Echo")
    launches = len(received(env, TV_ID, RECEIVER, "LAUNCH"))
    done = announce_and_finish(env, CHIME)
    assert done["reply"].get("success"), done["reply"]
    relaunch = wait_received(env, TV_ID, RECEIVER, "LAUNCH", launches + 2, "the echo app's relaunch")
    assert relaunch["payload"]["appId"] == ECHO_APP
    ha.wait_state(TV, lambda s: s["attributes"].get("app_name") == "cast2mqtt Echo")


# MARK: - Errors, availability, deadlines

def test_bridge_errors_become_translated_service_errors(env: Env):
    ha = env.ha
    error = service_error(ha, "media_player", "play_media", entity_id=TV,
                          media_content_id="http://127.0.0.1:9/fail-104.mp3", media_content_type="music")
    assert error["code"] == "home_assistant_error", error
    assert error.get("translation_key") == "command_failed" and error.get("translation_domain") == "cast2mqtt"
    assert "load_failed" in error["message"] and "Living Room TV" in error["message"], error

    error = service_error(ha, "cast2mqtt", "launch", entity_id=TV, app_id="DEADBEEF")
    assert "launch_error" in error["message"], error

    error = service_error(ha, "cast2mqtt", "send_message", entity_id=TV,
                          namespace="urn:x-cast:com.google.cast.tp.heartbeat", data={"type": "PING"})
    assert "namespace_not_allowed" in error["message"] and error["code"] == "service_validation_error", error

    # No reply from the app within the bridge's wait: the bridge's `timeout` reaches the user.
    error = service_error(ha, "cast2mqtt", "send_message", entity_id=TV, namespace="urn:x-cast:com.google.cast.cac",
                          data={"type": "NOTHING"}, reply=True, timeout=1)
    assert "timeout" in error["message"], error

    # Home Assistant's own validation stops bad input before it reaches the bridge.
    error = service_error(ha, "cast2mqtt", "set_playback_rate", entity_id=TV, rate=3)
    assert error["code"] == "invalid_format", error


class Stalled:
    """The bridge stopped (SIGSTOP: it still looks online) while Home Assistant sets the volume,
    then resumed after Home Assistant gave up."""

    def __init__(self, env: Env):
        env.sim.forget_received(TV_ID)
        env.bridge.process.send_signal(signal.SIGSTOP)
        try:
            self.error = service_error(env.ha, "media_player", "volume_set", entity_id=TV, volume_level=0.2)
        finally:
            env.bridge.process.send_signal(signal.SIGCONT)
        barrier(env)  # the bridge has worked through the command it got while stopped
        self.volume_commands = received(env, TV_ID, RECEIVER, "SET_VOLUME")


@pytest.fixture(scope="module")
def stalled(env: Env) -> Stalled:
    return Stalled(env)


def test_no_answer_is_a_timeout_error(env: Env, stalled: Stalled):
    assert stalled.error.get("translation_key") == "command_timeout", stalled.error
    assert "timeout" in stalled.error["message"] and "no response from the cast2mqtt bridge" in stalled.error["message"]


def test_a_command_that_timed_out_never_runs_later(env: Env, stalled: Stalled):
    assert stalled.volume_commands == [], stalled.volume_commands
    assert env.sim.state(TV_ID)["receiverStatus"]["volume"]["level"] == pytest.approx(0.5)


def test_lost_mqtt_connection_makes_the_players_unavailable(env: Env):
    """Home Assistant's own MQTT connection drops (the broker and the bridge stay up): the players
    go unavailable instead of showing stale state, an action fails at once instead of waiting,
    and with the connection back they show the state the device has now."""
    ha = env.ha
    play(env)
    env.link.cut()
    try:
        ha.wait_state(TV, "unavailable")
        ha.wait_state(KITCHEN, "unavailable")
        # The device changes while Home Assistant cannot see it.
        env.sim.fault(TV_ID, {"action": "remote_volume", "level": 0.9})
        started = time.monotonic()
        reply = call_ws(ha, "media_player", "volume_set", {"entity_id": TV, "volume_level": 0.1})
        waited = time.monotonic() - started
        print(f"volume_set while disconnected answered after {waited:.2f} s: {reply}")
        # Home Assistant skips an unavailable entity: nothing is sent, now or later.
        assert reply.get("success") or reply["error"].get("translation_key") == "mqtt_not_connected", reply
    finally:
        env.link.restore()
    fresh_state = ha.wait_state(TV, lambda s: s["state"] == "playing"
                                and s["attributes"].get("volume_level") == pytest.approx(0.9), timeout=90)
    assert fresh_state["attributes"]["media_content_id"] == SONG
    barrier(env)
    assert not any(m["payload"].get("volume", {}).get("level") == 0.1
                   for m in received(env, TV_ID, RECEIVER, "SET_VOLUME"))


def test_availability_follows_the_bridge(env: Env):
    ha = env.ha
    env.bridge.stop()
    try:
        ha.wait_state(TV, "unavailable")
    finally:
        env.bridge.start()
    ha.wait_state(TV, lambda s: s["state"] != "unavailable", timeout=60)


# MARK: - Devices coming and going, restarts

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


def test_a_removed_device_loses_its_player_and_comes_back(env: Env):
    """`bridge/request/remove`: the bridge publishes `device_removed` and clears the kitchen's
    topics; its media player goes with its device. A restart finds the (static) kitchen again."""
    ha = env.ha
    env.observer.publish("cast2mqtt/bridge/request/remove", '{"device": "kitchen"}')
    try:
        kitchen_gone(ha)
        assert ha.state(TV)["state"] != "unavailable"
    finally:
        restart_bridge(env)
    kitchen_back(ha)


def test_a_device_excluded_while_away_loses_its_player(env: Env):
    """A restart with the kitchen excluded: that run never sees the kitchen, so there is no
    event; it clears the kitchen's retained topics and lists only the TV."""
    ha = env.ha
    try:
        restart_bridge(env, exclude=["Kitchen"])
        kitchen_gone(ha)
    finally:
        restart_bridge(env)
    kitchen_back(ha)


def test_a_device_missing_from_the_list_for_a_while_keeps_its_player(env: Env):
    """A restarting bridge lists devices as it finds them: missing from the list alone is not
    removal."""
    switch_on(env)  # Home Assistant shows the app's name (the marker below) only while on
    devices = env.observer.json("cast2mqtt/bridge/devices")
    try:
        env.observer.publish("cast2mqtt/bridge/devices", json.dumps([d for d in devices if d["id"] != KITCHEN_ID]))
        env.observer.publish("cast2mqtt/living_room_tv/receiver",
                             json.dumps({"app_name": "Marker", "volume": {"level": 0.5}}))
        # Home Assistant handles messages in order: once the marker shows, the short list was seen.
        env.ha.wait_state(TV, lambda s: s["attributes"].get("app_name") == "Marker")
        assert env.ha.state(KITCHEN) is not None
    finally:
        restart_bridge(env)  # it publishes its retained topics again, over the test's


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
    stays, and nothing is logged (the last test checks the log)."""
    ha, mqtt = env.ha, env.observer
    switch_on(env)  # Home Assistant shows the app's name (the last message) only while on
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
    try:
        mqtt.publish("cast2mqtt/living_room_tv/receiver", json.dumps({"app_name": "After", "volume": {"level": 0.25}}))
        after = ha.wait_state(TV, lambda s: s["attributes"].get("app_name") == "After")
        assert after["state"] == before["state"]
        assert after["attributes"]["volume_level"] == 0.25
        assert ha.state(KITCHEN) is not None
    finally:
        restart_bridge(env)  # it publishes its retained topics again, over the bad ones


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
