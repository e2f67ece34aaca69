"""pychromecast drives cast-sim over real TLS on 127.0.0.1.

Needs a built cast-sim: CAST_SIM=.build/debug/cast-sim python3 -m pytest -q Tests/interop
Every wait is bounded; cast-sim is stopped by its PID in a fixture finalizer.
"""

import pytest

from castsim import connected_cast, one_device_sim, wait_for

DEVICE_ID = "0a1b2c3d4e5f60718293a4b5c6d7e8f9"
DEVICE_NAME = "Interop TV"
MEDIA_URL = "http://127.0.0.1:9/sim/interop.mp4"


@pytest.fixture
def sim():
    yield from one_device_sim(DEVICE_NAME, DEVICE_ID, 300)


@pytest.fixture
def cast(sim):
    yield from connected_cast(sim, DEVICE_ID, "Chromecast", DEVICE_NAME)


RECEIVER = "urn:x-cast:com.google.cast.receiver"
MEDIA = "urn:x-cast:com.google.cast.media"


def test_media_session_round_trip(sim, cast):
    assert cast.status is not None
    assert cast.status.app_id == "E8C28D3C"  # Backdrop
    assert cast.is_idle

    mc = cast.media_controller
    mc.play_media(MEDIA_URL, "video/mp4", title="Interop", stream_type="BUFFERED")
    mc.block_until_active(timeout=10)
    wait_for(lambda: mc.status.player_state == "PLAYING", what="PLAYING")
    assert cast.status.app_id == "CC1AD845"
    assert mc.status.content_id == MEDIA_URL
    assert mc.status.title == "Interop"

    cast.set_volume(0.4)
    wait_for(lambda: abs(cast.status.volume_level - 0.4) < 1e-9, what="volume 0.4")
    cast.set_volume_muted(True)
    wait_for(lambda: cast.status.volume_muted, what="muted")

    mc.set_playback_rate(1.5)
    wait_for(lambda: mc.status.playback_rate == 1.5, what="rate 1.5")

    mc.pause()
    wait_for(lambda: mc.status.player_state == "PAUSED", what="PAUSED")
    mc.play()
    wait_for(lambda: mc.status.player_state == "PLAYING", what="PLAYING again")
    mc.seek(30)
    wait_for(lambda: mc.status.current_time >= 30, what="seek")

    cast.quit_app()
    wait_for(lambda: cast.status.app_id == "E8C28D3C", what="back to Backdrop")

    # What the simulator recorded.
    receiver = sim.received(DEVICE_ID, RECEIVER)
    types = [m["type"] for m in receiver]
    assert "LAUNCH" in types and "STOP" in types
    launch = next(m for m in receiver if m["type"] == "LAUNCH")
    assert launch["payload"]["appId"] == "CC1AD845"
    volumes = [m["payload"]["volume"] for m in receiver if m["type"] == "SET_VOLUME"]
    assert {"level": 0.4} in volumes and {"muted": True} in volumes
    media = sim.received(DEVICE_ID, MEDIA)
    media_types = [m["type"] for m in media]
    for expected in ["GET_STATUS", "LOAD", "SET_PLAYBACK_RATE", "PAUSE", "PLAY", "SEEK"]:
        assert expected in media_types, media_types
    load = next(m for m in media if m["type"] == "LOAD")
    assert load["payload"]["media"]["contentId"] == MEDIA_URL
    assert all(m["delivered"] for m in media), media
    counters = sim.http("GET", f"/devices/{DEVICE_ID}/counters")
    assert counters["loads"] == 1 and counters["launches"] >= 1


def test_faults_seen_by_pychromecast(sim, cast):
    mc = cast.media_controller
    mc.play_media(MEDIA_URL, "video/mp4", stream_type="BUFFERED")
    mc.block_until_active(timeout=10)
    wait_for(lambda: mc.status.player_state == "PLAYING", what="PLAYING")

    sim.http("POST", f"/devices/{DEVICE_ID}/fault", {"action": "remote_volume", "level": 0.3})
    wait_for(lambda: abs(cast.status.volume_level - 0.3) < 1e-9, what="remote volume 0.3")

    sim.http("POST", f"/devices/{DEVICE_ID}/fault", {"action": "finish_media"})
    wait_for(lambda: mc.status.player_state == "IDLE" and mc.status.idle_reason == "FINISHED", what="FINISHED")

    state = sim.http("GET", f"/devices/{DEVICE_ID}/state")
    assert state["receiverStatus"]["volume"]["level"] == 0.3
    assert state["receiverStatus"]["applications"][0]["appId"] == "CC1AD845"
    devices = sim.http("GET", "/devices")
    assert devices[0]["id"] == DEVICE_ID and devices[0]["port"] == sim.port
