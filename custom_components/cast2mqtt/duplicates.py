"""One device, no duplicate controls.

The bridge's MQTT discovery gives every Cast device a set of entities (mqtt-api.md §7) that Home
Assistant users without this integration need: a volume slider, a mute switch, play/pause/stop
buttons, media sensors. With the integration's media player on the same device they only repeat
what the media player shows and does. While the entry's option `hide_duplicates` is on (the
default), the integration disables those entities in the entity registry with
`disabled_by=integration`, the way integrations disable entities by default: the entities stay
registered (history, entity ids), the user can enable any of them again, and the integration never
disables an entity a second time once the user enabled it. Entities that add something the media
player lacks (playback rate and track selects, the last-command event) stay enabled.

Each entity the integration disabled carries a mark in its registry options (under this domain,
with the entry's id): that mark tells "disabled by us" from "disabled by the user or another
integration", and "enabled by the user after we disabled it" from "never handled". Turning the
option off, disabling a device's media player, or removing the entry enables again what the
integration disabled and drops the marks. When the bridge forgets a device, the entities the
integration disabled are removed from the registry (Home Assistant's MQTT integration removes only
the enabled ones, through their entity objects).
"""

from __future__ import annotations

from collections.abc import Iterable
import logging
from typing import Final

from homeassistant.config_entries import ConfigEntry
from homeassistant.core import CALLBACK_TYPE, Event, HomeAssistant, callback
from homeassistant.helpers import entity_registry as er
from homeassistant.util.hass_dict import HassKey

from .bridge import Bridge
from .const import DOMAIN, unique_id

_LOGGER = logging.getLogger(__name__)

OPTION_HIDE_DUPLICATES: Final = "hide_duplicates"
DEFAULT_HIDE_DUPLICATES: Final = True

# The duplicate handling of each loaded entry, by entry id (for the options flow).
DATA_CONTROLS: HassKey[dict[str, DuplicateControls]] = HassKey(f"{DOMAIN}_duplicate_controls")

# The registry options key under DOMAIN that marks an entity this integration disabled.
MARK: Final = "duplicate_of_media_player"
# ... and, beside it, that the user enabled the entity again after that.
ENABLED_BY_USER: Final = "enabled_by_user"

# The bridge's per-device discovery entities (object -> platform) that the media player repeats:
# its state, media title/artist/album, duration, position and artwork (entity picture), the app
# (app_name), volume and mute, play/pause/stop/next/previous, and loading a URL (play_media).
DUPLICATE_OBJECTS: Final[dict[str, str]] = {
    "state": "sensor",
    "media_title": "sensor",
    "media_artist": "sensor",
    "media_album": "sensor",
    "media_duration": "sensor",
    "media_position": "sensor",
    "artwork": "image",
    "app": "sensor",
    "volume": "number",
    "mute": "switch",
    "play": "button",
    "pause": "button",
    "stop": "button",
    "next": "button",
    "previous": "button",
    "load_url": "text",
}
# Kept: `playback_rate` (a select; the media player has only an action for it), `subtitles` and
# `audio_language` (selects the media player has no counterpart of), `last_command` (an event
# with every command's outcome, a diagnostic the media player does not show).
KEPT_OBJECTS: Final = frozenset({"playback_rate", "subtitles", "audio_language", "last_command"})


def mqtt_unique_id(device_id: str, obj: str) -> str:
    """The unique id the bridge gives a device's discovery entity (`<node>_<object>`)."""
    return f"cast2mqtt_{device_id}_{obj}"


def hide_duplicates(entry: ConfigEntry) -> bool:
    """The entry's option (on unless the user turned it off)."""
    value = entry.options.get(OPTION_HIDE_DUPLICATES, DEFAULT_HIDE_DUPLICATES)
    return value if isinstance(value, bool) else DEFAULT_HIDE_DUPLICATES


def _enabled_by_user(registry_entry: er.RegistryEntry) -> bool:
    """Whether the user enabled the entity after this integration disabled it."""
    options = registry_entry.options.get(DOMAIN)
    return options is not None and options.get(ENABLED_BY_USER) is True


def _mark_of(registry_entry: er.RegistryEntry) -> str | None:
    """The entry id in the mark, if this integration disabled the entity."""
    options = registry_entry.options.get(DOMAIN)
    if not options:
        return None
    mark = options.get(MARK)
    return mark if isinstance(mark, str) else None


