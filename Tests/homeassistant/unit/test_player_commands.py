"""The media player's plain commands, its state from the media document, and the paths of its
actions that the other unit tests do not take (errors, older bridges, options)."""

from __future__ import annotations

from datetime import UTC, datetime
import json
from typing import Any
from unittest.mock import patch

import pytest

from homeassistant.components.media_player import MediaPlayerEntityFeature
from homeassistant.components.media_source import PlayMedia
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import HomeAssistantError, ServiceValidationError

from conftest import SPEAKER, TV, answer, publish_bridge, published, until_published
from custom_components.cast2mqtt import payloads


def call(hass: HomeAssistant, service: str, domain: str = "media_player", entity_id: str = TV,
         response: bool = False, **data: Any):
    return hass.async_create_task(hass.services.async_call(
        domain, service, {"entity_id": entity_id, **data}, blocking=True, return_response=response))


async def sent(hass: HomeAssistant, mqtt_mock, task, command: str, reply: dict[str, Any] | None = None,
               topic: str = "living_room_tv") -> dict[str, Any]:
    body = json.loads((await until_published(mqtt_mock, f"/{topic}/command/{command}"))[-1])
    answer(hass, mqtt_mock, topic=topic, data=reply)
    result = await task
    body = {key: value for key, value in body.items() if key not in ("id", "expires")}
    return {"body": body, "result": result} if reply is not None else body


@pytest.mark.parametrize(("service", "data", "command", "body"), [
    ("media_stop", {}, "stop", {}),
    ("media_next_track", {}, "next", {}),
    ("media_previous_track", {}, "previous", {}),
    ("media_play", {}, "play", {}),
    ("media_seek", {"seek_position": 12}, "seek", {"position": 12.0}),
    ("volume_set", {"volume_level": 0.33333333}, "volume", {"level": 0.3333}),
    ("volume_mute", {"is_volume_muted": True}, "mute", {"muted": True}),
    ("repeat_set", {"repeat": "one"}, "queue", {"repeat": "one"}),
    ("shuffle_set", {"shuffle": True}, "queue", {"shuffle": True}),
])
async def test_commands(hass: HomeAssistant, mqtt_mock, loaded, service: str, data: dict[str, Any], command: str,
                        body: dict[str, Any]) -> None:
    media = {"state": "playing", "media_session_id": 1, "queue": {"current_item_id": 1, "repeat_mode": "off"},
             "supported_commands": ["pause", "seek", "queue_next", "queue_prev", "queue_repeat_all", "queue_shuffle"]}
    publish_bridge(hass, state="playing", media=media)
    await hass.async_block_till_done()
    assert await sent(hass, mqtt_mock, call(hass, service, **data), command) == body


async def test_shuffle_off_ends_all_and_shuffle_only(hass: HomeAssistant, mqtt_mock, loaded) -> None:
    media = {"state": "playing", "media_session_id": 1, "queue": {"current_item_id": 1, "repeat_mode": "all_and_shuffle"},
             "supported_commands": ["queue_shuffle"]}
    publish_bridge(hass, state="playing", media=media)
    await hass.async_block_till_done()
    assert await sent(hass, mqtt_mock, call(hass, "shuffle_set", shuffle=False), "queue") == {"repeat": "all"}
    publish_bridge(hass, state="playing", media={**media, "queue": {"current_item_id": 1, "repeat_mode": "all"}})
    await hass.async_block_till_done()
    await call(hass, "shuffle_set", shuffle=False)
    assert len(published(mqtt_mock, "/command/queue")) == 1


async def test_state_from_the_media_document(hass: HomeAssistant, mqtt_mock, loaded) -> None:
    publish_bridge(hass, state="playing", media={
        "state": "playing", "media_session_id": 1, "metadata_type": "generic", "content_type": "audio/mpeg",
        "playback_rate": 1.5, "title": "T", "duration": 100.5, "position": 3, "position_updated_at": "2026-01-01T00:00:00Z",
        "series_title": "S", "season": 2, "episode": 3, "track": 4, "album_artist": "AA", "playing_in": "Everywhere"})
    await hass.async_block_till_done()
    attrs = hass.states.get(TV).attributes
    assert attrs["media_content_type"] == "music" and attrs["playback_rate"] == 1.5
    assert attrs["media_duration"] == 100.5 and attrs["media_series_title"] == "S"
    assert attrs["media_season"] == "2" and attrs["media_episode"] == "3" and attrs["media_track"] == 4
    assert attrs["playing_in"] == "Everywhere" and attrs["media_album_artist"] == "AA"
    publish_bridge(hass, state="playing", media={"state": "playing", "metadata_type": "generic",
                                                 "content_type": "video/mp4", "images": ["x", {"url": "ftp://a"}]})
    await hass.async_block_till_done()
    attrs = hass.states.get(TV).attributes
    assert attrs["media_content_type"] == "video" and "entity_picture" not in attrs
    publish_bridge(hass, state="playing", media={"state": "playing", "metadata_type": "movie"})
    await hass.async_block_till_done()
    assert hass.states.get(TV).attributes["media_content_type"] == "movie"


async def test_a_device_the_bridge_forgot_is_an_error(hass: HomeAssistant, mqtt_mock, loaded) -> None:
    player = hass.data["media_player"].get_entity(TV)
    with patch.dict(player.bridge.devices, clear=True):
        for coroutine in (player.async_media_pause(), player.async_volume_up()):
            with pytest.raises(HomeAssistantError) as raised:
                await coroutine
            assert raised.value.translation_key == "device_not_listed"


