"""media.py: the core cast integration's `extra` as the bridge's `load`, the `cast` JSON, HLS
and artwork; every hostile value a translated validation error."""

from __future__ import annotations

from typing import Any

import pytest

from homeassistant.exceptions import ServiceValidationError

from custom_components.cast2mqtt import media

URL = "http://192.0.2.5/a.mp3"


def refused(call: Any, *args: Any) -> ServiceValidationError:
    with pytest.raises(ServiceValidationError) as raised:
        call(*args)
    assert raised.value.translation_domain == "cast2mqtt"
    return raised.value


def test_the_cores_metadata_reaches_the_load() -> None:
    request = media.load_request(URL, "audio/mpeg", {
        "metadata": {"metadataType": 3, "title": "Song", "artist": "Band", "albumName": "Album",
                     "subtitle": "Live", "images": [{"url": "https://img.example.com/a.jpg"}, "https://img.example.com/b.jpg"]},
        "stream_type": "LIVE", "current_time": 12.5, "autoplay": False, "custom_data": {"k": 1},
    })
    assert request.body == {
        "url": URL, "content_type": "audio/mpeg", "stream_type": "live", "title": "Song", "subtitle": "Live",
        "artist": "Band", "album": "Album", "metadata_type": "music_track",
        "images": ["https://img.example.com/a.jpg", "https://img.example.com/b.jpg"],
        "position": 12.5, "autoplay": False, "custom_data": {"k": 1},
    }
    assert not request.enqueue and request.dropped_by_queue() == []
    item = request.queue_item()
    assert item["start_time"] == 12.5 and "position" not in item and item["title"] == "Song"


def test_series_and_aliases_stand_in_for_missing_keys() -> None:
    body = media.load_request(URL, None, {"metadata": {
        "metadataType": "tv_show", "seriesTitle": "Show", "songName": "Episode 1", "albumArtist": "Studio"}}).body
    assert body["subtitle"] == "Show" and body["title"] == "Episode 1" and body["artist"] == "Studio"
    assert body["metadata_type"] == "tv_show"
    # `title` of extra wins over the metadata's; a thumb when there are no images.
    body = media.load_request(URL, None, {"title": "Top", "thumb": "http://img.example.com/t.png",
                                          "metadata": {"title": "Inner"}}).body
    assert body["title"] == "Top" and body["images"] == ["http://img.example.com/t.png"]
    assert media.load_request(URL, None, {"metadata": {"thumb": "http://x.example.com/m.png"}}).body["images"] == [
        "http://x.example.com/m.png"]
    assert media.load_request(URL, None, None).body == {"url": URL}
    assert media.load_request(URL, None, {"metadata": None, "title": ""}).body == {"url": URL}


def test_subtitles_become_an_active_text_track() -> None:
    request = media.load_request("http://192.0.2.5/film.mp4", "video/mp4", {
        "subtitles": "http://192.0.2.5/film.de.vtt", "subtitles_lang": "de-DE", "subtitle_id": 3, "enqueue": True})
    assert request.body["tracks"] == [{"id": 3, "type": "text", "subtype": "subtitles", "language": "de-DE",
                                       "name": "de-DE", "content_id": "http://192.0.2.5/film.de.vtt",
                                       "content_type": "text/vtt"}]
    assert request.body["active_tracks"] == [3]
    assert request.enqueue
    assert request.dropped_by_queue() == ["tracks", "active_tracks"]
    assert "tracks" not in request.queue_item()
    default = media.load_request(URL, None, {"subtitles": "https://s.example.com/en.vtt"}).body
    assert default["tracks"][0]["id"] == 1 and default["tracks"][0]["language"] == "en-US"


@pytest.mark.parametrize(("extra", "name"), [
    ("text", "extra"),
    ({"metadata": "Song"}, "metadata"),
    ({"metadata": {"title": 5}}, "metadata.title"),
    ({"metadata": {"albumName": "x" * 1025}}, "metadata.albumName"),
    ({"metadata": {"metadataType": 9}}, "metadata.metadataType"),
    ({"metadata": {"metadataType": True}}, "metadata.metadataType"),
    ({"metadata": {"images": "http://a.example.com/i.png"}}, "metadata.images"),
    ({"metadata": {"images": [{"url": "file:///etc/passwd"}]}}, "metadata.images"),
    ({"metadata": {"images": [{}] * 33}}, "metadata.images"),
    ({"thumb": "http://a b"}, "thumb"),
    ({"stream_type": "FAST"}, "stream_type"),
    ({"stream_type": 1}, "stream_type"),
    ({"current_time": "10"}, "current_time"),
    ({"current_time": -1}, "current_time"),
    ({"current_time": float("nan")}, "current_time"),
    ({"current_time": True}, "current_time"),
    ({"autoplay": "yes"}, "autoplay"),
    ({"enqueue": 1}, "enqueue"),
    ({"custom_data": [1]}, "custom_data"),
    ({"subtitles": 5}, "subtitles"),
    ({"subtitles": "http://s.example.com/a.vtt", "subtitles_lang": "english please"}, "subtitles_lang"),
    ({"subtitles": "http://s.example.com/a.vtt", "subtitle_id": "1"}, "subtitle_id"),
    ({"subtitles": "http://s.example.com/a.vtt", "subtitle_id": 0}, "subtitle_id"),
])
def test_hostile_extras_are_named_in_a_translated_error(extra: Any, name: str) -> None:
    err = refused(media.load_request, URL, None, extra)
    assert err.translation_key == "invalid_extra"
    assert err.translation_placeholders is not None and err.translation_placeholders["name"] == name


