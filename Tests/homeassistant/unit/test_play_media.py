"""play_media as Home Assistant's cast integration is called: its `extra`, the `cast` media type,
playlists, HLS, enqueue with metadata; browsing and artwork. Against a mocked broker."""

from __future__ import annotations

import json
from typing import Any
from unittest.mock import patch

import pytest

from homeassistant.components.media_player import MediaPlayerEntityFeature
from homeassistant.components.media_player.browse_media import BrowseMedia
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError, ServiceValidationError
from pytest_homeassistant_custom_component.test_util.aiohttp import AiohttpClientMocker

from test_playlist import mocked_http
from conftest import SPEAKER, TV, answer, publish_bridge, published, until_published


def play(hass: HomeAssistant, media_id: str, media_type: str = "music", entity_id: str = TV, **data: Any):
    return hass.async_create_task(hass.services.async_call(
        "media_player", "play_media",
        {"entity_id": entity_id, "media_content_id": media_id, "media_content_type": media_type, **data},
        blocking=True))


async def sent(hass: HomeAssistant, mqtt_mock, task, command: str = "load") -> dict[str, Any]:
    """The command `task` published (answered ok), without its id and deadline."""
    body = json.loads((await until_published(mqtt_mock, f"/command/{command}"))[-1])
    answer(hass, mqtt_mock)
    await task
    return {key: value for key, value in body.items() if key not in ("id", "expires")}


async def test_the_cores_extra_reaches_the_load(hass: HomeAssistant, mqtt_mock, loaded) -> None:
    task = play(hass, "http://192.0.2.5/film.mp4", "video", extra={
        "metadata": {"metadataType": 1, "title": "Film", "images": [{"url": "https://img.example.com/f.jpg"}]},
        "stream_type": "BUFFERED", "current_time": 30, "autoplay": True,
        "subtitles": "http://192.0.2.5/film.vtt", "subtitles_lang": "fr"})
    assert await sent(hass, mqtt_mock, task) == {
        "url": "http://192.0.2.5/film.mp4", "title": "Film", "metadata_type": "movie", "stream_type": "buffered",
        "images": ["https://img.example.com/f.jpg"], "position": 30.0, "autoplay": True,
        "tracks": [{"id": 1, "type": "text", "subtype": "subtitles", "language": "fr", "name": "fr",
                    "content_id": "http://192.0.2.5/film.vtt", "content_type": "text/vtt"}],
        "active_tracks": [1]}


async def test_a_hostile_extra_is_a_validation_error_and_sends_nothing(hass: HomeAssistant, mqtt_mock, loaded) -> None:
    with pytest.raises(ServiceValidationError) as raised:
        await play(hass, "http://192.0.2.5/a.mp3", extra={"metadata": {"images": [{"url": "javascript:alert(1)"}]}})
    assert raised.value.translation_key == "invalid_extra"
    with pytest.raises(ServiceValidationError):
        await play(hass, "http://192.0.2.5/a.mp3", announce=True, extra={"current_time": "soon"})
    assert published(mqtt_mock, "/command/load") == [] and published(mqtt_mock, "/command/announce") == []


async def test_cast_apps(hass: HomeAssistant, mqtt_mock, loaded) -> None:
    assert await sent(hass, mqtt_mock, play(hass, '{"app_id": "A12B34C5"}', "cast"), "launch") == {"app_id": "A12B34C5"}
    task = play(hass, '{"app_id": "A12B34C5", "media_id": "http://192.0.2.5/v.mp4"}', "cast",
                extra={"metadata": {"title": "Clip"}})
    assert await sent(hass, mqtt_mock, task) == {"url": "http://192.0.2.5/v.mp4", "title": "Clip", "app_id": "A12B34C5"}
    with pytest.raises(ServiceValidationError) as raised:
        await play(hass, '{"app_name": "youtube", "media_id": "dQw4w9WgXcQ"}', "cast")
    assert raised.value.translation_key == "cast_app_not_supported"
    assert raised.value.translation_placeholders == {"app_name": "youtube"}
    assert len(published(mqtt_mock, "/command/load")) == 1


async def test_a_playlist_plays_its_first_stream(hass: HomeAssistant, mqtt_mock, loaded) -> None:
    async with mocked_http() as aioclient_mock:
        await _playlists(hass, mqtt_mock, aioclient_mock)


