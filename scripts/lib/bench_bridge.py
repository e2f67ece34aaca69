#!/usr/bin/env python3
"""The benchmarks' MQTT side: a timestamping paho watcher, a bridge under test (cast2mqtt or the
Python peer) started on a static device list, and the measurements made through it (command,
status, idle, burst).

Shared by scripts/lib/bench_e2e.py and scripts/lib/bench_fleet.py.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import threading
import time
from typing import Any

import paho.mqtt.client as mqtt

from bench_procs import HOST, BenchError, Proc, Simulator, now_ns, percentiles, proc_sample

RECEIVER_NS = "urn:x-cast:com.google.cast.receiver"


# --- MQTT side -------------------------------------------------------------------------------

class Watcher:
    """One paho client: subscriptions with a callback that timestamps every message on arrival."""

    def __init__(self, port: int, name: str):
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"bench-{name}-{os.getpid()}",
                                  protocol=mqtt.MQTTv311)
        self.client.max_inflight_messages_set(1000)
        self.cond = threading.Condition()
        self.handlers: list[Any] = []
        self.connected = threading.Event()
        self.client.on_connect = lambda c, u, f, rc, p: self.connected.set()
        self.client.on_message = self._on_message
        self.client.connect(HOST, port, keepalive=60)
        # Like the bridges and the broker: without it, a PUBACK followed by the next PUBLISH on
        # the same socket waits for the broker's delayed ACK (Nagle), ~40 ms per sample.
        sock = self.client.socket()
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.client.loop_start()
        if not self.connected.wait(10):
            raise BenchError(f"MQTT client {name} did not connect")

    def _on_message(self, client, userdata, msg) -> None:  # noqa: ANN001
        t = now_ns()
        with self.cond:
            for h in self.handlers:
                h(msg.topic, msg.payload, t)
            self.cond.notify_all()

    def subscribe(self, topic: str, handler) -> None:  # noqa: ANN001
        done = threading.Event()
        self.client.on_subscribe = lambda c, u, mid, rc, p: done.set()
        with self.cond:
            self.handlers.append(handler)
        self.client.subscribe(topic, qos=1)
        if not done.wait(10):
            raise BenchError(f"no SUBACK for {topic}")

    def unsubscribe(self, topic: str) -> None:
        done = threading.Event()
        self.client.on_unsubscribe = lambda c, u, mid, rc, p: done.set()
        self.client.unsubscribe(topic)
        if not done.wait(10):
            raise BenchError(f"no UNSUBACK for {topic}")

    def clear_handlers(self) -> None:
        with self.cond:
            self.handlers.clear()

    def wait_for(self, predicate, timeout: float) -> bool:  # noqa: ANN001
        deadline = time.monotonic() + timeout
        with self.cond:
            while not predicate():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(min(left, 1.0))  # also re-checks conditions no message changes (a process died)
        return True

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


# --- bridges ---------------------------------------------------------------------------------

def write_config(path: str, mqtt_port: int, base: str, sim: Simulator, state_dir: str, web_port: int | None = None) -> None:
    lines = [
        "mqtt:", f"  url: mqtt://{HOST}:{mqtt_port}", f"  base_topic: {base}", f"  client_id: {base}-bench",
        "discovery:", "  mdns: false", "  devices:",
    ]
    for d in sim.devices:
        lines.append(f"    - {{host: {d['host']}, port: {d['port']}, name: \"{d['name']}\", id: \"{d['id']}\", "
                     f"topic: {d['topic']}}}")
    lines += [f"state_dir: {state_dir}", "log:", "  level: warning"]
    if web_port:
        lines += ["web:", f'  listen: "{HOST}:{web_port}"']
    lines.append("")
    with open(path, "w") as f:
        f.write("\n".join(lines))


class Bridge:
    """A bridge under test, started against `sim` and the broker; waits until all devices are online."""

    def __init__(self, kind: str, argv_for_config, mqtt_port: int, sim: Simulator, workdir: str,
                 online_timeout: float, web_port: int | None = None, stage_trace: str | None = None):
        self.kind = kind
        self.base = "c2m" if kind == "cast2mqtt" else "peer"
        n = len(sim.devices)
        tag = f"{kind}-{n}-{int(time.time() * 1000) % 100000}"
        config = os.path.join(workdir, f"{tag}.yaml")
        state_dir = os.path.join(workdir, f"{tag}-state")
        os.makedirs(state_dir, exist_ok=True)
        write_config(config, mqtt_port, self.base, sim, state_dir, web_port)
        self.web_url = f"http://{HOST}:{web_port}/" if web_port else None
        self.watch = Watcher(mqtt_port, f"{kind}-watch")
        online: set[str] = set()

        def on_avail(topic: str, payload: bytes, t: int) -> None:
            dev = topic.split("/")[1]
            if payload == b"online":
                online.add(dev)
            else:
                online.discard(dev)

        # Clear retained availability a previous bridge left on this base topic.
        self.watch.subscribe(f"{self.base}/+/availability", on_avail)
        time.sleep(0.3)
        online.clear()
        env = dict(os.environ)
        if stage_trace:
            env["CAST2MQTT_STAGE_TRACE"] = stage_trace
        self.proc = Proc(kind, argv_for_config(config), os.path.join(workdir, f"{tag}.log"), env=env)
        ok = self.watch.wait_for(lambda: len(online) >= n or not self.proc.alive(), online_timeout)
        self.online_s = (now_ns() - self.proc.started_ns) / 1e9
        if not ok or len(online) < n:
            missing = n - len(online)
            self.stop()
            raise BenchError(f"{kind}: {missing} of {n} devices not online after {online_timeout:.0f} s:\n"
                             f"{self.proc.tail()}")
        self.watch.clear_handlers()

    def stop(self) -> None:
        self.watch.close()
        self.proc.stop(grace=20)


def bench_arguments(doc: str | None, peer_help: str) -> argparse.ArgumentParser:
    """The arguments every bridge benchmark takes: the binaries and the peer."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--daemon", required=True, help="the release cast2mqtt binary")
    ap.add_argument("--sim", required=True, help="the cast-sim binary")
    ap.add_argument("--peer", help=peer_help)
    ap.add_argument("--only-peer", action="store_true", help="run the peer only (with --peer)")
    return ap


