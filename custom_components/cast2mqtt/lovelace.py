"""`cast2mqtt.show_lovelace_view`: a Home Assistant dashboard view on a Cast display, through
Home Assistant's own Lovelace receiver (the app Home Assistant's cast integration uses).

The receiver logs in to Home Assistant itself, with a refresh token of a system user that this
integration makes once (an administrator, as the cast integration's) and then reuses: its id is
kept in `.storage/cast2mqtt.dashboard_user`, and its first refresh token is handed out again.
System users' tokens have no client id, so the receiver is told `clientId: null`.

The token leaves Home Assistant only inside one command to the bridge: `command/keep` (the bridge
keeps the view on the display and stores the token in its state directory, never publishing it)
or, for a single cast, the `connect` message of `command/send`. Both are published without
retain; nothing here logs a payload, and diagnostics redact the key wherever it appears.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
import json
import logging
from typing import Any, Final

from homeassistant.auth.const import GROUP_ID_ADMIN
from homeassistant.auth.models import User
from homeassistant.core import HomeAssistant
from homeassistant.helpers import instance_id, network
from homeassistant.helpers.storage import Store
from homeassistant.util.hass_dict import HassKey

from .const import DOMAIN
from .errors import InvalidCommandError, error, service_error

_LOGGER = logging.getLogger(__name__)

LOVELACE_APP_ID: Final = "A078F6B0"
LOVELACE_NAMESPACE: Final = "urn:x-cast:com.nabucasa.hast"
USER_NAME: Final = "cast2mqtt dashboards"

# A single cast: after `connect`, the receiver's status is asked for this often until it says it
# is connected to Home Assistant (it logs in on its own, which takes a moment on a slow display).
CONNECT_POLL_SECONDS = 1.0
CONNECT_POLLS = 15

_STORE_KEY: Final = f"{DOMAIN}.dashboard_user"
_STORE_VERSION: Final = 1

type Command = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class ViewRequest:
    """What the action asks for (its fields, validated by services.py)."""

    view_path: str | None = None
    dashboard_path: str | None = None
    keep: bool = False
    when: str | dict[str, str] | None = None
    yield_seconds: int | None = None
    silent: bool | None = None
    hass_url: str | None = None


@dataclass(frozen=True)
class Access:
    """Where the receiver finds Home Assistant and how it logs in (the token never in a repr)."""

    hass_url: str
    hass_uuid: str
    refresh_token: str = field(repr=False)


@dataclass
class _UserStore:
    store: Store[dict[str, Any]]
    lock: asyncio.Lock


_DATA: HassKey[_UserStore] = HassKey(f"{DOMAIN}_dashboard_user")


def _user_store(hass: HomeAssistant) -> _UserStore:
    if (found := hass.data.get(_DATA)) is None:
        found = hass.data[_DATA] = _UserStore(Store(hass, _STORE_VERSION, _STORE_KEY, private=True), asyncio.Lock())
    return found


def default_hass_url(hass: HomeAssistant) -> str:
    """Home Assistant's address as the cast integration hands it to the receiver: an https one,
    the external address before the internal one."""
    try:
        return network.get_url(hass, require_ssl=True, prefer_external=True)
    except network.NoURLAvailableError as err:
        raise service_error("no_hass_url") from err


async def async_refresh_token(hass: HomeAssistant) -> str:
    """The refresh token of the integration's system user, made (user and token) the first time."""
    users = _user_store(hass)
    async with users.lock:
        stored = await users.store.async_load() or {}
        user_id = stored.get("user_id")
        user: User | None = await hass.auth.async_get_user(user_id) if isinstance(user_id, str) else None
        if user is None:
            user = await hass.auth.async_create_system_user(USER_NAME, group_ids=[GROUP_ID_ADMIN])
            await users.store.async_save({"user_id": user.id})
            _LOGGER.info("made the system user %r (%s) that dashboards on Cast displays log in as", USER_NAME, user.id)
        if not user.is_active:
            raise service_error("dashboard_user_inactive", name=user.name or USER_NAME)
        token = next(iter(user.refresh_tokens.values()), None)
        if token is None:
            token = await hass.auth.async_create_refresh_token(user)
        return token.token