async def _playlists(hass: HomeAssistant, mqtt_mock, aioclient_mock: AiohttpClientMocker) -> None:
    aioclient_mock.get("http://192.0.2.5/radio.m3u", text="#EXTM3U\n#EXTINF:-1,Radio One\nhttp://s.example.com/one\n"
                       "http://s.example.com/mirror\n", headers={"content-type": "audio/x-mpegurl"})
    aioclient_mock.get("http://192.0.2.5/radio.pls", text="[playlist]\nFile1=http://s.example.com/pls\nTitle1=P\n")
    aioclient_mock.get("http://192.0.2.5/cam.m3u8", text="#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n")
    aioclient_mock.get("http://192.0.2.5/gone.m3u", status=404)
    # As Home Assistant's local media source gives them (mimetypes): a .m3u is audio/mpegurl, any
    # .m3u8 application/vnd.apple.mpegurl — still lists of streams, fetched and resolved.
    aioclient_mock.get("http://192.0.2.5/media/local/radio.m3u?authSig=x", text="http://s.example.com/local\n",
                       headers={"content-type": "audio/mpegurl"})
    aioclient_mock.get("http://192.0.2.5/media/local/list.m3u8?authSig=x",
                       text="#EXTM3U\n#EXTINF:-1,Listed\nhttp://s.example.com/listed\n",
                       headers={"content-type": "application/vnd.apple.mpegurl"})
    assert await sent(hass, mqtt_mock, play(hass, "http://192.0.2.5/radio.m3u", "audio/x-mpegurl")) == {
        "url": "http://s.example.com/one", "title": "Radio One"}
    task = play(hass, "http://192.0.2.5/media/local/radio.m3u?authSig=x", "audio/mpegurl")
    assert await sent(hass, mqtt_mock, task) == {"url": "http://s.example.com/local"}
    task = play(hass, "http://192.0.2.5/media/local/list.m3u8?authSig=x", "application/vnd.apple.mpegurl")
    assert await sent(hass, mqtt_mock, task) == {"url": "http://s.example.com/listed", "title": "Listed"}
    task = play(hass, "http://192.0.2.5/radio.pls", extra={"title": "Mine"})
    assert await sent(hass, mqtt_mock, task) == {"url": "http://s.example.com/pls", "title": "Mine"}
    assert await sent(hass, mqtt_mock, play(hass, "http://192.0.2.5/cam.m3u8", "video")) == {
        "url": "http://192.0.2.5/cam.m3u8", "stream_type": "live", "content_type": "application/x-mpegURL"}
    with pytest.raises(HomeAssistantError) as raised:
        await play(hass, "http://192.0.2.5/gone.m3u")
    assert raised.value.translation_key == "playlist_failed"
    assert len(published(mqtt_mock, "/command/load")) == 5


async def test_a_camera_stream_plays_live(hass: HomeAssistant, mqtt_mock, loaded) -> None:
    hass.config.internal_url = "http://192.0.2.10:8123"
    task = play(hass, "/api/hls/token/master_playlist.m3u8", "application/vnd.apple.mpegurl")
    body = await sent(hass, mqtt_mock, task)
    assert body["url"].startswith("http://192.0.2.10:8123/api/hls/token/master_playlist.m3u8")
    assert body["stream_type"] == "live" and body["content_type"] == "application/vnd.apple.mpegurl"


async def test_enqueue_keeps_the_metadata(hass: HomeAssistant, mqtt_mock, loaded) -> None:
    publish_bridge(hass, state="playing", media={"state": "playing", "media_session_id": 1, "content_id": "a",
                                                 "queue": {"current_item_id": 1, "items": [{"item_id": 1}]}})
    await hass.async_block_till_done()
    task = play(hass, "http://192.0.2.5/b.mp3", enqueue="add", extra={
        "metadata": {"title": "B", "artist": "Band", "images": ["https://img.example.com/b.jpg"]},
        "current_time": 5, "subtitles": "http://192.0.2.5/b.vtt"})
    assert await sent(hass, mqtt_mock, task, "queue") == {"insert": [{
        "url": "http://192.0.2.5/b.mp3", "title": "B", "artist": "Band", "images": ["https://img.example.com/b.jpg"],
        "start_time": 5.0}]}
    # The core's own `enqueue: true` in extra adds to the queue too.
    task = play(hass, "http://192.0.2.5/c.mp3", extra={"enqueue": True})
    assert await sent(hass, mqtt_mock, task, "queue") == {"insert": [{"url": "http://192.0.2.5/c.mp3"}]}
    assert published(mqtt_mock, "/command/load") == []


async def test_browsing_needs_media_source_and_speakers_browse_audio(hass: HomeAssistant, mqtt_mock, loaded) -> None:
    def browsable(entity_id: str) -> bool:
        return bool(hass.states.get(entity_id).attributes["supported_features"] & MediaPlayerEntityFeature.BROWSE_MEDIA)

    assert "media_source" not in hass.config.components and not browsable(TV)
    hass.config.components.add("media_source")
    publish_bridge(hass, state="playing")
    await hass.async_block_till_done()
    assert browsable(TV) and browsable(SPEAKER)
    filters = {}
    root = BrowseMedia(media_class="directory", media_content_id="", media_content_type="", title="Media",
                       can_play=False, can_expand=True)

    async def browse(hass: HomeAssistant, media_content_id: str | None, *, content_filter: Any) -> BrowseMedia:
        filters[entity_id] = content_filter
        return root

    kinds = [BrowseMedia(media_class="music", media_content_id="", media_content_type=mime, title=mime,
                         can_play=True, can_expand=False) for mime in ("audio/mpeg", "video/mp4", "image/png")]
    with patch("homeassistant.components.media_source.async_browse_media", browse):
        for entity_id in (TV, SPEAKER):
            player = hass.data["media_player"].get_entity(entity_id)
            assert await player.async_browse_media() is root
    assert [item.media_content_type for item in kinds if filters[TV](item)] == ["audio/mpeg", "video/mp4", "image/png"]
    assert [item.media_content_type for item in kinds if filters[SPEAKER](item)] == ["audio/mpeg"]


async def test_public_artwork_is_not_proxied(hass: HomeAssistant, mqtt_mock, loaded) -> None:
    hass.config.internal_url = "http://ha.example.com:8123"
    for url, direct in [("https://img.example.com/cover.jpg", True), ("http://192.168.1.2/cover.jpg", False),
                        ("http://ha.example.com:8123/api/image.jpg", False)]:
        publish_bridge(hass, state="playing", media={"state": "playing", "media_session_id": 1, "images": [{"url": url}]})
        await hass.async_block_till_done()
        picture = hass.states.get(TV).attributes["entity_picture"]
        assert (picture == url) is direct, (url, picture)
        assert picture.startswith("/api/media_player_proxy/") is not direct
