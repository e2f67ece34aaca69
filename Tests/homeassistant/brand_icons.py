"""Draws the integration's brand icon (custom_components/cast2mqtt/brand/icon.png, 256x256, and
icon@2x.png, 512x512): a cast symbol on a blue rounded square, anti-aliased, written as PNG with
the standard library only. Home Assistant 2026.3+ and HACS read the images from that folder.

    python3 Tests/homeassistant/brand_icons.py      # rewrites both files
"""

from __future__ import annotations

import math
import pathlib
import struct
import zlib

BRAND = pathlib.Path(__file__).resolve().parents[2] / "custom_components" / "cast2mqtt" / "brand"
BLUE = (0x1E, 0x6F, 0xD9)
WHITE = (0xFF, 0xFF, 0xFF)


def _in_rounded_square(x: float, y: float, radius: float = 0.2) -> bool:
    cx = min(max(x, radius), 1 - radius)
    cy = min(max(y, radius), 1 - radius)
    return (x - cx) ** 2 + (y - cy) ** 2 <= radius**2


def _in_symbol(x: float, y: float) -> bool:
    """The cast symbol: a screen frame open at its lower left, and a dot and two arcs there."""
    left, right, top, bottom, stroke = 0.2, 0.8, 0.24, 0.74, 0.06
    in_frame = left <= x <= right and top <= y <= bottom and not (
        left + stroke <= x <= right - stroke and top + stroke <= y <= bottom - stroke)
    # The frame is open where the waves are: the left edge below 0.5, the bottom edge left of 0.5.
    if in_frame and ((x < left + stroke and y > 0.5) or (y > bottom - stroke and x < 0.5)):
        in_frame = False
    cx, cy = left, bottom + 0.02
    if x < cx or y > cy:
        return in_frame
    distance = math.hypot(x - cx, y - cy)
    in_waves = distance <= 0.09 or 0.15 <= distance <= 0.205 or 0.265 <= distance <= 0.32
    return in_frame or in_waves


def render(size: int, samples: int = 4) -> bytes:
    rows = []
    for py in range(size):
        row = bytearray([0])  # filter: none
        for px in range(size):
            background = symbol = 0
            for sy in range(samples):
                for sx in range(samples):
                    x = (px + (sx + 0.5) / samples) / size
                    y = (py + (sy + 0.5) / samples) / size
                    if _in_rounded_square(x, y):
                        background += 1
                        symbol += _in_symbol(x, y)
            total = samples * samples
            alpha = round(255 * background / total)
            share = symbol / background if background else 0.0
            color = [round(BLUE[i] * (1 - share) + WHITE[i] * share) for i in range(3)]
            row += bytes(color + [alpha])
        rows.append(bytes(row))
    raw = zlib.compress(b"".join(rows), 9)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0)  # 8-bit RGBA
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", raw) + chunk(b"IEND", b"")


def main() -> None:
    BRAND.mkdir(exist_ok=True)
    (BRAND / "icon.png").write_bytes(render(256))
    (BRAND / "icon@2x.png").write_bytes(render(512))


if __name__ == "__main__":
    main()
