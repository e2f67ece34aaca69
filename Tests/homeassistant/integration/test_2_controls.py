"""The media player's controls reaching the device: media, volume, transport, queue, enqueue, power,
apps, position, transfer, the media browser.
"""

from __future__ import annotations

from datetime import datetime

import pytest

from ha_calls import call_ws, in_background, service, service_error
from harness import wait_for
from integration_env import (TV_ID, KITCHEN_ID, TV, KITCHEN, MEDIA, RECEIVER, ECHO, ECHO_APP, SONG, SONG2, SONG3, RADIO,
                             PAUSE, SEEK, VOLUME_SET, VOLUME_MUTE, PREVIOUS, NEXT, TURN_ON, TURN_OFF, PLAY_MEDIA,
                             VOLUME_STEP, STOP, PLAY, SHUFFLE_SET, REPEAT_SET, Env, barrier, features, live_position,
                             load_queue, loaded_urls, play, received, switch_on, wait_received)


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
