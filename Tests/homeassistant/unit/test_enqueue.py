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


def test_reload_of_a_playing_item_moves_its_position_on_and_keeps_its_metadata() -> None:
    from datetime import timedelta

    from homeassistant.util import dt as dt_util

    doc = {**media({"item_id": 1, "content_id": "http://x/1.mp3"}), "content_type": "audio/mpeg", "artist": "A",
           "playback_rate": 2.0}
    body = reload_body(doc, NEW, enqueue=MediaPlayerEnqueue.ADD, position=10.0,
                       updated_at=dt_util.utcnow() - timedelta(seconds=5), image="http://x/art.jpg")
    assert body is not None
    current = body["queue"][0]
    assert current["content_type"] == "audio/mpeg" and current["artist"] == "A"
    assert current["images"] == ["http://x/art.jpg"]
    assert 19.5 <= body["position"] <= 22.0  # 10 s + 5 s at twice the speed
    # A bogus rate reads as 1.
    body = reload_body({**doc, "playback_rate": True}, NEW, enqueue=MediaPlayerEnqueue.ADD, position=10.0,
                       updated_at=dt_util.utcnow() - timedelta(seconds=5), image=None)
    assert body is not None and 14.5 <= body["position"] <= 17.0


def test_reload_keeps_a_pause_and_plays_the_new_item_now() -> None:
    doc = {**media({"item_id": 1, "content_id": "http://x/1.mp3"}, {"item_id": 2, "content_id": "http://x/2.mp3"}),
           "state": "paused"}
    body = reload_body(doc, NEW, enqueue=MediaPlayerEnqueue.ADD, position=None, updated_at=None, image=None)
    assert body is not None and body["autoplay"] is False
    body = reload_body(doc, NEW, enqueue=MediaPlayerEnqueue.PLAY, position=3.0, updated_at=None, image=None)
    assert body == {"queue": [NEW, {"url": "http://x/2.mp3"}]}
    # A media document without a queue: the current item and the new one.
    body = reload_body({"state": "playing", "content_id": "http://x/1.mp3"}, NEW, enqueue=MediaPlayerEnqueue.NEXT,
                       position=None, updated_at=None, image=None)
    assert body == {"queue": [{"url": "http://x/1.mp3"}, NEW]}


def test_reload_refuses_hostile_queues() -> None:
    from custom_components.cast2mqtt.enqueue import MAX_QUEUE

    assert reload_body(media("not an item"), NEW, enqueue=MediaPlayerEnqueue.ADD, position=None, updated_at=None,
                       image=None) is None
    # A full queue has no room for one more; a longer one would lose its tail.
    full = media(*({"item_id": n, "content_id": f"http://x/{n}.mp3"} for n in range(1, MAX_QUEUE + 1)))
    assert reload_body(full, NEW, enqueue=MediaPlayerEnqueue.ADD, position=None, updated_at=None, image=None) is None
    body = reload_body(full, NEW, enqueue=MediaPlayerEnqueue.PLAY, position=None, updated_at=None, image=None)
    assert body is not None and len(body["queue"]) == MAX_QUEUE  # the new item replaces the current one
    longer = media(*({"item_id": n, "content_id": f"http://x/{n}.mp3"} for n in range(1, MAX_QUEUE + 2)))
    for enqueue in (MediaPlayerEnqueue.ADD, MediaPlayerEnqueue.NEXT, MediaPlayerEnqueue.PLAY):
        assert reload_body(longer, NEW, enqueue=enqueue, position=None, updated_at=None, image=None) is None
