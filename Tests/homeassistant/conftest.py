"""Fixtures: one broker, one cast-sim with two devices, one bridge and one Home Assistant per test
module (starting Home Assistant takes most of a run's time; integration/ overrides them with one
set for the whole folder). integration/ resets the simulated devices before each of its tests (its
`fresh` fixture), so each stands alone; the
discovery modules check one bridge lifecycle in file order, each test saying what it leaves.

Without Home Assistant (scripts/lib/ha.sh's venv) or the built binaries the tests are skipped,
and under CI=true they fail instead. The unit tests in unit/ run in a pytest session of their own.
"""

from __future__ import annotations

import pytest

import fixtures
from harness import HomeAssistant

# requirements, workdir, broker, mqtt, sim, bridge (fixtures.py), one set per test module.
globals().update(fixtures.registered("module"))


@pytest.fixture(scope="module")
def ha(workdir, broker, request) -> HomeAssistant:
    # A test module may set HOME_ASSISTANT = {...}: keyword arguments of harness.HomeAssistant
    # (extra_config, custom_components, media_files).
    h = HomeAssistant(workdir, broker, **getattr(request.module, "HOME_ASSISTANT", {}))
    yield from fixtures.running(h)
