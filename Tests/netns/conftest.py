"""Fixtures for the tests on a real network (issue #20): test hosts in network namespaces on one
Linux bridge (scripts/lib/netns.sh), each simulated device in a namespace of its own on its own
address and port 8009, announced over mDNS through the root namespace's avahi-daemon with its own
address record; the broker on a host of its own; the bridge (cast2mqtt) and these tests in the
root namespace. Everything a user sees is read through MQTT by an observer that sits on the
broker's host (like Home Assistant next to the broker), so taking a device's or the broker's link
down never cuts the observer off.

Every process is stopped by its PID; the root-namespace ones are also tracked in the network's
state so `netns.sh down` stops them when this run is killed. The session's last step removes the
network and fails when anything is left (namespaces, interfaces, processes).

Environment: CAST2MQTT_BIN, CAST_SIM (built binaries), CAST2MQTT_NETNS_PREFIX / _RANGE (set by
scripts/test so its trap can remove the network whatever happens), CI=true (a missing
requirement fails instead of skipping).

The pieces are in netns_settings.py (binaries, timings, `report`), netns_mqtt.py (the observer,
the broker), netns_devices.py (cast-sim hosts) and netns_bridge.py (the bridge and the steps the
tests share); this module holds the fixtures and re-exports the pieces for the tests.
"""

from __future__ import annotations

import pathlib
import shutil
import socket
import subprocess
import time

import pytest

# netns_settings first: it puts scripts/lib and Tests/homeassistant on sys.path.
from netns_settings import (CAST2MQTT, CAST_SIM, CONNECT_TIMEOUT, HEARTBEAT_TIMEOUT, JITTER, KEEPALIVE, MEASURED,
                            RECONNECT_INITIAL, RECONNECT_MAX, REQUEST_TIMEOUT, ROOT, SLACK, need, report)
import testnet  # noqa: E402
from harness import Process, wait_for  # noqa: E402
from netns_bridge import (Bridge, command, device_entry, established, events, group_id,  # noqa: E402
                          mark_last_message, open_sockets, responses)
from netns_devices import DEVICES, GROUP_HOST, GROUP_MEMBERS, GROUP_NAME, GROUP_PORT, Device, GroupHost  # noqa: E402
from netns_mqtt import Broker, Message, Observer  # noqa: E402

__all__ = ["CAST2MQTT", "CAST_SIM", "CONNECT_TIMEOUT", "DEVICES", "GROUP_HOST", "GROUP_MEMBERS", "GROUP_NAME",
           "GROUP_PORT", "HEARTBEAT_TIMEOUT", "JITTER", "KEEPALIVE", "RECONNECT_INITIAL", "RECONNECT_MAX",
           "REQUEST_TIMEOUT", "ROOT", "SLACK", "Bridge", "Broker", "Device", "GroupHost", "Message", "Observer",
           "command", "device_entry", "established", "events", "group_id", "mark_last_message", "need",
           "open_sockets", "report", "responses"]


def pytest_terminal_summary(terminalreporter) -> None:  # noqa: ANN001
    if MEASURED:
        terminalreporter.section("times measured on the test network")
        for line in MEASURED:
            terminalreporter.write_line(line)


# --- the network ---------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def network():
    reason = testnet.unavailable() or testnet.missing_programs(CAST2MQTT, CAST_SIM)
    need(reason)
    net = testnet.TestNetwork()
    try:
        yield net
    finally:
        left = net.down()
        assert not left, "the test network left things behind:\n" + "\n".join(left)


@pytest.fixture(scope="session")
def workdir(tmp_path_factory) -> pathlib.Path:
    return tmp_path_factory.mktemp("netns")


@pytest.fixture(scope="session")
def avahi() -> None:
    """The root namespace's avahi-daemon (scripts/test starts one, on lo and the test bridge)."""
    ok = shutil.which("avahi-browse") is not None and subprocess.run(
        ["avahi-browse", "-a", "-t", "-p"], capture_output=True, timeout=10).returncode == 0
    need(None if ok else "no avahi-daemon answers on the system bus (scripts/test starts one)")


# --- MQTT, seen from the broker's host ------------------------------------------------------------

@pytest.fixture(scope="session")
def broker(network, workdir) -> Broker:
    address = network.address(0, 2)
    network.add_host("mq", address)
    conf = workdir / "mosquitto.conf"
    conf.write_text("listener 1883\nallow_anonymous true\nset_tcp_nodelay true\npersistence false\n")
    process = Process("mosquitto", network.argv("mq", ["mosquitto", "-c", str(conf)]), workdir / "mosquitto.log")

    def listening() -> bool:
        if not process.alive():
            raise AssertionError("mosquitto exited:\n" + process.output())
        with socket.socket() as s:
            s.settimeout(1)
            return s.connect_ex((address, 1883)) == 0
    wait_for(listening, 10, 0.05, "mosquitto on the broker host")
    yield Broker("mq", address, 1883, process)
    process.stop()


@pytest.fixture(scope="session")
def mqtt(network, broker) -> Observer:
    observer = Observer(network, broker.host, broker.port)
    yield observer
    observer.close()


# --- simulated devices ------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def devices(network, workdir, avahi) -> dict[str, Device]:
    made: dict[str, Device] = {}
    try:
        for host, (octet, name, device_id) in DEVICES.items():
            address = network.address(0, octet)
            network.add_host(host, address)
            made[host] = Device(network, workdir, host, address, name, device_id)
            made[host].start()
        network.add_host(GROUP_HOST, *(network.address(0, octet) for octet, _, _ in GROUP_MEMBERS))
        made[GROUP_HOST] = GroupHost(network, workdir)
        made[GROUP_HOST].start()
        yield made
    finally:
        for device in made.values():
            device.stop()


# --- the bridge -----------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def bridge(network, workdir, broker, mqtt, devices) -> Bridge:
    """The bridge for every test but the re-announcement one (which needs a long backoff)."""
    ids = [d.id for host, d in devices.items() if host not in ("d2", GROUP_HOST)]
    ids += [device_id for _, _, device_id in GROUP_MEMBERS]
    started = time.monotonic()
    b = Bridge(network, workdir, broker, "main", "netA", ids + [group_id(devices)])
    topics = [d.topic for host, d in devices.items() if host not in ("d2", GROUP_HOST)]
    topics += [name.lower().replace(" ", "_") for _, name, _ in GROUP_MEMBERS] + [GROUP_NAME.lower().replace(" ", "_")]
    for topic in topics:
        mqtt.wait_payload(b.topic(topic, "availability"), b"online", started, 60)
    report(f"bridge start -> all {len(topics)} devices of the main bridge online (mDNS, own addresses)",
           time.monotonic() - started)
    yield b
    b.stop()
