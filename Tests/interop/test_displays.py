"""pychromecast's own DashCast and Home Assistant controllers drive cast-sim's display receivers.

Needs a built cast-sim: CAST_SIM=.build/debug/cast-sim python3 -m pytest -q Tests/interop
Every wait is bounded; cast-sim is stopped by its PID in a fixture finalizer.
"""

import pychromecast
import pytest
from pychromecast.controllers.dashcast import DashCastController
from pychromecast.controllers.homeassistant import HomeAssistantController

from castsim import connected_cast, one_device_sim, wait_for

DEVICE_ID = "5d1f0c2b3a4e5f60718293a4b5c6d7e8"
DEVICE_NAME = "Interop Hub"


@pytest.fixture
def sim():
    yield from one_device_sim(DEVICE_NAME, DEVICE_ID, 200)


@pytest.fixture
def cast(sim):
    yield from connected_cast(sim, DEVICE_ID, "Google Nest Hub", DEVICE_NAME)


def state(sim):
    return sim.http("GET", f"/devices/{DEVICE_ID}/state")


def test_dashcast_like_catt(sim, cast):
    """catt's way: launch, wait for "Application ready", then send the page."""
    controller = DashCastController()
    cast.register_handler(controller)
    cast.start_app("84912283")
    wait_for(lambda: cast.status.app_id == "84912283" and cast.status.status_text == "Application ready",
             what="DashCast ready")
    assert cast.status.display_name == "DashCast"
    controller.load_url("https://example.org/board", reload_seconds=60)
    wait_for(lambda: (state(sim).get("dashCast") or {}).get("url") == "https://example.org/board", what="page taken")
    dash = state(sim)["dashCast"]
    assert dash["reload"] is True and dash["reloadTime"] == 60000 and dash["force"] is False
    # The status text does not follow the page.
    assert cast.status.status_text == "Application ready"


def test_home_assistant_controller_shows_a_view(sim, cast):
    unregistered = []
    controller = HomeAssistantController(
        hass_url="https://ha.example:8123", hass_uuid="uuid-1", client_id=None, refresh_token="token-1",
        unregister=lambda: unregistered.append(True), hass_connect_timeout=10)
    cast.register_handler(controller)
    # Launches the receiver, connects it (blocking until the receiver says it is connected),
    # then shows the view.
    controller.show_lovelace_view("kitchen", "dashboard-hub")
    wait_for(lambda: controller.status is not None and controller.status.get("lovelacePath") == "kitchen",
             what="the view shown")
    assert controller.hass_connected
    assert controller.status["urlPath"] == "dashboard-hub"
    assert cast.status.app_id == "A078F6B0" and cast.status.display_name == "Home Assistant Lovelace"
    wait_for(lambda: cast.status.status_text == "Casting: dashboard-hub: kitchen", what="status text")
    lovelace = state(sim)["lovelace"]
    assert lovelace["connected"] is True and lovelace["hassUUID"] == "uuid-1"
    assert "token-1" not in str(state(sim))
    assert not unregistered


def test_home_assistant_controller_sees_a_refusing_receiver(sim, cast):
    sim.http("POST", f"/devices/{DEVICE_ID}/fault", {"action": "lovelace_fail", "error_code": 2})
    controller = HomeAssistantController(
        hass_url="https://ha.example:8123", hass_uuid="uuid-1", client_id=None, refresh_token="token-1",
        unregister=lambda: None, hass_connect_timeout=3)
    cast.register_handler(controller)
    with pytest.raises(pychromecast.error.PyChromecastError):
        controller.show_lovelace_view("kitchen")
    assert not controller.hass_connected
    assert state(sim)["lovelace"]["lastErrorCode"] == 2
