"""What automations written for Home Assistant's own cast integration send, against our media
player in a real Home Assistant, the bridge and a simulated Chromecast (issue #28).

One table: each row is a `play_media` (or a TTS action) as the core integration's documentation
and users' automations write it, and what the simulated device must have received for it (the
Cast message's fields, by path), or the translated error it must get instead. A local HTTP
server serves the playlist files. One broker, cast-sim, bridge and Home Assistant for the
module; before each row the device's record of received messages is cleared, and the row's
`before` puts the device in the state it needs (something playing, a queue).
"""

from __future__ import annotations

from dataclasses import dataclass, field
import json
from typing import Any

import pytest
import requests

from harness import LIVING_ROOM, ROOT, FileServer, HomeAssistant, wait_for
from ha_calls import call_ws, in_background

TV_ID = LIVING_ROOM[1]
TV = "media_player.living_room_tv"
MEDIA = "urn:x-cast:com.google.cast.media"
RECEIVER = "urn:x-cast:com.google.cast.receiver"
ECHO_APP = "E7C0A1B0"
RADIO = "http://127.0.0.1:9/radio/stream.mp3"
SONG = "http://127.0.0.1:9/music/song.mp3"
COVER = "https://img.example.com/cover.jpg"

HOME_ASSISTANT = {
    "custom_components": [ROOT / "custom_components" / "cast2mqtt",
                          ROOT / "Tests" / "homeassistant" / "custom_components" / "sim_tts"],
    "extra_config": "media_source:\ntts:\n  - platform: sim_tts\nffmpeg:\n  ffmpeg_bin: /bin/true\n",
}

# Placeholders in a row's strings: the file server's and Home Assistant's base URLs.
FILES, HA_BASE = "FILES", "HA_BASE"
PLAYLISTS = {
    "/radio.m3u": ("audio/x-mpegurl",
                   b"#EXTM3U\n#EXTINF:-1,Radio Paradise\nhttp://127.0.0.1:9/rp/main.mp3\nhttp://127.0.0.1:9/rp/mirror.mp3\n"),
    "/radio.pls": ("audio/x-scpls",
                   b"[playlist]\nNumberOfEntries=2\nFile1=http://127.0.0.1:9/pls/one.aac\nTitle1=Station One\n"
                   b"File2=http://127.0.0.1:9/pls/two.aac\nVersion=2\n"),
    "/live/index.m3u8": ("application/octet-stream",
                         b"#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-STREAM-INF:BANDWIDTH=800000\nlow.m3u8\n"),
}


