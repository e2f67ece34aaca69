"""`play_media` with `enqueue`: the bridge's `queue` command inserts without interrupting what
plays. For a bridge from before `queue` the queue is loaded again, but only when the media
document describes every item that follows (a device often lists the others by id only, and
reloading without them would drop them)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from homeassistant.components.media_player import MediaPlayerEnqueue
from homeassistant.util import dt as dt_util

from .features import queue_of

MAX_QUEUE = 200


def insert_commands(enqueue: MediaPlayerEnqueue, item: dict[str, Any]) -> list[dict[str, Any]]:
    """The `queue` command bodies for `add` (at the end), `next` (after the current item) and
    `play` (after the current item, then play it: the rest of the queue stays)."""
    if enqueue == MediaPlayerEnqueue.ADD:
        return [{"insert": [item]}]
    if enqueue == MediaPlayerEnqueue.NEXT:
        return [{"insert": [item], "before": "next"}]
    return [{"insert": [item], "before": "next"}, {"jump_by": 1}]


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _text(value: Any, limit: int = 4096) -> str | None:
    return value if isinstance(value, str) and 0 < len(value) <= limit else None


def reload_body(
    media: dict[str, Any],
    item: dict[str, Any],
    *,
    enqueue: MediaPlayerEnqueue,
    position: float | None,
    updated_at: datetime | None,
    image: str | None,
) -> dict[str, Any] | None:
    """A `load` of the current item at its live position, what follows it and `item` (at the end
    for `add`, right after the current item for `next`; for `play` the new item replaces the
    current one); None when an item that follows is not described (it would be lost)."""
    current: dict[str, Any] = {"url": _text(media.get("content_id")) or item["url"]}
    for key in ("content_type", "title", "subtitle", "artist", "album"):
        if value := _text(media.get(key), 1024):
            current[key] = value
    if image is not None:
        current["images"] = [image]
    following: list[dict[str, Any]] = []
    queue = queue_of(media)
    if queue is not None and isinstance(queue.get("items"), list):
        current_item = queue.get("current_item_id")
        seen_current = False
        if len(queue["items"]) > MAX_QUEUE:
            return None  # more than one load carries: the rest would be lost
        for entry in queue["items"]:
            if not isinstance(entry, dict):
                return None
            if entry.get("item_id") == current_item:
                seen_current = True
                continue
            if not seen_current:
                continue  # already played
            url = _text(entry.get("content_id"))
            if url is None:
                return None
            following.append({"url": url, **({"title": t} if (t := _text(entry.get("title"), 1024)) else {})})
    if enqueue == MediaPlayerEnqueue.PLAY:
        # Play the new item now, and what was to follow after it.
        items = [item, *following]
        return {"queue": items} if len(items) <= MAX_QUEUE else None
    items = [current, *following, item] if enqueue == MediaPlayerEnqueue.ADD else [current, item, *following]
    if len(items) > MAX_QUEUE:
        return None
    body: dict[str, Any] = {"queue": items}
    if position is not None:
        if media.get("state") == "playing" and updated_at is not None:
            rate = _number(media.get("playback_rate")) or 1.0
            position += max(0.0, (dt_util.utcnow() - updated_at).total_seconds()) * rate
        body["position"] = round(position, 3)
    if media.get("state") == "paused":
        body["autoplay"] = False
    return body
