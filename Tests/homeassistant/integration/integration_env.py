"""The integration's end-to-end tests (this folder): the devices, the Home Assistant they run in,
the fixtures in one object (`Env`) and the steps the tests share."""

from __future__ import annotations

import json
import os
import pathlib
import time
from datetime import datetime
from typing import Any

import pytest

from ha_calls import call_ws, in_background, service
from harness import KITCHEN as KITCHEN_DEVICE, LIVING_ROOM, ROOT, wait_for

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


class Env:
    """The module's fixtures in one object."""

    def __init__(self, sim, bridge, mqtt, ha, link, entry_id):
        self.sim, self.bridge, self.observer, self.ha, self.link = sim, bridge, mqtt, ha, link
        self.entry_id = entry_id



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
