"""Errors, availability and deadlines: the bridge's errors as translated service errors, a command
that timed out never runs later, a lost MQTT link or bridge makes the players unavailable.
"""

from __future__ import annotations

import signal
import time

import pytest

from ha_calls import call_ws, service_error
from integration_env import TV_ID, TV, KITCHEN, RECEIVER, SONG, Env, barrier, play, received


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