def bridges_under_test(daemon: str, peer: str | None, only_peer: bool):  # noqa: ANN201
    """The bridges a run measures ("cast2mqtt", and "peer" with a peer script) and, per kind, the
    command line for a config file."""
    kinds = [] if only_peer else ["cast2mqtt"]
    if peer:
        kinds.append("peer")

    def argv_for(kind: str):  # noqa: ANN202
        if kind == "cast2mqtt":
            return lambda cfg: [daemon, "run", "--config", cfg]
        return lambda cfg: [sys.executable, peer, "run", "--config", cfg]

    return kinds, argv_for


def topic(bridge: Bridge, dev: dict, leaf: str) -> str:
    return f"{bridge.base}/{dev['topic']}/{leaf}"


def await_response(w: Watcher, responses: dict, key: Any, timeout: float = 15) -> dict:
    if not w.wait_for(lambda: key in responses, timeout):
        raise BenchError(f"no response for command id {key!r}")
    return responses[key]


def json_or_none(payload: bytes) -> Any:
    """The JSON document in an MQTT payload, or None when it is not JSON."""
    try:
        return json.loads(payload)
    except ValueError:
        return None


def measure_command(bridge: Bridge, sim: Simulator, samples: int, warmup: int, spacing: float = 0.0,
                    to_response: list[float] | None = None) -> list[float]:
    """Publish -> the device has SET_VOLUME, in ms; with `to_response`, publish -> the command's
    response is appended there as well."""
    dev = sim.devices[0]
    responses: dict[Any, dict] = {}
    answered: dict[Any, int] = {}

    def on_resp(t: str, p: bytes, ts: int) -> None:
        doc = json_or_none(p)
        if doc is None:
            return
        responses[doc.get("id")] = doc
        answered.setdefault(doc.get("id"), ts)

    bridge.watch.subscribe(topic(bridge, dev, "response"), on_resp)
    sim.http("DELETE", f"/devices/{dev['id']}/received")
    sent: list[int] = []
    for i in range(samples + warmup):
        if spacing:
            time.sleep(spacing)
        percent = 30 if i % 2 == 0 else 40
        t0 = now_ns()
        bridge.watch.client.publish(topic(bridge, dev, "command/volume"),
                                    json.dumps({"percent": percent, "id": i}), qos=1)
        sent.append(t0)
        resp = await_response(bridge.watch, responses, i)
        if resp.get("status") != "ok":
            raise BenchError(f"volume command {i}: {resp}")
        if to_response is not None and i >= warmup:
            to_response.append((answered[i] - t0) / 1e6)
    bridge.watch.clear_handlers()
    got = sim.http("GET", f"/devices/{dev['id']}/received?namespace={RECEIVER_NS}&type=SET_VOLUME", timeout=30)
    if len(got) != len(sent):
        raise BenchError(f"command: {len(sent)} published, the device has {len(got)} SET_VOLUME")
    return [(m["monotonic_ns"] - t0) / 1e6 for m, t0 in zip(got[warmup:], sent[warmup:])]


