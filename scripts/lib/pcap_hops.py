"""Per-hop timing from packet timestamps on loopback, for `scripts/bench e2e --parts hops`.

A capture (tcpdump on `lo`, nanosecond kernel timestamps) of the broker's and the simulated
devices' ports while inputs arrive spaced apart (cold: every thread on the path has gone back to
sleep). For each input packet that enters a bridge, the first packet the bridge sends on after it
is its output; the difference is the time spent inside the bridge process — from the packet
that carries the input to the packet that carries the output, whatever the bridge is written in.

Only lengths and ports are read (TLS stays encrypted): an MQTT PUBLISH from the broker to the
bridge, and the TLS record the bridge writes to the device, are told apart from acks and
heartbeats by direction, size and time (inputs are spaced 50 ms apart; an output must follow its
input within `window_ms`).
"""
from __future__ import annotations

import os
import shutil
import signal
import struct
import subprocess
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Packet:
    ns: int
    sport: int
    dport: int
    length: int  # TCP payload bytes


class CaptureError(Exception):
    pass


class Capture:
    """tcpdump on lo for `ports`, written to `path`; `stop()` returns the packets."""

    def __init__(self, ports: list[int], path: str):
        if shutil.which("tcpdump") is None:
            raise CaptureError("tcpdump is not installed (scripts/bench installs it with apt-get)")
        self.path = path
        expr = " or ".join(f"tcp port {p}" for p in sorted(set(ports)))
        self.proc = subprocess.Popen(
            ["tcpdump", "-i", "lo", "-U", "-s", "128", "--time-stamp-precision=nano", "-w", path, expr],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
                raise CaptureError(f"tcpdump exited: {err.strip()}")
            if os.path.exists(path) and os.path.getsize(path) >= 24:
                break
            time.sleep(0.05)
        else:
            self.stop()
            raise CaptureError("tcpdump did not start within 10 s")
        time.sleep(0.3)  # the filter is attached once the header is written; a moment more

    def stop(self) -> list[Packet]:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        if self.proc.stderr:
            self.proc.stderr.close()
        return read_pcap(self.path)


def read_pcap(path: str) -> list[Packet]:
    """IPv4/TCP packets of a pcap file (Ethernet or Linux cooked link layer), any byte order."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        return []
    for endian in ("<", ">"):
        magic = struct.unpack(endian + "I", data[:4])[0]
        if magic in (0xA1B2C3D4, 0xA1B23C4D):
            nano = magic == 0xA1B23C4D
            break
    else:
        raise CaptureError(f"{path}: not a pcap file")
    linktype = struct.unpack(endian + "I", data[20:24])[0]
    l2 = {1: 14, 113: 16, 276: 20}.get(linktype)
    if l2 is None:
        raise CaptureError(f"{path}: link type {linktype} not handled")
    packets: list[Packet] = []
    off = 24
    while off + 16 <= len(data):
        sec, frac, incl, _orig = struct.unpack(endian + "IIII", data[off:off + 16])
        off += 16
        pkt = data[off:off + incl]
        off += incl
        ip = pkt[l2:]
        if len(ip) < 20 or ip[0] >> 4 != 4 or ip[9] != 6:
            continue
        ihl = (ip[0] & 15) * 4
        total = struct.unpack(">H", ip[2:4])[0]
        tcp = ip[ihl:]
        if len(tcp) < 13:
            continue
        sport, dport = struct.unpack(">HH", tcp[:4])
        doff = (tcp[12] >> 4) * 4
        ns = sec * 1_000_000_000 + (frac if nano else frac * 1000)
        packets.append(Packet(ns, sport, dport, max(0, total - ihl - doff)))
    packets.sort(key=lambda p: p.ns)
    return packets


def hop_times(packets: list[Packet], into, out_of, min_in: int = 9, min_out: int = 1,
              window_ms: float = 20.0) -> list[float]:
    """Milliseconds from each input packet (`into(p)` and at least `min_in` payload bytes) to the
    first output packet after it (`out_of(p)`, at least `min_out` bytes) within `window_ms`."""
    outs = [p for p in packets if out_of(p) and p.length >= min_out]
    result: list[float] = []
    j = 0
    for p in packets:
        if not (into(p) and p.length >= min_in):
            continue
        while j < len(outs) and outs[j].ns < p.ns:
            j += 1
        if j < len(outs) and outs[j].ns - p.ns <= window_ms * 1e6:
            result.append((outs[j].ns - p.ns) / 1e6)
    return result


def other_port(packets: list[Packet], server: int, exclude: set[int]) -> int | None:
    """The client port that talks to `server` most, other than `exclude` (the bridge's MQTT socket
    next to the benchmark's own client)."""
    counts: dict[int, int] = {}
    for p in packets:
        if p.sport == server and p.dport not in exclude:
            counts[p.dport] = counts.get(p.dport, 0) + 1
    return max(counts, key=counts.get) if counts else None