class StartsWith(str):
    """An expected text that a received one begins with (Home Assistant signs its own URLs)."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and other.startswith(str(self))

    __hash__ = str.__hash__


@dataclass
class Row:
    name: str
    data: dict[str, Any]
    # The message the device must get (namespace, type) and fields of its payload by dotted path.
    expect: tuple[str, str] | None = None
    fields: dict[str, Any] = field(default_factory=dict)
    # Instead: the translation key of the error the action must answer with; nothing is sent.
    error: str | None = None
    before: str | None = None  # "radio": the radio plays; "queue": a queue of two plays
    service: str = "media_player.play_media"


TABLE = [
    Row("radio stream with metadata (the cast docs' music example)",
        {"media_content_id": RADIO, "media_content_type": "audio/mp3",
         "extra": {"metadata": {"metadataType": 3, "title": "Radio Paradise", "artist": "Various",
                                "albumName": "Main Mix", "images": [{"url": COVER}]},
                   "stream_type": "LIVE"}},
        (MEDIA, "LOAD"),
        {"media.contentId": RADIO, "media.contentType": "audio/mp3", "media.streamType": "LIVE",
         "media.metadata.metadataType": 3, "media.metadata.title": "Radio Paradise",
         "media.metadata.artist": "Various", "media.metadata.albumName": "Main Mix",
         "media.metadata.images.0.url": COVER}),
    Row("video with title and thumb (extra title/thumb)",
        {"media_content_id": "http://127.0.0.1:9/video/film.mp4", "media_content_type": "video/mp4",
         "extra": {"title": "Big Buck Bunny", "thumb": COVER}},
        (MEDIA, "LOAD"),
        {"media.metadata.title": "Big Buck Bunny", "media.metadata.images.0.url": COVER,
         "media.streamType": "BUFFERED"}),
    Row("video with subtitles, start position, paused",
        {"media_content_id": "http://127.0.0.1:9/video/film.mp4", "media_content_type": "video",
         "extra": {"subtitles": "http://127.0.0.1:9/video/film.de.vtt", "subtitles_lang": "de-DE",
                   "subtitle_id": 2, "current_time": 42, "autoplay": False,
                   "metadata": {"metadataType": 1, "title": "Film"}}},
        (MEDIA, "LOAD"),
        {"media.tracks.0.trackId": 2, "media.tracks.0.type": "TEXT", "media.tracks.0.subtype": "SUBTITLES",
         "media.tracks.0.language": "de-DE", "media.tracks.0.trackContentId": "http://127.0.0.1:9/video/film.de.vtt",
         "activeTrackIds": [2], "currentTime": 42, "autoplay": False, "media.metadata.metadataType": 1}),
    Row("HLS camera stream (camera.play_stream's play_media)",
        {"media_content_id": "/api/hls/0123abcd/master_playlist.m3u8",
         "media_content_type": "application/vnd.apple.mpegurl"},
        (MEDIA, "LOAD"),
        {"media.contentId": StartsWith(HA_BASE + "/api/hls/0123abcd/master_playlist.m3u8?authSig="), "media.streamType": "LIVE",
         "media.contentType": "application/vnd.apple.mpegurl"}),
    Row("HLS .m3u8 by its content",
        {"media_content_id": FILES + "/live/index.m3u8", "media_content_type": "video"},
        (MEDIA, "LOAD"),
        {"media.contentId": FILES + "/live/index.m3u8", "media.streamType": "LIVE",
         "media.contentType": "application/x-mpegURL"}),
    Row("radio .m3u playlist: its first stream, with its title",
        {"media_content_id": FILES + "/radio.m3u", "media_content_type": "music"},
        (MEDIA, "LOAD"),
        {"media.contentId": "http://127.0.0.1:9/rp/main.mp3", "media.metadata.title": "Radio Paradise"}),
    Row("radio .pls playlist: its first stream",
        {"media_content_id": FILES + "/radio.pls", "media_content_type": "audio/x-scpls",
         "extra": {"metadata": {"title": "My station"}}},
        (MEDIA, "LOAD"),
        {"media.contentId": "http://127.0.0.1:9/pls/one.aac", "media.metadata.title": "My station",
         "media.contentType": "audio/aac"}),
    Row("app launch (media_content_type cast, app_id)",
        {"media_content_id": json.dumps({"app_id": ECHO_APP}), "media_content_type": "cast"},
        (RECEIVER, "LAUNCH"), {"appId": ECHO_APP}),
    Row("default media receiver by app_name, with media",
        {"media_content_id": json.dumps({"app_name": "default_media_receiver", "media_id": SONG,
                                         "media_type": "audio/mpeg"}),
         "media_content_type": "cast", "extra": {"metadata": {"title": "Song"}}},
        (MEDIA, "LOAD"), {"media.contentId": SONG, "media.metadata.title": "Song"}),
    Row("quick-play app (YouTube): an explicit error, nothing sent",
        {"media_content_id": json.dumps({"app_name": "youtube", "media_id": "dQw4w9WgXcQ"}),
         "media_content_type": "cast"},
        error="cast_app_not_supported"),
    Row("enqueue with metadata",
        {"media_content_id": SONG, "media_content_type": "music", "enqueue": "add",
         "extra": {"metadata": {"metadataType": 3, "title": "Next song", "artist": "Band", "images": [{"url": COVER}]}}},
        (MEDIA, "QUEUE_INSERT"),
        {"items.0.media.contentId": SONG, "items.0.media.metadata.title": "Next song",
         "items.0.media.metadata.artist": "Band", "items.0.media.metadata.images.0.url": COVER},
        before="queue"),
    Row("TTS, then what played resumes",
        {"message": "Dinner is ready"},
        (MEDIA, "LOAD"),
        {"media.contentId": RADIO, "media.metadata.title": "Radio Paradise"},
        before="radio", service="tts.sim_tts_say"),
    Row("ill-typed extra: a translated validation error, nothing sent",
        {"media_content_id": RADIO, "media_content_type": "music", "extra": {"metadata": {"images": "not a list"}}},
        error="invalid_extra"),
]


@pytest.fixture(scope="module")
def files() -> FileServer:
    server = FileServer(PLAYLISTS)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def env(sim, bridge, mqtt, ha: HomeAssistant, files: FileServer):
    wait_for(lambda: mqtt.get("cast2mqtt/living_room_tv/availability") == b"online", 30, what="the TV online on MQTT")
    # The entry, through the user flow.
    flow = requests.post(f"{ha.base}/api/config/config_entries/flow", headers=ha.headers(), timeout=30,
                         json={"handler": "cast2mqtt", "show_advanced_options": False}).json()
    done = requests.post(f"{ha.base}/api/config/config_entries/flow/{flow['flow_id']}", headers=ha.headers(),
                         timeout=30, json={"base_topic": "cast2mqtt"}).json()
    assert done.get("type") == "create_entry", done
    ha.wait_state(TV, lambda s: s["state"] not in ("unavailable", "unknown"))
    return {"sim": sim, "mqtt": mqtt, "ha": ha, "files": files}


def fill(value: Any, env: dict[str, Any]) -> Any:
    """The row's value with the placeholders replaced."""
    if isinstance(value, StartsWith):
        return StartsWith(fill(str(value), env))
    if isinstance(value, str):
        return value.replace(FILES, env["files"].url("")).replace(HA_BASE, env["ha"].base)
    if isinstance(value, dict):
        return {k: fill(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, env) for v in value]
    return value