class DuplicateControls:
    """Keeps one entry's devices free of duplicate controls (see the module's docstring)."""

    def __init__(self, hass: HomeAssistant, entry: ConfigEntry, bridge: Bridge) -> None:
        self.hass = hass
        self.entry = entry
        self.bridge = bridge
        self._unsubscribe: CALLBACK_TYPE | None = None

    @property
    def base(self) -> str:
        return self.bridge.base

    def _device_ids(self) -> list[str]:
        """The Cast devices of the entry's bridge (each has a media player)."""
        return list(self.bridge.devices)

    @property
    def registry(self) -> er.EntityRegistry:
        return er.async_get(self.hass)

    def _wanted(self, device_id: str) -> bool:
        """Whether the device's duplicates should be disabled: the option is on and the device's
        media player is registered and enabled (without it nothing else controls the device)."""
        if not hide_duplicates(self.entry):
            return False
        player = self.registry.async_get_entity_id("media_player", DOMAIN, unique_id(self.base, device_id))
        if player is None:
            return False
        player_entry = self.registry.async_get(player)
        return player_entry is not None and not player_entry.disabled

    @callback
    def async_apply(self, device_ids: Iterable[str] | None = None) -> None:
        """Brings the duplicates of `device_ids` (default: every device of the bridge) in line
        with the option."""
        for device_id in self._device_ids() if device_ids is None else list(device_ids):
            wanted = self._wanted(device_id)
            for obj, platform in DUPLICATE_OBJECTS.items():
                entity_id = self.registry.async_get_entity_id(platform, "mqtt", mqtt_unique_id(device_id, obj))
                if entity_id is not None:
                    self._apply_one(entity_id, wanted)

    @callback
    def _apply_one(self, entity_id: str, wanted: bool, registered: bool = False) -> None:
        """`registered`: the entity was just registered (new, or given back by Home Assistant
        with the options it had when it was removed)."""
        registry_entry = self.registry.async_get(entity_id)
        if registry_entry is None:
            return
        mark = _mark_of(registry_entry)
        if wanted:
            # Disabled once only: a marked entity the user enabled again stays enabled, and one
            # the user (or anything else) disabled is not ours to mark. Home Assistant 2025 and
            # later give a removed entity its options back when it is registered again (a device
            # the bridge forgot and found again): enabled, with the mark, but never enabled by
            # the user, it is a duplicate to hide again.
            if mark is not None:
                given_back = (registered and mark == self.entry.entry_id and registry_entry.disabled_by is None
                              and not _enabled_by_user(registry_entry))
                if not given_back:
                    return
            elif registry_entry.disabled_by is not None:
                return
            self.registry.async_update_entity(entity_id, disabled_by=er.RegistryEntryDisabler.INTEGRATION)
            self.registry.async_update_entity_options(entity_id, DOMAIN, {MARK: self.entry.entry_id})
            _LOGGER.info("%s disabled: the cast2mqtt media player of its device does the same", entity_id)
        elif mark == self.entry.entry_id:
            _restore(self.registry, registry_entry)

    @callback
    def async_forget(self, device_id: str) -> None:
        """The bridge forgot the device and cleared its discovery config. Home Assistant's MQTT
        integration removes the registry entries of the device's entities through the entity
        objects, and a disabled entity has none: the ones this entry disabled are removed here,
        or they would stay in the registry for good."""
        for obj, platform in DUPLICATE_OBJECTS.items():
            entity_id = self.registry.async_get_entity_id(platform, "mqtt", mqtt_unique_id(device_id, obj))
            registry_entry = self.registry.async_get(entity_id) if entity_id else None
            if (registry_entry is not None and _mark_of(registry_entry) == self.entry.entry_id
                    and registry_entry.disabled_by is er.RegistryEntryDisabler.INTEGRATION):
                # Without the mark: Home Assistant keeps a removed entity's options and gives them
                # back when the entity is registered again (2025 and later), and a device the
                # bridge finds again is a new device here, whose duplicates are hidden anew.
                self.registry.async_update_entity_options(registry_entry.entity_id, DOMAIN, None)
                self.registry.async_remove(registry_entry.entity_id)
                _LOGGER.info("%s removed: the bridge forgot its device", registry_entry.entity_id)

    @callback
    def async_start(self) -> CALLBACK_TYPE:
        """Applies the option now and to every entity registered or changed later; returns the
        function that stops it."""

        @callback
        def registry_changed(event: Event[er.EventEntityRegistryUpdatedData]) -> None:
            # Later, not inside the registry's own call: an entity being added is only removed
            # from the state machine by a registry change once it is in there.
            self.hass.loop.call_soon(self._registry_changed, event.data["action"], event.data["entity_id"])

        self._unsubscribe = self.hass.bus.async_listen(er.EVENT_ENTITY_REGISTRY_UPDATED, registry_changed)
        self.async_apply()
        return self.async_stop

    @callback
    def async_stop(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    @callback
    def _registry_changed(self, action: str, entity_id: str) -> None:
        if self._unsubscribe is None or action == "remove":
            return
        registry_entry = self.registry.async_get(entity_id)
        if registry_entry is None or registry_entry.platform not in (DOMAIN, "mqtt"):
            return  # every registry change of Home Assistant comes here: most end at this line
        device_ids = self._device_ids()
        if registry_entry.platform == DOMAIN and registry_entry.domain == "media_player":
            # A media player registered, enabled or disabled: its device's duplicates follow.
            for device_id in device_ids:
                if registry_entry.unique_id == unique_id(self.base, device_id):
                    self.async_apply([device_id])
            return
        if registry_entry.platform != "mqtt":
            return
        if action == "update":
            # The user enabled an entity this entry disabled: remembered beside the mark.
            if (_mark_of(registry_entry) == self.entry.entry_id and registry_entry.disabled_by is None
                    and not _enabled_by_user(registry_entry)):
                self.registry.async_update_entity_options(
                    entity_id, DOMAIN, {MARK: self.entry.entry_id, ENABLED_BY_USER: True})
            return
        if action != "create":
            return
        for device_id in device_ids:
            for obj, platform in DUPLICATE_OBJECTS.items():
                if registry_entry.domain == platform and registry_entry.unique_id == mqtt_unique_id(device_id, obj):
                    self._apply_one(entity_id, self._wanted(device_id), registered=True)
                    return


@callback
def _restore(registry: er.EntityRegistry, registry_entry: er.RegistryEntry) -> None:
    """Enables again an entity this integration disabled (unless someone else disabled it since)
    and drops the mark."""
    entity_id = registry_entry.entity_id
    registry.async_update_entity_options(entity_id, DOMAIN, None)
    if registry_entry.disabled_by is er.RegistryEntryDisabler.INTEGRATION:
        registry.async_update_entity(entity_id, disabled_by=None)
        _LOGGER.info("%s enabled again (cast2mqtt no longer hides duplicate controls)", entity_id)


@callback
def async_restore_all(hass: HomeAssistant, entry_id: str) -> int:
    """Undoes everything the entry disabled (the entry is being removed); returns how many."""
    registry = er.async_get(hass)
    marked = [e for e in list(registry.entities.values()) if e.platform == "mqtt" and _mark_of(e) == entry_id]
    for registry_entry in marked:
        _restore(registry, registry_entry)
    return len(marked)


@callback
def async_setup(hass: HomeAssistant, entry: ConfigEntry, bridge: Bridge) -> None:
    """Starts duplicate handling for a loaded entry: now, when the bridge lists devices, and
    when the options flow changes the option; all of it ends when the entry unloads."""
    controls = DuplicateControls(hass, entry, bridge)
    entry.async_on_unload(controls.async_start())

    @callback
    def devices_changed(added: list[str], removed: list[str]) -> None:
        if added:
            controls.async_apply(added)
        for device_id in removed:
            controls.async_forget(device_id)

    entry.async_on_unload(bridge.async_listen_devices(devices_changed))
    # The options flow applies a changed option through async_apply_option (no update listener:
    # Home Assistant 2026.12 refuses the reconfigure flow's reload of an entry that has one).
    loaded = hass.data.setdefault(DATA_CONTROLS, {})
    loaded[entry.entry_id] = controls

    @callback
    def forget() -> None:
        if loaded.get(entry.entry_id) is controls:
            del loaded[entry.entry_id]

    entry.async_on_unload(forget)


@callback
def async_apply_option(hass: HomeAssistant, entry_id: str) -> None:
    """The entry's option changed: a loaded entry brings its devices in line at once (an
    unloaded one does when it loads)."""
    controls = hass.data.get(DATA_CONTROLS, {}).get(entry_id)
    if controls is not None:
        controls.async_apply()
