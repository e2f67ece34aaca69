"""The bridge as seen through its MQTT contract: devices, their state, and commands.

Everything here reads and writes MQTT through Home Assistant's MQTT integration; nothing speaks
Cast. Every payload is parsed by `payloads` before use: bad ones are dropped (logged at debug),
never raised.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from datetime import datetime, timedelta
import json
import logging
from typing import Any
import uuid

from homeassistant.components import mqtt
from homeassistant.components.mqtt.models import ReceiveMessage
from homeassistant.core import CALLBACK_TYPE, HomeAssistant, callback
from homeassistant.helpers.event import async_call_later
from homeassistant.util import dt as dt_util

from . import repairs
from .clock import ClockSkew

from .const import (
    COMMAND_DEADLINE,
    MAX_PENDING_COMMANDS,
    MAX_TRACKED_TOPICS,
    PLAYER_STATES,
    RECENT_RESPONSES,
    RESPONSE_GRACE,
    TOPIC_NAME_RE,
)
from .errors import CommandError, command_error
from .payloads import (
    DeviceInfoRecord,
    DeviceTopics,
    document_payload,
    json_payload,
    parse_devices,
    parse_members,
    short_str,
    text_payload,
    timestamp,
)

_LOGGER = logging.getLogger(__name__)

# Keys of the JSON form that a bridge from before the contract added them refuses with
# `invalid_payload` ("unknown key ..."). Such a command did nothing and is sent again without the
# key; the bridge is then not asked again until it restarts or reports another version.
OPTIONAL_KEYS = ("expires", "wait")


def rfc3339(moment: datetime) -> str:
    """UTC with milliseconds, as the contract writes times."""
    return dt_util.as_utc(moment).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Bridge:
    """One cast2mqtt bridge under one base topic."""

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

    # MARK: - Commands

    def _check_sendable(self, device: DeviceInfoRecord, command: str) -> None:
        if not self.mqtt_connected:
            raise CommandError("mqtt_not_connected", device=device.name, command=command, code="mqtt_not_connected")
        if len(self._pending) >= MAX_PENDING_COMMANDS:
            raise CommandError("busy", device=device.name, command=command, code="busy")

    async def async_command(
        self,
        device: DeviceInfoRecord,
        command: str,
        body: dict[str, Any] | None = None,
        *,
        deadline: float = COMMAND_DEADLINE,
        wait_extra: float = 0.0,
    ) -> dict[str, Any]:
        """Send one command in its JSON form and wait for the bridge's one response.

        The command carries `"expires"`, `deadline` from now on the bridge's clock (see
        `_expires`): a bridge that has not sent it to the device by then answers `timeout` and
        never sends it. Home Assistant waits for `deadline`
        plus the time a command started just before it needs (RESPONSE_GRACE) plus `wait_extra`
        (a command that answers late on purpose, e.g. `announce` with `wait`), so once it reports
        a timeout the command can no longer run. Returns the response's `data`; raises
        `CommandError` with the bridge's error code and message, or when no answer came.
        """
        remeasured = False
        attempt = 0
        while True:
            payload = {"expires": self._expires(deadline), **(body or {})}
            for key in self.unsupported_keys:
                payload.pop(key, None)
            sent_at = self.hass.loop.time()
            response = await self._exchange(device, command, payload, deadline + RESPONSE_GRACE + wait_extra)
            if (
                not remeasured
                and isinstance(payload.get("expires"), str)
                and _expired_before_sending(response)
                and self.hass.loop.time() - sent_at < deadline / 2
            ):
                # The bridge found the deadline past although it was set well ahead on the skew
                # measured: the bridge's clock has moved since (NTP after a boot, a clock set by
                # hand). The command was never sent: measure again, and send it once more with a
                # relative deadline meanwhile.
                remeasured = True
                _LOGGER.warning(
                    "%s: the cast2mqtt bridge found %s expired on arrival (its clock moved since it "
                    "was measured at %+.1f s); measuring its clock again",
                    self.base, command, self.clock.seconds or 0.0,
                )
                self.clock.clear()
                repairs.async_update_clock(self.hass, self.base, None)
                continue
            refused = _refused_key(response)
            if refused is None or refused not in payload or attempt == len(OPTIONAL_KEYS):
                break
            attempt += 1
            _LOGGER.info(
                "%s: the cast2mqtt bridge does not know %r yet (an older version); commands go without it",
                self.base, refused,
            )
            self.unsupported_keys.add(refused)
            repairs.async_update_too_old(self.hass, self.base, self.version, self.unsupported_keys)
        return _result(device, command, response)

    def _expires(self, deadline: float) -> str | float:
        """The deadline on the bridge's clock: Home Assistant's time plus the measured skew plus
        `deadline`, so a command that reaches the bridge late (a bridge that was stopped, a
        broker delivering a backlog) is still refused. Until the skew is measured: `deadline`
        seconds, which the bridge counts from when it receives the command."""
        if self.clock.seconds is None:
            return round(deadline, 3)
        return rfc3339(self.clock.to_bridge(dt_util.utcnow()) + timedelta(seconds=deadline))

    async def async_command_text(self, device: DeviceInfoRecord, command: str, text: str) -> dict[str, Any]:
        """Send the short form of a command (for what only it can say, such as a relative
        volume `+5`) and wait for its answer, which carries no id. It carries no deadline either."""
        self._check_sendable(device, command)
        future: asyncio.Future[dict[str, Any]] = self.hass.loop.create_future()
        waiting = self._unnamed.setdefault((device.topic, command), deque())
        waiting.append(future)
        timeout = COMMAND_DEADLINE + RESPONSE_GRACE
        try:
            await mqtt.async_publish(
                self.hass, f"{self.base}/{device.topic}/command/{command}", text, qos=1, retain=False
            )
            async with asyncio.timeout(timeout):
                response = await future
        except TimeoutError:
            raise self._timeout(device, command, timeout) from None
        except _Abandoned as abandoned:
            raise CommandError(abandoned.key, device=device.name, command=command, code=abandoned.key) from None
        finally:
            if future in waiting:
                waiting.remove(future)
            if not waiting:
                self._unnamed.pop((device.topic, command), None)
        self._record(device, command, None, response)
        return _result(device, command, response)

    async def _exchange(
        self, device: DeviceInfoRecord, command: str, body: dict[str, Any], timeout: float
    ) -> dict[str, Any]:
        self._check_sendable(device, command)
        command_id = f"ha-{uuid.uuid4().hex}"
        payload = json.dumps({**body, "id": command_id}, separators=(",", ":"))
        future: asyncio.Future[dict[str, Any]] = self.hass.loop.create_future()
        self._pending[command_id] = future
        try:
            await mqtt.async_publish(
                self.hass, f"{self.base}/{device.topic}/command/{command}", payload, qos=1, retain=False
            )
            async with asyncio.timeout(timeout):
                response = await future
        except TimeoutError:
            raise self._timeout(device, command, timeout) from None
        except _Abandoned as abandoned:
            raise CommandError(abandoned.key, device=device.name, command=command, code=abandoned.key) from None
        finally:
            self._pending.pop(command_id, None)
        self._record(device, command, command_id, response)
        return response

    def _timeout(self, device: DeviceInfoRecord, command: str, timeout: float) -> CommandError:
        self.recent.append({"at": rfc3339(dt_util.utcnow()), "device": device.topic, "command": command,
                            "status": "no_response"})
        return CommandError("command_timeout", device=device.name, command=command, code="timeout",
                            seconds=f"{timeout:g}", base_topic=self.base)

    def _record(self, device: DeviceInfoRecord, command: str, command_id: str | None, response: dict[str, Any]) -> None:
        """Keeps what diagnostics may show of a response: never its data."""
        entry: dict[str, Any] = {"at": rfc3339(dt_util.utcnow()), "device": device.topic, "command": command,
                                 "id": command_id, "status": short_str(response.get("status"), 16)}
        error = response.get("error")
        if isinstance(error, dict):
            entry["error_code"] = short_str(error.get("code"), 64)
            entry["error_message"] = short_str(error.get("message"), 512)
        self.recent.append(entry)


class _Abandoned(Exception):
    """A waiting command was given up (`key`: why) before its answer came."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _content(document: dict[str, Any] | None) -> dict[str, Any] | None:
    """A document without its publication stamp (which is not content)."""
    if document is None:
        return None
    return {key: value for key, value in document.items() if key != "updated_at"}