def test_cast_json_launches_or_loads() -> None:
    launch = media.cast_app('{"app_id": "A12B34C5"}', None)
    assert launch.app_id == "A12B34C5" and launch.request is None
    load = media.cast_app('{"app_id": "A12B34C5", "media_id": "http://192.0.2.5/v.mp4", "media_type": "video/mp4"}',
                          {"metadata": {"title": "Clip"}})
    assert load.request is not None
    assert load.request.body == {"url": "http://192.0.2.5/v.mp4", "content_type": "video/mp4", "title": "Clip",
                                 "app_id": "A12B34C5"}
    # The action's extra.metadata wins over the JSON's, as in the core integration.
    both = media.cast_app('{"app_id": "A12B34C5", "media_id": "http://192.0.2.5/v.mp4", '
                          '"metadata": {"title": "From JSON"}}', {"metadata": {"title": "From extra"}})
    assert both.request is not None and both.request.body["title"] == "From extra"
    default = media.cast_app('{"app_name": "default_media_receiver", "media_id": "http://192.0.2.5/a.mp3", '
                             '"media_type": "music", "stream_type": "LIVE"}', None)
    assert default.request is not None and default.request.body == {
        "url": "http://192.0.2.5/a.mp3", "stream_type": "live", "app_id": "CC1AD845"}


@pytest.mark.parametrize(("media_id", "key"), [
    ('{"app_name": "youtube", "media_id": "dQw4w9WgXcQ"}', "cast_app_not_supported"),
    ('{"app_name": "bbcsounds", "media_id": "bbc_radio_fourfm"}', "cast_app_not_supported"),
    ("not json", "cast_json_invalid"),
    ("[1, 2]", "cast_json_invalid"),
    pytest.param("[" * 50_000, "cast_json_invalid", id="nested-deeper-than-the-decoder-goes"),
    ("{" + " " * media.MAX_CAST_JSON + "}", "cast_json_invalid"),
    ('{"media_id": "http://192.0.2.5/a.mp3"}', "cast_json_invalid"),
    ('{"app_id": "x y"}', "cast_json_invalid"),
    ('{"app_id": 5}', "cast_json_invalid"),
    ('{"app_name": 5}', "cast_json_invalid"),
    ('{"app_name": "default_media_receiver"}', "cast_json_invalid"),
    ('{"app_id": "CC1AD845", "media_id": "dQw4w9WgXcQ"}', "invalid_extra"),
])
def test_cast_json_that_cannot_play_says_why(media_id: str, key: str) -> None:
    assert refused(media.cast_app, media_id, None).translation_key == key


def test_hls_is_live_with_the_hls_type() -> None:
    assert media.is_hls("http://192.0.2.5/x.m3u8", "application/vnd.apple.mpegurl; charset=utf-8")
    assert media.is_hls("http://ha.local:8123/api/hls/abc/master_playlist.m3u8", None)
    assert not media.is_hls("http://192.0.2.5/x.m3u8", "video/mp4")
    body: dict[str, Any] = {"url": "u", "content_type": "video/mp4"}
    media.mark_live(body)
    assert body == {"url": "u", "content_type": media.HLS_CONTENT_TYPE, "stream_type": "live"}
    chosen: dict[str, Any] = {"url": "u", "content_type": "application/vnd.apple.mpegurl", "stream_type": "buffered"}
    media.mark_live(chosen)
    assert chosen["stream_type"] == "buffered" and chosen["content_type"] == "application/vnd.apple.mpegurl"


@pytest.mark.parametrize(("url", "public"), [
    ("https://i.scdn.co/image/ab67616d.jpg", True),
    ("http://8.8.8.8/a.png", True),
    ("http://192.168.1.5/a.png", False),
    ("http://10.0.0.1/a.png", False),
    ("http://127.0.0.1:8123/a.png", False),
    ("http://169.254.1.1/a.png", False),
    ("http://[::1]/a.png", False),
    ("http://[fe80::1]/a.png", False),
    ("http://nas.local/a.png", False),
    ("http://nas/a.png", False),
    ("http://localhost/a.png", False),
    ("http://ha.example.com/a.png", False),  # Home Assistant's own internal URL
    ("ftp://example.com/a.png", False),
    ("http://[bad/a.png", False),
    ("", False),
    (None, False),
])
def test_only_public_artwork_is_remotely_accessible(url: str | None, public: bool) -> None:
    assert media.publicly_reachable(url, {"ha.example.com"}) is public


@pytest.mark.parametrize("payload", ["[" * 100_000, '{"a":' * 50_000, b"[" * 100_000],
                         ids=["arrays", "objects", "bytes"])
def test_json_nested_deeper_than_the_decoder_goes_is_not_json(payload: str | bytes) -> None:
    # Every document and response the integration reads from MQTT goes through json_payload: a
    # hostile payload nested too deep must be ignored, not raise RecursionError in a callback.
    from custom_components.cast2mqtt.payloads import document_payload, json_payload

    assert json_payload(payload) is None
    assert document_payload(payload) is None
