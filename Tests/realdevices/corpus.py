"""The corpus of real Cast messages (Tests/Fixtures/real-devices) as test cases: which simulated
device (or speaker group) each case gets, how its message is replayed, and what the bridge must
publish. The format of a fixture's `replay` and `expect` keys is described in README.md here and
in the corpus README; this module only reads them and fills in the defaults.

Every `*.json` under the corpus is a case (or several, with `cases`), so a new file needs no code.
"""

from __future__ import annotations

import copy
import hashlib
import json
import pathlib
import random
import re
from dataclasses import dataclass, field
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS = ROOT / "Tests/Fixtures/real-devices"

RECEIVER = "urn:x-cast:com.google.cast.receiver"
MEDIA = "urn:x-cast:com.google.cast.media"
MULTIZONE = "urn:x-cast:com.google.cast.multizone"
CONNECTION = "urn:x-cast:com.google.cast.tp.connection"

# Message kinds that describe a state: a device answers every GET_STATUS with the last one it sent.
STATE_KINDS = {"RECEIVER_STATUS", "MEDIA_STATUS", "MULTIZONE_STATUS"}

# A URL for loads whose message names no content (nothing fetches it: cast-sim does not).
PLACEHOLDER_URL = "http://127.0.0.1:9/realdevices/{slug}.mp3"


def slug(name: str) -> str:
    """A topic name as the bridge makes it from a friendly name (contract §1)."""
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def hex_id(name: str) -> str:
    return hashlib.md5(name.encode()).hexdigest()


def plain_id(device_id: str) -> str:
    return device_id.replace("-", "").lower()


def kind_of(message: dict[str, Any], path: pathlib.Path) -> str:
    if "body-only" in path.name and "type" not in message and "responseType" not in message:
        return "RECEIVER_STATUS"
    return str(message.get("type") or message.get("responseType") or "")


def message_text(fixture: dict[str, Any], path: pathlib.Path) -> str:
    """The message as the device sent it: key order and float noise kept (json keeps both). A
    `body-only` receiver status (only its `status` object was published) gets the envelope the
    corpus README prescribes."""
    message = fixture["message"]
    if "body-only" in path.name and "type" not in message and "responseType" not in message:
        return '{"type":"RECEIVER_STATUS","requestId":0,"status":' + compact(message) + "}"
    return compact(message)


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def load_fixture(relative: str) -> tuple[dict[str, Any], pathlib.Path]:
    path = CORPUS / relative
    return json.loads(path.read_text(encoding="utf-8")), path


@dataclass
class SimDevice:
    name: str
    id: str
    cast_type: str = "video"


@dataclass
class SimGroup:
    name: str
    id: str
    members: list[str]  # names, the leader first


@dataclass
class Case:
    """One replay: a fixture file (and one of its `cases`, if it has several)."""

    path: pathlib.Path
    fixture: dict[str, Any]
    label: str  # "" or the name of one entry of `cases`
    replay: dict[str, Any]
    expect: dict[str, Any] | None
    devices: list[SimDevice] = field(default_factory=list)
    group: SimGroup | None = None
    role: str = "device"  # device | group | member
    device_name: str = ""

    @property
    def relative(self) -> str:
        return self.path.relative_to(CORPUS).as_posix()

    @property
    def test_id(self) -> str:
        return self.relative + (f"::{self.label}" if self.label else "")

    @property
    def kind(self) -> str:
        return kind_of(self.fixture["message"], self.path)

    @property
    def namespace(self) -> str:
        return self.replay.get("namespace") or self.fixture["namespace"]

    @property
    def topic(self) -> str:
        """The topic name of the device under test (the group's for a group case)."""
        return slug(self.device_name)

    @property
    def device_id(self) -> str:
        if self.role == "group":
            assert self.group is not None
            return self.group.id
        return hex_id(self.device_name)

    @property
    def group_topic(self) -> str | None:
        return slug(self.group.name) if self.group else None

    def text(self) -> str:
        return message_text(self.fixture, self.path)


def default_modes(kind: str, namespace: str, sent: str) -> tuple[list[str], str | None]:
    """How a message is replayed when its fixture does not say (`replay.as`, `replay.to`), from
    its kind and the corpus' `sent` field: an answer to a LOAD or LAUNCH is the answer to the
    bridge's next request of that type (and, for a status, what the device says from then on); an
    answer to GET_STATUS is what the device answers, asked by a `refresh`; anything else is sent
    unprompted (a status also becoming the device's answer to GET_STATUS, as on a real device)."""
    lowered = sent.lower()
    state = kind in STATE_KINDS
    for request in ("LOAD", "LAUNCH"):
        if re.search(rf"\banswer to {request.lower()}\b", lowered):
            return (["answer", "status"] if state else ["answer"]), request
    if namespace == CONNECTION or not state:
        return ["unprompted"], None
    if "answer to" in lowered and "broadcast" not in lowered:
        return ["status", "refresh"], None
    return ["status", "unprompted"], None