def at(payload: Any, path: str) -> Any:
    for part in path.split("."):
        if isinstance(payload, list) and part.isdigit() and int(part) < len(payload):
            payload = payload[int(part)]
        elif isinstance(payload, dict) and part in payload:
            payload = payload[part]
        else:
            return KeyError(path)
    return payload


def received(env: dict[str, Any], namespace: str, type_: str) -> list[dict[str, Any]]:
    return env["sim"].received(TV_ID, namespace=namespace, type=type_)


def barrier(env: dict[str, Any]) -> None:
    """The bridge has worked through everything sent before: its answer to a refresh came."""
    marker = f"barrier-{id(env)}-{len(env['sim'].received(TV_ID))}"
    env["mqtt"].publish("cast2mqtt/living_room_tv/command/refresh", json.dumps({"id": marker}))
    wait_for(lambda: (r := env["mqtt"].json("cast2mqtt/living_room_tv/response")) and r.get("id") == marker,
             30, what="the bridge's answer to a refresh")


def play(env: dict[str, Any], data: dict[str, Any]) -> None:
    reply = call_ws(env["ha"], "media_player", "play_media", {"entity_id": TV, **data})
    assert reply.get("success"), reply


def prepare(env: dict[str, Any], before: str | None) -> None:
    ha = env["ha"]
    if before == "radio":
        play(env, TABLE[0].data)
        ha.wait_state(TV, lambda s: s["state"] == "playing" and s["attributes"].get("media_content_id") == RADIO)
    elif before == "queue":
        env["mqtt"].publish("cast2mqtt/living_room_tv/command/load", json.dumps(
            {"queue": [{"url": "http://127.0.0.1:9/q/1.mp3"}, {"url": "http://127.0.0.1:9/q/2.mp3"}]}))
        ha.wait_state(TV, lambda s: s["state"] == "playing"
                      and s["attributes"].get("media_content_id") == "http://127.0.0.1:9/q/1.mp3")
    barrier(env)
    env["sim"].forget_received(TV_ID)


@pytest.mark.parametrize("row", TABLE, ids=[row.name for row in TABLE])
def test_core_example(env: dict[str, Any], row: Row) -> None:
    prepare(env, row.before)
    domain, service = row.service.split(".")
    data = {"entity_id": TV, **fill(row.data, env)}
    if row.error:
        reply = call_ws(env["ha"], domain, service, data)
        assert not reply.get("success"), reply
        assert reply["error"].get("translation_key") == row.error, reply
        barrier(env)
        assert received(env, MEDIA, "LOAD") == [] and received(env, RECEIVER, "LAUNCH") == []
        return
    assert row.expect is not None
    namespace, type_ = row.expect
    if row.service == "tts.sim_tts_say":
        # The clip plays (a LOAD), ends, and what played before is loaded again (a second LOAD).
        call = in_background(call_ws, env["ha"], domain, service, data)
        wait_for(lambda: len(received(env, MEDIA, "LOAD")) >= 1, 30, what="the TTS clip's LOAD")
        clip = received(env, MEDIA, "LOAD")[0]["payload"]["media"]["contentId"]
        assert "/api/tts_proxy/" in clip, clip
        env["ha"].wait_state(TV, lambda s: s["attributes"].get("media_content_id") == clip)
        env["sim"].fault(TV_ID, {"action": "finish_media"})
        assert call.result(timeout=120).get("success")
        wait_for(lambda: len(received(env, MEDIA, "LOAD")) >= 2, 30, what="the restore's LOAD")
        env["ha"].wait_state(TV, lambda s: s["state"] == "playing" and s["attributes"].get("media_content_id") == RADIO)
    else:
        reply = call_ws(env["ha"], domain, service, data)
        assert reply.get("success"), reply
        wait_for(lambda: received(env, namespace, type_), 30, what=f"{type_} on the device")
    payload = received(env, namespace, type_)[-1]["payload"]
    wanted = fill(row.fields, env)
    got = {path: at(payload, path) for path in wanted}
    assert got == wanted, json.dumps(payload, indent=1)
