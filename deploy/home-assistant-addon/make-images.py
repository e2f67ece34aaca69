#!/usr/bin/env python3
"""Draws the add-on's icon.png (128x128) and logo.png (250x100) with the standard library only
(zlib-compressed RGBA rows): a rounded blue square with the Cast symbol (a screen's corner and
three waves), and for the logo the same symbol beside three bars standing for MQTT messages.
Run it again after changing a colour: `python3 deploy/home-assistant-addon/make-images.py`."""

import math
import pathlib
import struct
import zlib

BLUE = (3, 120, 200, 255)
WHITE = (255, 255, 255, 255)
CLEAR = (0, 0, 0, 0)


def png(path: pathlib.Path, width: int, height: int, pixel) -> None:
    rows = b"".join(b"\x00" + b"".join(bytes(pixel(x, y)) for x in range(width)) for y in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows, 9))
                     + chunk(b"IEND", b""))


def rounded(x: float, y: float, x0: float, y0: float, size: float, radius: float) -> bool:
    cx = min(max(x, x0 + radius), x0 + size - radius)
    cy = min(max(y, y0 + radius), y0 + size - radius)
    return (x - cx) ** 2 + (y - cy) ** 2 <= radius ** 2


def cast_symbol(x: float, y: float, x0: float, y0: float, s: float) -> bool:
    """The Cast symbol in a square of side s at (x0, y0); coordinates in that square's units."""
    u, v = (x - x0) / s, (y - y0) / s
    line = 0.075
    # The screen: a frame open at the bottom left, where the waves are.
    inside = 0.12 <= u <= 0.88 and 0.18 <= v <= 0.82
    frame = inside and (u <= 0.12 + line or u >= 0.88 - line or v <= 0.18 + line or v >= 0.82 - line)
    if frame and not (u < 0.45 and v > 0.5):
        return True
    # Three waves around the bottom-left corner (0.12, 0.88).
    d = math.hypot(u - 0.12, v - 0.88)
    if u >= 0.12 and v <= 0.88:
        if d <= 0.09:
            return True
        for r in (0.22, 0.36):
            if abs(d - r) <= line / 2:
                return True
    return False


def icon(x: int, y: int):
    if not rounded(x + 0.5, y + 0.5, 0, 0, 128, 24):
        return CLEAR
    return WHITE if cast_symbol(x + 0.5, y + 0.5, 16, 16, 96) else BLUE


def logo(x: int, y: int):
    if rounded(x + 0.5, y + 0.5, 0, 0, 100, 20):
        return WHITE if cast_symbol(x + 0.5, y + 0.5, 12, 12, 76) else BLUE
    # Three bars: messages on their way.
    for n, length in enumerate((120, 90, 105)):
        top = 22 + n * 22
        if top <= y < top + 12 and 116 <= x < 116 + length:
            return BLUE
    return CLEAR


if __name__ == "__main__":
    here = pathlib.Path(__file__).resolve().parent / "cast2mqtt"
    png(here / "icon.png", 128, 128, icon)
    png(here / "logo.png", 250, 100, logo)
