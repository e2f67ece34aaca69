"""What a media player does (media_player.py puts the entity together): Home Assistant's media
player actions and the integration's own, as commands to the bridge."""

from __future__ import annotations

import logging
from typing import Any

from homeassistant.components import media_source
from homeassistant.components.media_player import MediaPlayerEnqueue
from homeassistant.components.media_player.browse_media import BrowseMedia, async_process_play_media_url
from homeassistant.components.media_player.const import (
    ATTR_MEDIA_ANNOUNCE,
    ATTR_MEDIA_ENQUEUE,
    ATTR_MEDIA_EXTRA,
    MediaPlayerState,
    MediaType,
    RepeatMode,
)
from homeassistant.core import ServiceResponse

from . import enqueue as enqueueing, lovelace, media, playlist
from .const import (
    ANNOUNCE_CLIP_LIMIT,
    ANNOUNCE_DEADLINE,
    DEFAULT_MEDIA_RECEIVER,
    players,
)
from .errors import InvalidCommandError, error, service_error
from .features import REPEAT_WORDS, media_active
from .player_state import CAST_MEDIA_TYPE, PlayerState, _number

# The media players' records keep the one logger name they had before media_player.py was
# split into modules (a user's `logger:` configuration names it).
_LOGGER = logging.getLogger(f"{__package__}.media_player")

_PLAYLIST_TYPE_ENDINGS = ("mpegurl", "scpls", "pls+xml", "x-pls")


class PlayerCommands(PlayerState):
    """A media player's actions, each a command to the bridge for its device."""

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

    async def async_show_lovelace_view(self, request: lovelace.ViewRequest) -> None:
        """`cast2mqtt.show_lovelace_view`: once, or kept on the display by the bridge."""
        record = self._record
        await lovelace.async_show(self.hass, self._command, record.name if record else self.entity_id, request)