def _refused_key(response: dict[str, Any]) -> str | None:
    """The optional key an older bridge refused (`unknown key "expires" for ...`), if that is
    what this error response says."""
    error = response.get("error")
    if response.get("status") != "error" or not isinstance(error, dict) or error.get("code") != "invalid_payload":
        return None
    message = error.get("message")
    if not isinstance(message, str):
        return None
    for key in OPTIONAL_KEYS:
        if message.startswith(f'unknown key "{key}"'):
            return key
    return None


def _expired_before_sending(response: dict[str, Any]) -> bool:
    """The bridge's answer to a command whose deadline had passed when it came to send it
    (`timeout`, "the command expired before it could be sent"), not a device that did not answer."""
    error = response.get("error")
    if response.get("status") != "error" or not isinstance(error, dict) or error.get("code") != "timeout":
        return False
    message = error.get("message")
    return isinstance(message, str) and "expired" in message


def _result(device: DeviceInfoRecord, command: str, response: dict[str, Any]) -> dict[str, Any]:
    if response.get("status") == "ok":
        data = response.get("data")
        return data if isinstance(data, dict) else {}
    error = response.get("error")
    code, message = "unknown", "the bridge reported an error without details"
    if isinstance(error, dict):
        code = short_str(error.get("code"), 64) or code
        message = short_str(error.get("message"), 2048) or message
    raise command_error(device.name, command, code, message)
