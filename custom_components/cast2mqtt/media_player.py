"""A media player per Cast device known to the bridge."""

from __future__ import annotations

from datetime import datetime
import math
from typing import TYPE_CHECKING, Any

import voluptuous as vol

from homeassistant.components import media_source
from homeassistant.components.media_player import (
    ATTR_MEDIA_ANNOUNCE,
    ATTR_MEDIA_ENQUEUE,
    ATTR_MEDIA_EXTRA,
    BrowseError,
    BrowseMedia,
    MediaPlayerEnqueue,
    MediaPlayerEntity,
    MediaPlayerEntityFeature,
    MediaPlayerState,
    MediaType,
    async_process_play_media_url,
)
from homeassistant.core import HomeAssistant, ServiceCall, ServiceResponse, SupportsResponse, callback
from homeassistant.exceptions import HomeAssistantError
from homeassistant.helpers import config_validation as cv, device_registry as dr, entity_registry as er
from homeassistant.helpers.device_registry import DeviceInfo
from homeassistant.helpers.entity_platform import AddEntitiesCallback, async_get_current_platform
from homeassistant.util import dt as dt_util

from .bridge import Bridge, DeviceInfoRecord, DeviceTopics
from .const import (
    APP_ID_RE,
    ATTR_APP_ID,
    ATTR_DATA,
    ATTR_KEEP_SOURCE,
    ATTR_NAMESPACE,
    ATTR_RATE,
    ATTR_REPLY,
    ATTR_TIMEOUT,
    ATTR_TO,
    COMMAND_TIMEOUT,
    DEFAULT_MEDIA_RECEIVER,
    DOMAIN,
    SERVICE_LAUNCH,
    SERVICE_SEND_MESSAGE,
    SERVICE_SET_PLAYBACK_RATE,
    SERVICE_TRANSFER,
)

if TYPE_CHECKING:
    from . import Cast2MqttConfigEntry

PARALLEL_UPDATES = 0

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

# What a media session always allows, and what the receiver's supported commands add.
_ALWAYS = (
    MediaPlayerEntityFeature.PLAY_MEDIA
    | MediaPlayerEntityFeature.BROWSE_MEDIA
    | MediaPlayerEntityFeature.MEDIA_ANNOUNCE
    | MediaPlayerEntityFeature.MEDIA_ENQUEUE
    | MediaPlayerEntityFeature.TURN_ON
    | MediaPlayerEntityFeature.TURN_OFF
)
_BY_COMMAND = {
    "pause": MediaPlayerEntityFeature.PAUSE | MediaPlayerEntityFeature.PLAY,
    "seek": MediaPlayerEntityFeature.SEEK,
    "queue_next": MediaPlayerEntityFeature.NEXT_TRACK,
    "queue_prev": MediaPlayerEntityFeature.PREVIOUS_TRACK,
}
_VOLUME = (
    MediaPlayerEntityFeature.VOLUME_SET
    | MediaPlayerEntityFeature.VOLUME_STEP
    | MediaPlayerEntityFeature.VOLUME_MUTE
)

_NAMESPACE_PREFIX = "urn:x-cast:"


def _app_id(value: Any) -> str:
    value = cv.string(value)
    if not APP_ID_RE.match(value):
        raise vol.Invalid("an app id is 1-64 letters, digits, '_', '-' or '.'")
    return value


def _namespace(value: Any) -> str:
    value = cv.string(value)
    if not value.startswith(_NAMESPACE_PREFIX) or len(value) <= len(_NAMESPACE_PREFIX) or len(value) > 256:
        raise vol.Invalid("a namespace starts with urn:x-cast: (e.g. urn:x-cast:com.example.app)")
    return value


