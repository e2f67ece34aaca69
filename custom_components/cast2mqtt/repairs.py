"""Repair issues of a bridge (Settings > System > Repairs): too old for what the integration uses,
offline for long, a clock far from Home Assistant's. None is fixable from Home Assistant (each
needs something done on the bridge's machine), so there are no fix flows; each issue is deleted
as soon as its cause is gone, and when the entry unloads."""

from __future__ import annotations

import re
from typing import Final

from homeassistant.core import HomeAssistant
from homeassistant.helpers import issue_registry as ir

from .const import DOMAIN

ISSUE_BRIDGE_TOO_OLD: Final = "bridge_too_old"
ISSUE_BRIDGE_OFFLINE: Final = "bridge_offline"
ISSUE_CLOCK_SKEW: Final = "clock_skew"
ISSUE_KINDS: Final = (ISSUE_BRIDGE_TOO_OLD, ISSUE_BRIDGE_OFFLINE, ISSUE_CLOCK_SKEW)

# A bridge offline this long (or never online since the entry loaded) gets an issue: longer than
# a restart or an upgrade of the bridge takes, short enough that a dead bridge is noticed the
# same day.
BRIDGE_OFFLINE_MINUTES: Final = 10
# A clock further off than this gets an issue. The integration corrects for it (deadlines are put
# on the bridge's clock, media positions on Home Assistant's), but everything else that reads the
# bridge's times (its own Home Assistant entities' timestamps, logs, other MQTT clients) is off.
CLOCK_SKEW_LIMIT: Final = 30.0

# What the integration uses, and the first bridge version that has it. The contract's
# `expires` (deadlines, an RFC 3339 time or seconds from now) and announce's `wait` came with 0.1.0, the
# first version that reports a version in bridge/info. A bridge that refuses one of these keys
# (an older build that reports no usable version) raises the issue too.
# The issue names the contract's keys (language-neutral); docs/home-assistant.md says what each does.
FEATURES: Final[dict[str, str]] = {
    "expires": "0.1.0",  # a command's relative deadline
    "wait": "0.1.0",  # announce answers when the clip has finished
}

_VERSION_RE: Final = re.compile(r"^v?(\d{1,6})\.(\d{1,6})\.(\d{1,6})(?![\d.])")
_ISSUE_ID_UNSAFE: Final = re.compile(r"[^a-z0-9_]")


def parse_version(text: str | None) -> tuple[int, int, int] | None:
    """`0.1.0`, `v0.2.1-14-gabc1234` (git describe), `0.1.0-dirty`; None for anything else
    (e.g. a bare commit hash: its age is unknown)."""
    if text is None or (match := _VERSION_RE.match(text.strip())) is None:
        return None
    major, minor, patch = (int(part) for part in match.groups())
    return major, minor, patch


def missing_features(version: str | None, refused: set[str]) -> list[str]:
    """The feature keys a bridge of `version` lacks, or that it refused in a command."""
    parsed = parse_version(version)
    missing = []
    for key, minimum in FEATURES.items():
        required = parse_version(minimum)
        if key in refused or (parsed is not None and required is not None and parsed < required):
            missing.append(key)
    return missing


def issue_id(kind: str, base_topic: str) -> str:
    """One issue of each kind per bridge (base topic)."""
    return f"{kind}_{_ISSUE_ID_UNSAFE.sub('_', base_topic.lower())}"


def async_update_too_old(hass: HomeAssistant, base_topic: str, version: str | None, refused: set[str]) -> None:
    """Raise or clear the bridge-too-old issue."""
    missing = missing_features(version, refused)
    if not missing:
        ir.async_delete_issue(hass, DOMAIN, issue_id(ISSUE_BRIDGE_TOO_OLD, base_topic))
        return
    minimum = max((FEATURES[key] for key in missing), key=lambda text: parse_version(text) or (0, 0, 0))
    ir.async_create_issue(
        hass, DOMAIN, issue_id(ISSUE_BRIDGE_TOO_OLD, base_topic),
        is_fixable=False, severity=ir.IssueSeverity.WARNING, translation_key=ISSUE_BRIDGE_TOO_OLD,
        translation_placeholders={
            "base_topic": base_topic, "version": version or "?", "minimum": minimum,
            "features": ", ".join(missing),
        },
    )


def async_raise_offline(hass: HomeAssistant, base_topic: str, since: str) -> None:
    ir.async_create_issue(
        hass, DOMAIN, issue_id(ISSUE_BRIDGE_OFFLINE, base_topic),
        is_fixable=False, severity=ir.IssueSeverity.WARNING, translation_key=ISSUE_BRIDGE_OFFLINE,
        translation_placeholders={"base_topic": base_topic, "minutes": str(BRIDGE_OFFLINE_MINUTES), "since": since},
    )


def async_clear_offline(hass: HomeAssistant, base_topic: str) -> None:
    ir.async_delete_issue(hass, DOMAIN, issue_id(ISSUE_BRIDGE_OFFLINE, base_topic))


def async_update_clock(hass: HomeAssistant, base_topic: str, skew: float | None) -> None:
    """Raise the clock issue with the measured skew, or clear it (also when unknown)."""
    if skew is None or abs(skew) <= CLOCK_SKEW_LIMIT:
        ir.async_delete_issue(hass, DOMAIN, issue_id(ISSUE_CLOCK_SKEW, base_topic))
        return
    ir.async_create_issue(
        hass, DOMAIN, issue_id(ISSUE_CLOCK_SKEW, base_topic),
        is_fixable=False, severity=ir.IssueSeverity.WARNING, translation_key=ISSUE_CLOCK_SKEW,
        translation_placeholders={
            "base_topic": base_topic,
            # Signed: positive when the bridge's clock is ahead of Home Assistant's.
            "seconds": f"{skew:+.0f}",
            "limit": f"{CLOCK_SKEW_LIMIT:.0f}",
        },
    )


def async_clear_all(hass: HomeAssistant, base_topic: str) -> None:
    """The entry unloads: its issues go (they come back when it loads and the cause remains)."""
    for kind in ISSUE_KINDS:
        ir.async_delete_issue(hass, DOMAIN, issue_id(kind, base_topic))
