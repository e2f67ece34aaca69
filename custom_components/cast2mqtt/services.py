"""The integration's actions, registered once in `async_setup` (so they exist, and say why they
cannot run, while no entry is loaded). Each targets cast2mqtt media players like an entity
service: `entity_id`, `device_id`, `area_id` or `label_id`.

Where Home Assistant has `service.async_register_platform_entity_service` (newer releases), the
actions are registered with it: Home Assistant resolves the targets among this integration's
media players itself (the way that replaces `async_extract_referenced_entity_ids`, which it
deprecates). Older releases (2024.11.3 to 2025.4.4, the ones tested) do not have it: there the
targets are resolved here, with the translated `no_target` / `target_unavailable` errors, and the
call runs through `service.entity_service_call` (permissions, one request per entity).

`show_lovelace_view` hands a Home Assistant login to a display, so only an administrator may call
it (as the cast integration's action of the same name): Home Assistant checks that itself where
the platform registration takes `admin_only`, the handler here everywhere else."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
import inspect
import re
from typing import TYPE_CHECKING, Any, cast

from homeassistant.components.media_player.const import DOMAIN as MEDIA_PLAYER_DOMAIN
from homeassistant.const import ATTR_ENTITY_ID, ENTITY_MATCH_ALL
from homeassistant.core import HassJob, HomeAssistant, ServiceCall, ServiceResponse, SupportsResponse, callback
from homeassistant.exceptions import Unauthorized, UnknownUser
from homeassistant.helpers import config_validation as cv, service
from homeassistant.helpers.entity import Entity

from .const import (
    APP_ID_RE,
    ATTR_APP_ID,
    ATTR_DASHBOARD_PATH,
    ATTR_DATA,
    ATTR_HASS_URL,
    ATTR_KEEP,
    ATTR_KEEP_SOURCE,
    ATTR_NAMESPACE,
    ATTR_RATE,
    ATTR_REPLY,
    ATTR_SILENT,
    ATTR_TIMEOUT,
    ATTR_TO,
    ATTR_VIEW_PATH,
    ATTR_WHEN,
    ATTR_YIELD_SECONDS,
    DOMAIN,
    SERVICE_LAUNCH,
    SERVICE_SEND_MESSAGE,
    SERVICE_SET_PLAYBACK_RATE,
    SERVICE_SHOW_LOVELACE_VIEW,
    SERVICE_TRANSFER,
    players,
)
from .errors import service_error
from .lovelace import ViewRequest
from .schema import vol

if TYPE_CHECKING:
    from .media_player import Cast2MqttMediaPlayer

_NAMESPACE_PREFIX = "urn:x-cast:"


def _app_id(value: Any) -> str:
    text: str = cv.string(value)
    if not APP_ID_RE.match(text):
        raise vol.Invalid("an app id is 1-64 letters, digits, '_', '-' or '.'")
    return text


def _namespace(value: Any) -> str:
    text: str = cv.string(value)
    if not text.startswith(_NAMESPACE_PREFIX) or len(text) <= len(_NAMESPACE_PREFIX) or len(text) > 256:
        raise vol.Invalid("a namespace starts with urn:x-cast: (e.g. urn:x-cast:com.example.app)")
    return text


_CLOCK_TIME = re.compile(r"^([01]?[0-9]|2[0-3]):([0-5][0-9])(?::[0-5][0-9])?$")


def _clock_time(value: Any) -> str:
    """`HH:MM` (a time selector's `HH:MM:SS` loses its seconds)."""
    match = _CLOCK_TIME.match(cv.string(value).strip())
    if match is None:
        raise vol.Invalid("a time of day is HH:MM, e.g. 07:30")
    return f"{int(match.group(1)):02d}:{match.group(2)}"


def _when(value: Any) -> str | dict[str, str]:
    """`always`, or a daily window `{"from": "HH:MM", "to": "HH:MM"}` (the bridge's local time;
    `from` after `to` wraps past midnight)."""
    if value == "always":
        return "always"
    if isinstance(value, dict) and set(value) == {"from", "to"}:
        return {"from": _clock_time(value["from"]), "to": _clock_time(value["to"])}
    raise vol.Invalid('when is "always" or {"from": "HH:MM", "to": "HH:MM"}')


async def _async_require_admin(hass: HomeAssistant, call: ServiceCall) -> None:
    """Refuse a call of a user who is not an administrator (calls of Home Assistant itself, an
    automation say, carry no user)."""
    if not call.context.user_id:
        return
    user = await hass.auth.async_get_user(call.context.user_id)
    if user is None:
        raise UnknownUser(context=call.context)
    if not user.is_admin:
        raise Unauthorized(context=call.context)


type Run = Callable[["Cast2MqttMediaPlayer", ServiceCall], Awaitable[ServiceResponse]]


def _targets(hass: HomeAssistant, call: ServiceCall) -> list[Cast2MqttMediaPlayer]:
    """The loaded cast2mqtt media players the call targets; unavailable ones are skipped as Home
    Assistant skips them for its own entity services, but a call that reaches none fails."""
    loaded = players(hass)
    if call.data.get(ATTR_ENTITY_ID) == ENTITY_MATCH_ALL:
        wanted = set(loaded)
    else:
        # Only releases without the platform entity services come here (see the module's
        # docstring); newer releases no longer have this helper in `service`.
        extract = getattr(service, "async_extract_referenced_entity_ids")  # noqa: B009
        selected = extract(hass, call)
        wanted = selected.referenced | selected.indirectly_referenced
    found = [loaded[entity_id] for entity_id in sorted(wanted) if entity_id in loaded]
    if not found:
        raise service_error("no_target", service=call.service)
    available = [player for player in found if player.available]
    if not available:
        raise service_error("target_unavailable", entities=", ".join(p.entity_id for p in found))
    return available


def _register(
    hass: HomeAssistant,
    name: str,
    fields: dict[Any, Any],
    run: Run,
    supports_response: SupportsResponse = SupportsResponse.NONE,
    *,
    admin_only: bool = False,
) -> None:
    register_platform_service = getattr(service, "async_register_platform_entity_service", None)
    options: dict[str, Any] = {}
    if admin_only and register_platform_service is not None:
        if "admin_only" in inspect.signature(register_platform_service).parameters:
            options["admin_only"] = True
    # A platform registration without `admin_only`: the entity function checks (the handler below
    # does on releases without platform registrations).
    check_admin = admin_only and register_platform_service is not None and not options

    async def run_entity(entity: Entity, call: ServiceCall) -> ServiceResponse:
        if check_admin:
            await _async_require_admin(hass, call)
        # Only this integration's media players are ever handed over (both ways below).
        return await run(cast("Cast2MqttMediaPlayer", entity), call)

    if register_platform_service is not None:
        register_platform_service(
            hass, DOMAIN, name, entity_domain=MEDIA_PLAYER_DOMAIN, func=run_entity,
            schema=fields, supports_response=supports_response, **options,
        )
        return

    job = HassJob(run_entity, f"{DOMAIN}.{name}")

    async def handle(call: ServiceCall) -> ServiceResponse:
        if admin_only:
            await _async_require_admin(hass, call)
        targets = {player.entity_id: player for player in _targets(hass, call)}
        response = await service.entity_service_call(hass, dict[str, Entity](targets), job, call)
        if not call.return_response:
            return None
        return dict(response or {})

    hass.services.async_register(
        DOMAIN, name, handle, schema=cv.make_entity_service_schema(fields), supports_response=supports_response
    )


@callback
def async_setup_services(hass: HomeAssistant) -> None:
    """Register transfer, set_playback_rate, launch, send_message and show_lovelace_view."""
    _register(
        hass,
        SERVICE_TRANSFER,
        {
            # A cast2mqtt media player (the UI offers an entity selector), or for scripts a
            # device's topic name, friendly name or id.
            vol.Required(ATTR_TO): cv.string,
            vol.Optional(ATTR_KEEP_SOURCE, default=False): cv.boolean,
        },
        lambda player, call: player.async_transfer(call.data[ATTR_TO], call.data[ATTR_KEEP_SOURCE]),
        SupportsResponse.OPTIONAL,
    )
    _register(
        hass,
        SERVICE_SET_PLAYBACK_RATE,
        {vol.Required(ATTR_RATE): vol.All(vol.Coerce(float), vol.Range(min=0.5, max=2.0))},
        lambda player, call: player.async_set_playback_rate(call.data[ATTR_RATE]),
    )
    _register(
        hass,
        SERVICE_LAUNCH,
        {vol.Required(ATTR_APP_ID): _app_id},
        lambda player, call: player.async_launch(call.data[ATTR_APP_ID]),
    )
    _register(
        hass,
        SERVICE_SEND_MESSAGE,
        {
            vol.Required(ATTR_NAMESPACE): _namespace,
            vol.Required(ATTR_DATA): vol.Any(dict, list, str, int, float, bool),
            vol.Optional(ATTR_APP_ID): _app_id,
            vol.Optional(ATTR_REPLY): cv.boolean,
            vol.Optional(ATTR_TIMEOUT): vol.All(vol.Coerce(float), vol.Range(min=1, max=300)),
        },
        # Waits for the app's reply when the action's response is used (unless `reply` says).
        lambda player, call: player.async_send_message(
            call.data[ATTR_NAMESPACE],
            call.data[ATTR_DATA],
            app_id=call.data.get(ATTR_APP_ID),
            reply=call.data.get(ATTR_REPLY, call.return_response),
            timeout=call.data.get(ATTR_TIMEOUT),
        ),
        SupportsResponse.OPTIONAL,
    )
    _register(
        hass,
        SERVICE_SHOW_LOVELACE_VIEW,
        {
            vol.Optional(ATTR_VIEW_PATH): cv.string,
            vol.Optional(ATTR_DASHBOARD_PATH): cv.string,
            vol.Optional(ATTR_KEEP, default=False): cv.boolean,
            vol.Optional(ATTR_WHEN): _when,
            vol.Optional(ATTR_YIELD_SECONDS): vol.All(vol.Coerce(int), vol.Range(min=0, max=86400)),
            vol.Optional(ATTR_SILENT): cv.boolean,
            vol.Optional(ATTR_HASS_URL): cv.url,
        },
        _show_lovelace_view,
        admin_only=True,
    )


async def _show_lovelace_view(player: Cast2MqttMediaPlayer, call: ServiceCall) -> ServiceResponse:
    await player.async_show_lovelace_view(ViewRequest(
        view_path=call.data.get(ATTR_VIEW_PATH),
        dashboard_path=call.data.get(ATTR_DASHBOARD_PATH),
        keep=call.data[ATTR_KEEP],
        when=call.data.get(ATTR_WHEN),
        yield_seconds=call.data.get(ATTR_YIELD_SECONDS),
        silent=call.data.get(ATTR_SILENT),
        hass_url=call.data.get(ATTR_HASS_URL),
    ))
    return None
