"""The bridge as seen through its MQTT contract: devices, their state, and commands.

Everything here reads and writes MQTT through Home Assistant's MQTT integration; nothing speaks
Cast. Every payload is treated as hostile until parsed: wrong types, bad JSON, invalid UTF-8 and
oversized payloads are dropped (logged at debug), never raised.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
import json
import logging
from typing import Any
import uuid

from homeassistant.components import mqtt
from homeassistant.components.mqtt.models import ReceiveMessage
from homeassistant.core import CALLBACK_TYPE, HomeAssistant, callback
from homeassistant.exceptions import HomeAssistantError, ServiceValidationError
from homeassistant.util import dt as dt_util

from .const import (
    COMMAND_TIMEOUT,
    DEVICE_ID_RE,
    MAX_PAYLOAD,
    MAX_PENDING_COMMANDS,
    MAX_TRACKED_TOPICS,
    PLAYER_STATES,
    TOPIC_NAME_RE,
)

_LOGGER = logging.getLogger(__name__)


class CommandError(HomeAssistantError):
    """The bridge answered a command with an error (or did not answer)."""

    def __init__(self, device: str, command: str, code: str, message: str) -> None:
        super().__init__(f"{device}: {command} failed: {code}: {message}")
        self.device = device
        self.command = command
        self.code = code
        self.bridge_message = message


class InvalidCommandError(CommandError, ServiceValidationError):
    """The bridge refused a command that cannot work in the device's current state or at all
    (Home Assistant shows it as a validation error, without a traceback in its log)."""


# Error codes that say "this action does not fit", not "something broke".
_VALIDATION_CODES = frozenset({
    "invalid_payload", "unknown_command", "unknown_device", "not_supported", "no_app",
    "no_media_session", "namespace_not_allowed", "payload_too_large", "invalid_player_state",
})


def command_error(device: str, command: str, code: str, message: str) -> CommandError:
    """The exception for a bridge error response."""
    kind = InvalidCommandError if code in _VALIDATION_CODES else CommandError
    return kind(device, command, code, message)


@dataclass(slots=True)
class DeviceInfoRecord:
    """One entry of `<base>/bridge/devices`."""

    id: str
    name: str
    topic: str
    model: str | None
    cast_type: str | None


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


def _text(payload: str | bytes) -> str | None:
    """The payload as text, or None when it is too large or not UTF-8."""
    if isinstance(payload, str):
        return payload if len(payload) <= MAX_PAYLOAD else None
    if len(payload) > MAX_PAYLOAD:
        return None
    try:
        return payload.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _json(payload: str | bytes) -> Any:
    """Parsed JSON, or None for anything that is not valid JSON text."""
    text = _text(payload)
    if text is None or not text.strip():
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _document(payload: str | bytes) -> dict[str, Any] | None:
    """A retained JSON object: {} when the topic was cleared (empty payload), None when the
    payload is not a JSON object (ignored)."""
    text = _text(payload)
    if text is None:
        return None
    if not text.strip():
        return {}
    value = _json(text)
    return value if isinstance(value, dict) else None


def _short_str(value: Any, limit: int = 256) -> str | None:
    if isinstance(value, str) and 0 < len(value) <= limit:
        return value
    return None


def _timestamp(value: Any) -> datetime | None:
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
            name=_short_str(entry.get("name")) or topic,
            topic=topic,
            model=_short_str(entry.get("model")),
            cast_type=_short_str(entry.get("cast_type"), 16),
        )
    return devices


class Bridge:
    """One cast2mqtt bridge under one base topic."""

    def __init__(self, hass: HomeAssistant, base_topic: str) -> None:
        self.hass = hass
        self.base = base_topic
        self.online = False
        self.devices: dict[str, DeviceInfoRecord] = {}
        self._ids_by_topic: dict[str, str] = {}
        # Ids in the latest bridge/devices (`devices` also keeps ids missing from it for now).
        self.listed: set[str] = set()
        self._topics: dict[str, DeviceTopics] = {}
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._unsubscribe: list[CALLBACK_TYPE] = []
        self._listeners: dict[str, list[Callable[[], None]]] = {}
        self._bridge_listeners: list[Callable[[], None]] = []
        self._device_listeners: list[Callable[[list[str], list[str]], None]] = []

    # MARK: - Lifecycle

    async def async_start(self) -> None:
        """Subscribe to the bridge's topics (retained state arrives at once)."""
        base = self.base
        subscriptions: list[tuple[str, Callable[[ReceiveMessage], None]]] = [
            (f"{base}/bridge/devices", self._devices_message),
            (f"{base}/bridge/event", self._bridge_event_message),
            (f"{base}/+/state", self._state_message),  # also matches bridge/state
            (f"{base}/+/availability", self._availability_message),
            (f"{base}/+/receiver", self._receiver_message),
            (f"{base}/+/media", self._media_message),
            (f"{base}/+/response", self._response_message),
        ]
        for topic, handler in subscriptions:
            self._unsubscribe.append(
                await mqtt.async_subscribe(self.hass, topic, handler, qos=1, encoding=None)
            )

    @callback
    def async_stop(self) -> None:
        """Unsubscribe and fail the commands still waiting."""
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe.clear()
        for future in self._pending.values():
            if not future.done():
                future.set_exception(HomeAssistantError("the cast2mqtt integration was unloaded"))
        self._pending.clear()

    # MARK: - Listeners

    @callback
    def async_listen_device(self, device_id: str, listener: Callable[[], None]) -> CALLBACK_TYPE:
        """Call `listener` when anything of the device (or the bridge state) changes. By id:
        a device's topic name can change across bridge restarts (a renamed device)."""
        self._listeners.setdefault(device_id, []).append(listener)
        self._bridge_listeners.append(listener)

        @callback
        def remove() -> None:
            listeners = self._listeners.get(device_id, [])
            if listener in listeners:
                listeners.remove(listener)
            if not listeners:
                self._listeners.pop(device_id, None)
            if listener in self._bridge_listeners:
                self._bridge_listeners.remove(listener)

        return remove

    @callback
    def async_listen_devices(
        self, listener: Callable[[list[str], list[str]], None]
    ) -> CALLBACK_TYPE:
        """Call `listener(added_ids, removed_ids)` when devices come and go."""
        self._device_listeners.append(listener)

        @callback
        def remove() -> None:
            if listener in self._device_listeners:
                self._device_listeners.remove(listener)

        return remove

    def topics(self, topic: str) -> DeviceTopics:
        """The last known state of a device topic (empty when nothing arrived yet)."""
        return self._topics.get(topic) or DeviceTopics()

    def device_by_reference(self, reference: str) -> DeviceInfoRecord | None:
        """A device by id, topic name or friendly name."""
        if reference in self.devices:
            return self.devices[reference]
        for device in self.devices.values():
            if reference in (device.topic, device.name):
                return device
        return None

    # MARK: - Incoming messages

    def _device_topic(self, msg: ReceiveMessage) -> str | None:
        """The `<dev>` part of `<base>/<dev>/<leaf>`, when it is a valid topic name."""
        prefix = self.base + "/"
        if not msg.topic.startswith(prefix):
            return None
        parts = msg.topic[len(prefix):].split("/")
        if len(parts) != 2 or not TOPIC_NAME_RE.match(parts[0]):
            return None
        return parts[0]

    def _tracked(self, topic: str) -> DeviceTopics | None:
        entry = self._topics.get(topic)
        if entry is None:
            if len(self._topics) >= MAX_TRACKED_TOPICS:
                _LOGGER.debug("ignoring %s: too many device topics", topic)
                return None
            entry = self._topics[topic] = DeviceTopics()
        return entry

    @callback
    def _notify(self, topic: str) -> None:
        device_id = self._ids_by_topic.get(topic)
        for listener in list(self._listeners.get(device_id, ())) if device_id else ():
            listener()

    @callback
    def _devices_message(self, msg: ReceiveMessage) -> None:
        devices = parse_devices(_json(msg.payload))
        if devices is None:
            _LOGGER.debug("ignoring %s: not a JSON array of devices", msg.topic)
            return
        added = [device_id for device_id in devices if device_id not in self.devices]
        changed = [
            device.topic
            for device_id, device in devices.items()
            if device_id in self.devices and self.devices[device_id] != device
        ]
        # A device missing from the list is not removed for that alone: right after a restart
        # the bridge lists only what it has found so far. See `_removed_if_gone`.
        self.devices.update(devices)
        self.listed = set(devices)
        # Listed devices win a topic name over ones kept from an earlier list.
        self._ids_by_topic = {d.topic: i for i, d in self.devices.items() if i not in self.listed}
        self._ids_by_topic.update({d.topic: i for i, d in devices.items()})
        if added:
            for listener in list(self._device_listeners):
                listener(added, [])
        for topic in changed:
            self._notify(topic)
        for device_id in [d for d in self.devices if d not in self.listed]:
            self._removed_if_gone(device_id)

    @callback
    def _removed_if_gone(self, device_id: str) -> None:
        """A device the bridge forgot while no event reached us (it was restarted with the
        device excluded): not listed any more, and its retained `availability` cleared."""
        device = self.devices.get(device_id)
        if device is None or device_id in self.listed:
            return
        entry = self._topics.get(device.topic)
        if entry is not None and entry.availability_cleared:
            self._remove(device_id)

    @callback
    def _remove(self, device_id: str) -> None:
        removed = self.devices.pop(device_id, None)
        if removed is None:
            return
        self._topics.pop(removed.topic, None)
        self._ids_by_topic.pop(removed.topic, None)
        for listener in list(self._device_listeners):
            listener([], [device_id])

    @callback
    def _bridge_event_message(self, msg: ReceiveMessage) -> None:
        event = _json(msg.payload)
        if not isinstance(event, dict) or event.get("type") != "device_removed":
            return
        device_id = event.get("id")
        if isinstance(device_id, str):
            self._remove(device_id)

    @callback
    def _state_message(self, msg: ReceiveMessage) -> None:
        text = _text(msg.payload)
        if msg.topic == f"{self.base}/bridge/state":
            online = text is not None and text.strip() == "online"
            if online != self.online:
                self.online = online
                for listener in list(self._bridge_listeners):
                    listener()
            return
        topic = self._device_topic(msg)
        if topic is None or topic == "bridge" or text is None:
            return
        word = text.strip()  # empty: the retained topic was cleared
        if word not in PLAYER_STATES and word != "":
            _LOGGER.debug("ignoring %s: unknown state", msg.topic)
            return
        if (entry := self._tracked(topic)) is not None:
            entry.state = word or None
            self._notify(topic)

    @callback
    def _availability_message(self, msg: ReceiveMessage) -> None:
        topic = self._device_topic(msg)
        if topic is None or topic == "bridge":
            return
        text = _text(msg.payload)
        if text is None:
            return
        word = text.strip()  # empty: the retained topic was cleared
        if word not in ("online", "offline", ""):
            return
        if (entry := self._tracked(topic)) is not None:
            entry.availability = word or None
            entry.availability_cleared = word == ""
            self._notify(topic)
            if entry.availability_cleared:
                for device_id, device in list(self.devices.items()):
                    if device.topic == topic:
                        self._removed_if_gone(device_id)

    @callback
    def _receiver_message(self, msg: ReceiveMessage) -> None:
        topic = self._device_topic(msg)
        if topic is None or topic == "bridge":
            return
        value = _document(msg.payload)
        if value is None:
            _LOGGER.debug("ignoring %s: not a JSON object", msg.topic)
            return
        if (entry := self._tracked(topic)) is not None:
            entry.receiver = value
            self._notify(topic)

    @callback
    def _media_message(self, msg: ReceiveMessage) -> None:
        topic = self._device_topic(msg)
        if topic is None or topic == "bridge":
            return
        value = _document(msg.payload)
        if value is None:
            _LOGGER.debug("ignoring %s: not a JSON object", msg.topic)
            return
        if (entry := self._tracked(topic)) is not None:
            entry.media = value
            entry.position_updated_at = _timestamp(entry.media.get("position_updated_at")) or dt_util.utcnow()
            self._notify(topic)

    @callback
    def _response_message(self, msg: ReceiveMessage) -> None:
        response = _json(msg.payload)
        if not isinstance(response, dict):
            return
        command_id = response.get("id")
        if not isinstance(command_id, str):
            return
        future = self._pending.get(command_id)
        if future is not None and not future.done():
            future.set_result(response)

    # MARK: - Commands

    async def async_command(
        self,
        device: DeviceInfoRecord,
        command: str,
        body: dict[str, Any] | None = None,
        *,
        timeout: float = COMMAND_TIMEOUT,
    ) -> dict[str, Any]:
        """Send one command in its JSON form and wait for the bridge's one response.

        Returns the response's `data` object; raises `CommandError` with the bridge's error code
        and message, or when no response came in time.
        """
        if len(self._pending) >= MAX_PENDING_COMMANDS:
            raise CommandError(device.name, command, "busy", "too many cast2mqtt commands are waiting")
        command_id = f"ha-{uuid.uuid4().hex}"
        payload = json.dumps({**(body or {}), "id": command_id}, separators=(",", ":"))
        future: asyncio.Future[dict[str, Any]] = self.hass.loop.create_future()
        self._pending[command_id] = future
        try:
            await mqtt.async_publish(
                self.hass, f"{self.base}/{device.topic}/command/{command}", payload, qos=1, retain=False
            )
            async with asyncio.timeout(timeout):
                response = await future
        except TimeoutError:
            raise CommandError(
                device.name,
                command,
                "timeout",
                f"no response from the cast2mqtt bridge within {timeout:g} s "
                f"(is it running and connected to the broker under '{self.base}'?)",
            ) from None
        finally:
            self._pending.pop(command_id, None)

        if response.get("status") == "ok":
            data = response.get("data")
            return data if isinstance(data, dict) else {}
        error = response.get("error")
        code, message = "unknown", "the bridge reported an error without details"
        if isinstance(error, dict):
            code = _short_str(error.get("code"), 64) or code
            message = _short_str(error.get("message"), 2048) or message
        raise command_error(device.name, command, code, message)
