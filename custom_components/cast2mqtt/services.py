"""The integration's actions, registered once in `async_setup` (so they exist, and say why they
cannot run, while no entry is loaded). Each targets cast2mqtt media players like an entity
service: `entity_id`, `device_id`, `area_id` or `label_id`.

Where Home Assistant has `service.async_register_platform_entity_service` (newer releases), the
actions are registered with it: Home Assistant resolves the targets among this integration's
media players itself (the way that replaces `async_extract_referenced_entity_ids`, which it
deprecates). Older releases (2024.11.3 to 2025.4.4, the ones tested) do not have it: there the
targets are resolved here, with the translated `no_target` / `target_unavailable` errors, and the
call runs through `service.entity_service_call` (permissions, one request per entity)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, cast

from homeassistant.components.media_player.const import DOMAIN as MEDIA_PLAYER_DOMAIN
from homeassistant.const import ATTR_ENTITY_ID, ENTITY_MATCH_ALL
from homeassistant.core import HassJob, HomeAssistant, ServiceCall, ServiceResponse, SupportsResponse, callback
from homeassistant.helpers import config_validation as cv, service
from homeassistant.helpers.entity import Entity

from .const import (
    APP_ID_RE,
    ATTR_APP_ID,
    ATTR_DATA,
    ATTR_KEEP_SOURCE,
    ATTR_NAMESPACE,
    ATTR_RATE,
    ATTR_REPLY,
    ATTR_TIMEOUT,
    ATTR_TO,
    DOMAIN,
    SERVICE_LAUNCH,
    SERVICE_SEND_MESSAGE,
    SERVICE_SET_PLAYBACK_RATE,
    SERVICE_TRANSFER,
    players,
)
from .errors import service_error
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
) -> None:
    async def run_entity(entity: Entity, call: ServiceCall) -> ServiceResponse:
        # Only this integration's media players are ever handed over (both ways below).
        return await run(cast("Cast2MqttMediaPlayer", entity), call)

    register_platform_service = getattr(service, "async_register_platform_entity_service", None)
    if register_platform_service is not None:
        register_platform_service(
            hass, DOMAIN, name, entity_domain=MEDIA_PLAYER_DOMAIN, func=run_entity,
            schema=fields, supports_response=supports_response,
        )
        return

    job = HassJob(run_entity, f"{DOMAIN}.{name}")

    async def handle(call: ServiceCall) -> ServiceResponse:
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
    """Register transfer, set_playback_rate, launch and send_message."""
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
