"""What a media player offers, from what the device reports now (pure functions of the
`receiver` and `media` documents, so they are tested without Home Assistant running)."""

from __future__ import annotations

from typing import Any

from homeassistant.components.media_player.const import MediaPlayerEntityFeature, RepeatMode

# Offered whatever plays: play media (also what enqueue and announce use), browsing, power.
ALWAYS = (
    MediaPlayerEntityFeature.PLAY_MEDIA
    | MediaPlayerEntityFeature.BROWSE_MEDIA
    | MediaPlayerEntityFeature.MEDIA_ANNOUNCE
    | MediaPlayerEntityFeature.MEDIA_ENQUEUE
    | MediaPlayerEntityFeature.TURN_ON
    | MediaPlayerEntityFeature.TURN_OFF
)
VOLUME = (
    MediaPlayerEntityFeature.VOLUME_SET
    | MediaPlayerEntityFeature.VOLUME_STEP
    | MediaPlayerEntityFeature.VOLUME_MUTE
)
# What the media session's `supported_commands` add while it is active.
BY_COMMAND = {
    "pause": MediaPlayerEntityFeature.PAUSE | MediaPlayerEntityFeature.PLAY,
    "seek": MediaPlayerEntityFeature.SEEK,
    "queue_next": MediaPlayerEntityFeature.NEXT_TRACK,
    "queue_prev": MediaPlayerEntityFeature.PREVIOUS_TRACK,
    "queue_repeat_all": MediaPlayerEntityFeature.REPEAT_SET,
    "queue_repeat_one": MediaPlayerEntityFeature.REPEAT_SET,
    "queue_shuffle": MediaPlayerEntityFeature.SHUFFLE_SET,
}
# A media session in one of these states can be controlled; `idle` (stopped, finished, failed)
# keeps its id and supported commands in the document, but every control would fail.
ACTIVE_STATES = frozenset({"playing", "paused", "buffering"})

REPEAT_MODES = {"off": RepeatMode.OFF, "all": RepeatMode.ALL, "one": RepeatMode.ONE,
                "all_and_shuffle": RepeatMode.ALL}
REPEAT_WORDS = {RepeatMode.OFF: "off", RepeatMode.ALL: "all", RepeatMode.ONE: "one"}


def volume_of(receiver: dict[str, Any]) -> dict[str, Any]:
    volume = receiver.get("volume")
    return volume if isinstance(volume, dict) else {}


def media_active(media: dict[str, Any]) -> bool:
    """A media session that plays, is paused or buffers (not one that ended)."""
    return isinstance(media.get("media_session_id"), int) and media.get("state") in ACTIVE_STATES


def queue_of(media: dict[str, Any]) -> dict[str, Any] | None:
    queue = media.get("queue")
    return queue if isinstance(queue, dict) else None


def supported_features(receiver: dict[str, Any], media: dict[str, Any]) -> MediaPlayerEntityFeature:
    """From the receiver's volume control and what the active media session supports."""
    features = ALWAYS
    if volume_of(receiver).get("control_type") != "fixed":
        features |= VOLUME
    if not media_active(media):
        return features
    features |= MediaPlayerEntityFeature.STOP
    commands = media.get("supported_commands")
    if not isinstance(commands, list):  # not reported: let the device decide
        return features | MediaPlayerEntityFeature.PAUSE | MediaPlayerEntityFeature.PLAY | MediaPlayerEntityFeature.SEEK
    for command in commands:
        if isinstance(command, str):
            features |= BY_COMMAND.get(command, MediaPlayerEntityFeature(0))
    if queue_of(media) is None:
        # Repeat and shuffle edit a queue; a plain LOAD has none.
        features &= ~(MediaPlayerEntityFeature.REPEAT_SET | MediaPlayerEntityFeature.SHUFFLE_SET)
    return features


def repeat_of(media: dict[str, Any]) -> RepeatMode | None:
    queue = queue_of(media)
    mode = queue.get("repeat_mode") if queue else None
    return REPEAT_MODES.get(mode) if isinstance(mode, str) else None


def shuffle_of(media: dict[str, Any]) -> bool | None:
    """Cast keeps no shuffle switch: a shuffle reorders the queue once. Only `all_and_shuffle`
    (shuffle at every new round) is a lasting state."""
    queue = queue_of(media)
    mode = queue.get("repeat_mode") if queue else None
    return mode == "all_and_shuffle" if isinstance(mode, str) else None
