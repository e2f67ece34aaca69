"""Reads the daemon's stage trace (CAST2MQTT_STAGE_TRACE, Sources/StageTrace) of a cold run.

Each line is "<stage> <CLOCK_REALTIME ns>". A cold input is one whose first stage comes at
least `gap_ms` after the mark before it (every thread on the path had time to fall asleep);
its later stages are the next marks of the expected kinds, in order, within `window_ms`.
The result is, per path, the time between consecutive stages (p50 / p10 / p90 microseconds).
"""
from __future__ import annotations

import statistics

# Stage numbers as in Sources/StageTrace/StageTrace.swift, with what the step between the
# previous stage and this one covers.
COMMAND = (
    (1, "MQTT socket readable (MQTT thread awake)"),
    (2, "libmosquitto reads and parses the PUBLISH"),
    (3, "copied out, queued, the core's loop woken"),
    (4, "the core's loop wakes and takes it"),
    (20, "to the core"),
    (21, "the core handles the command"),
    (5, "operation to the device's client, Cast message built and written to the channel"),
    (6, "flush: TLS seal and write(2)"),
)
STATUS = (
    (11, "Cast socket readable, bytes read"),
    (12, "TLS open, frame and protobuf decode"),
    (13, "session machine: status parsed, snapshot queued"),
    (14, "the consumer takes it (same loop)"),
    (20, "to the core"),
    (21, "the core handles the snapshot"),
    (15, "to the first publication"),
    (16, "libmosquitto publish and write(2)"),
)


def read(path: str) -> list[tuple[int, int]]:
    marks = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 2:
                marks.append((int(parts[0]), int(parts[1])))
    marks.sort(key=lambda m: m[1])
    return marks


def chains(marks: list[tuple[int, int]], path: tuple, gap_ms: float, window_ms: float) -> list[list[int]]:
    stages = [s for s, _ in path]
    out = []
    for i, (stage, t) in enumerate(marks):
        if stage != stages[0] or (i > 0 and t - marks[i - 1][1] < gap_ms * 1e6):
            continue
        times, want = [t], 1
        for s, u in marks[i + 1:i + 200]:
            if u - t > window_ms * 1e6 or want == len(stages):
                break
            if s == stages[want]:
                times.append(u)
                want += 1
        if want == len(stages):
            out.append(times)
    return out


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def summarize(path_file: str, gap_ms: float = 20, window_ms: float = 10) -> dict[str, list[dict]]:
    marks = read(path_file)
    result = {}
    for name, path in (("command", COMMAND), ("status", STATUS)):
        found = chains(marks, path, gap_ms, window_ms)
        rows = []
        if found:
            for k in range(1, len(path)):
                d = [(c[k] - c[k - 1]) / 1e3 for c in found]
                rows.append({"step": f"{path[k - 1][0]}->{path[k][0]}", "what": path[k][1], "n": len(found),
                             "p50": statistics.median(d), "p10": pct(d, 0.1), "p90": pct(d, 0.9)})
            total = [(c[-1] - c[0]) / 1e3 for c in found]
            rows.append({"step": "total", "what": "first stage to last", "n": len(found),
                         "p50": statistics.median(total), "p10": pct(total, 0.1), "p90": pct(total, 0.9)})
        result[name] = rows
    return result


def render(summary: dict[str, list[dict]]) -> str:
    lines = []
    for name, rows in summary.items():
        if not rows:
            lines.append(f"{name}: no complete cold chains in the trace")
            continue
        lines.append(f"| cold {name}, inside the bridge (n {rows[0]['n']}) | p50 µs | p10 µs | p90 µs |")
        lines.append("|---|---|---|---|")
        for r in rows:
            lines.append(f"| {r['step']}: {r['what']} | {r['p50']:.1f} | {r['p10']:.1f} | {r['p90']:.1f} |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    import sys
    print(render(summarize(sys.argv[1])))
