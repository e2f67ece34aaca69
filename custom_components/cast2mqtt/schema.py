"""The schema library of this Home Assistant, as `vol`: probatio, which Home Assistant's own code
and forms use from 2026 on (its voluptuous compatibility is a stand-in whose messages read
differently), or voluptuous on the releases before it."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # mypy reads the newest Home Assistant (scripts/test), which has probatio.
    import probatio as vol
else:
    try:
        import probatio as vol
    except ImportError:  # Home Assistant before probatio
        import voluptuous as vol

__all__ = ["vol"]
