"""Playlist files (`.m3u`, `.m3u8`, `.pls`) resolved to the stream they name.

A Cast receiver plays streams, not playlist files: a radio station's `.pls` or `.m3u` is
fetched (Home Assistant's shared HTTP session, at most 64 KiB, within 10 s) and its first
playable entry is loaded, with the entry's title when the caller gave none. Only the first: a
radio playlist lists mirrors of one stream, which played one after the other as a queue would
replay the station when a mirror ends. An `.m3u8` that is an HLS media or master playlist
(`#EXT-X-` tags, or served as `application/vnd.apple.mpegurl`) is not a list of streams: it is
played as it is, as a live stream.

Home Assistant's own playlist parser lives in the cast integration's helpers, which import
pychromecast (not installed on a Home Assistant without that integration): this is our own.
"""

from __future__ import annotations

from dataclasses import dataclass
import logging
from urllib.parse import urljoin, urlsplit

import aiohttp

from homeassistant.core import HomeAssistant
from homeassistant.helpers.aiohttp_client import async_get_clientsession

from .errors import error

_LOGGER = logging.getLogger(__name__)

MAX_PLAYLIST = 64 * 1024
FETCH_TIMEOUT = 10.0
MAX_ENTRIES = 500
_EXTENSIONS = (".m3u", ".m3u8", ".pls")
_HLS_TYPES = frozenset({"application/vnd.apple.mpegurl", "application/x-mpegurl"})


@dataclass(slots=True, frozen=True)
class Entry:
    url: str
    title: str | None = None


@dataclass(slots=True, frozen=True)
class Playlist:
    """What a playlist URL is: HLS (play it as it is, live) or a list of streams."""

    hls: bool
    entries: tuple[Entry, ...] = ()


def is_playlist_url(url: str) -> bool:
    """A URL whose path ends in .m3u, .m3u8 or .pls (query and fragment ignored)."""
    try:
        path = urlsplit(url).path
    except ValueError:
        return False
    return path.lower().endswith(_EXTENSIONS)


def _playable(line: str, base: str) -> str | None:
    """An entry as an absolute http(s) URL (relative ones against the playlist's URL)."""
    try:
        url = urljoin(base, line.strip())
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.netloc or len(url) > 4096:
        return None
    if any(ord(c) <= 0x20 or ord(c) == 0x7F for c in url):
        return None
    return url


def _title(text: str) -> str | None:
    text = text.strip()
    return text[:1024] if text else None


def parse(text: str, base: str) -> Playlist:
    """A playlist's text (`base`: its URL, for relative entries). PLS when it starts with
    `[playlist]`, else M3U (plain or extended); `#EXT-X-` tags make it HLS."""
    lines = [line.strip() for line in text.lstrip("\ufeff").splitlines()]
    if next((line for line in lines if line), "").lower() == "[playlist]":
        return Playlist(False, _parse_pls(lines, base))
    entries: list[Entry] = []
    title: str | None = None
    for line in lines:
        if line.upper().startswith("#EXT-X-"):
            return Playlist(True)
        if line.upper().startswith("#EXTINF:"):
            _, _, name = line.partition(",")
            title = _title(name)
        elif line and not line.startswith("#"):
            if (url := _playable(line, base)) is not None and len(entries) < MAX_ENTRIES:
                entries.append(Entry(url, title))
            title = None
    return Playlist(False, tuple(entries))


def _parse_pls(lines: list[str], base: str) -> tuple[Entry, ...]:
    files: dict[int, str] = {}
    titles: dict[int, str] = {}
    for line in lines:
        name, sep, value = line.partition("=")
        name = name.strip().lower()
        if not sep:
            continue
        for prefix, into in (("file", files), ("title", titles)):
            digits = name[len(prefix):]
            if name.startswith(prefix) and digits.isdigit() and len(digits) < 6:
                into.setdefault(int(digits), value.strip())
    entries: list[Entry] = []
    for number in sorted(files)[:MAX_ENTRIES]:
        if (url := _playable(files[number], base)) is not None:
            entries.append(Entry(url, _title(titles.get(number, ""))))
    return tuple(entries)


async def async_fetch(hass: HomeAssistant, url: str) -> Playlist:
    """Fetch and parse the playlist at `url`; a translated error when it cannot be read or
    names nothing playable."""
    session = async_get_clientsession(hass)
    try:
        async with session.get(url, timeout=aiohttp.ClientTimeout(total=FETCH_TIMEOUT)) as response:
            if response.status >= 400:
                raise error("playlist_failed", url=url, reason=f"HTTP {response.status}")
            served_as_hls = (response.content_type or "").lower() in _HLS_TYPES
            # read(n) returns what has arrived so far: read on to the end or past the bound.
            data = bytearray()
            stream = response.content
            while len(data) <= MAX_PLAYLIST:
                chunk = await stream.read(MAX_PLAYLIST + 1 - len(data))
                if not chunk:
                    break
                data += chunk
            charset = response.charset or "utf-8"
    except (aiohttp.ClientError, TimeoutError) as err:
        raise error("playlist_failed", url=url, reason=str(err) or type(err).__name__) from err
    if len(data) > MAX_PLAYLIST:
        raise error("playlist_failed", url=url, reason=f"larger than {MAX_PLAYLIST // 1024} KiB")
    try:
        text = data.decode(charset, errors="replace")
    except LookupError:
        text = data.decode("utf-8", errors="replace")
    # What the file says decides (an HLS playlist has #EXT-X- tags; a list of streams served as
    # HLS, as Home Assistant serves any .m3u8, is still a list); the served type only when the
    # text says neither.
    playlist = parse(text, url)
    if not playlist.hls and not playlist.entries and served_as_hls:
        return Playlist(True)
    if not playlist.hls and not playlist.entries:
        raise error("playlist_failed", url=url, reason="it names no http(s) stream")
    _LOGGER.debug("Playlist %s: %s", url, "HLS" if playlist.hls else f"{len(playlist.entries)} entries")
    return playlist
