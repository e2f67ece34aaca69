"""Runs one corpus case against the bridge: its setup, the replay of its message through
cast-sim's `replay` fault action, and the checks of what the bridge published (README.md)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from corpus import MEDIA, Case, load_fixture, message_text
from matching import differences, matches

BASE = "cast2mqtt"
WAIT = 15.0          # seconds for a published state, an event or a message to arrive
COMMAND_WAIT = 25.0  # a command's response (cast.request_timeout is 10 s, a launch comes first)
BARRIER_WAIT = 12.0
# Never expected unless a case lists it in `events`: a real device's message must not cost the
# connection, and only an IDLE/ERROR status of playback the bridge did not report is an `error`.
FORBIDDEN_BY_DEFAULT = ["error", "disconnected", "reconnected"]


@dataclass
class Env:
    mqtt: Any      # Recorder (conftest.py)
    sim: Any       # harness.CastSim
    cases: dict[str, Case] = field(default_factory=dict)


class Replay:
    def __init__(self, env: Env, case: Case):
        self.env = env
        self.case = case
        self.failures: list[str] = []
        self.notes: list[str] = []
        self.counter = 0
        self.response: dict[str, Any] | None = None
        self._app_transport: str | None = None

    # -- placeholders ---------------------------------------------------------------------------

    def resolve(self, value: Any) -> Any:
        if isinstance(value, str):
            if value == "$device":
                return self.case.topic
            if value == "$group":
                return self.case.group_topic
            if value == "$text":
                return self.case.text()
            if value == "$app_transport":
                return self.app_transport()
            return value
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if isinstance(value, dict):
            return {k: self.resolve(v) for k, v in value.items()}
        return value

    def app_transport(self) -> str:
        if self._app_transport is None:
            state = self.env.sim.state(self.case.device_id)
            apps = state.get("receiverStatus", {}).get("applications") or []
            assert apps, f"setup: the simulated device runs no app ({state.get('receiverStatus')})"
            self._app_transport = apps[0]["transportId"]
        return self._app_transport

    # -- targets --------------------------------------------------------------------------------

    def target(self, on: str | None) -> tuple[str, str]:
        """(topic, sim device id) of the device under test, or with on="group" of its group."""
        if on == "group":
            assert self.case.group is not None, "on: group needs a case with a group"
            return self.case.group_topic or "", self.case.group.id
        return self.case.topic, self.case.device_id

    def topic(self, suffix: str) -> str:
        if suffix.startswith("group:"):
            return f"{BASE}/{self.case.group_topic}/{suffix[len('group:'):]}"
        return f"{BASE}/{self.case.topic}/{suffix}"

    # -- actions --------------------------------------------------------------------------------

    def command(self, name: str, payload: dict[str, Any] | None, on: str | None = None,
                wait: float = COMMAND_WAIT) -> dict[str, Any] | None:
        topic, _ = self.target(on)
        self.counter += 1
        marker = f"realdevices-{self.case.topic[:40]}-{self.counter}-{time.monotonic_ns()}"
        body = dict(self.resolve(payload or {}))
        body["id"] = marker
        start = self.env.mqtt.mark()
        self.env.mqtt.publish(f"{BASE}/{topic}/command/{name}", json.dumps(body))
        if wait <= 0:
            return None
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            for payload_bytes in self.env.mqtt.since(start, f"{BASE}/{topic}/response"):
                try:
                    response = json.loads(payload_bytes)
                except ValueError:
                    continue
                if isinstance(response, dict) and response.get("id") == marker:
                    return response
            time.sleep(0.05)
        return None

    def sim_replay(self, device_id: str, namespace: str, text: str, mode: str, to: str | None = None,
                   source: str | None = None) -> None:
        body: dict[str, Any] = {"action": "replay", "namespace": namespace, "text": text, "as": mode}
        if to:
            body["to"] = to
        if source:
            body["source"] = self.resolve(source)
        answer = self.env.sim.fault(device_id, body)
        assert answer.get("ok"), f"cast-sim refused the replay ({mode} on {namespace}): {answer}"

    def sim_sequence(self, device_id: str) -> int:
        messages = self.env.sim.received(device_id)
        return max((m["sequence"] for m in messages), default=-1)

    def wait(self, predicate: Callable[[], Any], timeout: float = WAIT) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value or time.monotonic() >= deadline:
                return value
            time.sleep(0.05)

    # -- setup ----------------------------------------------------------------------------------

    def setup_step(self, step: dict[str, Any]) -> None:
        topic, device_id = self.target(step.get("on"))
        if "command" in step:
            response = self.command(step["command"], step.get("payload"), step.get("on"))
            assert response is not None, f"setup: no response to {step['command']} on {topic}"
            expected = self.resolve(step.get("response", {}))
            problems = differences(expected, response)
            assert not problems, f"setup: {step['command']} on {topic} answered {json.dumps(response)}: {problems}"
        elif "fixture" in step:
            fixture, path = load_fixture(step["fixture"])
            modes = step["as"] if isinstance(step["as"], list) else [step["as"]]
            for mode in modes:
                self.sim_replay(device_id, step.get("namespace") or fixture["namespace"], message_text(fixture, path),
                                mode, step.get("to"), step.get("source"))
        elif "sim" in step:
            answer = self.env.sim.fault(device_id, self.resolve(step["sim"]))
            assert answer.get("ok"), f"setup: cast-sim {step['sim']} on {topic}: {answer}"
        elif "wait" in step:
            expected = self.resolve(step["wait"])
            ok = self.wait(lambda: all(matches(v, self.latest_json(k)) for k, v in expected.items()))
            if not ok:
                detail = {k: self.latest_json(k) for k in expected}
                raise AssertionError(f"setup: waited {WAIT:g} s for {json.dumps(expected)}; published: {json.dumps(detail)}")
        elif "wait_received" in step:
            want = self.resolve(step["wait_received"])
            ok = self.wait(lambda: any(matches(want, m) for m in self.env.sim.received(device_id)))
            assert ok, f"setup: the simulated device never received {json.dumps(want)}"
        else:
            raise AssertionError(f"unknown setup step {step}")

    # -- the replay -----------------------------------------------------------------------------

    def replay(self) -> None:
        case, replay = self.case, self.case.replay
        text = case.text()
        for mode in replay["as"]:
            if mode in ("status", "unprompted"):
                self.sim_replay(case.device_id, case.namespace, text, mode, source=replay.get("source"))
            elif mode == "refresh":
                # The device is asked (GET_STATUS): its answer is the replayed message. The answer to
                # the refresh itself is not what is checked (nor waited for); what the bridge
                # publishes is.
                self.command("refresh", {}, wait=0)
            elif mode == "answer":
                self.sim_replay(case.device_id, case.namespace, text, "answer", to=replay["to"])
                trigger = replay["trigger"]
                self.response = self.command(trigger["command"], trigger.get("payload"))
                if self.response is None:
                    self.failures.append(f"no response to the {trigger['command']} command within {COMMAND_WAIT:g} s")
            elif mode == "interim":
                self.interim(text)
            else:
                raise AssertionError(f"unknown replay mode {mode}")

    def interim(self, text: str) -> None:
        """A message the device sends while it works on a request, echoing the request's id under
        another key (LAUNCH_STATUS's `launchRequestId`): the trigger goes out, the request is read
        from what cast-sim received, its id written where the device wrote it, and the message
        sent unprompted before the simulator's own answer (its launch latency) goes out."""
        case, replay = self.case, self.case.replay
        trigger = replay["trigger"]
        sequence = self.sim_sequence(case.device_id)
        topic = case.topic
        self.counter += 1
        marker = f"realdevices-{topic[:40]}-{self.counter}-{time.monotonic_ns()}"
        body = dict(self.resolve(trigger.get("payload") or {}))
        body["id"] = marker
        start = self.env.mqtt.mark()
        self.env.mqtt.publish(f"{BASE}/{topic}/command/{trigger['command']}", json.dumps(body))
        request_type = replay["to"]

        def request() -> dict[str, Any] | None:
            for m in self.env.sim.received(case.device_id, case.namespace, request_type):
                if m["sequence"] > sequence:
                    return m
            return None

        seen = self.wait(request, 10)
        assert seen, f"the bridge never sent {request_type} to the simulated device"
        message = json.loads(text)
        message[replay.get("id_key", "requestId")] = seen["payload"]["requestId"]
        self.sim_replay(case.device_id, case.namespace, json.dumps(message, ensure_ascii=False, separators=(",", ":")),
                        "unprompted")

        def answered() -> dict[str, Any] | None:
            for payload in self.env.mqtt.since(start, f"{BASE}/{topic}/response"):
                response = json.loads(payload)
                if response.get("id") == marker:
                    return response
            return None

        self.response = self.wait(answered, COMMAND_WAIT)
        if self.response is None:
            self.failures.append(f"no response to the {trigger['command']} command within {COMMAND_WAIT:g} s")

    # -- reading what was published -------------------------------------------------------------

    def latest_json(self, suffix: str) -> Any:
        payload = self.env.mqtt.get(self.topic(suffix))
        if payload is None:
            return "<never published>"
        if payload == b"":
            return "<cleared>"
        try:
            return json.loads(payload)
        except ValueError:
            return payload.decode(errors="replace")

    def events(self, mark: int) -> list[dict[str, Any]]:
        found = []
        for payload in self.env.mqtt.since(mark, self.topic("event")):
            try:
                found.append(json.loads(payload))
            except ValueError:
                found.append({"type": "<not JSON>", "payload": payload.decode(errors="replace")})
        return found

    # -- checks ---------------------------------------------------------------------------------

    def check(self, expect: dict[str, Any], mark: int, sim_mark: dict[str, int]) -> None:
        expect = self.resolve(expect)
        if "response" in expect:
            if self.response is None:
                self.failures.append(f"response: expected {json.dumps(expect['response'])}, got none")
            else:
                problems = differences(expect["response"], self.response)
                if problems:
                    self.failures.append(f"response {json.dumps(self.response, ensure_ascii=False)}:\n    "
                                         + "\n    ".join(problems))

        topics = expect.get("topics", {})
        if topics:
            self.wait(lambda: all(matches(v, self.latest_json(k)) for k, v in topics.items()))
            for suffix, expected in topics.items():
                actual = self.latest_json(suffix)
                problems = differences(expected, actual)
                if problems:
                    self.failures.append(
                        f"{self.topic(suffix)} after {WAIT:g} s:\n    " + "\n    ".join(problems)
                        + f"\n    expected (subset): {json.dumps(expected, ensure_ascii=False, sort_keys=True)}"
                        + f"\n    last published:    {json.dumps(actual, ensure_ascii=False, sort_keys=True)}")

        wanted = expect.get("events", [])
        if wanted:
            def all_found() -> bool:
                return self._unmatched_events(wanted, mark) == []
            self.wait(all_found)
            for missing in self._unmatched_events(wanted, mark):
                self.failures.append(f"event {json.dumps(missing, ensure_ascii=False)} not published on "
                                     f"{self.topic('event')}; events seen: "
                                     f"{json.dumps(self.events(mark), ensure_ascii=False)}")

        for want in expect.get("sim_received", []):
            on = want.get("on")
            _, device_id = self.target(on)
            pattern = {k: v for k, v in want.items() if k != "on"}
            after = sim_mark.get(device_id, -1)
            seen = self.wait(lambda: any(m["sequence"] > after and matches(pattern, m)
                                         for m in self.env.sim.received(device_id)))
            if not seen:
                got = [{k: m.get(k) for k in ("namespace", "type", "destination", "delivered")}
                       for m in self.env.sim.received(device_id) if m["sequence"] > after]
                self.failures.append(f"the simulated device never received {json.dumps(pattern)} after the replay; "
                                     f"it received: {json.dumps(got)}")

        for suffix, text in expect.get("messages", {}).items():
            topic = self.topic(suffix)
            ok = self.wait(lambda: any(p.decode(errors="replace") == text for p in self.env.mqtt.since(mark, topic)))
            if not ok:
                seen = [p.decode(errors="replace") for p in self.env.mqtt.since(mark, topic)]
                self.failures.append(f"{topic}: expected a message {text!r}; published: {seen!r}")

        self.barrier()

        expected_types = {e.get("type") for e in wanted}
        forbidden = set(expect.get("no_events", [])) | (set(FORBIDDEN_BY_DEFAULT) - expected_types)
        forbidden -= set(expect.get("allow_events", []))
        events = self.events(mark)
        for event in events:
            if event.get("type") in forbidden:
                self.failures.append(f"unexpected event on {self.topic('event')}: {json.dumps(event, ensure_ascii=False)}")
        for kind, count in expect.get("event_counts", {}).items():
            n = sum(1 for e in events if e.get("type") == kind)
            if n != count:
                self.failures.append(f"{count} `{kind}` event(s) expected on {self.topic('event')}, got {n}: "
                                     f"{json.dumps([e for e in events if e.get('type') == kind], ensure_ascii=False)}")

        for suffix, needles in expect.get("never_published", {}).items():
            topic = self.topic(suffix)
            for payload in self.env.mqtt.since(mark, topic):
                text = payload.decode(errors="replace")
                for needle in needles:
                    if needle == "" or needle.lower() in text.lower():
                        self.failures.append(f"{topic} published {text[:300]!r}"
                                             + (f" (contains {needle!r})" if needle else " (expected nothing)"))

        for step in expect.get("then", []):
            response = self.command(step["command"], step.get("payload"), step.get("on"))
            if response is None:
                self.failures.append(f"then: no response to {step['command']}")
            elif "response" in step:
                problems = differences(step["response"], response)
                if problems:
                    self.failures.append(f"then: {step['command']} answered {json.dumps(response, ensure_ascii=False)}:"
                                         "\n    " + "\n    ".join(problems))
            for suffix, expected in step.get("topics", {}).items():
                self.wait(lambda: matches(expected, self.latest_json(suffix)))
                problems = differences(expected, self.latest_json(suffix))
                if problems:
                    self.failures.append(f"then ({step['command']}): {self.topic(suffix)}:\n    " + "\n    ".join(problems)
                                         + f"\n    last published: {json.dumps(self.latest_json(suffix), ensure_ascii=False)}")

        availability = self.env.mqtt.get(self.topic("availability"))
        if availability != b"online":
            self.failures.append(f"{self.topic('availability')} is {availability!r} at the end, expected online")

    def barrier(self) -> None:
        """Waits until the bridge has worked through what the device sent before now: a `refresh`
        asks the receiver first, and the bridge reads the answer (queued behind every earlier
        message of that connection) before it answers the refresh or, when an app that speaks the
        media namespace runs, asks the app next. The app's answer is not waited for: an app of a
        replayed status that no simulated app stands behind never answers."""
        topic = self.case.topic
        device_id = self.case.device_id
        sequence = self.sim_sequence(device_id)
        self.counter += 1
        marker = f"realdevices-barrier-{topic[:40]}-{self.counter}-{time.monotonic_ns()}"
        start = self.env.mqtt.mark()
        self.env.mqtt.publish(f"{BASE}/{topic}/command/refresh", json.dumps({"id": marker}))

        def done() -> bool:
            for payload in self.env.mqtt.since(start, f"{BASE}/{topic}/response"):
                if marker in payload.decode(errors="replace"):
                    return True
            return any(m["sequence"] > sequence and m.get("type") == "GET_STATUS" and m["namespace"] == MEDIA
                       for m in self.env.sim.received(device_id))

        if not self.wait(done, BARRIER_WAIT):
            self.notes.append(f"the barrier refresh got no answer within {BARRIER_WAIT:g} s")
        time.sleep(0.3)

    def _unmatched_events(self, wanted: list[dict[str, Any]], mark: int) -> list[dict[str, Any]]:
        left = self.events(mark)
        missing = []
        for want in wanted:
            hit = next((i for i, e in enumerate(left) if matches(want, e)), None)
            if hit is None:
                missing.append(want)
            else:
                left.pop(hit)
        return missing

    # -- the whole case -------------------------------------------------------------------------

    def run(self) -> None:
        case = self.case
        assert case.expect is not None, (
            f"{case.relative} has no `expect`: every message in the corpus must say what the bridge "
            "publishes for it (see Tests/realdevices/README.md)")
        mark = self.env.mqtt.mark()
        for step in case.replay["setup"]:
            self.setup_step(step)
        ids = [case.device_id] + ([case.group.id] if case.group and case.role == "member" else [])
        sim_mark = {device_id: self.sim_sequence(device_id) for device_id in ids}
        self.replay()
        self.check(case.expect, mark, sim_mark)
        if self.failures:
            raise AssertionError(f"{case.test_id}: what the bridge published differs from what the device meant "
                                 f"({case.fixture['meaning']})\n  - " + "\n  - ".join(self.failures)
                                 + ("\n  notes: " + "; ".join(self.notes) if self.notes else ""))


__all__ = ["Env", "Replay"]
