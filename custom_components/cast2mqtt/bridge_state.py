"""The state the bridge's parts share (bridge.py puts them together): what is known of the bridge
and its devices, the listeners, the commands waiting for an answer, the clock skew and the
repair issue of a bridge offline for long."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from datetime import datetime
import logging
from typing import Any

from homeassistant.components.mqtt.models import ReceiveMessage
from homeassistant.core import CALLBACK_TYPE, HomeAssistant, callback
from homeassistant.helpers.event import async_call_later
from homeassistant.util import dt as dt_util

from . import repairs
from .clock import ClockSkew
from .const import MAX_TRACKED_TOPICS, RECENT_RESPONSES, TOPIC_NAME_RE
from .payloads import DeviceInfoRecord, DeviceTopics

# The bridge's records keep the one logger name they had before the bridge was split into
# modules (a user's `logger:` configuration names it).
_LOGGER = logging.getLogger(f"{__package__}.bridge")


def rfc3339(moment: datetime) -> str:
    """UTC with milliseconds, as the contract writes times."""
    return dt_util.as_utc(moment).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class BridgeState:
    """One cast2mqtt bridge under one base topic: its state (the parts that read and change it are
    BridgeMessages, BridgeCommands and Bridge)."""

    def __init__(self, hass: HomeAssistant, base_topic: str) -> None:
        self.hass = hass
        self.base = base_topic
        self.online = False
        # Home Assistant's own MQTT connection: nothing is current, and no command can be
        # answered, while it is down.
        self.mqtt_connected = False
        self.version: str | None = None
        self.unsupported_keys: set[str] = set()
        self.devices: dict[str, DeviceInfoRecord] = {}
        self._ids_by_topic: dict[str, str] = {}
        # Ids in the latest bridge/devices (`devices` also keeps ids missing from it for now).
        self.listed: set[str] = set()
        self._topics: dict[str, DeviceTopics] = {}
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        # Short-form commands waiting for their id-less answer, per (device topic, command).
        self._unnamed: dict[tuple[str, str], deque[asyncio.Future[dict[str, Any]]]] = {}
        self.recent: deque[dict[str, Any]] = deque(maxlen=RECENT_RESPONSES)
        self._unsubscribe: list[CALLBACK_TYPE] = []
        self._listeners: dict[str, list[Callable[[], None]]] = {}
        self._bridge_listeners: list[Callable[[], None]] = []
        self._device_listeners: list[Callable[[list[str], list[str]], None]] = []
        # The bridge's clock against Home Assistant's (see clock.py).
        self.clock = ClockSkew()
        # When the bridge was last seen going offline, or the entry loaded without it online
        # (Home Assistant's clock); None while it is online.
        self.offline_since: datetime | None = dt_util.utcnow()
        self._offline_timer: CALLBACK_TYPE | None = None

    # MARK: - Repair issues

    @callback
    def _start_offline_timer(self) -> None:
        self._cancel_offline_timer()
        self._offline_timer = async_call_later(
            self.hass, repairs.BRIDGE_OFFLINE_MINUTES * 60, self._offline_for_long
        )

    @callback
    def _cancel_offline_timer(self) -> None:
        if self._offline_timer is not None:
            self._offline_timer()
            self._offline_timer = None

    @callback
    def _offline_for_long(self, _now: datetime) -> None:
        self._offline_timer = None
        if self.online:
            return
        since = self.offline_since or dt_util.utcnow()
        _LOGGER.warning(
            "cast2mqtt bridge under %s has been offline since %s", self.base, rfc3339(since)
        )
        repairs.async_raise_offline(self.hass, self.base, rfc3339(since))

    @callback
    def _clock_sample(self, msg: ReceiveMessage, stamp: datetime | None) -> None:
        """A time the bridge stamped on a message it has just published (the caller knows it is
        fresh); a retained replay says nothing about the clock now."""
        if msg.retain or stamp is None:
            return
        before = self.clock.seconds
        if not self.clock.add(stamp, dt_util.utcnow()):
            return
        skew = self.clock.seconds
        if skew is None:
            return
        if before is None or (abs(before) > repairs.CLOCK_SKEW_LIMIT) != (abs(skew) > repairs.CLOCK_SKEW_LIMIT):
            _LOGGER.info("cast2mqtt bridge under %s: its clock is %+.1f s from Home Assistant's", self.base, skew)
        repairs.async_update_clock(self.hass, self.base, skew)

    @callback
    def _fail_waiting(self, key: str) -> None:
        waiting = list(self._pending.values())
        for queue in self._unnamed.values():
            waiting.extend(queue)
        self._pending.clear()
        self._unnamed.clear()
        for future in waiting:
            if not future.done():
                future.set_exception(_Abandoned(key))

    @callback
    def _connection_changed(self, connected: bool) -> None:
        """Home Assistant's MQTT client connected or lost the broker."""
        if connected == self.mqtt_connected:
            return
        self.mqtt_connected = connected
        if not connected:
            # Responses published while Home Assistant is away are not delivered to it later.
            self._fail_waiting("mqtt_lost")
        _LOGGER.info(
            "cast2mqtt bridge under %s: %s", self.base,
            "MQTT connected again" if connected else "MQTT disconnected, its media players are unavailable",
        )
        self._notify_all()

    @callback
    def _notify_all(self) -> None:
        for listener in list(self._bridge_listeners):
            listener()

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

    # MARK: - Device topics

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


class _Abandoned(Exception):
    """A waiting command was given up (`key`: why) before its answer came."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key
