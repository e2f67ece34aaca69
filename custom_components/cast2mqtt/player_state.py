"""What a media player shows (media_player.py puts the entity together): the device's state,
volume, media, group members and attributes, read from the bridge's topics."""

from __future__ import annotations

from datetime import datetime
import math
from typing import Any
from urllib.parse import urlsplit

from homeassistant.components.media_player import MediaPlayerEntity
from homeassistant.components.media_player.const import (
    MediaPlayerEntityFeature,
    MediaPlayerState,
    MediaType,
    RepeatMode,
)
from homeassistant.core import callback
from homeassistant.helpers import entity_registry as er

from . import media
from .bridge import Bridge
from .const import DOMAIN, unique_id
from .features import repeat_of, shuffle_of, supported_features, volume_of
from .payloads import DeviceInfoRecord, DeviceTopics

# The core cast integration's media type for an app and what to play in it (JSON).
CAST_MEDIA_TYPE = "cast"

_STATES = {
    "off": MediaPlayerState.OFF,
    "idle": MediaPlayerState.IDLE,
    "buffering": MediaPlayerState.BUFFERING,
    "playing": MediaPlayerState.PLAYING,
    "paused": MediaPlayerState.PAUSED,
}

_CONTENT_TYPES = {
    "music_track": MediaType.MUSIC,
    "movie": MediaType.MOVIE,
    "tv_show": MediaType.TVSHOW,
    "photo": MediaType.IMAGE,
    "audiobook_chapter": MediaType.MUSIC,
    "generic": MediaType.VIDEO,
}


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _string(value: Any, limit: int = 4096) -> str | None:
    return value if isinstance(value, str) and 0 < len(value) <= limit else None


