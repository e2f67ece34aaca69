#!/usr/bin/env python3
"""The benchmarks' processes: errors, clocks, percentiles, a child process stopped by its PID,
/proc samples, a mosquitto on a free loopback port, and `cast-sim` fleets.

Shared by scripts/lib/bench_e2e.py and scripts/lib/bench_fleet.py.
"""
from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import subprocess
import time
import urllib.request
from typing import Any

HOST = "127.0.0.1"
CLK_TCK = os.sysconf("SC_CLK_TCK")


class BenchError(Exception):
    pass


def now_ns() -> int:
    return time.monotonic_ns()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {"n": 0}
    v = sorted(values)

    def p(q: float) -> float:
        return v[min(len(v) - 1, max(0, int(round(q * (len(v) - 1)))))]

    return {"n": len(v), "p10": p(0.10), "p50": p(0.50), "p90": p(0.90), "p99": p(0.99), "max": v[-1]}


def fmt_lat(p: dict) -> str:
    """p50 / p99 of `percentiles`, or "-" without samples."""
    if not p or not p.get("n"):
        return "-"
    return f"{p['p50']:.2f} / {p['p99']:.2f}"


# --- processes -------------------------------------------------------------------------------

class Proc:
    """A child process, stopped by its PID (SIGTERM, then SIGKILL after a grace period)."""

    def __init__(self, name: str, argv: list[str], log_path: str, env: dict[str, str] | None = None,
                 capture_stdout: bool = False):
        self.name = name
        self.log_path = log_path
        self.log = open(log_path, "wb")
        self.popen = subprocess.Popen(
            argv, stdout=subprocess.PIPE if capture_stdout else self.log, stderr=self.log,
            stdin=subprocess.DEVNULL, env=env)
        self.started_ns = now_ns()

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def stop(self, grace: float = 10.0) -> None:
        if self.alive():
            try:
                os.kill(self.pid, signal.SIGTERM)
                self.popen.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                os.kill(self.pid, signal.SIGKILL)
                self.popen.wait(timeout=5)
            except ProcessLookupError:
                pass
        if self.popen.stdout:
            self.popen.stdout.close()
        self.log.close()

    def tail(self, n: int = 3000) -> str:
        try:
            with open(self.log_path, "rb") as f:
                return f.read()[-n:].decode(errors="replace")
        except OSError:
            return ""

    def read_json_lines(self, count: int, timeout: float) -> list[dict]:
        """Reads `count` JSON lines from stdout within `timeout` seconds."""
        assert self.popen.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(self.popen.stdout, selectors.EVENT_READ)
        buf = b""
        lines: list[dict] = []
        deadline = time.monotonic() + timeout
        while len(lines) < count:
            left = deadline - time.monotonic()
            if left <= 0 or not self.alive():
                raise BenchError(f"{self.name}: {len(lines)}/{count} lines before timeout or exit:\n{self.tail()}")
            if not sel.select(timeout=min(left, 1.0)):
                continue
            chunk = os.read(self.popen.stdout.fileno(), 1 << 16)
            if not chunk:
                continue
            buf += chunk
            while b"\n" in buf and len(lines) < count:
                line, buf = buf.split(b"\n", 1)
                if line.strip():
                    lines.append(json.loads(line))
        sel.close()
        return lines


def proc_sample(pid: int) -> dict[str, float]:
    """CPU seconds (user+system), RSS MiB and threads of a process from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / CLK_TCK
    rss_kib = 0
    threads = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss_kib = int(line.split()[1])
            elif line.startswith("Threads:"):
                threads = int(line.split()[1])
    return {"cpu": cpu, "rss": rss_kib / 1024, "threads": threads}


# --- simulator -------------------------------------------------------------------------------

class Simulator:
    """A `cast-sim` process with `n` devices: on 127.0.0.1 with ports of their own, or with
    `own_address` each on an address of its own counting up from it (port 8009, as real devices).
    Topics are `d<first + index>`."""

    def __init__(self, binary: str, n: int, workdir: str, tag: str, own_address: str | None = None,
                 first: int = 0):
        self.devices: list[dict] = []
        argv = [binary, "--control-port", "0", "--reply-latency-ms", "0", "--launch-latency-ms", "10",
                "--media-tick-ms", "1000", "--log-level", "warning"]
        if own_address:
            argv += ["--own-addresses", own_address]
        for i in range(n):
            argv += ["--device", f"Bench {tag} {first + i:04d}:0"]
        self.proc = Proc(f"cast-sim({n})", argv, os.path.join(workdir, f"cast-sim-{tag}-{n}.log"),
                         capture_stdout=True)
        lines = self.proc.read_json_lines(n + 1, timeout=60 + n * 0.05)
        self.devices = [line for line in lines if "id" in line]
        for i, d in enumerate(self.devices):
            d["topic"] = f"d{first + i:04d}"
        self.control = next(line["control_port"] for line in lines if "control_port" in line)

    def http(self, method: str, path: str, body: Any = None, timeout: float = 10) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"http://{HOST}:{self.control}{path}", data=data, method=method)
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.loads(r.read())

    def stop(self) -> None:
        self.proc.stop()


# --- broker ----------------------------------------------------------------------------------

class Broker:
    """A mosquitto on a free loopback port (no persistence: a restart loses every retained
    message); `restart()` stops it and starts it again on the same port."""

    def __init__(self, workdir: str):
        self.workdir = workdir
        self.port = free_port()
        self.conf = os.path.join(workdir, "mosquitto.conf")
        with open(self.conf, "w") as f:
            f.write(f"listener {self.port} {HOST}\nallow_anonymous true\nset_tcp_nodelay true\n"
                    "persistence false\nmax_queued_messages 0\nmax_inflight_messages 0\n")
        self.starts = 0
        self.proc = self._start()

    def _start(self) -> Proc:
        self.starts += 1
        proc = Proc("mosquitto", ["mosquitto", "-c", self.conf],
                    os.path.join(self.workdir, f"mosquitto-{self.starts}.log"))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and proc.alive():
            try:
                socket.create_connection((HOST, self.port), timeout=1).close()
                return proc
            except OSError:
                time.sleep(0.05)
        proc.stop()
        raise BenchError(f"mosquitto did not listen on {HOST}:{self.port}:\n{proc.tail()}")

    def restart(self) -> None:
        self.proc.stop()
        self.proc = self._start()

    def stop(self) -> None:
        self.proc.stop()
