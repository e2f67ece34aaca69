"""playlist.py: M3U, extended M3U, PLS and HLS told apart; fetched with bounds."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
import contextlib
from unittest.mock import patch

import aiohttp
import pytest

from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError
from pytest_homeassistant_custom_component.test_util.aiohttp import AiohttpClientMocker

from custom_components.cast2mqtt import playlist
from custom_components.cast2mqtt.playlist import Entry, Playlist

BASE = "http://192.0.2.5/radio/station.m3u"


@contextlib.asynccontextmanager
async def mocked_http() -> AsyncIterator[AiohttpClientMocker]:
    """Playlists served by a mocker. Its own session (aioclient_mock's) resolves names with
    aiodns on some aiohttp releases, whose thread outlives the test: this one uses the
    threaded resolver."""
    mocker = AiohttpClientMocker()
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(resolver=aiohttp.ThreadedResolver()))
    object.__setattr__(session, "_request", mocker.match_request)
    try:
        with patch("custom_components.cast2mqtt.playlist.async_get_clientsession", return_value=session):
            yield mocker
    finally:
        await session.close()


def test_playlist_urls_by_extension() -> None:
    assert playlist.is_playlist_url("http://a.example.com/x.M3U?token=1")
    assert playlist.is_playlist_url("http://a.example.com/x.pls")
    assert playlist.is_playlist_url("http://a.example.com/x.m3u8#t")
    assert not playlist.is_playlist_url("http://a.example.com/x.mp3?list=.m3u")
    assert not playlist.is_playlist_url("http://[bad/x.m3u")


def test_extended_m3u_with_titles_and_relative_entries() -> None:
    text = "\ufeff#EXTM3U\n#EXTINF:-1,Station One\nhttp://s1.example.com/live.mp3\n\n# comment\n" \
           "#EXTINF:-1,\nrelative/two.aac\nfile:///etc/passwd\nhttp://bad host/x\n"
    assert playlist.parse(text, BASE) == Playlist(False, (
        Entry("http://s1.example.com/live.mp3", "Station One"), Entry("http://192.0.2.5/radio/relative/two.aac")))


def test_hls_is_not_a_list_of_streams() -> None:
    assert playlist.parse("#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\nlow.m3u8\n", BASE) == Playlist(True)
    assert playlist.parse("#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXTINF:6,\nseg1.ts\n", BASE) == Playlist(True)


def test_pls() -> None:
    text = "[playlist]\nNumberOfEntries=3\nFile2=http://b.example.com/2\nTitle2=Two\nFile1=http://a.example.com/1\n" \
           "Title1 = One \nFile3=gopher://c\nFile99999999=http://x.example.com\nLength1=-1\nVersion=2\nnoise\n"
    assert playlist.parse(text, "http://192.0.2.5/s.pls") == Playlist(False, (
        Entry("http://a.example.com/1", "One"), Entry("http://b.example.com/2", "Two")))


async def test_fetch(hass: HomeAssistant) -> None:
    async with mocked_http() as aioclient_mock:
        await _fetch(hass, aioclient_mock)


async def _fetch(hass: HomeAssistant, aioclient_mock: AiohttpClientMocker) -> None:
    aioclient_mock.get("http://192.0.2.5/ok.pls", text="[playlist]\nFile1=http://a.example.com/1\n",
                       headers={"content-type": "audio/x-scpls"})
    aioclient_mock.get("http://192.0.2.5/hls.m3u8", text="#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXTINF:6,\nseg1.ts\n",
                       headers={"content-type": "application/vnd.apple.mpegurl"})
    # Home Assistant's media sources serve every .m3u8 as HLS (mimetypes), lists of streams too:
    # what the file says decides; the served type only when the text says neither.
    aioclient_mock.get("http://192.0.2.5/list.m3u8", text="#EXTM3U\n#EXTINF:-1,Radio\nhttp://a.example.com/radio\n",
                       headers={"content-type": "application/vnd.apple.mpegurl"})
    aioclient_mock.get("http://192.0.2.5/bare.m3u8", text="#EXTM3U\n",
                       headers={"content-type": "application/vnd.apple.mpegurl"})
    aioclient_mock.get("http://192.0.2.5/radio.m3u", text="http://a.example.com/radio\n",
                       headers={"content-type": "audio/mpegurl"})
    aioclient_mock.get("http://192.0.2.5/missing.m3u", status=404)
    aioclient_mock.get("http://192.0.2.5/big.m3u", content=b"#" * (playlist.MAX_PLAYLIST + 1))
    aioclient_mock.get("http://192.0.2.5/empty.m3u", text="#EXTM3U\n")
    aioclient_mock.get("http://192.0.2.5/down.m3u", exc=aiohttp.ClientConnectionError("refused"))
    aioclient_mock.get("http://192.0.2.5/slow.m3u", exc=asyncio.TimeoutError())
    assert await playlist.async_fetch(hass, "http://192.0.2.5/ok.pls") == Playlist(
        False, (Entry("http://a.example.com/1"),))
    assert await playlist.async_fetch(hass, "http://192.0.2.5/hls.m3u8") == Playlist(True)
    assert await playlist.async_fetch(hass, "http://192.0.2.5/list.m3u8") == Playlist(
        False, (Entry("http://a.example.com/radio", "Radio"),))
    assert await playlist.async_fetch(hass, "http://192.0.2.5/bare.m3u8") == Playlist(True)
    assert await playlist.async_fetch(hass, "http://192.0.2.5/radio.m3u") == Playlist(
        False, (Entry("http://a.example.com/radio"),))
    for url, reason in [("missing.m3u", "HTTP 404"), ("big.m3u", "larger than 64 KiB"),
                        ("empty.m3u", "it names no http(s) stream"), ("down.m3u", "refused"),
                        ("slow.m3u", "TimeoutError")]:
        with pytest.raises(HomeAssistantError) as raised:
            await playlist.async_fetch(hass, f"http://192.0.2.5/{url}")
        assert raised.value.translation_key == "playlist_failed"
        assert raised.value.translation_placeholders == {"url": f"http://192.0.2.5/{url}", "reason": reason}
