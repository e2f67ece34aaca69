"""A media player per Cast device known to the bridge."""

from __future__ import annotations

from datetime import datetime
import logging
import math
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from homeassistant.components import media_source
from homeassistant.components.media_player import MediaPlayerDeviceClass, MediaPlayerEnqueue, MediaPlayerEntity
from homeassistant.components.media_player.browse_media import BrowseMedia, async_process_play_media_url
from homeassistant.components.media_player.const import (
    ATTR_MEDIA_ANNOUNCE,
    ATTR_MEDIA_ENQUEUE,
    ATTR_MEDIA_EXTRA,
    MediaPlayerEntityFeature,
    MediaPlayerState,
    MediaType,
    RepeatMode,
)
from homeassistant.core import HomeAssistant, ServiceResponse, callback
from homeassistant.helpers import device_registry as dr, entity_registry as er
from homeassistant.helpers.device_registry import DeviceInfo
from homeassistant.helpers.entity_platform import AddEntitiesCallback

from . import enqueue as enqueueing, media, playlist
from .bridge import Bridge
from .const import (
    ANNOUNCE_CLIP_LIMIT,
    ANNOUNCE_DEADLINE,
    DEFAULT_MEDIA_RECEIVER,
    DOMAIN,
    device_identifier,
    players,
    unique_id,
)
from .errors import InvalidCommandError, error, service_error
from .features import REPEAT_WORDS, media_active, repeat_of, shuffle_of, supported_features, volume_of
from .payloads import DeviceInfoRecord, DeviceTopics

if TYPE_CHECKING:
    from . import Cast2MqttConfigEntry

_LOGGER = logging.getLogger(__name__)

PARALLEL_UPDATES = 0
# The core cast integration's media type for an app and what to play in it (JSON).
CAST_MEDIA_TYPE = "cast"
_PLAYLIST_TYPE_ENDINGS = ("mpegurl", "scpls", "pls+xml", "x-pls")

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

# `cast_type` of bridge/devices: a Chromecast or Android TV drives a screen; speakers and
# speaker groups play audio.
_DEVICE_CLASSES = {
    "video": MediaPlayerDeviceClass.TV,
    "audio": MediaPlayerDeviceClass.SPEAKER,
    "group": MediaPlayerDeviceClass.SPEAKER,
}