def default_setup(case: Case) -> list[dict[str, Any]]:
    """Media messages come from an app: by default the simulator's Default Media Receiver,
    launched through the bridge (so the bridge is joined to it). A LOAD answer needs nothing: the
    `load` command launches the app itself."""
    if case.namespace == MEDIA and "LOAD" != case.replay.get("to"):
        return [{"command": "launch", "payload": {"app_id": "CC1AD845"}, "response": {"status": "ok"}}]
    return []


def default_trigger(case: Case) -> dict[str, Any] | None:
    to = case.replay.get("to")
    message = case.fixture["message"]
    if to == "LOAD":
        status = message.get("status")
        media = status[0].get("media") if isinstance(status, list) and status else None
        url = media.get("contentId") if isinstance(media, dict) else None
        return {"command": "load", "payload": {"url": url or PLACEHOLDER_URL.format(slug=case.topic)}}
    if to == "LAUNCH":
        status = message.get("status")
        apps = status.get("applications") if isinstance(status, dict) else None
        app_id = apps[0]["appId"] if apps else "CC1AD845"
        return {"command": "launch", "payload": {"app_id": app_id}}
    return None


def _build(path: pathlib.Path, fixture: dict[str, Any], label: str, replay: dict[str, Any],
           expect: dict[str, Any] | None) -> Case:
    replay = copy.deepcopy(replay)
    case = Case(path=path, fixture=fixture, label=label, replay=replay, expect=expect)
    base = path.relative_to(CORPUS).with_suffix("").as_posix().replace("/", " ")
    case.device_name = base + (f" {label}" if label else "")
    device = replay.get("device", {})
    case.role = device.get("role", "device")
    cast_type = device.get("cast_type", "audio" if case.role != "device" else "video")
    if case.role == "group":
        members = [SimDevice(m["name"], plain_id(m["id"]) if m.get("id") else hex_id(m["name"]),
                             m.get("cast_type", "audio"))
                   for m in device.get("members", [{"name": case.device_name + " speaker"}])]
        case.devices = members
        case.group = SimGroup(case.device_name, hex_id("group:" + case.device_name), [m.name for m in members])
    elif case.role == "member":
        me = SimDevice(case.device_name, hex_id(case.device_name), cast_type)
        partner = SimDevice(case.device_name + " partner", hex_id(case.device_name + " partner"), "audio")
        order = [me, partner] if device.get("leader") else [partner, me]
        case.devices = [me, partner]
        case.group = SimGroup(case.device_name + " group", hex_id("group:" + case.device_name),
                              [d.name for d in order])
    else:
        case.devices = [SimDevice(case.device_name, hex_id(case.device_name), cast_type)]
    if "as" not in replay:
        modes, to = default_modes(case.kind, case.namespace, fixture["sent"])
        replay["as"] = modes
        if to and "to" not in replay:
            replay["to"] = to
    elif isinstance(replay["as"], str):
        replay["as"] = [replay["as"]]
    if "setup" not in replay:
        replay["setup"] = default_setup(case)
    if "trigger" not in replay and ("answer" in replay["as"] or "interim" in replay["as"]):
        replay["trigger"] = default_trigger(case)
    return case


def load_cases() -> list[Case]:
    cases: list[Case] = []
    for path in sorted(CORPUS.rglob("*.json")):
        fixture = json.loads(path.read_text(encoding="utf-8"))
        if "cases" in fixture:
            for entry in fixture["cases"]:
                cases.append(_build(path, fixture, entry["name"], entry.get("replay", {}), entry.get("expect")))
        else:
            cases.append(_build(path, fixture, "", fixture.get("replay", {}), fixture.get("expect")))
    topics = [c.topic for c in cases]
    duplicates = {t for t in topics if topics.count(t) > 1}
    assert not duplicates, f"two corpus cases would get the same device topic: {sorted(duplicates)}"
    return cases


def sim_config(cases: list[Case]) -> dict[str, Any]:
    """cast-sim's configuration: every case's devices on addresses of their own (eureka_info on
    8008/8443, as the bridge finds speaker groups through their leader's), and its group."""
    third, second = random.randint(0, 200), random.randint(100, 250)
    devices: list[dict[str, Any]] = []
    groups: list[dict[str, Any]] = []
    n = 0
    for case in cases:
        for device in case.devices:
            address = f"127.{second}.{third + n // 250}.{n % 250 + 1}"
            n += 1
            devices.append({"name": device.name, "id": device.id, "address": address, "cast_type": device.cast_type})
        if case.group:
            groups.append({"name": case.group.name, "id": case.group.id, "members": case.group.members})
    return {"devices": devices, "groups": groups}