async def async_setup_entry(
    hass: HomeAssistant,
    entry: Cast2MqttConfigEntry,
    async_add_entities: AddEntitiesCallback,
) -> None:
    """Add a media player for every device the bridge lists, now and later."""
    bridge = entry.runtime_data
    players: dict[str, Cast2MqttMediaPlayer] = {}

    @callback
    def devices_changed(added: list[str], removed: list[str]) -> None:
        new = []
        for device_id in added:
            if device_id not in players and device_id in bridge.devices:
                players[device_id] = Cast2MqttMediaPlayer(bridge, device_id)
                new.append(players[device_id])
        if new:
            async_add_entities(new)
        for device_id in removed:
            player = players.pop(device_id, None)
            hass.async_create_task(_async_remove_device(hass, entry, device_id, player))

    entry.async_on_unload(bridge.async_listen_devices(devices_changed))
    if bridge.devices:
        devices_changed(list(bridge.devices), [])

    platform = async_get_current_platform()
    platform.async_register_entity_service(
        SERVICE_TRANSFER,
        {
            vol.Required(ATTR_TO): cv.string,
            vol.Optional(ATTR_KEEP_SOURCE, default=False): cv.boolean,
        },
        "async_transfer",
        supports_response=SupportsResponse.OPTIONAL,
    )
    platform.async_register_entity_service(
        SERVICE_SET_PLAYBACK_RATE,
        {vol.Required(ATTR_RATE): vol.All(vol.Coerce(float), vol.Range(min=0.5, max=2.0))},
        "async_set_playback_rate",
    )
    platform.async_register_entity_service(
        SERVICE_LAUNCH,
        {vol.Required(ATTR_APP_ID): _app_id},
        "async_launch",
    )
    platform.async_register_entity_service(
        SERVICE_SEND_MESSAGE,
        {
            vol.Required(ATTR_NAMESPACE): _namespace,
            vol.Required(ATTR_DATA): vol.Any(dict, list, str, int, float, bool),
            vol.Optional(ATTR_APP_ID): _app_id,
            vol.Optional(ATTR_REPLY): cv.boolean,
            vol.Optional(ATTR_TIMEOUT): vol.All(vol.Coerce(float), vol.Range(min=1, max=300)),
        },
        _async_send_message,
        supports_response=SupportsResponse.OPTIONAL,
    )


async def _async_send_message(entity: Cast2MqttMediaPlayer, call: ServiceCall) -> ServiceResponse:
    """`cast2mqtt.send_message`: waits for the app's reply when a response is asked for."""
    return await entity.async_send_message(
        call.data[ATTR_NAMESPACE],
        call.data[ATTR_DATA],
        app_id=call.data.get(ATTR_APP_ID),
        reply=call.data.get(ATTR_REPLY, call.return_response),
        timeout=call.data.get(ATTR_TIMEOUT),
    )


async def _async_remove_device(
    hass: HomeAssistant,
    entry: Cast2MqttConfigEntry,
    device_id: str,
    player: Cast2MqttMediaPlayer | None,
) -> None:
    """The bridge forgot a device: drop its media player, registry entry and device link."""
    if player is not None and player.hass is not None:
        await player.async_remove(force_remove=True)
    entities = er.async_get(hass)
    if entity_id := entities.async_get_entity_id("media_player", DOMAIN, _unique_id(device_id)):
        entities.async_remove(entity_id)
    devices = dr.async_get(hass)
    if device := devices.async_get_device(identifiers={_device_identifier(device_id)}):
        if er.async_entries_for_device(entities, device.id, include_disabled_entities=True):
            # The MQTT entities are still there; the MQTT integration removes the device with them.
            devices.async_update_device(device.id, remove_config_entry_id=entry.entry_id)
        else:
            # The MQTT integration went first and kept the device because this media player was
            # still on it: nothing is left on the device, so it goes.
            devices.async_remove_device(device.id)


def _unique_id(device_id: str) -> str:
    return f"cast2mqtt_{device_id}_media_player"


def _device_identifier(device_id: str) -> tuple[str, str]:
    # The bridge's MQTT discovery registers the device under the MQTT integration's domain;
    # using the same identifier makes this media player part of that same device.
    return ("mqtt", f"cast2mqtt_{device_id}")


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _string(value: Any, limit: int = 4096) -> str | None:
    return value if isinstance(value, str) and 0 < len(value) <= limit else None


