"""What `play_media` sends to the bridge: the `extra` that Home Assistant's cast integration
passes on (its `metadata` in the Cast shape, `stream_type`, `current_time`, `autoplay`,
`subtitles`, ...) as the keys of the bridge's `load`, the `cast` media type's JSON, live hints
for HLS, and whether artwork can be fetched by a browser without Home Assistant's proxy.

Everything here is a pure function of its arguments (tested without Home Assistant running).
`extra` comes from whoever calls the action: every value is checked, and a value of the wrong
type is a translated ServiceValidationError that names the key, never a crash.
"""

from __future__ import annotations

from dataclasses import dataclass
import ipaddress
import json
import math
import re
from typing import Any
from urllib.parse import urlsplit

from homeassistant.exceptions import ServiceValidationError

from .const import DEFAULT_MEDIA_RECEIVER
from .errors import service_error

MAX_TEXT = 1024
MAX_URL = 4096
MAX_IMAGES = 32
MAX_CAST_JSON = 64 * 1024

# Cast `metadataType` numbers as the bridge's `metadata_type` names.
METADATA_TYPES = {0: "generic", 1: "movie", 2: "tv_show", 3: "music_track", 4: "photo", 5: "audiobook_chapter"}
STREAM_TYPES = frozenset({"buffered", "live", "none"})
HLS_CONTENT_TYPES = frozenset({"application/vnd.apple.mpegurl", "application/x-mpegurl", "audio/mpegurl"})
HLS_CONTENT_TYPE = "application/x-mpegURL"

# Our text keys, from the Cast metadata keys (and their deprecated aliases) in the order they
# are tried: the first one given wins. `seriesTitle` (a TV show) and `albumArtist` have no key
# of their own in the bridge's `load`: they stand in for the subtitle and the artist.
_METADATA_TEXT = {
    "title": ("title", "songName"),
    "subtitle": ("subtitle", "seriesTitle", "episodeTitle"),
    "artist": ("artist", "artistName", "albumArtist"),
    "album": ("albumName", "album"),
}
# The core's quick-play apps that are not the Default Media Receiver: each talks its own
# protocol (YouTube's, Supla's, the BBC's...), which the bridge does not speak.
_LOAD_APPS = {"default_media_receiver": DEFAULT_MEDIA_RECEIVER}
_APP_ID_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
# What the bridge's queue items take (the rest belongs to one `load` only).
_ITEM_KEYS = ("url", "content_type", "stream_type", "title", "subtitle", "artist", "album", "images",
              "metadata_type", "custom_data", "autoplay")


def _invalid(name: str, expected: str) -> ServiceValidationError:
    return service_error("invalid_extra", name=name, expected=expected)


def _text(source: dict[str, Any], key: str, name: str | None = None) -> str | None:
    value = source.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > MAX_TEXT:
        raise _invalid(name or key, f"text of at most {MAX_TEXT} characters")
    return value or None


def _url(value: Any, name: str) -> str:
    if (
        not isinstance(value, str)
        or not 0 < len(value) <= MAX_URL
        or any(ord(c) <= 0x20 or ord(c) == 0x7F for c in value)
        or not value.lower().startswith(("http://", "https://"))
    ):
        raise _invalid(name, "an http(s) URL without spaces")
    return value


def _number(source: dict[str, Any], key: str, low: float, high: float) -> float | None:
    value = source.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not low <= value <= high:
        raise _invalid(key, f"a number from {low:g} to {high:g}")
    return float(value)


def _flag(source: dict[str, Any], key: str) -> bool | None:
    value = source.get(key)
    if value is None or isinstance(value, bool):
        return value
    raise _invalid(key, "true or false")


def _images(value: Any, name: str) -> list[str]:
    """Cast `images` ([{"url": ...}]) or plain URLs."""
    if not isinstance(value, list) or len(value) > MAX_IMAGES:
        raise _invalid(name, f"a list of up to {MAX_IMAGES} images ({{\"url\": ...}})")
    return [_url(image.get("url") if isinstance(image, dict) else image, name) for image in value]


