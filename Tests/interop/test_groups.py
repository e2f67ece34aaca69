"""pychromecast (a client nobody here wrote) drives cast-sim's speaker groups: its multizone
controller sees the members and their changes, members show the group's playback as
pychromecast and Home Assistant expect (the group's app, no media of their own), and its
`pychromecast.dial` reads the simulator's eureka_info, also to find a group whose leader moved.

Devices are on addresses of their own (random 127.x.y.z, Cast on 8009, eureka_info on 8008 and
8443) as pychromecast expects of a real device. Every wait is bounded; cast-sim is stopped by
its PID.
"""

import subprocess
import threading
import uuid

import pychromecast
import pytest
from pychromecast import dial
from pychromecast.controllers.multizone import MultizoneManager, MultiZoneManagerListener

from castsim import CAST_SIM, CastSim, dashed, loopback_address, wait_for

MEDIA_URL = "http://127.0.0.1:9/sim/group.mp3"


@pytest.fixture
def sim(tmp_path):
    config = tmp_path / "sim.yaml"
    config.write_text(
        "devices:\n"
        f"  - {{name: Kitchen, address: {loopback_address()}, cast_type: audio, volume: 0.2}}\n"
        f"  - {{name: Den, address: {loopback_address()}, cast_type: audio, volume: 0.4}}\n"
        f"  - {{name: Hall, address: {loopback_address()}, cast_type: audio, volume: 0.6}}\n"
        "groups:\n"
        "  - {name: Downstairs, members: [Kitchen, Den]}\n")
    sim = CastSim(["--config", str(config), "--launch-latency-ms", "300", "--heartbeat-interval", "0"],
                  expect_devices=3)
    try:
        yield sim
    finally:
        sim.stop()
    assert sim.proc.returncode == 0, f"cast-sim exited with {sim.proc.returncode}"


def connect(host, port, hex_id, model, name, before_connecting=None):
    cast = pychromecast.get_chromecast_from_host((host, port, uuid.UUID(hex_id), model, name),
                                                 tries=3, retry_wait=1, timeout=10)
    if before_connecting:
        before_connecting(cast)  # e.g. MultizoneManager.add_multizone, as Home Assistant does
    cast.wait(timeout=10)
    return cast


class MemberListener(MultiZoneManagerListener):
    """Records what pychromecast's MultizoneManager tells a member."""

    def __init__(self):
        self.lock = threading.Lock()
        self.added = []
        self.removed = []
        self.media = []

    def added_to_multizone(self, group_uuid):
        with self.lock:
            self.added.append(group_uuid)

    def removed_from_multizone(self, group_uuid):
        with self.lock:
            self.removed.append(group_uuid)

    def multizone_new_media_status(self, group_uuid, media_status):
        with self.lock:
            self.media.append((group_uuid, media_status.player_state, media_status.content_id))

    def multizone_new_cast_status(self, group_uuid, cast_status):
        pass


def test_multizone_controller_follows_members_and_playback(sim):
    group = sim.groups[0]
    kitchen, den, hall = sim.device("Kitchen"), sim.device("Den"), sim.device("Hall")
    group_uuid = dashed(group["id"])
    manager = MultizoneManager()
    listeners = {name: MemberListener() for name in ["Kitchen", "Den", "Hall"]}
    for name, listener in listeners.items():
        manager.register_listener(uuid.UUID(sim.device(name)["id"]), listener)

    cast = connect(group["host"], group["port"], group["id"], "Google Cast Group", "Downstairs",
                   before_connecting=manager.add_multizone)
    try:
        assert cast.cast_type == "group"
        wait_for(lambda: group_uuid in listeners["Kitchen"].added and group_uuid in listeners["Den"].added,
                 what="members added")
        assert manager.get_multizone_memberships(uuid.UUID(kitchen["id"])) == [group_uuid]
        assert listeners["Hall"].added == []

        # A member joins and one leaves: DEVICE_ADDED, DEVICE_REMOVED.
        sim.http("POST", f"/groups/{group['id']}/members", {"id": "Hall"})
        wait_for(lambda: group_uuid in listeners["Hall"].added, what="Hall added")
        sim.http("DELETE", f"/groups/{group['id']}/members/Den")
        wait_for(lambda: group_uuid in listeners["Den"].removed, what="Den removed")
        assert manager.get_multizone_memberships(uuid.UUID(den["id"])) == []

        # The group plays: its media status reaches the members' listeners.
        member = connect(kitchen["host"], kitchen["port"], kitchen["id"], "Google Home", "Kitchen")
        try:
            assert member.cast_type == "audio", "display_supported false in its eureka_info"
            media = cast.media_controller
            media.play_media(MEDIA_URL, "audio/mpeg", title="Together", stream_type="BUFFERED")
            media.block_until_active(timeout=10)
            wait_for(lambda: (group_uuid, "PLAYING", MEDIA_URL) in listeners["Kitchen"].media,
                     what="the group's media status forwarded to a member")
            # The member shows the group's app but no media of its own (what HA mirrors from).
            wait_for(lambda: member.status is not None and member.status.app_id == "CC1AD845", what="member app")
            wait_for(lambda: any(m["type"] == "GET_STATUS" and m["delivered"]
                                 for m in sim.received(kitchen["id"], "urn:x-cast:com.google.cast.media")),
                     what="pychromecast asking the member for its media status")
            assert member.media_controller.status.player_state == "UNKNOWN"
            assert member.media_controller.status.media_session_id is None

            # Group volume scales the members.
            cast.set_volume(0.3)
            wait_for(lambda: abs(member.status.volume_level - 0.1) < 1e-6, what="member volume 0.2 * 0.3 / 0.6")
            wait_for(lambda: abs(cast.status.volume_level - 0.3) < 1e-6, what="group volume 0.3")
        finally:
            member.disconnect(timeout=5)
    finally:
        cast.disconnect(timeout=5)


