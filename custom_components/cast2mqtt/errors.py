"""Exceptions with translation keys (`exceptions` in strings.json), so Home Assistant shows them
in the user's language; the English text keeps the bridge's error code and message."""

from __future__ import annotations

from homeassistant.exceptions import HomeAssistantError, ServiceValidationError

from .const import DOMAIN

# Error codes that say "this action does not fit", not "something broke".
VALIDATION_CODES = frozenset({
    "invalid_payload", "unknown_command", "unknown_device", "not_supported", "no_app",
    "no_media_session", "namespace_not_allowed", "payload_too_large", "invalid_player_state",
    "device_offline",
})


class CommandError(HomeAssistantError):
    """A command failed: the bridge answered with an error, or no answer came."""

    def __init__(self, key: str, *, device: str, command: str, code: str, message: str = "",
                 **placeholders: str) -> None:
        super().__init__(
            translation_domain=DOMAIN,
            translation_key=key,
            translation_placeholders={
                "device": device, "command": command, "code": code, "message": message, **placeholders
            },
        )
        self.device = device
        self.command = command
        self.code = code
        self.bridge_message = message


class InvalidCommandError(CommandError, ServiceValidationError):
    """The bridge refused a command that cannot work in the device's current state or at all
    (Home Assistant shows it as a validation error, without a traceback in its log)."""


def command_error(device: str, command: str, code: str, message: str) -> CommandError:
    """The exception for a bridge error response."""
    kind = InvalidCommandError if code in VALIDATION_CODES else CommandError
    return kind("command_failed", device=device, command=command, code=code, message=message)


def service_error(key: str, **placeholders: str) -> ServiceValidationError:
    """A translated validation error of one of the integration's own checks."""
    return ServiceValidationError(
        translation_domain=DOMAIN, translation_key=key, translation_placeholders=placeholders or None
    )


def error(key: str, **placeholders: str) -> HomeAssistantError:
    """A translated error that is not the user's fault."""
    return HomeAssistantError(
        translation_domain=DOMAIN, translation_key=key, translation_placeholders=placeholders or None
    )
