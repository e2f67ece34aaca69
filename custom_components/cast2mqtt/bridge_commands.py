"""Commands to the bridge (the JSON form with its deadline, and the short form) and their one
answer: what Home Assistant sends, waits for, records for diagnostics and raises."""

from __future__ import annotations

import asyncio
from collections import deque
from datetime import timedelta
import json
import logging
from typing import Any
import uuid

from homeassistant.components import mqtt
from homeassistant.util import dt as dt_util

from . import repairs
from .bridge_state import BridgeState, _Abandoned, rfc3339
from .const import COMMAND_DEADLINE, MAX_PENDING_COMMANDS, RESPONSE_GRACE
from .errors import CommandError, command_error
from .payloads import DeviceInfoRecord, short_str

# The bridge's records keep the one logger name they had before the bridge was split into
# modules (a user's `logger:` configuration names it).
_LOGGER = logging.getLogger(f"{__package__}.bridge")

# Keys of the JSON form that a bridge from before the contract added them refuses with
# `invalid_payload` ("unknown key ..."). Such a command did nothing and is sent again without the
# key; the bridge is then not asked again until it restarts or reports another version.
OPTIONAL_KEYS = ("expires", "wait")


class BridgeCommands(BridgeState):
    """Sending commands and waiting for their answers."""

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
            response = await self._send_and_wait(device, command, text, future, timeout)
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
            response = await self._send_and_wait(device, command, payload, future, timeout)
        finally:
            self._pending.pop(command_id, None)
        self._record(device, command, command_id, response)
        return response

    async def _send_and_wait(
        self,
        device: DeviceInfoRecord,
        command: str,
        payload: str,
        future: asyncio.Future[dict[str, Any]],
        timeout: float,
    ) -> dict[str, Any]:
        """Publish a command and wait for the answer `future` gets; the caller forgets the
        future afterwards, whatever happened."""
        try:
            await mqtt.async_publish(
                self.hass, f"{self.base}/{device.topic}/command/{command}", payload, qos=1, retain=False
            )
            async with asyncio.timeout(timeout):
                return await future
        except TimeoutError:
            raise self._timeout(device, command, timeout) from None
        except _Abandoned as abandoned:
            raise CommandError(abandoned.key, device=device.name, command=command, code=abandoned.key) from None

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
