"""The bridge's messages about its devices and itself (bridge.py subscribes to them): state,
availability, receiver, media, members, the bridge's and each device's info and the responses to commands; each payload parsed
before use, bad ones dropped."""

from __future__ import annotations

import logging
from typing import Any

from homeassistant.components.mqtt.models import ReceiveMessage
from homeassistant.core import callback
from homeassistant.util import dt as dt_util

from . import repairs
from .bridge_state import BridgeState
from .const import PLAYER_STATES
from .payloads import (
    DeviceTopics,
    document_payload,
    json_payload,
    parse_identity,
    parse_members,
    short_str,
    text_payload,
    timestamp,
)

# The bridge's records keep the one logger name they had before the bridge was split into
# modules (a user's `logger:` configuration names it).
_LOGGER = logging.getLogger(f"{__package__}.bridge")


class BridgeMessages(BridgeState):
    """The handlers of the bridge's topics other than its device list and events (bridge.py)."""

    @callback
    def _state_message(self, msg: ReceiveMessage) -> None:
        text = text_payload(msg.payload)
        if msg.topic == f"{self.base}/bridge/state":
            online = text is not None and text.strip() == "online"
            if online != self.online:
                self.online = online
                # Once per change, as the quality scale's log-when-unavailable asks.
                _LOGGER.info("cast2mqtt bridge under %s is %s", self.base, "online" if online else "offline")
                if online:
                    # A bridge that (re)starts may have been upgraded (and its clock set): ask
                    # again what it takes, measure again.
                    self.unsupported_keys.clear()
                    self.clock.clear()
                    self.offline_since = None
                    self._cancel_offline_timer()
                    repairs.async_clear_offline(self.hass, self.base)
                    repairs.async_update_too_old(self.hass, self.base, self.version, self.unsupported_keys)
                else:
                    self.offline_since = dt_util.utcnow()
                    self._start_offline_timer()
                self._notify_all()
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
        text = text_payload(msg.payload)
        if text is None:
            return
        word = text.strip()  # empty: the retained topic was cleared
        if word not in ("online", "offline", ""):
            return
        if (entry := self._tracked(topic)) is not None:
            if entry.availability in ("online", "offline") and word in ("online", "offline") and word != entry.availability:
                _LOGGER.info("cast2mqtt device %s is %s", topic, word)
            entry.availability = word or None
            entry.availability_cleared = word == ""
            self._notify(topic)
            if entry.availability_cleared:
                for device_id, device in list(self.devices.items()):
                    if device.topic == topic:
                        self._removed_if_gone(device_id)

    def _tracked_document(self, msg: ReceiveMessage) -> tuple[str, DeviceTopics, dict[str, Any]] | None:
        """The device topic, its tracked entry and the JSON document of a device message."""
        topic = self._device_topic(msg)
        if topic is None or topic == "bridge":
            return None
        value = document_payload(msg.payload)
        if value is None:
            _LOGGER.debug("ignoring %s: not a JSON object", msg.topic)
            return None
        if (entry := self._tracked(topic)) is None:
            return None
        return topic, entry, value

    @callback
    def _document_sample(self, msg: ReceiveMessage, held: dict[str, Any], value: dict[str, Any]) -> None:
        """A document's `updated_at` is the time of its last change, stamped when the bridge
        published it. Only a document whose content differs from the one held was published
        just now: after a reconnect the bridge republishes unchanged documents with their old
        stamps."""
        if _content(held) != _content(value):
            self._clock_sample(msg, timestamp(value.get("updated_at")))

    @callback
    def _receiver_message(self, msg: ReceiveMessage) -> None:
        if (found := self._tracked_document(msg)) is not None:
            topic, entry, value = found
            self._document_sample(msg, entry.receiver, value)
            entry.receiver = value
            self._notify(topic)

    @callback
    def _media_message(self, msg: ReceiveMessage) -> None:
        if (found := self._tracked_document(msg)) is not None:
            topic, entry, value = found
            self._document_sample(msg, entry.media, value)
            entry.media = value
            # The bridge's clock: corrected to Home Assistant's, which computes the live position.
            stamped = timestamp(value.get("position_updated_at"))
            entry.position_updated_at = self.clock.to_local(stamped) if stamped is not None else dt_util.utcnow()
            self._notify(topic)

    @callback
    def _members_message(self, msg: ReceiveMessage) -> None:
        """A speaker group's members (an empty payload: the group is gone)."""
        topic = self._device_topic(msg)
        if topic is None or topic == "bridge":
            return
        text = text_payload(msg.payload)
        members: list[str] | None
        if text is None:
            members = None
        elif not text.strip():
            members = []  # cleared
        else:
            value = json_payload(text)
            members = parse_members(value) if value is not None else None
        if members is None:
            _LOGGER.debug("ignoring %s: not a JSON array of members", msg.topic)
            return
        if (entry := self._tracked(topic)) is not None:
            entry.members = members
            self._notify(topic)

    @callback
    def _device_info_message(self, msg: ReceiveMessage) -> None:
        """A device's `info`: which bridge instance owns it and whether it is authenticated
        (`+/info` also matches `bridge/info`, which `_info_message` reads)."""
        if (found := self._tracked_document(msg)) is not None:
            topic, entry, value = found
            identity = parse_identity(value)
            if identity != entry.identity:
                entry.identity = identity
                self._notify(topic)

    @callback
    def _info_message(self, msg: ReceiveMessage) -> None:
        info = json_payload(msg.payload)
        if not isinstance(info, dict):
            return
        version = short_str(info.get("version"), 64)
        if version != self.version:
            self.version = version
            self.unsupported_keys.clear()
            repairs.async_update_too_old(self.hass, self.base, version, self.unsupported_keys)

    @callback
    def _response_message(self, msg: ReceiveMessage) -> None:
        response = json_payload(msg.payload)
        if not isinstance(response, dict):
            return
        command_id = response.get("id")
        if isinstance(command_id, str):
            future = self._pending.get(command_id)
        elif command_id is None and (topic := self._device_topic(msg)) is not None:
            # The answer to a short-form command (it cannot carry an id): the oldest one waiting
            # for this command on this device (the bridge runs a device's commands in order).
            command = response.get("command")
            waiting = self._unnamed.get((topic, command)) if isinstance(command, str) else None
            future = None
            while waiting and future is None:
                candidate = waiting.popleft()
                future = candidate if not candidate.done() else None
        else:
            return
        if future is not None and not future.done():
            future.set_result(response)


def _content(document: dict[str, Any] | None) -> dict[str, Any] | None:
    """A document without its publication stamp (which is not content)."""
    if document is None:
        return None
    return {key: value for key, value in document.items() if key != "updated_at"}
