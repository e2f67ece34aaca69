"""A bridge whose clock is 5 minutes ahead of Home Assistant's, end to end: the real daemon runs
under libfaketime (`faketime`, its clock alone is shifted; the machine's is not touched), the
integration in a real Home Assistant. Actions reach the device before the skew is measured (the
deadline is then relative) and after (the deadline is put on the bridge's clock: with a wall-clock
`expires` on Home Assistant's clock every command would arrive 5 minutes expired and be answered
`timeout`), and the repair issue names the measured skew."""

from __future__ import annotations

import os
import pathlib
import shutil
import signal
from datetime import datetime, timezone
from typing import Any

import pytest

from harness import CAST2MQTT, LIVING_ROOM, ROOT, Bridge, HomeAssistant, Process, wait_for
from ha_calls import flow, service

TV_ID = LIVING_ROOM[1]
TV = "media_player.living_room_tv"
SKEW_SECONDS = 300
ISSUE = "clock_skew_cast2mqtt"

HOME_ASSISTANT = {
    "custom_components": [ROOT / "custom_components" / "cast2mqtt"],
    "extra_config": "diagnostics:\n",
}


def running_with(argument: str, program: str | None = None) -> list[int]:
    """PIDs of the processes with `argument` on their command line (and `program` as argv[0])."""
    found = []
    for proc in pathlib.Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                argv = (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argument.encode() in argv and (program is None or argv[0] == program.encode()):
                found.append(int(proc.name))
    return found


class SkewedBridge(Bridge):
    """The daemon with its wall clock 5 minutes ahead (monotonic clocks left alone, so its timers
    run as usual)."""

    def start(self) -> None:
        assert self.process is None or not self.process.alive(), "the bridge is already running"
        self.write_config()
        self.starts += 1
        env = {**os.environ, "DONT_FAKE_MONOTONIC": "1"}
        self.started_wall = datetime.now(timezone.utc)
        self.process = Process("cast2mqtt", ["faketime", "-f", f"+{SKEW_SECONDS}s", CAST2MQTT, "run", "--config",
                                             str(self.config_path)],
                               self.workdir / f"cast2mqtt-{self.starts}.log", env=env)

    def stop(self, sig: int = signal.SIGTERM) -> int | None:
        # The faketime wrapper forks the daemon and waits for it, and passes no signal on:
        # stopping only the wrapper (the PID the harness holds) left the daemon running,
        # orphaned, after every run. Signal the daemon itself, then reap the wrapper.
        for pid in running_with(str(self.config_path), program=CAST2MQTT):
            os.kill(pid, sig)
        return super().stop(sig)


@pytest.fixture(scope="module")
def bridge(workdir: pathlib.Path, broker: Any, sim: Any) -> Any:
    if shutil.which("faketime") is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("faketime is not installed (scripts/test installs the Debian package)")
        pytest.skip("faketime is not installed (apt-get install faketime)")
    b = SkewedBridge(workdir, broker, sim.static_devices())
    b.start()
    yield b
    b.stop()
    # No process runs with this bridge's configuration any more (the wrapper's fork once left the
    # daemon running, orphaned, after every run).
    wait_for(lambda: not running_with(str(b.config_path)), 30, what="the skewed bridge to be gone")


def parse(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_a_bridge_five_minutes_ahead(bridge: SkewedBridge, mqtt: Any, sim: Any, ha: HomeAssistant) -> None:
    wait_for(lambda: mqtt.get("cast2mqtt/living_room_tv/availability") == b"online", 30, what="the TV online")
    # The fake clock took: the bridge stamps its start 5 minutes ahead.
    info = wait_for(lambda: mqtt.json("cast2mqtt/bridge/info"), 30, what="bridge/info")
    ahead = (parse(info["started_at"]) - bridge.started_wall).total_seconds()
    assert SKEW_SECONDS - 5 < ahead <= SKEW_SECONDS + 30, f"the bridge's clock is {ahead:.0f} s ahead"

    started = flow(ha, "", {"handler": "cast2mqtt", "show_advanced_options": False})
    done = flow(ha, f"/{started['flow_id']}", {"base_topic": "cast2mqtt"})
    assert done.get("type") == "create_entry", done
    entry_id = done["result"]["entry_id"]
    ha.wait_state(TV, lambda s: s["state"] != "unavailable", 60)

    # Actions reach the device: its receiver launches, its volume follows.
    service(ha, "media_player", "turn_on", entity_id=TV)
    ha.wait_state(TV, "idle", 60)
    for level in (0.3, 0.45, 0.6, 0.35):
        service(ha, "media_player", "volume_set", entity_id=TV, volume_level=level)
        wait_for(lambda level=level: abs(((mqtt.json("cast2mqtt/living_room_tv/receiver") or {}).get("volume") or {})
                                         .get("level", -1) - level) < 0.01, 30, what=f"volume {level}")
    assert sim.received(TV_ID, namespace="urn:x-cast:com.google.cast.receiver", type="SET_VOLUME")

    # The repair issue names the skew the integration measured from the bridge's fresh messages.
    def issue() -> dict[str, Any] | None:
        issues = ha.ws({"type": "repairs/list_issues"})[0]["issues"]
        return next((i for i in issues if i["domain"] == "cast2mqtt" and i["issue_id"] == ISSUE), None)

    found = wait_for(issue, 60, what="the clock skew repair issue")
    assert found["translation_key"] == "clock_skew"
    measured = int(found["translation_placeholders"]["seconds"])
    assert SKEW_SECONDS - 5 <= measured <= SKEW_SECONDS + 5, found
    diagnostics = ha.get(f"/api/diagnostics/config_entry/{entry_id}")["data"]
    clock = diagnostics["bridge"]["clock"]
    assert clock["samples"] >= 3 and abs(clock["skew_seconds"] - SKEW_SECONDS) < 5, clock

    # Measured: the next action's deadline is an RFC 3339 time on the bridge's clock, and it works.
    service(ha, "media_player", "volume_set", entity_id=TV, volume_level=0.55)
    wait_for(lambda: abs(((mqtt.json("cast2mqtt/living_room_tv/receiver") or {}).get("volume") or {})
                         .get("level", -1) - 0.55) < 0.01, 30, what="volume 0.55 with the skew measured")
    import json
    command = json.loads(mqtt.get("cast2mqtt/living_room_tv/command/volume") or b"{}")
    assert isinstance(command.get("expires"), str), command
    expires_ahead = (parse(command["expires"]) - datetime.now(timezone.utc)).total_seconds()
    assert SKEW_SECONDS - 60 < expires_ahead < SKEW_SECONDS + 60, command  # on the bridge's clock
