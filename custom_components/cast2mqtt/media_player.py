"""A media player per Cast device known to the bridge.

The entity is put together here from its parts: player_state.py (what it shows, read from the
device's topics) and player_commands.py (what it does, as commands to the bridge).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from homeassistant.components.media_player import MediaPlayerDeviceClass
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers import device_registry as dr, entity_registry as er
from homeassistant.helpers.device_registry import DeviceInfo

from .bridge import Bridge
from .const import DOMAIN, device_identifier, players, unique_id
from .device_link import ONE_OWNER, async_relink, async_track_mqtt_devices, mqtt_device, own_device
from .player_commands import PlayerCommands
from .player_state import CAST_MEDIA_TYPE

if TYPE_CHECKING:
    # Home Assistant 2025.2 and later; only a type, so older releases never import it.
    from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback

    from . import Cast2MqttConfigEntry

__all__ = ["CAST_MEDIA_TYPE", "PARALLEL_UPDATES", "Cast2MqttMediaPlayer", "async_setup_entry"]

PARALLEL_UPDATES = 0

# `cast_type` of bridge/devices: a Chromecast or Android TV drives a screen; speakers and
# speaker groups play audio.
_DEVICE_CLASSES = {
    "video": MediaPlayerDeviceClass.TV,
    "audio": MediaPlayerDeviceClass.SPEAKER,
    "group": MediaPlayerDeviceClass.SPEAKER,
}


async def async_setup_entry(
    hass: HomeAssistant,
    entry: Cast2MqttConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """Add a media player for every device the bridge lists, now and later. The integration's
    actions are registered in `async_setup` (services.py)."""
    bridge = entry.runtime_data
    known: dict[str, Cast2MqttMediaPlayer] = {}

    @callback
    def devices_changed(added: list[str], removed: list[str]) -> None:
        new = []
        for device_id in added:
            if device_id not in known and device_id in bridge.devices:
                device = async_relink(hass, entry, bridge.base, device_id) if ONE_OWNER else None
                known[device_id] = Cast2MqttMediaPlayer(bridge, device_id, device)
                new.append(known[device_id])
        if new:
            async_add_entities(new)
        for device_id in removed:
            player = known.pop(device_id, None)
            entry.async_create_background_task(
                hass, _async_remove_device(hass, entry, device_id, player), f"{DOMAIN} remove {device_id}"
            )

    entry.async_on_unload(bridge.async_listen_devices(devices_changed))
    if ONE_OWNER:
        # A player that had to start on a device of its own moves to the MQTT device once the
        # MQTT integration makes it (device_link.py).
        entry.async_on_unload(async_track_mqtt_devices(hass, entry, bridge.base, lambda device_id: device_id in known))
    if bridge.devices:
        devices_changed(list(bridge.devices), [])


async def _async_remove_device(
    hass: HomeAssistant,
    entry: Cast2MqttConfigEntry,
    device_id: str,
    player: Cast2MqttMediaPlayer | None,
) -> None:
    """The bridge forgot a device: drop its media player, registry entry and device link."""
    if player is not None and player.hass is not None:
        await player.async_remove(force_remove=True)
    entities = er.async_get(hass)
    if entity_id := entities.async_get_entity_id("media_player", DOMAIN, unique_id(entry.runtime_data.base, device_id)):
        entities.async_remove(entity_id)
    devices = dr.async_get(hass)
    if ONE_OWNER:
        # A device of this entry's own goes. The MQTT device is the MQTT integration's, which
        # removes it with its entities when the bridge clears its config, but keeps it when this
        # media player was still on it then: with nothing left on it, it goes here.
        if own := own_device(hass, entry.entry_id, device_id):
            devices.async_remove_device(own.id)
        if (linked := mqtt_device(hass, device_id)) and not er.async_entries_for_device(
                entities, linked.id, include_disabled_entities=True):
            devices.async_remove_device(linked.id)
        return
    if device := devices.async_get_device(identifiers={device_identifier(device_id)}):
        if er.async_entries_for_device(entities, device.id, include_disabled_entities=True):
            # The MQTT entities are still there; the MQTT integration removes the device with them.
            devices.async_update_device(device.id, remove_config_entry_id=entry.entry_id)
        else:
            # The MQTT integration went first and kept the device because this media player was
            # still on it: nothing is left on the device, so it goes.
            devices.async_remove_device(device.id)


class Cast2MqttMediaPlayer(PlayerCommands):
    """One Cast device, driven through `<base>/<dev>/command/*`."""

    _attr_has_entity_name = True
    _attr_name = None
    _attr_should_poll = False

    def __init__(self, bridge: Bridge, device_id: str, device: dr.DeviceEntry | None = None) -> None:
        """`device`: the MQTT device of the Cast device to join (on a registry of one owner per
        device, device_link.py); without one the player describes its device itself."""
        self._bridge = bridge
        self._device_id = device_id
        record = bridge.devices[device_id]
        self._attr_unique_id = unique_id(bridge.base, device_id)
        if device is not None:
            self.device_entry = device
            return
        # The same Home Assistant device as the bridge's MQTT discovery (same identifier) before
        # 2026.8; after it, a device of this entry until the MQTT one exists. What the bridge does
        # not know is left out, since a None would clear what discovery gave.
        self._attr_device_info = DeviceInfo(identifiers={device_identifier(device_id)}, name=record.name)
        if record.model:
            self._attr_device_info["model"] = record.model

    async def async_added_to_hass(self) -> None:
        """Follow the device's topics; be found by the integration's actions."""
        self.async_on_remove(self._bridge.async_listen_device(self._device_id, self._changed))
        registry = players(self.hass)
        registry[self.entity_id] = self

        @callback
        def forget() -> None:
            registry.pop(self.entity_id, None)

        self.async_on_remove(forget)
        # A group that lists this device among its members can name its player now.
        for player in list(registry.values()):
            if player is not self and player.bridge is self._bridge and self._device_id in player.member_ids:
                player._changed()

    @property
    def device_class(self) -> MediaPlayerDeviceClass | None:
        record = self._record
        return _DEVICE_CLASSES.get(record.cast_type or "") if record else None
