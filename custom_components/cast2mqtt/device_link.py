"""One Home Assistant device per Cast device: the media player joins the device of the bridge's
MQTT discovery.

Home Assistant before 2026.8 let a device belong to several config entries: the media player gave
the MQTT device's identifier in its device info, and Home Assistant added this entry to that same
device. Since 2026.8 a device belongs to exactly one config entry, and a device info finds only the
calling entry's devices: the same device info made a second device, so every Cast device was
listed twice (Home Assistant's migration also split the shared devices of earlier releases into
one per entry).

So, on a registry of one owner per device (`ONE_OWNER`), the media player does what Home
Assistant's helper integrations do with their source device: it sets `device_entry` to the device
the MQTT integration made from the bridge's discovery config, and has no device info. The device
stays the MQTT integration's; its page shows the bridge's entities and the media player. Only
while there is no such device (the bridge runs with `homeassistant.enabled: false`, or its config
has not been processed yet) does the player get a device of this entry, with the same identifier;
as soon as the MQTT device exists the player moves to it and that device goes (`async_relink`).
The same move is the upgrade from the layout of earlier releases: the entry's split device goes,
and the media player keeps its entity id, and the area and the name it showed.
"""

from __future__ import annotations

from collections.abc import Callable
import logging
from typing import Any, Final

from homeassistant.config_entries import ConfigEntry
from homeassistant.core import CALLBACK_TYPE, Event, HomeAssistant, callback
from homeassistant.helpers import device_registry as dr, entity_registry as er

from .const import DOMAIN, device_id_of, device_identifier, unique_id

_LOGGER = logging.getLogger(__name__)

MQTT_DOMAIN: Final = "mqtt"

# A registry where each device has one config entry, and identifiers are unique per entry
# (Home Assistant 2026.8 and later). Its lookup by identifier takes the owning entry.
ONE_OWNER: Final = hasattr(dr.DeviceRegistry, "async_get_device_by_identifier")

def mqtt_device(hass: HomeAssistant, device_id: str) -> dr.DeviceEntry | None:
    """The device the MQTT integration made for a Cast device from the bridge's discovery
    config, if it exists (on a registry of one owner per device)."""
    registry = dr.async_get(hass)
    identifier = device_identifier(device_id)
    for mqtt_entry in hass.config_entries.async_entries(MQTT_DOMAIN):
        device = registry.async_get_device_by_identifier(identifier, mqtt_entry.entry_id)
        if device is not None:
            return device
    return None


def own_device(hass: HomeAssistant, entry_id: str, device_id: str) -> dr.DeviceEntry | None:
    """This entry's own device of a Cast device (one owner per device): the one a player made
    while no MQTT device existed, or the entry's half of a device Home Assistant split."""
    return dr.async_get(hass).async_get_device_by_identifier(device_identifier(device_id), entry_id)


def cast_device_id(device: dr.DeviceEntry) -> str | None:
    """The Cast device id in a device's identifiers, if it is one of the bridge's devices."""
    for identifier in device.identifiers:
        if (device_id := device_id_of(identifier)) is not None:
            return device_id
    return None


@callback
def async_relink(hass: HomeAssistant, entry: ConfigEntry, base: str, device_id: str) -> dr.DeviceEntry | None:
    """Moves the device's media player from this entry's own device to the MQTT device and
    removes the entry's device; returns the MQTT device, None while there is none. What the
    player showed through its old device stays: the area (as the entity's own, when the two
    devices' areas differ) and a name the user gave the device (as the entity's name)."""
    target = mqtt_device(hass, device_id)
    if target is None:
        return None
    entities = er.async_get(hass)
    devices = dr.async_get(hass)
    old = own_device(hass, entry.entry_id, device_id)
    entity_id = entities.async_get_entity_id("media_player", DOMAIN, unique_id(base, device_id))
    if entity_id is not None:
        registry_entry = entities.async_get(entity_id)
        if registry_entry is not None and registry_entry.device_id != target.id:
            changes: dict[str, Any] = {"device_id": target.id}
            source = devices.async_get(registry_entry.device_id) if registry_entry.device_id else old
            if source is not None and source.id != target.id:
                if registry_entry.area_id is None and source.area_id and source.area_id != target.area_id:
                    changes["area_id"] = source.area_id
                shown = source.name_by_user or source.name
                if registry_entry.name is None and source.name_by_user and shown != (target.name_by_user or target.name):
                    changes["name"] = source.name_by_user
            entities.async_update_entity(entity_id, **changes)
            _LOGGER.info("%s joined the device of the bridge's MQTT discovery", entity_id)
    if old is not None and old.id != target.id:
        left = er.async_entries_for_device(entities, old.id, include_disabled_entities=True)
        if not left:
            devices.async_remove_device(old.id)
            _LOGGER.info("removed this entry's second device of %s: the MQTT device has the media player", device_id)
    return target


@callback
def async_relink_all(hass: HomeAssistant, entry: ConfigEntry, base: str) -> None:
    """Every device of this entry that has an MQTT twin: its player moves there and it goes
    (the upgrade from the two devices of each Cast device that earlier releases left)."""
    for device in dr.async_entries_for_config_entry(dr.async_get(hass), entry.entry_id):
        device_id = cast_device_id(device)
        if device_id is not None:
            async_relink(hass, entry, base, device_id)


@callback
def async_track_mqtt_devices(
    hass: HomeAssistant, entry: ConfigEntry, base: str, wanted: Callable[[str], bool]
) -> CALLBACK_TYPE:
    """Moves a player to its MQTT device as soon as the MQTT integration registers one for a Cast
    device that `wanted` says has a player of this entry; returns the function that stops it."""

    @callback
    def device_changed(event: Event[dr.EventDeviceRegistryUpdatedData]) -> None:
        if event.data["action"] != "create":
            return
        device = dr.async_get(hass).async_get(event.data["device_id"])
        if not isinstance(device, dr.DeviceEntry) or device.config_entry_id == entry.entry_id:
            return
        device_id = cast_device_id(device)
        if device_id is not None and wanted(device_id):
            async_relink(hass, entry, base, device_id)

    return hass.bus.async_listen(dr.EVENT_DEVICE_REGISTRY_UPDATED, device_changed)