async def test_turn_off_raises_other_errors(hass: HomeAssistant, mqtt_mock, loaded) -> None:
    task = call(hass, "turn_off")
    await until_published(mqtt_mock, "/command/quit")
    answer(hass, mqtt_mock, status="error", error={"code": "timeout", "message": "no answer"})
    with pytest.raises(HomeAssistantError) as raised:
        await task
    assert raised.value.translation_placeholders["code"] == "timeout"


async def test_media_source_items_and_announcements_keep_type_and_title(hass: HomeAssistant, mqtt_mock, loaded) -> None:
    resolved = PlayMedia("http://192.0.2.10:8123/media/local/chime.mp3?authSig=x", "audio/mpeg")
    with patch("homeassistant.components.media_source.async_resolve_media", return_value=resolved):
        task = call(hass, "play_media", media_content_id="media-source://media_source/local/chime.mp3",
                    media_content_type="music", announce=True, extra={"title": "Chime"})
        body = await sent(hass, mqtt_mock, task, "announce")
    assert body == {"url": resolved.url, "content_type": "audio/mpeg", "title": "Chime", "wait": True}


async def test_enqueue_on_an_older_bridge_reloads_when_nothing_is_lost(hass: HomeAssistant, mqtt_mock, loaded) -> None:
    publish_bridge(hass, state="playing", media={"state": "playing", "media_session_id": 1, "content_id": "http://a/1.mp3",
                                                 "queue": {"current_item_id": 1, "items": [{"item_id": 1, "content_id": "http://a/1.mp3"}]}})
    await hass.async_block_till_done()
    task = call(hass, "play_media", media_content_id="http://a/2.mp3", media_content_type="music", enqueue="add",
                extra={"metadata": {"title": "Two"}})
    await until_published(mqtt_mock, "/command/queue")
    answer(hass, mqtt_mock, status="error", error={"code": "unknown_command", "message": 'there is no command "queue"'})
    body = json.loads((await until_published(mqtt_mock, "/command/load"))[-1])
    answer(hass, mqtt_mock)
    await task
    assert body["queue"] == [{"url": "http://a/1.mp3"}, {"url": "http://a/2.mp3", "title": "Two"}]
    # Other refusals of `queue` are the user's answer.
    task = call(hass, "play_media", media_content_id="http://a/3.mp3", media_content_type="music", enqueue="next")
    await until_published(mqtt_mock, "/command/queue", 2)
    answer(hass, mqtt_mock, status="error", error={"code": "invalid_player_state", "message": "another app"})
    with pytest.raises(ServiceValidationError):
        await task


async def test_browsing_without_media_source_is_an_error(hass: HomeAssistant, mqtt_mock, loaded) -> None:
    player = hass.data["media_player"].get_entity(SPEAKER)
    assert not player.supported_features & MediaPlayerEntityFeature.BROWSE_MEDIA
    with pytest.raises(HomeAssistantError) as raised:
        await player.async_browse_media()
    assert raised.value.translation_key == "no_media_source"


async def test_transfer_refusals(hass: HomeAssistant, mqtt_mock, loaded) -> None:
    player = hass.data["media_player"].get_entity(SPEAKER)
    other = hass.data["media_player"].get_entity(TV)
    with patch.object(type(player), "bridge", new=property(lambda self: object() if self is other else self._bridge)):
        with pytest.raises(ServiceValidationError) as raised:
            await player.async_transfer(TV)
    assert raised.value.translation_key == "other_bridge"
    with patch.dict(player.bridge.devices, {other.device_id_of_bridge: None}):
        del player.bridge.devices[other.device_id_of_bridge]
        with pytest.raises(ServiceValidationError) as raised:
            await player.async_transfer(TV)
    assert raised.value.translation_key == "target_not_listed"


async def test_send_message_with_app_timeout_and_encoding(hass: HomeAssistant, mqtt_mock, loaded) -> None:
    task = call(hass, "send_message", domain="cast2mqtt", entity_id=SPEAKER, response=True,
                namespace="urn:x-cast:com.example", data="AAEC", app_id="A12B34C5", reply=True, timeout=5)
    got = await sent(hass, mqtt_mock, task, "send", {"data": "AAEC", "encoding": "base64"}, topic="kitchen")
    assert got["body"] == {"namespace": "urn:x-cast:com.example", "data": "AAEC", "reply": True,
                           "app_id": "A12B34C5", "timeout": 5.0}
    assert got["result"] == {SPEAKER: {"namespace": "urn:x-cast:com.example", "reply": "AAEC", "encoding": "base64"}}


def test_payload_parsing_refuses_what_is_not_text_json_or_time() -> None:
    assert payloads.text_payload("x" * (payloads.MAX_PAYLOAD + 1)) is None
    assert payloads.text_payload(b"\xff\xfe") is None
    assert payloads.document_payload(b"\xff") is None
    assert payloads.document_payload("  ") == {}
    assert payloads.document_payload("[1]") is None
    assert payloads.timestamp("2026-13-45T99:00:00Z") is None
    assert payloads.timestamp("2026-01-01T00:00:00") is None  # no time zone
    assert payloads.timestamp(5) is None
    assert payloads.timestamp("2026-01-01T00:00:00Z") == datetime(2026, 1, 1, tzinfo=UTC)
