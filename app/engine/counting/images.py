"""Image token costs: pixel size from the first bytes of PNG/JPEG/GIF/WebP data, and each
model family's published formula (OpenAI tiles or patches, Anthropic pixels/750). The
constants of each family are registry data (`ImageCostRule`), not code."""

from __future__ import annotations

import base64
import binascii
import math
import struct
from dataclasses import dataclass
from enum import StrEnum

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


class ImageRuleKind(StrEnum):
    """The published image formulas."""

    TILES = "tiles"  # OpenAI gpt-4o family: base + per 512-px tile after scaling
    PATCHES = "patches"  # OpenAI gpt-4.1-mini/-nano, o4-mini: 32-px patches x a factor
    PIXELS = "pixels"  # Anthropic: width x height / 750 after fitting the size limits
    # Gemini: `per_tile` for an image up to `small_edge` px on both sides, else
    # `per_tile` for each `tile_size`-px tile covering it.
    FIXED_TILES = "fixed_tiles"


@dataclass(frozen=True, slots=True)
class ImageCostRule:
    """One model family's image formula with its constants (registry data)."""

    kind: ImageRuleKind
    name: str = ""
    # tiles: `base` is also the whole cost of a `detail: low` image.
    base: int = 85
    per_tile: int = 170
    # patches: cost = ceil(patches x multiplier), patches capped at max_patches.
    multiplier: float = 1.0
    max_patches: int = 1536
    # pixels: cost = ceil(width x height / divisor) after the resize rules.
    divisor: int = 750
    max_long_edge: int = 1568
    max_pixels: int = 1_150_000
    # fixed_tiles: the tile edge, and the size up to which an image is one tile.
    tile_size: int = 768
    small_edge: int = 384

    def tokens(self, width: int | None, height: int | None, detail: str | None) -> int | None:
        """The image's cost, or None when it needs a pixel size that is unknown."""
        if self.kind is ImageRuleKind.TILES and detail == "low":
            return self.base
        if width is None or height is None or width <= 0 or height <= 0:
            return None
        if self.kind is ImageRuleKind.TILES:
            return self.base + self.per_tile * tile_count(width, height)
        if self.kind is ImageRuleKind.PATCHES:
            return math.ceil(patch_count(width, height, self.max_patches) * self.multiplier)
        if self.kind is ImageRuleKind.FIXED_TILES:
            if width <= self.small_edge and height <= self.small_edge:
                return self.per_tile
            across, down = math.ceil(width / self.tile_size), math.ceil(height / self.tile_size)
            return self.per_tile * across * down
        return pixel_tokens(width, height, self.divisor, self.max_long_edge, self.max_pixels)


GPT_4O_TILES = ImageCostRule(ImageRuleKind.TILES, name="tiles-85")
ANTHROPIC_PIXELS = ImageCostRule(ImageRuleKind.PIXELS, name="anthropic-pixels")
GEMINI_TILES = ImageCostRule(ImageRuleKind.FIXED_TILES, name="gemini-tiles-258", per_tile=258)


def tile_count(width: int, height: int) -> int:
    """512-px tiles after fitting 2048 x 2048, then the shortest side down to 768."""
    scale = min(1.0, 2048 / max(width, height))
    w, h = width * scale, height * scale
    shortest = min(w, h)
    if shortest > 768:
        w, h = w * 768 / shortest, h * 768 / shortest
    return math.ceil(w / 512) * math.ceil(h / 512)


def patch_count(width: int, height: int, max_patches: int = 1536, patch: int = 32) -> int:
    """32-px patches covering the image; over the cap, the image is scaled down so that a
    whole number of patches spans its width (OpenAI's published steps)."""
    patches = math.ceil(width / patch) * math.ceil(height / patch)
    if patches <= max_patches:
        return patches
    shrink = math.sqrt(patch * patch * max_patches / (width * height))
    across, down = width * shrink / patch, height * shrink / patch
    shrink *= min(math.floor(across) / across, math.floor(down) / down)
    w, h = width * shrink, height * shrink
    return min(max_patches, math.ceil(w / patch) * math.ceil(h / patch))


def pixel_tokens(
    width: int,
    height: int,
    divisor: int = 750,
    max_long_edge: int = 1568,
    max_pixels: int = 1_150_000,
) -> int:
    """Anthropic's estimate: (width x height) / 750 after fitting the long edge and area."""
    scale = min(1.0, max_long_edge / max(width, height), math.sqrt(max_pixels / (width * height)))
    w, h = int(width * scale), int(height * scale)
    return max(1, math.ceil(w * h / divisor))
