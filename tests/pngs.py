"""Real PNG files of a given size, written with zlib and struct (no imaging library)."""

from __future__ import annotations

import base64
import struct
import zlib


def _chunk(kind: bytes, data: bytes) -> bytes:
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def png_bytes(width: int, height: int) -> bytes:
    """A black 1-bit grayscale PNG: valid, and small even at thousands of pixels."""
    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    row = b"\x00" + b"\x00" * ((width + 7) // 8)  # filter byte + packed pixels
    compressor = zlib.compressobj()
    data = b"".join(compressor.compress(row) for _ in range(height)) + compressor.flush()
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", data)
        + _chunk(b"IEND", b"")
    )


def png_data_url(width: int, height: int) -> str:
    return "data:image/png;base64," + base64.b64encode(png_bytes(width, height)).decode()


def png_base64(width: int, height: int) -> str:
    return base64.b64encode(png_bytes(width, height)).decode()
