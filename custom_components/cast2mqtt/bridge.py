"""The bridge as seen through its MQTT contract: devices, their state, and commands.

Everything here reads and writes MQTT through Home Assistant's MQTT integration; nothing speaks
Cast. Every payload is parsed by `payloads` before use: bad ones are dropped (logged at debug),
never raised.

The parts: bridge_state.py (what is known, listeners, waiting commands, clock skew),
bridge_messages.py (the device topics), bridge_commands.py (commands and their answers); here
they are put together with the lifecycle and the bridge's device list and events.
"""

from __future__ import annotations

from collections.abc import Callable
import logging

from homeassistant.components import mqtt
from homeassistant.components.mqtt.models import ReceiveMessage
from homeassistant.core import callback

from . import repairs
from .bridge_commands import BridgeCommands
from .bridge_messages import BridgeMessages
from .bridge_state import rfc3339
from .payloads import json_payload, parse_devices, timestamp

__all__ = ["Bridge", "rfc3339"]

# The bridge's records keep the one logger name they had before the bridge was split into
# modules (a user's `logger:` configuration names it).
_LOGGER = logging.getLogger(f"{__package__}.bridge")


class Bridge(BridgeMessages, BridgeCommands):
    """One cast2mqtt bridge under one base topic."""

    # MARK: - Lifecycle

    async def async_start(self) -> None:
        """Subscribe to the bridge's topics (retained state arrives at once). Raises
        HomeAssistantError when the MQTT integration refuses a subscription."""
        base = self.base
        subscriptions: list[tuple[str, Callable[[ReceiveMessage], None]]] = [
            (f"{base}/bridge/devices", self._devices_message),
            (f"{base}/bridge/event", self._bridge_event_message),
            (f"{base}/bridge/info", self._info_message),
            (f"{base}/+/state", self._state_message),  # also matches bridge/state
            (f"{base}/+/availability", self._availability_message),
            (f"{base}/+/receiver", self._receiver_message),
            (f"{base}/+/media", self._media_message),
            (f"{base}/+/members", self._members_message),
            (f"{base}/+/info", self._device_info_message),
            (f"{base}/+/response", self._response_message),
        ]
        self._unsubscribe.append(mqtt.async_subscribe_connection_status(self.hass, self._connection_changed))
        self.mqtt_connected = bool(mqtt.is_connected(self.hass))
        for topic, handler in subscriptions:
            self._unsubscribe.append(
                await mqtt.async_subscribe(self.hass, topic, handler, qos=1, encoding=None)
            )
        if not self.online:
            self._start_offline_timer()

    @callback
    def async_stop(self) -> None:
        """Unsubscribe and fail the commands still waiting."""
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe.clear()
        self._cancel_offline_timer()
        self._fail_waiting("unloaded")
        repairs.async_clear_all(self.hass, self.base)

    # MARK: - The device list and events

    @callback
    def _devices_message(self, msg: ReceiveMessage) -> None:
        devices = parse_devices(json_payload(msg.payload))
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
    def _bridge_event_message(self, msg: ReceiveMessage) -> None:
        event = json_payload(msg.payload)
        if not isinstance(event, dict):
            return
        # Events are never retained: each is stamped when it is published.
        self._clock_sample(msg, timestamp(event.get("at")))
        if event.get("type") != "device_removed":
            return
        device_id = event.get("id")
        if isinstance(device_id, str):
            self._remove(device_id)