def test_dial_reads_eureka_info_and_finds_a_moved_leader(sim):
    group = sim.groups[0]
    kitchen, den = sim.device("Kitchen"), sim.device("Den")

    info = dial.get_device_info(kitchen["host"], timeout=10)
    assert info is not None
    assert info.friendly_name == "Kitchen"
    assert info.model_name == "Google Home"
    assert info.manufacturer == "Google Inc."
    assert info.uuid == uuid.UUID(kitchen["id"])
    assert info.cast_type == "audio"
    assert info.multizone_supported is True

    status = dial.get_multizone_status(kitchen["host"], timeout=10)
    assert [(g.friendly_name, g.uuid, g.host, g.port) for g in status.groups] == \
        [("Downstairs", uuid.UUID(group["id"]), kitchen["host"], group["port"])]
    assert status.dynamic_groups == []
    member_view = dial.get_multizone_status(den["host"], timeout=10)
    assert [(g.host, g.port) for g in member_view.groups] == [(kitchen["host"], None)]

    # A device that refuses hostname Host headers: pychromecast's empty-Host retry gets through.
    sim.http("POST", f"/devices/{den['id']}/eureka", {"mode": "forbidden_host"})
    assert dial.get_device_info(den["host"], timeout=10).friendly_name == "Den"

    # A dynamic group shows under dynamic_groups.
    dynamic = sim.http("POST", "/groups", {"name": "Temporary", "members": ["Den", "Hall"], "dynamic": True})
    wait_for(lambda: [g.uuid for g in dial.get_multizone_status(den["host"], timeout=10).dynamic_groups]
             == [uuid.UUID(dynamic["id"])], what="the dynamic group in eureka_info")

    # The leader moves: the members' eureka_info leads pychromecast to the group's new home.
    moved = sim.http("POST", f"/groups/{group['id']}/leader", {"to": "Den"})
    assert moved["host"] == den["host"]
    found = [g for g in dial.get_multizone_status(den["host"], timeout=10).groups if g.uuid == uuid.UUID(group["id"])]
    assert [(g.host, g.port) for g in found] == [(den["host"], moved["port"])]
    cast = connect(found[0].host, found[0].port, group["id"], "Google Cast Group", "Downstairs")
    try:
        wait_for(lambda: cast.status is not None, what="the moved group's receiver status")
        assert cast.cast_type == "group"
    finally:
        cast.disconnect(timeout=5)


def test_own_addresses_and_group_options():
    base = loopback_address().rsplit(".", 1)[0] + ".10"
    sim = CastSim(["--own-addresses", base, "--device", "Left:0", "--device", "Right:0", "--cast-type", "audio",
                   "--group", "Pair=Left,Right"], expect_devices=2)
    try:
        left, right = sim.device("Left"), sim.device("Right")
        assert (left["host"], left["port"]) == (base, 8009)
        assert right["host"] == base.rsplit(".", 1)[0] + ".11"
        assert sim.groups[0]["host"] == left["host"] and sim.groups[0]["members"] == [left["id"], right["id"]]
        assert dial.get_device_info(right["host"], timeout=10).friendly_name == "Right"
    finally:
        sim.stop()
    assert sim.proc.returncode == 0


def test_a_bad_config_file_stops_cast_sim_with_exit_code_2(tmp_path):
    config = tmp_path / "bad.yaml"
    config.write_text("devices:\n  - {name: A, port: 70000}\n")
    proc = subprocess.run([CAST_SIM, "--config", str(config)], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
    assert "devices[0]: port 70000 out of range" in proc.stderr
