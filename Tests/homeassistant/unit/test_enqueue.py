"""Enqueue bodies (pure): inserts for the `queue` command, and the reload for older bridges that
refuses to drop what the device does not describe."""

from __future__ import annotations

from homeassistant.components.media_player import MediaPlayerEnqueue

from custom_components.cast2mqtt.enqueue import insert_commands, reload_body

NEW = {"url": "http://x/new.mp3", "title": "New"}


def media(*items: dict) -> dict:
    return {"state": "playing", "media_session_id": 1, "content_id": "http://x/1.mp3", "title": "One",
            "queue": {"current_item_id": 1, "items": list(items)}}


def test_insert_commands() -> None:
    assert insert_commands(MediaPlayerEnqueue.ADD, NEW) == [{"insert": [NEW]}]
    assert insert_commands(MediaPlayerEnqueue.NEXT, NEW) == [{"insert": [NEW], "before": "next"}]
    assert insert_commands(MediaPlayerEnqueue.PLAY, NEW) == [{"insert": [NEW], "before": "next"}, {"jump_by": 1}]


def test_reload_keeps_every_described_item() -> None:
    doc = media({"item_id": 0, "content_id": "http://x/0.mp3"}, {"item_id": 1, "content_id": "http://x/1.mp3"},
                {"item_id": 2, "content_id": "http://x/2.mp3", "title": "Two"})
    body = reload_body(doc, NEW, enqueue=MediaPlayerEnqueue.ADD, position=12.0, updated_at=None, image=None)
    assert [i["url"] for i in body["queue"]] == ["http://x/1.mp3", "http://x/2.mp3", "http://x/new.mp3"]
    assert body["position"] == 12.0
    body = reload_body(doc, NEW, enqueue=MediaPlayerEnqueue.NEXT, position=None, updated_at=None, image=None)
    assert [i["url"] for i in body["queue"]] == ["http://x/1.mp3", "http://x/new.mp3", "http://x/2.mp3"]


def test_reload_refuses_when_an_item_is_not_described() -> None:
    """Devices list the other items of a queue by id only (content_id null): reloading would lose them."""
    doc = media({"item_id": 1, "content_id": "http://x/1.mp3"}, {"item_id": 2, "content_id": None},
                {"item_id": 3, "content_id": None})
    for enqueue in (MediaPlayerEnqueue.ADD, MediaPlayerEnqueue.NEXT, MediaPlayerEnqueue.PLAY):
        assert reload_body(doc, NEW, enqueue=enqueue, position=1.0, updated_at=None, image=None) is None