def _metadata_type(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and value in METADATA_TYPES:
        return METADATA_TYPES[value]
    if isinstance(value, str) and value.lower() in METADATA_TYPES.values():
        return value.lower()
    raise _invalid("metadata.metadataType", "0-5 (generic, movie, tv_show, music_track, photo, audiobook_chapter)")


@dataclass(slots=True)
class Request:
    """A `load` body and how it may be enqueued."""

    body: dict[str, Any]
    # `enqueue: true` in `extra` (the core's pychromecast option): add to the queue.
    enqueue: bool = False
    def dropped_by_queue(self) -> list[str]:
        """Keys a queue item cannot carry (subtitles belong to one `load`)."""
        return [key for key in self.body if key not in _ITEM_KEYS and key not in ("position", "app_id")]

    def queue_item(self) -> dict[str, Any]:
        """The body as an item of the bridge's `queue` command (a start position becomes the
        item's `start_time`; subtitles belong to a `load`)."""
        item = {key: self.body[key] for key in _ITEM_KEYS if key in self.body}
        if "position" in self.body:
            item["start_time"] = self.body["position"]
        return item


def load_request(url: str, content_type: str | None, extra: Any) -> Request:
    """The bridge's `load` for `url` with what `extra` adds.

    Read from `extra` (the keys the core's cast integration hands to the Default Media
    Receiver): `metadata` (Cast keys: `metadataType`, `title`, `subtitle`, `artist`,
    `albumName`, `seriesTitle`, `images`, ...), `title`, `thumb`, `stream_type`,
    `current_time`, `autoplay`, `subtitles` with `subtitles_lang`, `subtitles_mime` and
    `subtitle_id`, `enqueue`; and the bridge's own `custom_data`."""
    if extra is None:
        extra = {}
    if not isinstance(extra, dict):
        raise _invalid("extra", "a mapping")
    metadata = extra.get("metadata")
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        raise _invalid("metadata", "a mapping of Cast metadata (title, artist, images...)")

    body: dict[str, Any] = {"url": url}
    if content_type:
        body["content_type"] = content_type
    if (stream_type := _text(extra, "stream_type")) is not None:
        if stream_type.lower() not in STREAM_TYPES:
            raise _invalid("stream_type", "BUFFERED, LIVE or NONE")
        body["stream_type"] = stream_type.lower()
    title = _text(extra, "title")
    for ours, keys in _METADATA_TEXT.items():
        for key in keys:
            if (value := _text(metadata, key, f"metadata.{key}")) is not None:
                body.setdefault(ours, value)
    if title is not None:
        body["title"] = title
    if "metadataType" in metadata:
        body["metadata_type"] = _metadata_type(metadata["metadataType"])
    images: list[str] = []
    if metadata.get("images") is not None:
        images = _images(metadata["images"], "metadata.images")
    for holder, name in ((metadata, "metadata.thumb"), (extra, "thumb")):
        if not images and holder.get("thumb") is not None:
            images = [_url(holder["thumb"], name)]
    if images:
        body["images"] = images
    if (position := _number(extra, "current_time", 0, 10_000_000)) is not None:
        body["position"] = position
    if (autoplay := _flag(extra, "autoplay")) is not None:
        body["autoplay"] = autoplay
    if extra.get("custom_data") is not None:
        if not isinstance(extra["custom_data"], dict):
            raise _invalid("custom_data", "a mapping")
        body["custom_data"] = extra["custom_data"]

    if extra.get("subtitles") is not None:
        subtitles = _url(extra["subtitles"], "subtitles")
        language = _text(extra, "subtitles_lang") or "en-US"
        if not re.fullmatch(r"[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*", language):
            raise _invalid("subtitles_lang", "a language tag such as en-US")
        track_id = extra.get("subtitle_id", 1)
        if isinstance(track_id, bool) or not isinstance(track_id, int) or not 0 < track_id < 2**31:
            raise _invalid("subtitle_id", "a whole number above 0")
        body["tracks"] = [{
            "id": track_id, "type": "text", "subtype": "subtitles", "language": language,
            "name": language, "content_id": subtitles,
            "content_type": _text(extra, "subtitles_mime") or "text/vtt",
        }]
        body["active_tracks"] = [track_id]
    enqueue = _flag(extra, "enqueue") or False
    return Request(body, enqueue=enqueue)


@dataclass(slots=True)
class CastApp:
    """`media_content_type: cast`: launch `app_id`, and load `request` in it when given."""

    app_id: str
    request: Request | None


def cast_app(media_id: str, extra: Any) -> CastApp:
    """The core integration's `cast` JSON: `{"app_id": ...}` launches an app (and with
    `media_id` loads it there, for a receiver that takes a LOAD);
    `{"app_name": "default_media_receiver", "media_id": ..., "media_type": ...}` loads in the
    Default Media Receiver. The other `app_name`s are apps with their own protocol: refused
    with an error that says so."""
    if len(media_id) > MAX_CAST_JSON:
        raise service_error("cast_json_invalid", reason=f"longer than {MAX_CAST_JSON} characters")
    try:
        data = json.loads(media_id)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than the decoder goes
        raise service_error("cast_json_invalid", reason="not JSON") from None
    if not isinstance(data, dict):
        raise service_error("cast_json_invalid", reason="not a JSON object")
    # As in the core integration: the action's extra.metadata wins over the JSON's.
    if isinstance(extra, dict) and extra.get("metadata") is not None:
        data["metadata"] = extra["metadata"]
    if (app_id := data.get("app_id")) is not None:
        if not isinstance(app_id, str) or not _APP_ID_RE.match(app_id):
            raise service_error("cast_json_invalid", reason="app_id is not an app id such as CC1AD845")
    elif (app_name := data.get("app_name")) is not None:
        if not isinstance(app_name, str) or len(app_name) > 64:
            raise service_error("cast_json_invalid", reason="app_name is not a name")
        if app_name.lower() not in _LOAD_APPS:
            raise service_error("cast_app_not_supported", app_name=app_name)
        app_id = _LOAD_APPS[app_name.lower()]
        if data.get("media_id") is None:
            raise service_error("cast_json_invalid", reason=f"{app_name} needs media_id")
    else:
        raise service_error("cast_json_invalid", reason="it names no app_id or app_name")
    if data.get("media_id") is None:
        return CastApp(app_id, None)
    url = _url(data["media_id"], "media_id")
    content_type = _text(data, "media_type")
    request = load_request(url, content_type if content_type and "/" in content_type else None, data)
    request.body["app_id"] = app_id
    return CastApp(app_id, request)


def is_hls(url: str, content_type: str | None) -> bool:
    """An HLS stream by its content type, or a Home Assistant camera stream (`/api/hls/`)."""
    if content_type and content_type.split(";")[0].strip().lower() in HLS_CONTENT_TYPES:
        return True
    return "/api/hls/" in urlsplit(url).path


def mark_live(body: dict[str, Any]) -> None:
    """HLS: the live stream type (unless the caller chose one) and the HLS content type."""
    body.setdefault("stream_type", "live")
    content_type = body.get("content_type")
    if not isinstance(content_type, str) or content_type.split(";")[0].strip().lower() not in HLS_CONTENT_TYPES:
        body["content_type"] = HLS_CONTENT_TYPE


def publicly_reachable(url: str | None, internal_hosts: set[str]) -> bool:
    """Artwork a browser can fetch itself: http(s) on a public address or name (not private,
    loopback or link-local, not `.local` or a single-label name, not Home Assistant's own)."""
    if not url:
        return False
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower().rstrip(".")
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not host or host in internal_hosts:
        return False
    try:
        return ipaddress.ip_address(host).is_global
    except ValueError:
        pass
    return "." in host and not host.endswith((".local", ".localhost", ".internal", ".lan", ".home.arpa")) \
        and host != "localhost"
