"""A real Home Assistant against the real bridge: reusable pieces for tests.

Every process runs on 127.0.0.1 on a free port and is stopped by its PID. Every wait is bounded
in time. Nothing here asserts timings.

    broker = Mosquitto(workdir)                      # mosquitto, set_tcp_nodelay
    sim = CastSim(workdir, [("Living Room TV", ID1), ("Kitchen", ID2)])
    bridge = Bridge(workdir, broker, sim.static_devices())
    ha = HomeAssistant(workdir, broker)              # hass -c <dir>, onboarding, MQTT config flow
    ha.start(); ha.setup()                           # setup() once per config dir
    ha.states()  /  ha.state("sensor.kitchen_state")  /  ha.call("button", "press", entity_id=...)
    ha.ws({"type": "config/entity_registry/list"})

Environment: CAST2MQTT_BIN (default .build/debug/cast2mqtt), CAST_SIM (default
.build/debug/cast-sim), HA_VENV (default ~/.cache/cast2mqtt/homeassistant-2025.4.4; see scripts/lib/ha.sh).

The pieces live in harness_base.py (paths, ports, waits, processes), harness_mqtt.py (broker,
proxy, observer), harness_cast.py (cast-sim, the bridge, a file server) and harness_ha.py (Home
Assistant); this module re-exports them, so tests import from `harness` alone.
"""

from __future__ import annotations

from harness_base import (CAST2MQTT, CAST_SIM, CLIENT_ID, HA_VENV, HASS, ROOT, Process, free_port, missing_bridge,
                          missing_requirements, need, python_ok, wait_for)
from harness_cast import KITCHEN, LIVING_ROOM, Bridge, CastSim, FileServer, yaml_value
from harness_ha import HomeAssistant, log_problems, log_records
from harness_mqtt import Mosquitto, MQTTObserver, TCPProxy

__all__ = ["CAST2MQTT", "CAST_SIM", "CLIENT_ID", "HA_VENV", "HASS", "KITCHEN", "LIVING_ROOM", "ROOT", "Bridge",
           "CastSim", "FileServer", "HomeAssistant", "Mosquitto", "MQTTObserver", "Process", "TCPProxy", "free_port",
           "log_problems", "log_records", "missing_bridge", "missing_requirements", "need", "python_ok", "wait_for",
           "yaml_value"]