class Cast2MqttMediaPlayer(MediaPlayerEntity):
    """One Cast device, driven through `<base>/<dev>/command/*`."""

    _attr_has_entity_name = True
    _attr_name = None
    _attr_should_poll = False
    _attr_media_image_remotely_accessible = False

    def __init__(self, bridge: Bridge, device_id: str) -> None:
        self._bridge = bridge
        self._device_id = device_id
        record = bridge.devices[device_id]
        self._attr_unique_id = _unique_id(device_id)
        self._attr_device_info = DeviceInfo(
            identifiers={_device_identifier(device_id)},
            name=record.name,
            model=record.model,
        )

    # MARK: - State

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
        volume = self._receiver.get("volume")
        return volume if isinstance(volume, dict) else {}

    @property
    def _has_media_session(self) -> bool:
        return isinstance(self._media.get("media_session_id"), int)

    async def async_added_to_hass(self) -> None:
        """Follow the device's topics."""
        self.async_on_remove(self._bridge.async_listen_device(self._device_id, self._changed))

    @callback
    def _changed(self) -> None:
        if self.hass is not None and self.entity_id:
            self.async_write_ha_state()

    @property
    def available(self) -> bool:
        """Online when the bridge is online and the device answers."""
        return self._bridge.online and self._record is not None and self._topics.availability == "online"

    @property
    def state(self) -> MediaPlayerState | None:
        """The device's `state` topic."""
        word = self._topics.state
        return _STATES.get(word) if word else None

    @property
    def supported_features(self) -> MediaPlayerEntityFeature:
        """From the receiver's volume control and the media session's supported commands."""
        features = _ALWAYS
        if self._volume.get("control_type") != "fixed":
            features |= _VOLUME
        if self._has_media_session:
            features |= MediaPlayerEntityFeature.STOP
            commands = self._media.get("supported_commands")
            if isinstance(commands, list):
                for command in commands:
                    if isinstance(command, str):
                        features |= _BY_COMMAND.get(command, MediaPlayerEntityFeature(0))
            else:  # unknown: let the device decide
                features |= MediaPlayerEntityFeature.PAUSE | MediaPlayerEntityFeature.PLAY
                features |= MediaPlayerEntityFeature.SEEK
        return features

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
    def media_duration(self) -> float | None:
        duration = _number(self._media.get("duration"))
        return duration if duration is not None and duration >= 0 else None

    @property
    def media_position(self) -> float | None:
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
    def extra_state_attributes(self) -> dict[str, Any]:
        attributes: dict[str, Any] = {}
        if (rate := _number(self._media.get("playback_rate"))) is not None:
            attributes["playback_rate"] = rate
        if record := self._record:
            attributes["device_topic"] = record.topic
        return attributes

    # MARK: - Commands

    async def _command(
        self, command: str, body: dict[str, Any] | None = None, *, timeout: float = COMMAND_TIMEOUT
    ) -> dict[str, Any]:
        record = self._record
        if record is None:
            raise HomeAssistantError(f"{self.entity_id}: the cast2mqtt bridge no longer lists this device")
        return await self._bridge.async_command(record, command, body, timeout=timeout)

    async def async_turn_on(self) -> None:
        await self._command("launch", {"app_id": DEFAULT_MEDIA_RECEIVER})

    async def async_turn_off(self) -> None:
        await self._command("quit")

    async def async_media_play(self) -> None:
        await self._command("play")

    async def async_media_pause(self) -> None:
        await self._command("pause")

    async def async_media_stop(self) -> None:
        await self._command("stop")

    async def async_media_next_track(self) -> None:
        await self._command("next")

    async def async_media_previous_track(self) -> None:
        await self._command("previous")

    async def async_media_seek(self, position: float) -> None:
        await self._command("seek", {"position": max(0.0, float(position))})

    async def async_set_volume_level(self, volume: float) -> None:
        await self._command("volume", {"level": round(min(max(float(volume), 0.0), 1.0), 4)})

    async def async_mute_volume(self, mute: bool) -> None:
        await self._command("mute", {"muted": bool(mute)})

    async def async_play_media(self, media_type: MediaType | str, media_id: str, **kwargs: Any) -> None:
        """URLs and media_source items; `announce` restores, `enqueue` maps to the queue."""
        content_type: str | None = None
        if media_source.is_media_source_id(media_id):
            item = await media_source.async_resolve_media(self.hass, media_id, self.entity_id)
            media_id, content_type = item.url, item.mime_type
        media_id = async_process_play_media_url(self.hass, media_id)
        if "/" in str(media_type):  # a MIME type given as media_content_type
            content_type = content_type or str(media_type)

        extra = kwargs.get(ATTR_MEDIA_EXTRA) or {}
        metadata = extra.get("metadata") if isinstance(extra.get("metadata"), dict) else {}
        title = _string(extra.get("title"), 1024) or _string(metadata.get("title"), 1024)

        if kwargs.get(ATTR_MEDIA_ANNOUNCE):
            body: dict[str, Any] = {"url": media_id}
            if content_type:
                body["content_type"] = content_type
            if title:
                body["title"] = title
            volume = _number(extra.get("volume"))
            if volume is not None and 0 <= volume <= 1:
                body["volume"] = volume
            await self._command("announce", body)
            return

        item: dict[str, Any] = {"url": media_id}
        if content_type:
            item["content_type"] = content_type
        if title:
            item["title"] = title
        for key in ("artist", "album", "subtitle"):
            if value := _string(metadata.get(key), 1024):
                item[key] = value
        if (thumb := _string(metadata.get("thumb") or extra.get("thumb"))) is not None:
            item["images"] = [thumb]

        enqueue = kwargs.get(ATTR_MEDIA_ENQUEUE)
        if enqueue in (MediaPlayerEnqueue.ADD, MediaPlayerEnqueue.NEXT) and self._has_media_session:
            await self._command("load", self._queue_with(item, at_end=enqueue == MediaPlayerEnqueue.ADD))
            return
        await self._command("load", item)

    def _queue_with(self, item: dict[str, Any], *, at_end: bool) -> dict[str, Any]:
        """A `load` of the current item (at its live position) and what follows, plus `item`.

        The contract has no queue-insert command, so the queue is loaded again: what already
        played is dropped, the current item continues where it is.
        """
        media = self._media
        current: dict[str, Any] = {"url": _string(media.get("content_id")) or item["url"]}
        for key in ("content_type", "title", "subtitle", "artist", "album"):
            if value := _string(media.get(key), 1024):
                current[key] = value
        if (image := self.media_image_url) is not None:
            current["images"] = [image]
        following: list[dict[str, Any]] = []
        queue = media.get("queue")
        if isinstance(queue, dict) and isinstance(queue.get("items"), list):
            current_item = queue.get("current_item_id")
            seen_current = False
            for entry in queue["items"][:199]:
                if not isinstance(entry, dict):
                    continue
                if entry.get("item_id") == current_item:
                    seen_current = True
                    continue
                if seen_current and (url := _string(entry.get("content_id"))):
                    following.append({"url": url, **({"title": t} if (t := _string(entry.get("title"), 1024)) else {})})
        items = [current, *following, item] if at_end else [current, item, *following]
        body: dict[str, Any] = {"queue": items[:200]}
        position = self.media_position
        if position is not None:
            updated = self.media_position_updated_at
            if self.state == MediaPlayerState.PLAYING and updated is not None:
                rate = _number(media.get("playback_rate")) or 1.0
                position += max(0.0, (dt_util.utcnow() - updated).total_seconds()) * rate
            body["position"] = round(position, 3)
        if self.state == MediaPlayerState.PAUSED:
            body["autoplay"] = False
        return body

    async def async_browse_media(
        self, media_content_type: MediaType | str | None = None, media_content_id: str | None = None
    ) -> BrowseMedia:
        """Browse media sources: audio, video and images."""
        if "media_source" not in self.hass.config.components:
            raise BrowseError("media_source is not set up in Home Assistant")
        return await media_source.async_browse_media(
            self.hass,
            media_content_id,
            content_filter=lambda item: item.media_content_type.startswith(("audio/", "video/", "image/")),
        )

    # MARK: - Services of the integration

    async def async_transfer(self, to: str, keep_source: bool = False) -> ServiceResponse:
        """`cast2mqtt.transfer`: `to` is a media player of this integration or a device name."""
        target = to
        if to.startswith("media_player."):
            entry = er.async_get(self.hass).async_get(to)
            if entry is None or entry.platform != DOMAIN or not entry.unique_id.startswith("cast2mqtt_"):
                raise HomeAssistantError(f"{to} is not a cast2mqtt media player")
            device_id = entry.unique_id.removeprefix("cast2mqtt_").removesuffix("_media_player")
            record = self._bridge.devices.get(device_id)
            if record is None:
                raise HomeAssistantError(f"the cast2mqtt bridge does not list {to}")
            target = record.topic
        return await self._command("transfer", {"to": target, "keep_source": keep_source})

    async def async_set_playback_rate(self, rate: float) -> None:
        """`cast2mqtt.set_playback_rate`."""
        await self._command("rate", {"rate": rate})

    async def async_launch(self, app_id: str) -> None:
        """`cast2mqtt.launch`."""
        await self._command("launch", {"app_id": app_id})

    async def async_send_message(
        self, namespace: str, data: Any, *, app_id: str | None, reply: bool, timeout: float | None
    ) -> ServiceResponse:
        """`cast2mqtt.send_message`: the app's reply (with `reply`) as the response."""
        body: dict[str, Any] = {"namespace": namespace, "data": data, "reply": reply}
        if app_id:
            body["app_id"] = app_id
        if timeout is not None:
            body["timeout"] = timeout
        # The bridge waits `timeout` (or its cast.request_timeout, 10 s) for the reply.
        wait = max(COMMAND_TIMEOUT, (timeout or 0) + 10)
        result = await self._command("send", body, timeout=wait)
        response: dict[str, Any] = {"namespace": namespace}
        if reply:
            response["reply"] = result.get("data")
            if "encoding" in result:
                response["encoding"] = result["encoding"]
        return response
