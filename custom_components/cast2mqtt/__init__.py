"""cast2mqtt: a media player per Cast device, through the cast2mqtt bridge's MQTT contract."""

from __future__ import annotations

import logging

from homeassistant.components import mqtt
from homeassistant.config_entries import ConfigEntry
from homeassistant.const import Platform
from homeassistant.core import HomeAssistant, callback
from homeassistant.exceptions import ConfigEntryNotReady, HomeAssistantError
from homeassistant.helpers import config_validation as cv, device_registry as dr, entity_registry as er
from homeassistant.helpers.typing import ConfigType

from .bridge import Bridge
from .const import (
    CONF_BASE_TOPIC,
    DEFAULT_BASE_TOPIC,
    DOMAIN,
    ENTRY_MINOR_VERSION,
    ENTRY_VERSION,
    device_identifier,
    legacy_unique_id,
    unique_id,
)
from .device_link import ONE_OWNER, async_relink_all
from .duplicates import async_restore_all, async_setup as async_setup_duplicates
from .lovelace import async_remove_user
from .services import async_setup_services

_LOGGER = logging.getLogger(__name__)

PLATFORMS: list[Platform] = [Platform.MEDIA_PLAYER]
CONFIG_SCHEMA = cv.config_entry_only_config_schema(DOMAIN)

type Cast2MqttConfigEntry = ConfigEntry[Bridge]


async def async_setup(hass: HomeAssistant, config: ConfigType) -> bool:
    """Register the integration's actions once, whether or not an entry loads."""
    async_setup_services(hass)
    return True


async def async_setup_entry(hass: HomeAssistant, entry: Cast2MqttConfigEntry) -> bool:
    """Subscribe to the bridge's topics and set up the media players."""
    if not await mqtt.async_wait_for_mqtt_client(hass):
        raise ConfigEntryNotReady(translation_domain=DOMAIN, translation_key="mqtt_unavailable")
    bridge = Bridge(hass, entry.data.get(CONF_BASE_TOPIC, DEFAULT_BASE_TOPIC))
    try:
        await bridge.async_start()
    except HomeAssistantError as err:
        bridge.async_stop()
        raise ConfigEntryNotReady(
            translation_domain=DOMAIN,
            translation_key="subscribe_failed",
            translation_placeholders={"base_topic": bridge.base, "error": str(err)},
        ) from err
    entry.runtime_data = bridge
    entry.async_on_unload(bridge.async_stop)
    if ONE_OWNER:
        # Upgrading from two devices per Cast device: the players move to the MQTT devices.
        async_relink_all(hass, entry, bridge.base)
    async_setup_duplicates(hass, entry, bridge)  # hides the MQTT controls the media player repeats
    # Retained messages arrive through the event loop; the platform adds a player for every
    # device known when it starts and for each one listed later.
    await hass.config_entries.async_forward_entry_setups(entry, PLATFORMS)
    return True


async def async_unload_entry(hass: HomeAssistant, entry: Cast2MqttConfigEntry) -> bool:
    """Unload the media players; the bridge unsubscribes through async_on_unload. An entry the
    user disabled gives back the MQTT controls it hid (its media players are disabled with it);
    enabling it again hides them again."""
    unloaded = await hass.config_entries.async_unload_platforms(entry, PLATFORMS)
    if entry.disabled_by is not None:
        restored = async_restore_all(hass, entry.entry_id)
        _LOGGER.debug("entry %s disabled: %s MQTT controls enabled again", entry.title, restored)
    return unloaded


async def async_remove_entry(hass: HomeAssistant, entry: ConfigEntry) -> None:
    """The entry is gone: the MQTT controls it disabled as duplicates are enabled again. With the
    last entry the system user that displays log in as goes too (lovelace.py)."""
    async_restore_all(hass, entry.entry_id)
    if not any(other.entry_id != entry.entry_id for other in hass.config_entries.async_entries(DOMAIN)):
        await async_remove_user(hass)


async def async_migrate_entry(hass: HomeAssistant, entry: ConfigEntry) -> bool:
    """1.1 -> 1.2: the media players' unique ids get the base topic. The registry entries are
    renamed in place, so entity ids, names, areas and history stay what the user had."""
    if entry.version > ENTRY_VERSION:
        return False  # a downgrade: this version does not know the newer format
    if entry.version == 1 and entry.minor_version < 2:
        base = entry.data.get(CONF_BASE_TOPIC, DEFAULT_BASE_TOPIC)

        @callback
        def rename(registry_entry: er.RegistryEntry) -> dict[str, str] | None:
            old = registry_entry.unique_id
            if registry_entry.domain != "media_player" or not old.startswith("cast2mqtt_"):
                return None
            if not old.endswith("_media_player"):
                return None
            device_id = old.removeprefix("cast2mqtt_").removesuffix("_media_player")
            if old != legacy_unique_id(device_id):
                return None
            return {"new_unique_id": unique_id(base, device_id)}

        await er.async_migrate_entries(hass, entry.entry_id, rename)
        hass.config_entries.async_update_entry(entry, version=1, minor_version=ENTRY_MINOR_VERSION)
        _LOGGER.debug("migrated %s to 1.%s", entry.title, ENTRY_MINOR_VERSION)
    return True


async def async_remove_config_entry_device(
    hass: HomeAssistant, entry: Cast2MqttConfigEntry, device: dr.DeviceEntry
) -> bool:
    """Let the user delete a device that the bridge no longer lists (e.g. one it forgot while
    Home Assistant was not running); a listed device would only come back."""
    bridge = entry.runtime_data
    return not any(device_identifier(device_id) in device.identifiers for device_id in bridge.listed)
