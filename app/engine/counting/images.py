"""Image token costs: pixel size from the first bytes of PNG/JPEG/GIF/WebP data, and each
provider's published formula (OpenAI tiles, Anthropic pixels/750)."""

from __future__ import annotations

import base64
import binascii
import math
import struct

# Enough base64 to reach a JPEG SOF marker after typical EXIF/ICC headers.
_HEADER_B64_CHARS = 65_536


def image_size_from_base64(data: str) -> tuple[int, int] | None:
    """(width, height) read from the header of base64 image data, or None if unknown."""
    if data.startswith("data:"):
        comma = data.find(",")
        data = data[comma + 1 :] if comma != -1 else ""
    head = data[:_HEADER_B64_CHARS]
    head = head[: len(head) - len(head) % 4]
    try:
        raw = base64.b64decode(head, validate=False)
    except (binascii.Error, ValueError):
        return None
    return image_size(raw)


def image_size(raw: bytes) -> tuple[int, int] | None:
    """(width, height) from the first bytes of an image file, or None."""
    if raw.startswith(b"\x89PNG\r\n\x1a\n") and len(raw) >= 24:
        width, height = struct.unpack(">II", raw[16:24])
        return _positive(width, height)
    if raw[:6] in (b"GIF87a", b"GIF89a") and len(raw) >= 10:
        width, height = struct.unpack("<HH", raw[6:10])
        return _positive(width, height)
    if raw.startswith(b"\xff\xd8"):
        return _jpeg_size(raw)
    if raw[:4] == b"RIFF" and raw[8:12] == b"WEBP":
        return _webp_size(raw)
    return None


def _positive(width: int, height: int) -> tuple[int, int] | None:
    return (width, height) if width > 0 and height > 0 else None


def _jpeg_size(raw: bytes) -> tuple[int, int] | None:
    i = 2
    while i + 9 < len(raw):
        if raw[i] != 0xFF:
            i += 1
            continue
        marker = raw[i + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7 or marker == 0xFF:
            i += 1 if marker == 0xFF else 2
            continue
        (length,) = struct.unpack(">H", raw[i + 2 : i + 4])
        # SOF0..SOF15 except DHT (C4), JPG (C8) and DAC (CC) carry the frame size.
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", raw[i + 5 : i + 9])
            return _positive(width, height)
        i += 2 + length
    return None


def _webp_size(raw: bytes) -> tuple[int, int] | None:
    chunk = raw[12:16]
    if chunk == b"VP8 " and len(raw) >= 30:
        width, height = struct.unpack("<HH", raw[26:30])
        return _positive(width & 0x3FFF, height & 0x3FFF)
    if chunk == b"VP8L" and len(raw) >= 25:
        bits = int.from_bytes(raw[21:25], "little")
        return _positive((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1)
    if chunk == b"VP8X" and len(raw) >= 30:
        width = int.from_bytes(raw[24:27], "little") + 1
        height = int.from_bytes(raw[27:30], "little") + 1
        return _positive(width, height)
    return None


def openai_image_tokens(width: int, height: int, detail: str | None) -> int:
    """OpenAI's published vision cost: 85 base + 170 per 512px tile after scaling."""
    if detail == "low":
        return 85
    scale = min(1.0, 2048 / max(width, height))
    w, h = width * scale, height * scale
    shortest = min(w, h)
    if shortest > 768:
        w, h = w * 768 / shortest, h * 768 / shortest
    tiles = math.ceil(w / 512) * math.ceil(h / 512)
    return 85 + 170 * tiles


def anthropic_image_tokens(width: int, height: int) -> int:
    """Anthropic's published estimate: (width × height) / 750 after fitting 1568px."""
    scale = min(1.0, 1568 / max(width, height), math.sqrt(1_150_000 / (width * height)))
    w, h = int(width * scale), int(height * scale)
    return max(1, math.ceil(w * h / 750))