async def async_setup_entry(
    hass: HomeAssistant,
    entry: Cast2MqttConfigEntry,
    async_add_entities: AddEntitiesCallback,
) -> None:
    """Add a media player for every device the bridge lists, now and later. The integration's
    actions are registered in `async_setup` (services.py)."""
    bridge = entry.runtime_data
    known: dict[str, Cast2MqttMediaPlayer] = {}

    @callback
    def devices_changed(added: list[str], removed: list[str]) -> None:
        new = []
        for device_id in added:
            if device_id not in known and device_id in bridge.devices:
                known[device_id] = Cast2MqttMediaPlayer(bridge, device_id)
                new.append(known[device_id])
        if new:
            async_add_entities(new)
        for device_id in removed:
            player = known.pop(device_id, None)
            entry.async_create_background_task(
                hass, _async_remove_device(hass, entry, device_id, player), f"{DOMAIN} remove {device_id}"
            )

    entry.async_on_unload(bridge.async_listen_devices(devices_changed))
    if bridge.devices:
        devices_changed(list(bridge.devices), [])


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
    if entity_id := entities.async_get_entity_id("media_player", DOMAIN, unique_id(entry.runtime_data.base, device_id)):
        entities.async_remove(entity_id)
    devices = dr.async_get(hass)
    if device := devices.async_get_device(identifiers={device_identifier(device_id)}):
        if er.async_entries_for_device(entities, device.id, include_disabled_entities=True):
            # The MQTT entities are still there; the MQTT integration removes the device with them.
            devices.async_update_device(device.id, remove_config_entry_id=entry.entry_id)
        else:
            # The MQTT integration went first and kept the device because this media player was
            # still on it: nothing is left on the device, so it goes.
            devices.async_remove_device(device.id)


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

    def __init__(self, bridge: Bridge, device_id: str) -> None:
        self._bridge = bridge
        self._device_id = device_id
        record = bridge.devices[device_id]
        self._attr_unique_id = unique_id(bridge.base, device_id)
        # The same Home Assistant device as the bridge's MQTT discovery (same identifier); what
        # the bridge does not know is left out, since a None would clear what discovery gave.
        self._attr_device_info = DeviceInfo(identifiers={device_identifier(device_id)}, name=record.name)
        if record.model:
            self._attr_device_info["model"] = record.model

    # MARK: - State

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

    async def async_added_to_hass(self) -> None:
        """Follow the device's topics; be found by the integration's actions."""
        self.async_on_remove(self._bridge.async_listen_device(self._device_id, self._changed))
        registry = players(self.hass)
        registry[self.entity_id] = self

        @callback
        def forget() -> None:
            registry.pop(self.entity_id, None)

        self.async_on_remove(forget)
        # A group that lists this device among its members can name its player now.
        for player in list(registry.values()):
            if player is not self and player.bridge is self._bridge and self._device_id in player.member_ids:
                player._changed()

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
    def device_class(self) -> MediaPlayerDeviceClass | None:
        record = self._record
        return _DEVICE_CLASSES.get(record.cast_type or "") if record else None

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
        return attributes

    # MARK: - Commands

    async def _command(
        self, command: str, body: dict[str, Any] | None = None, **options: float
    ) -> dict[str, Any]:
        record = self._record
        if record is None:
            raise error("device_not_listed", entity_id=self.entity_id)
        return await self._bridge.async_command(record, command, body, **options)

    async def async_turn_on(self) -> None:
        """Launch the Default Media Receiver, but only on a player that is off: an app that runs
        (Spotify, Netflix, a cast tab) is left alone."""
        if self.state not in (None, MediaPlayerState.OFF):
            return
        await self._command("launch", {"app_id": DEFAULT_MEDIA_RECEIVER})

    async def async_turn_off(self) -> None:
        """Quit the running app; a player that is already off stays off without an error."""
        if self.state == MediaPlayerState.OFF:
            return
        try:
            await self._command("quit")
        except InvalidCommandError as err:
            if err.code != "no_app":
                raise

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

    async def _async_volume_step(self, sign: str) -> None:
        # Relative on the bridge (`+5`), so quick presses add up instead of each one setting
        # the level it read before the previous one was applied.
        record = self._record
        if record is None:
            raise error("device_not_listed", entity_id=self.entity_id)
        percent = round(self.volume_step * 100, 2)
        await self._bridge.async_command_text(record, "volume", f"{sign}{percent:g}")

    async def async_volume_up(self) -> None:
        await self._async_volume_step("+")

    async def async_volume_down(self) -> None:
        await self._async_volume_step("-")

    async def async_mute_volume(self, mute: bool) -> None:
        await self._command("mute", {"muted": bool(mute)})

    async def async_set_repeat(self, repeat: RepeatMode) -> None:
        await self._command("queue", {"repeat": REPEAT_WORDS[RepeatMode(repeat)]})

    async def async_set_shuffle(self, shuffle: bool) -> None:
        """On: the queue is shuffled (once, as Cast does). Off: ends `all_and_shuffle`; an order
        that was shuffled cannot be put back."""
        if shuffle:
            await self._command("queue", {"shuffle": True})
        elif self.shuffle:
            await self._command("queue", {"repeat": "all"})

    async def async_play_media(self, media_type: MediaType | str, media_id: str, **kwargs: Any) -> None:
        """URLs and media_source items with what `extra` describes (media.py); `cast` apps;
        playlists resolved and HLS played live; `announce` restores, `enqueue` inserts into
        the queue."""
        content_type: str | None = None
        if media_source.is_media_source_id(media_id):
            resolved = await media_source.async_resolve_media(self.hass, media_id, self.entity_id)
            media_id, content_type = resolved.url, resolved.mime_type
        extra = kwargs.get(ATTR_MEDIA_EXTRA)
        if str(media_type) == CAST_MEDIA_TYPE:
            await self._async_play_cast_app(media_id, extra)
            return
        media_id = async_process_play_media_url(self.hass, media_id)
        if "/" in str(media_type):  # a MIME type given as media_content_type
            content_type = content_type or str(media_type)
        request = media.load_request(media_id, content_type, extra)
        body = request.body
        await self._async_resolve_stream(body)

        if kwargs.get(ATTR_MEDIA_ANNOUNCE):
            volume = _number(extra.get("volume")) if isinstance(extra, dict) else None
            await self._async_announce(body["url"], body.get("content_type"), body.get("title"), volume)
            return

        enqueue = kwargs.get(ATTR_MEDIA_ENQUEUE)
        if enqueue is None and request.enqueue:
            enqueue = MediaPlayerEnqueue.ADD
        if enqueue in (MediaPlayerEnqueue.ADD, MediaPlayerEnqueue.NEXT, MediaPlayerEnqueue.PLAY) and media_active(
            self._media
        ):
            if dropped := request.dropped_by_queue():
                _LOGGER.info("%s: enqueued %s without %s (a queue item cannot carry them)",
                             self.entity_id, body["url"], ", ".join(dropped))
            await self._async_enqueue(MediaPlayerEnqueue(enqueue), request.queue_item())
            return
        await self._command("load", body)

    async def _async_resolve_stream(self, body: dict[str, Any]) -> None:
        """HLS (a camera's `/api/hls/` stream, a fetched `.m3u8` with HLS tags, or another URL
        given an HLS content type) plays live; a playlist file is replaced by the stream it names
        (playlist.py). A playlist URL is fetched whatever its content type: Home Assistant's own
        media sources call a `.m3u` `audio/mpegurl` and any `.m3u8` HLS, lists of streams too."""
        url: str = body["url"]
        if media.is_hls(url, None):
            media.mark_live(body)
            return
        if not playlist.is_playlist_url(url):
            if media.is_hls(url, body.get("content_type")):
                media.mark_live(body)
            return
        found = await playlist.async_fetch(self.hass, url)
        if found.hls:
            media.mark_live(body)
            return
        entry = found.entries[0]
        _LOGGER.info("%s: playlist %s names %d stream(s); playing the first, %s",
                     self.entity_id, url, len(found.entries), entry.url)
        body["url"] = entry.url
        if entry.title and "title" not in body:
            body["title"] = entry.title
        # A content type given for the playlist file is not the stream's.
        if str(body.get("content_type", "")).lower().endswith(_PLAYLIST_TYPE_ENDINGS):
            del body["content_type"]

    async def _async_play_cast_app(self, media_id: str, extra: Any) -> None:
        """`media_content_type: cast` (the core integration's JSON): launch the app, or load
        what it names in it."""
        app = media.cast_app(media_id, extra)
        if app.request is None:
            await self._command("launch", {"app_id": app.app_id})
            return
        await self._command("load", app.request.body)

    async def _async_announce(
        self, url: str, content_type: str | None, title: str | None, volume: float | None
    ) -> None:
        """The bridge plays the clip and then restores what played; with `wait` it answers when
        the clip has finished, so a script's next step runs after the announcement."""
        body: dict[str, Any] = {"url": url, "wait": True}
        if content_type:
            body["content_type"] = content_type
        if title:
            body["title"] = title
        if volume is not None and 0 <= volume <= 1:
            body["volume"] = volume
        await self._command("announce", body, deadline=ANNOUNCE_DEADLINE, wait_extra=ANNOUNCE_CLIP_LIMIT)

    async def _async_enqueue(self, enqueue: MediaPlayerEnqueue, item: dict[str, Any]) -> None:
        try:
            for body in enqueueing.insert_commands(enqueue, item):
                await self._command("queue", body)
            return
        except InvalidCommandError as err:
            if err.code != "unknown_command":
                raise
        # A bridge without `queue`: load the queue again, unless that would lose items.
        reload = enqueueing.reload_body(
            self._media, item, enqueue=enqueue, position=self.media_position,
            updated_at=self.media_position_updated_at, image=self.media_image_url,
        )
        if reload is None:
            raise service_error("enqueue_needs_queue", entity_id=self.entity_id)
        await self._command("load", reload)

    async def async_browse_media(
        self, media_content_type: MediaType | str | None = None, media_content_id: str | None = None
    ) -> BrowseMedia:
        """Browse media sources: audio, video and images; a speaker (or speaker group) audio only."""
        if "media_source" not in self.hass.config.components:
            raise error("no_media_source")
        kinds = ("audio/",) if self._audio_only else ("audio/", "video/", "image/")
        return await media_source.async_browse_media(
            self.hass,
            media_content_id,
            content_filter=lambda item: item.media_content_type.startswith(kinds),
        )

    @property
    def _audio_only(self) -> bool:
        """A speaker or a speaker group (`cast_type` of bridge/devices) has no screen."""
        record = self._record
        return record is not None and record.cast_type in ("audio", "group")

    # MARK: - The integration's actions (registered in services.py)

    async def async_transfer(self, to: str, keep_source: bool = False) -> ServiceResponse:
        """`cast2mqtt.transfer`: `to` is a media player of the same bridge, or a device's topic
        name, friendly name or id."""
        target = to
        if to.startswith("media_player."):
            player = players(self.hass).get(to)
            if player is None:
                raise service_error("not_a_player", target=to)
            if player.bridge is not self._bridge:
                raise service_error("other_bridge", target=to, entity_id=self.entity_id)
            record = self._bridge.devices.get(player.device_id_of_bridge)
            if record is None:
                raise service_error("target_not_listed", target=to)
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
        # The bridge waits `timeout` (or its cast.request_timeout) for the reply.
        result = await self._command("send", body, wait_extra=timeout or 0.0)
        response: dict[str, Any] = {"namespace": namespace}
        if reply:
            response["reply"] = result.get("data")
            if "encoding" in result:
                response["encoding"] = result["encoding"]
        return response
