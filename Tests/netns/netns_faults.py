"""The fault tests' shared bounds and steps (test_faults_devices.py, test_faults_network.py).

Faults on a real network, each observed through MQTT as a user sees it (availability, events,
responses, bridge/devices), each printing how long it took (`[netns] ...` lines and the session
summary). Bounds are asserted only where the contract promises one: `offline` within
`cast.heartbeat_timeout` of the device's last message, `timeout` after `cast.request_timeout`,
a connect attempt over after the connect timeout, a reconnect within one backoff step — each
plus SLACK seconds for scheduling and delivery on a busy machine.

The tests run in file order (the devices' module, then the network's) on one bridge (the
re-announcement test has a bridge of its own); each uses a device of its own, so a failure in one
leaves the others' devices alone.
"""

from __future__ import annotations

import re
import time

from conftest import CONNECT_TIMEOUT, HEARTBEAT_TIMEOUT, JITTER, RECONNECT_MAX, SLACK, events, report


# How long a dead link takes to be noticed at most: the contract's heartbeat timeout.
OFFLINE_BOUND = HEARTBEAT_TIMEOUT + SLACK
# One backoff step at most (the largest step, with jitter), then the connect and handshake.
ONE_STEP = RECONNECT_MAX * JITTER + SLACK
# How far the reported downtime may be from the silence the observer saw (both ends of it are
# seen through the same bridge -> broker -> observer path; it was within 0.01 s in every run).
DOWNTIME_TOLERANCE = 1.0


def wait_out_the_outage(moment: float) -> None:
    """A scenario's duration, not a wait for a result: a fault whose length is what the test is
    about lasts until `moment` (time.monotonic()). Used only where nothing observable happens
    while it lasts (the power cycle: the bridge holds a half-open connection and says nothing),
    so there is no fact to wait for; everything else waits for a marker (`failed_connects`)."""
    time.sleep(max(0.0, moment - time.monotonic()))


def failed_connects(bridge, device) -> list[str]:
    """The bridge's log lines for the device's failed connect attempts (each attempt that fails
    is logged on the `cast` logger with the device's id: `cannot connect` the first time, then
    `connect failed`; nothing else tells when one ended)."""
    return [line for line in bridge.output().splitlines() if device.id in line and FAILED_CONNECT.search(line)]


FAILED_CONNECT = re.compile(r" cast2mqtt\.cast: .*\b(cannot connect|connect failed)\b")
# Waiting for failed connect attempts: each ends within a backoff step plus the connect timeout.
ATTEMPT_BOUND = RECONNECT_MAX * JITTER + CONNECT_TIMEOUT + SLACK


def wait_event(mqtt, bridge, device, after: float, kind: str) -> list[dict]:
    """The `kind` events of the device since `after`, once there is one (an event follows the
    availability it goes with)."""
    mqtt.wait(lambda m: m.topic == bridge.topic(device, "event") and (m.json() or {}).get("type") == kind,
              after, 10, f"{device.name}'s {kind} event")
    return events(mqtt, bridge, device, after, kind)


def check_downtime(mqtt, bridge, device, after: float, last: float, online: float) -> float:
    """The one `reconnected` event since `after`: its downtime counts from the device's last
    message (`last`), not from when availability went offline."""
    reconnected = wait_event(mqtt, bridge, device, after, "reconnected")
    assert len(reconnected) == 1, f"one reconnected event, got {reconnected}"
    downtime = reconnected[0]["downtime"]
    silent = online - last
    report(f"{device.name}: reconnected event downtime {downtime:.2f} s; silent as seen from the broker's host",
           silent)
    assert abs(downtime - silent) <= DOWNTIME_TOLERANCE, (
        f"downtime {downtime} s should count from the last message ({silent:.2f} s before online)")
    return downtime
