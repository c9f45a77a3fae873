"""Make the two images of configs/www/ at their exact sizes (run once; the
outputs are checked in). A JPEG gets a comment segment and a PNG a private
ancillary chunk to reach the size the experiments name."""

from __future__ import annotations

import io
import struct
import sys
import zlib
from pathlib import Path

import numpy as np
from PIL import Image


def jpeg_of_size(size: int) -> bytes:
    rng = np.random.default_rng(2013)
    y, x = np.mgrid[0:240, 0:320]
    base = np.stack([(x * 0.8) % 256, (y * 1.0) % 256, ((x + y) * 0.4) % 256], axis=-1)
    noise = rng.integers(0, 40, size=base.shape)
    img = Image.fromarray(((base + noise) % 256).astype("uint8"), "RGB")
    for quality in range(95, 5, -5):
        buf = io.BytesIO()
        img.save(buf, "JPEG", quality=quality)
        data = buf.getvalue()
        if len(data) + 4 <= size:
            break
    pad = size - len(data)
    # SOI, then a COM segment of exactly `pad` bytes (2 marker + 2 length + body).
    body = b"loadcmp " * (pad // 8 + 1)
    body = body[: pad - 4]
    com = b"\xff\xfe" + struct.pack(">H", len(body) + 2) + body
    out = data[:2] + com + data[2:]
    assert len(out) == size, len(out)
    return out


def png_of_size(size: int) -> bytes:
    rng = np.random.default_rng(2022)
    arr = rng.integers(0, 256, size=(150, 150, 3), dtype="uint8")
    arr[:, :75] //= 4
    buf = io.BytesIO()
    Image.fromarray(arr, "RGB").save(buf, "PNG")
    data = buf.getvalue()
    pad = size - len(data)
    assert pad >= 12, pad
    body = (b"loadcmp" * (pad // 7 + 1))[: pad - 12]
    kind = b"lcPd"  # private, ancillary, safe to copy
    chunk = struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    iend = data.rindex(b"IEND") - 4
    out = data[:iend] + chunk + data[iend:]
    assert len(out) == size, len(out)
    return out


def main(dest: Path) -> None:
    (dest / "image-50k.jpg").write_bytes(jpeg_of_size(51200))
    (dest / "image-71882.png").write_bytes(png_of_size(71882))


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "configs/www"))
