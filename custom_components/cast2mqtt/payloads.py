"""Parsing of the bridge's payloads: everything on its topics is hostile until parsed.

Wrong types, bad JSON, invalid UTF-8 and oversized payloads become None (the caller drops them and
logs at debug), never an exception.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
import json
from typing import Any

from homeassistant.util import dt as dt_util

from .const import (
    AUTH_ERROR_RE,
    DEVICE_ID_RE,
    INSTANCE_RE,
    MAX_GROUP_MEMBERS,
    MAX_PAYLOAD,
    MAX_TRACKED_TOPICS,
    TOPIC_NAME_RE,
)


@dataclass(slots=True)
class DeviceInfoRecord:
    """One entry of `<base>/bridge/devices`."""

    id: str
    name: str
    topic: str
    model: str | None
    cast_type: str | None


@dataclass(frozen=True, slots=True)
class DeviceIdentity:
    """The parts of a device's `info` the players show: the bridge instance that owns it
    (several instances on one base topic; None with one bridge) and whether the device proved
    it is a genuine Cast device (None: not checked)."""

    owner: str | None = None
    authenticated: bool | None = None
    auth_error: str | None = None


def parse_identity(info: dict[str, Any]) -> DeviceIdentity:
    """The identity fields of a device's `info` document; wrong types count as absent."""
    owner = info.get("owner")
    authenticated = info.get("authenticated")
    auth_error = info.get("auth_error")
    return DeviceIdentity(
        owner=owner if isinstance(owner, str) and INSTANCE_RE.match(owner) else None,
        authenticated=authenticated if isinstance(authenticated, bool) else None,
        auth_error=auth_error if isinstance(auth_error, str) and AUTH_ERROR_RE.match(auth_error) else None,
    )


@dataclass(slots=True)
class DeviceTopics:
    """The last retained state of one device topic name."""

    availability: str | None = None
    # An empty retained payload arrived: the bridge cleared the topic (it forgot the device).
    availability_cleared: bool = False
    receiver: dict[str, Any] = field(default_factory=dict)
    media: dict[str, Any] = field(default_factory=dict)
    # `media.position_updated_at` parsed, or when the media document arrived.
    position_updated_at: datetime | None = None
    state: str | None = None
    # A speaker group's `members`: the member device ids, in the group's order.
    members: list[str] = field(default_factory=list)
    # From the device's `info`: what Home Assistant shows as attributes.
    identity: DeviceIdentity = field(default_factory=DeviceIdentity)


def text_payload(payload: str | bytes | bytearray) -> str | None:
    """The payload as text, or None when it is too large or not UTF-8 (Home Assistant hands over
    bytes, and from 2026 on may hand over a bytearray)."""
    if isinstance(payload, str):
        return payload if len(payload) <= MAX_PAYLOAD else None
    if len(payload) > MAX_PAYLOAD:
        return None
    try:
        return payload.decode("utf-8")
    except UnicodeDecodeError:
        return None


def json_payload(payload: str | bytes | bytearray) -> Any:
    """Parsed JSON, or None for anything that is not valid JSON text."""
    text = text_payload(payload)
    if text is None or not text.strip():
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than the decoder goes
        return None


def document_payload(payload: str | bytes | bytearray) -> dict[str, Any] | None:
    """A retained JSON object: {} when the topic was cleared (empty payload), None when the
    payload is not a JSON object (ignored)."""
    text = text_payload(payload)
    if text is None:
        return None
    if not text.strip():
        return {}
    value = json_payload(text)
    return value if isinstance(value, dict) else None


def short_str(value: Any, limit: int = 256) -> str | None:
    if isinstance(value, str) and 0 < len(value) <= limit:
        return value
    return None


def timestamp(value: Any) -> datetime | None:
    """An ISO 8601 time with a time zone, or None."""
    if not isinstance(value, str) or len(value) > 64:
        return None
    try:
        parsed = dt_util.parse_datetime(value)
    except (ValueError, OverflowError):
        return None
    return parsed if parsed is not None and parsed.tzinfo is not None else None


def parse_devices(value: Any) -> dict[str, DeviceInfoRecord] | None:
    """`bridge/devices` as records by device id; None when it is not a JSON array."""
    if not isinstance(value, list):
        return None
    devices: dict[str, DeviceInfoRecord] = {}
    for entry in value[:MAX_TRACKED_TOPICS]:
        if not isinstance(entry, dict):
            continue
        device_id, topic = entry.get("id"), entry.get("topic")
        if not isinstance(device_id, str) or not DEVICE_ID_RE.match(device_id):
            continue
        if not isinstance(topic, str) or not TOPIC_NAME_RE.match(topic) or topic == "bridge":
            continue
        devices[device_id] = DeviceInfoRecord(
            id=device_id,
            name=short_str(entry.get("name")) or topic,
            topic=topic,
            model=short_str(entry.get("model")),
            cast_type=short_str(entry.get("cast_type"), 16),
        )
    return devices


def parse_members(value: Any) -> list[str] | None:
    """A group's `members` as its member device ids (valid ids only, no duplicates, in order);
    None when it is not a JSON array."""
    if not isinstance(value, list):
        return None
    members: list[str] = []
    for entry in value[:MAX_GROUP_MEMBERS]:
        device_id = entry.get("id") if isinstance(entry, dict) else None
        if isinstance(device_id, str) and DEVICE_ID_RE.match(device_id) and device_id not in members:
            members.append(device_id)
    return members