async def async_remove_user(hass: HomeAssistant) -> None:
    """The last entry is gone: the system user goes with its tokens (a display still showing a
    dashboard loses its login)."""
    users = _user_store(hass)
    async with users.lock:
        stored = await users.store.async_load() or {}
        user_id = stored.get("user_id")
        if isinstance(user_id, str) and (user := await hass.auth.async_get_user(user_id)) is not None:
            await hass.auth.async_remove_user(user)
            _LOGGER.info("removed the system user %r (%s)", user.name, user.id)
        await users.store.async_remove()


async def async_access(hass: HomeAssistant, hass_url: str | None) -> Access:
    """The address (the action's `hass_url` or Home Assistant's own), the instance id and the token."""
    url = hass_url or default_hass_url(hass)
    return Access(url, await instance_id.async_get(hass), await async_refresh_token(hass))


def keep_body(access: Access, request: ViewRequest) -> dict[str, Any]:
    """`command/keep`: the bridge keeps the view on the display (§13 of the contract)."""
    body: dict[str, Any] = {
        "app": "lovelace",
        "hass_url": access.hass_url,
        "hass_uuid": access.hass_uuid,
        "refresh_token": access.refresh_token,
        "client_id": None,
    }
    if request.view_path:
        body["view_path"] = request.view_path
    if request.dashboard_path:
        body["dashboard_path"] = request.dashboard_path
    if request.when is not None:
        body["when"] = request.when
    if request.yield_seconds is not None:
        body["yield_seconds"] = request.yield_seconds
    if request.silent is not None:
        body["silent"] = request.silent
    return body


def connect_message(access: Access) -> dict[str, Any]:
    """The receiver's `connect`: it logs in to `hassUrl` with the token."""
    return {
        "type": "connect",
        "refreshToken": access.refresh_token,
        "clientId": None,
        "hassUrl": access.hass_url,
        "hassUUID": access.hass_uuid,
    }


def show_view_message(request: ViewRequest) -> dict[str, Any]:
    """The receiver's `show_lovelace_view` (null: the default dashboard, its first view)."""
    return {"type": "show_lovelace_view", "viewPath": request.view_path or None,
            "urlPath": request.dashboard_path or None}


def _reply(result: dict[str, Any]) -> dict[str, Any] | None:
    """The receiver's message in a `send` response with `reply` (a JSON object, maybe as text)."""
    data = result.get("data")
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except ValueError:
            return None
    return data if isinstance(data, dict) else None


def _connected(device: str, status: dict[str, Any] | None, hass_url: str) -> bool:
    """Whether the receiver says it is logged in to `hass_url`; its error is raised."""
    if status is None:
        return False
    if status.get("type") == "receiver_error":
        raise error(
            "lovelace_receiver_error", device=device,
            code=str(status.get("error_code", "?"))[:32], message=str(status.get("error_message", ""))[:512],
        )
    if status.get("type") != "receiver_status" or status.get("connected") is not True:
        return False
    url = status.get("hassUrl")
    return not isinstance(url, str) or url.rstrip("/") == hass_url.rstrip("/")


async def async_show(hass: HomeAssistant, command: Command, device: str, request: ViewRequest) -> None:
    """Keep the view on the display (`command/keep`), or cast it once the way Home Assistant's
    cast integration does: launch the receiver, `connect`, wait until it is logged in, then
    `show_lovelace_view`."""
    if not request.keep:
        unused = [name for name, value in (("when", request.when), ("yield_seconds", request.yield_seconds),
                                           ("silent", request.silent)) if value is not None]
        if unused:
            raise service_error("keep_fields_without_keep", fields=", ".join(unused))
    access = await async_access(hass, request.hass_url)
    if request.keep:
        try:
            await command("keep", keep_body(access, request))
        except InvalidCommandError as err:
            if err.code == "unknown_command":
                raise service_error("keep_not_supported", device=device) from err
            raise
        return
    status = _reply(await command("send", {
        "namespace": LOVELACE_NAMESPACE, "app_id": LOVELACE_APP_ID, "data": connect_message(access), "reply": True,
    }))
    polls = 0
    while not _connected(device, status, access.hass_url):
        if polls == CONNECT_POLLS:
            raise error("lovelace_not_connected", device=device, hass_url=access.hass_url)
        polls += 1
        await asyncio.sleep(CONNECT_POLL_SECONDS)
        status = _reply(await command("send", {
            "namespace": LOVELACE_NAMESPACE, "data": {"type": "get_status"}, "reply": True,
        }))
    await command("send", {"namespace": LOVELACE_NAMESPACE, "data": show_view_message(request), "reply": False})