def measure_status(bridge: Bridge, sim: Simulator, samples: int, warmup: int, spacing: float = 0.0) -> list[float]:
    dev = sim.devices[1 % len(sim.devices)]
    responses: dict[Any, dict] = {}
    seen: dict[str, int] = {}

    def on_msg(t: str, p: bytes, ts: int) -> None:
        doc = json_or_none(p)
        if doc is None:
            return
        if t.endswith("/response"):
            responses[doc.get("id")] = doc
        elif isinstance(doc, dict) and isinstance(doc.get("title"), str):
            seen.setdefault(doc["title"], ts)

    bridge.watch.subscribe(topic(bridge, dev, "response"), on_msg)
    bridge.watch.subscribe(topic(bridge, dev, "media"), on_msg)
    bridge.watch.client.publish(topic(bridge, dev, "command/load"), json.dumps(
        {"url": "http://127.0.0.1:9/bench.mp3", "content_type": "audio/mpeg", "title": "start", "id": "load"}),
        qos=1)
    resp = await_response(bridge.watch, responses, "load", timeout=30)
    if resp.get("status") != "ok":
        raise BenchError(f"load: {resp}")
    if not bridge.watch.wait_for(lambda: "start" in seen, 10):
        raise BenchError("status: the loaded media never showed up")
    lat: list[float] = []
    run = f"{bridge.kind[:1]}{os.getpid()}-"
    for i in range(samples + warmup):
        if spacing:
            time.sleep(spacing)
        title = f"{run}{i}"
        written = sim.http("POST", f"/devices/{dev['id']}/bench", {"action": "media_title", "title": title})
        if not bridge.watch.wait_for(lambda: title in seen, 10):
            raise BenchError(f"status: title {title} never reached the subscriber")
        if i >= warmup:
            lat.append((seen[title] - written["monotonic_ns"]) / 1e6)
    bridge.watch.clear_handlers()
    return lat


def measure_idle(bridge: Bridge, settle: float, seconds: float) -> dict[str, float]:
    time.sleep(settle)
    a = proc_sample(bridge.proc.pid)
    time.sleep(seconds)
    b = proc_sample(bridge.proc.pid)
    if not bridge.proc.alive():
        raise BenchError(f"{bridge.kind} died while idle:\n{bridge.proc.tail()}")
    return {"rss": b["rss"], "threads": b["threads"], "cpu_pct": 100 * (b["cpu"] - a["cpu"]) / seconds}


def measure_burst(bridge: Bridge, sim: Simulator, total: int, ndev: int, timeout: float) -> dict[str, Any]:
    devs = sim.devices[:ndev]
    responses: dict[str, tuple[str, int]] = {}

    def on_resp(t: str, p: bytes, ts: int) -> None:
        doc = json_or_none(p)
        if doc is None:
            return
        rid = doc.get("id")
        if isinstance(rid, str) and rid.startswith("b") and rid not in responses:
            status = str(doc.get("status"))
            if status != "ok" and isinstance(doc.get("error"), dict):
                status = str(doc["error"].get("code"))
            responses[rid] = (status, ts)

    bridge.watch.subscribe(f"{bridge.base}/+/response", on_resp)
    sent: dict[str, int] = {}
    t_start = now_ns()
    for i in range(total):
        dev = devs[i % len(devs)]
        rid = f"b{i}"
        sent[rid] = now_ns()
        bridge.watch.client.publish(topic(bridge, dev, "command/volume"),
                                    json.dumps({"percent": 10 + i % 80, "id": rid}), qos=1)
    publish_s = (now_ns() - t_start) / 1e9
    bridge.watch.wait_for(lambda: len(responses) >= total, timeout)
    done_s = (now_ns() - t_start) / 1e9
    bridge.watch.clear_handlers()
    by_status: dict[str, int] = {}
    lat: list[float] = []
    for rid, (status, ts) in list(responses.items()):
        by_status[status] = by_status.get(status, 0) + 1
        lat.append((ts - sent[rid]) / 1e6)
    return {"sent": total, "received": len(responses), "lost": total - len(responses), "by_status": by_status,
            "lat": percentiles(lat), "publish_s": publish_s, "done_s": done_s}
