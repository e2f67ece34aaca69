"""Announcements (play_media with announce, tts.speak, scripts): the clip plays and what played
before comes back.
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

import pytest

from ha_calls import call_ws, in_background, service, ws_command
from harness import wait_for
from integration_env import (TV_ID, TV, MEDIA, RECEIVER, ECHO_APP, SONG, SONG2, RADIO, CHIME, DING, Env,
                             announce_and_finish, barrier, loaded_urls, play, received, wait_received)


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