class PlayerState(MediaPlayerEntity):
    """A media player's state, from the topics of its device (set up by Cast2MqttMediaPlayer)."""

    _bridge: Bridge
    _device_id: str

    @property
    def device_id_of_bridge(self) -> str:
        """The Cast device id (the bridge's `id`)."""
        return self._device_id

    @property
    def bridge(self) -> Bridge:
        return self._bridge

    @property
    def _record(self) -> DeviceInfoRecord | None:
        return self._bridge.devices.get(self._device_id)

    @property
    def _topics(self) -> DeviceTopics:
        record = self._record
        return self._bridge.topics(record.topic) if record else DeviceTopics()

    @property
    def _media(self) -> dict[str, Any]:
        return self._topics.media

    @property
    def _receiver(self) -> dict[str, Any]:
        return self._topics.receiver

    @property
    def _volume(self) -> dict[str, Any]:
        return volume_of(self._receiver)

    @property
    def member_ids(self) -> list[str]:
        """A speaker group's member device ids (from its `members` topic); [] for other devices."""
        return self._topics.members

    @callback
    def _changed(self) -> None:
        if self.hass is not None and self.entity_id:
            self.async_write_ha_state()

    @property
    def available(self) -> bool:
        """Home Assistant is connected to the broker, the bridge is online and the device answers."""
        return (
            self._bridge.mqtt_connected
            and self._bridge.online
            and self._record is not None
            and self._topics.availability == "online"
        )

    @property
    def state(self) -> MediaPlayerState | None:
        """The device's `state` topic."""
        word = self._topics.state
        return _STATES.get(word) if word else None

    @property
    def supported_features(self) -> MediaPlayerEntityFeature:
        """What the device can do now (see features.py); browsing only with media_source."""
        features = supported_features(self._receiver, self._media)
        if self.hass is None or "media_source" not in self.hass.config.components:
            features &= ~MediaPlayerEntityFeature.BROWSE_MEDIA
        return features

    @property
    def repeat(self) -> RepeatMode | None:
        return repeat_of(self._media)

    @property
    def shuffle(self) -> bool | None:
        return shuffle_of(self._media)

    @property
    def volume_level(self) -> float | None:
        level = _number(self._volume.get("level"))
        return level if level is not None and 0.0 <= level <= 1.0 else None

    @property
    def is_volume_muted(self) -> bool | None:
        muted = self._volume.get("muted")
        return muted if isinstance(muted, bool) else None

    @property
    def volume_step(self) -> float:
        step = _number(self._volume.get("step"))
        return step if step is not None and 0 < step <= 0.5 else 0.05

    @property
    def app_id(self) -> str | None:
        return _string(self._receiver.get("app_id"), 64)

    @property
    def app_name(self) -> str | None:
        return _string(self._receiver.get("app_name"), 256)

    @property
    def media_content_id(self) -> str | None:
        return _string(self._media.get("content_id"))

    @property
    def media_content_type(self) -> MediaType | None:
        metadata = self._media.get("metadata_type")
        if isinstance(metadata, str) and metadata in _CONTENT_TYPES:
            if metadata == "generic":
                content_type = _string(self._media.get("content_type"), 256) or ""
                return MediaType.MUSIC if content_type.startswith("audio/") else MediaType.VIDEO
            return _CONTENT_TYPES[metadata]
        return None

    @property
    def media_duration(self) -> float | None:  # type: ignore[override]  # Cast reports fractions
        duration = _number(self._media.get("duration"))
        return duration if duration is not None and duration >= 0 else None

    @property
    def media_position(self) -> float | None:  # type: ignore[override]  # Cast reports fractions
        position = _number(self._media.get("position"))
        return position if position is not None and position >= 0 else None

    @property
    def media_position_updated_at(self) -> datetime | None:
        if self.media_position is None:
            return None
        return self._topics.position_updated_at

    @property
    def media_title(self) -> str | None:
        return _string(self._media.get("title"), 1024)

    @property
    def media_artist(self) -> str | None:
        return _string(self._media.get("artist"), 1024)

    @property
    def media_album_name(self) -> str | None:
        return _string(self._media.get("album"), 1024)

    @property
    def media_album_artist(self) -> str | None:
        return _string(self._media.get("album_artist"), 1024)

    @property
    def media_series_title(self) -> str | None:
        return _string(self._media.get("series_title"), 1024)

    @property
    def media_season(self) -> str | None:
        season = self._media.get("season")
        return str(season) if isinstance(season, int) and not isinstance(season, bool) else None

    @property
    def media_episode(self) -> str | None:
        episode = self._media.get("episode")
        return str(episode) if isinstance(episode, int) and not isinstance(episode, bool) else None

    @property
    def media_track(self) -> int | None:
        track = self._media.get("track")
        return track if isinstance(track, int) and not isinstance(track, bool) else None

    @property
    def media_image_url(self) -> str | None:
        images = self._media.get("images")
        if not isinstance(images, list):
            return None
        for image in images:
            url = _string(image.get("url")) if isinstance(image, dict) else None
            if url is not None and url.startswith(("http://", "https://")):
                return url
        return None

    @property
    def media_image_remotely_accessible(self) -> bool:
        """Public artwork goes to the browser as it is; Home Assistant proxies the rest (an
        address on the home network, or Home Assistant's own)."""
        url = self.media_image_url
        if url is None or self.hass is None:
            return False
        internal: set[str] = set()
        for base in (self.hass.config.internal_url, self.hass.config.api.local_ip if self.hass.config.api else None):
            if base and (host := urlsplit(base if "//" in base else f"//{base}").hostname):
                internal.add(host.lower())
        return media.publicly_reachable(url, internal)

    @property
    def group_members(self) -> list[str] | None:
        """A speaker group's members as media player entity ids (members without a player of this
        bridge are left out), sorted: the group's leader changes and must not reorder it. None
        for a device that is no group."""
        record = self._record
        if record is None or record.cast_type != "group" or self.hass is None:
            return None
        entities = er.async_get(self.hass)
        found = (
            entities.async_get_entity_id("media_player", DOMAIN, unique_id(self._bridge.base, member))
            for member in self.member_ids
        )
        return sorted(entity_id for entity_id in found if entity_id)

    @property
    def extra_state_attributes(self) -> dict[str, Any]:
        attributes: dict[str, Any] = {}
        if (rate := _number(self._media.get("playback_rate"))) is not None:
            attributes["playback_rate"] = rate
        if record := self._record:
            attributes["device_topic"] = record.topic
        # Cast speaker groups are made in the Google Home app: the players cannot be joined here,
        # so the membership is an attribute, without Home Assistant's join/unjoin (GROUPING).
        if (members := self.group_members) is not None:
            attributes["group_members"] = members
        if (playing_in := _string(self._media.get("playing_in"), 256)) is not None:
            attributes["playing_in"] = playing_in
        identity = self._topics.identity
        if identity.owner is not None:
            attributes["bridge_instance"] = identity.owner
        if identity.authenticated is not None:
            attributes["authenticated"] = identity.authenticated
        if identity.auth_error is not None:
            attributes["auth_error"] = identity.auth_error
        return attributes
