"""A cast-sim process for the interop tests: started with the given arguments, its JSON start-up
lines read (devices, groups, control port), its control endpoint called, stopped by its PID."""

import json
import os
import queue
import random
import subprocess
import threading
import time
import urllib.request

import pytest

CAST_SIM = os.environ.get("CAST_SIM", ".build/debug/cast-sim")


def wait_for(predicate, timeout=10.0, interval=0.05, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    assert predicate(), f"timed out after {timeout}s waiting for {what}"


def loopback_address():
    """An address of its own on lo, away from 127.0.0.x and random, so runs that overlap (here or
    in another checkout on this machine) do not meet."""
    return f"127.{random.randint(100, 250)}.{random.randint(0, 255)}.{random.randint(1, 254)}"


def dashed(hex_id):
    return f"{hex_id[:8]}-{hex_id[8:12]}-{hex_id[12:16]}-{hex_id[16:20]}-{hex_id[20:]}"


class CastSim:
    """cast-sim with `arguments` (plus a control endpoint); `devices` and `groups` as it printed them."""

    def __init__(self, arguments, expect_devices=1):
        if not os.access(CAST_SIM, os.X_OK):
            pytest.fail(f"cast-sim not found at {CAST_SIM} (build it: swift build --product cast-sim)")
        self.proc = subprocess.Popen(
            [CAST_SIM, *arguments, "--control-port", "0", "--log-level", "warning"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines = queue.Queue()
        threading.Thread(target=lambda: [lines.put(l) for l in self.proc.stdout], daemon=True).start()
        self.devices = []
        self.groups = []
        self.control_port = None
        deadline = time.monotonic() + 20
        while self.control_port is None and time.monotonic() < deadline:
            try:
                line = lines.get(timeout=0.2)
            except queue.Empty:
                if self.proc.poll() is not None:
                    break
                continue
            data = json.loads(line)
            if "control_port" in data:
                self.control_port = data["control_port"]
            elif "group" in data:
                self.groups.append(data["group"])
            elif "id" in data:
                self.devices.append(data)
        if self.control_port is None or len(self.devices) < expect_devices:
            self.stop()
            pytest.fail("cast-sim did not report its ports: " + (self.proc.stderr.read() or ""))

    def device(self, name):
        return next(d for d in self.devices if d["name"] == name)

    def http(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{self.control_port}{path}", data=data, method=method)
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    def received(self, device_id, namespace=None):
        messages = self.http("GET", f"/devices/{device_id}/received")
        return [m for m in messages if namespace is None or m["namespace"] == namespace]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()  # SIGTERM to this PID
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)


def one_device_sim(name, device_id, launch_latency_ms):
    """cast-sim with one device, for a pytest fixture (`yield from`): stopped afterwards, and it
    must have exited cleanly."""
    sim = CastSim(["--device", f"{name}:0:{device_id}", "--launch-latency-ms", str(launch_latency_ms)])
    sim.port = sim.devices[0]["port"]
    try:
        yield sim
    finally:
        sim.stop()
    assert sim.proc.returncode == 0, f"cast-sim exited with {sim.proc.returncode}"


def connected_cast(sim, device_id, model, name):
    """pychromecast connected to the simulated device, for a pytest fixture (`yield from`)."""
    import uuid

    import pychromecast

    cc = pychromecast.get_chromecast_from_host(
        ("127.0.0.1", sim.port, uuid.UUID(device_id), model, name), tries=3, retry_wait=1, timeout=10)
    try:
        cc.wait(timeout=10)
        yield cc
    finally:
        cc.disconnect(timeout=5)
