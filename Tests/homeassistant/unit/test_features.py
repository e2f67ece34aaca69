"""Supported features from what the device reports now (pure)."""

from __future__ import annotations

from homeassistant.components.media_player import MediaPlayerEntityFeature as F, RepeatMode

from custom_components.cast2mqtt.features import repeat_of, shuffle_of, supported_features

RECEIVER = {"volume": {"level": 0.5, "control_type": "attenuation"}}
COMMANDS = ["pause", "seek", "volume", "mute", "queue_next", "queue_prev", "queue_repeat_all", "queue_repeat_one"]
TRANSPORT = F.PAUSE | F.PLAY | F.SEEK | F.NEXT_TRACK | F.PREVIOUS_TRACK | F.STOP


def test_a_playing_session_offers_what_it_supports() -> None:
    features = supported_features(RECEIVER, {"state": "playing", "media_session_id": 1, "supported_commands": COMMANDS})
    assert features & TRANSPORT == TRANSPORT
    assert not features & F.REPEAT_SET  # no queue


def test_an_ended_session_offers_no_transport_controls() -> None:
    """What the media document keeps after media_stop: the session id, the supported commands,
    state idle with idle_reason cancelled."""
    for reason in ("cancelled", "finished", "error", "interrupted", None):
        media = {"state": "idle", "idle_reason": reason, "media_session_id": 1, "supported_commands": COMMANDS}
        features = supported_features(RECEIVER, media)
        assert features & TRANSPORT == 0, reason
        assert features & (F.PLAY_MEDIA | F.VOLUME_SET | F.TURN_ON | F.TURN_OFF | F.MEDIA_ENQUEUE) \
            == F.PLAY_MEDIA | F.VOLUME_SET | F.TURN_ON | F.TURN_OFF | F.MEDIA_ENQUEUE


def test_no_session_and_fixed_volume() -> None:
    features = supported_features({"volume": {"control_type": "fixed"}}, {"state": "off"})
    assert features & (TRANSPORT | F.VOLUME_SET | F.VOLUME_STEP | F.VOLUME_MUTE) == 0
    assert features & F.PLAY_MEDIA


def test_unknown_supported_commands_let_the_device_decide() -> None:
    features = supported_features(RECEIVER, {"state": "paused", "media_session_id": 2})
    assert features & (F.PAUSE | F.PLAY | F.SEEK | F.STOP) == F.PAUSE | F.PLAY | F.SEEK | F.STOP
    assert not features & F.NEXT_TRACK


def test_repeat_and_shuffle_follow_the_queue() -> None:
    queue = {"current_item_id": 1, "repeat_mode": "all_and_shuffle", "items": []}
    media = {"state": "playing", "media_session_id": 1, "supported_commands": COMMANDS + ["queue_shuffle"], "queue": queue}
    features = supported_features(RECEIVER, media)
    assert features & (F.REPEAT_SET | F.SHUFFLE_SET) == F.REPEAT_SET | F.SHUFFLE_SET
    assert repeat_of(media) is RepeatMode.ALL and shuffle_of(media) is True
    queue["repeat_mode"] = "one"
    assert repeat_of(media) is RepeatMode.ONE and shuffle_of(media) is False
    assert repeat_of({"state": "off"}) is None and shuffle_of({"queue": "x"}) is None
