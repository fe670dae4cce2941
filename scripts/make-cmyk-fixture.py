#!/usr/bin/env python3
"""Writes Tests/AsyncImageCacheTests/Fixtures/cmyk/patches.jpg: a 64x64 CMYK JPEG (Adobe's inverted
samples, as Photoshop writes them) of sixteen flat 16x16 patches of known ink, for the tests of CMYK
profiles (CMYKProfileTests lists the same inks). Flat blocks survive JPEG at quality 100 within a
level. Needs Pillow (pip install pillow); the file is committed, so the tests do not.

Usage: make-cmyk-fixture.py [OUTPUT]
"""
import os
import sys

from PIL import Image

# Ink per patch, cyan, magenta, yellow, black (0 none, 255 full), row by row.
INKS = [
    (0, 0, 0, 0), (255, 0, 0, 0), (0, 255, 0, 0), (0, 0, 255, 0),
    (0, 0, 0, 255), (255, 255, 255, 255), (128, 128, 128, 0), (64, 32, 16, 8),
    (200, 100, 50, 25), (30, 180, 220, 60), (240, 40, 200, 0), (10, 10, 10, 200),
    (90, 160, 30, 120), (170, 85, 255, 40), (51, 102, 153, 204), (255, 255, 0, 0),
]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    output = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        here, "..", "Tests", "AsyncImageCacheTests", "Fixtures", "cmyk", "patches.jpg")
    image = Image.new("CMYK", (64, 64))
    for index, ink in enumerate(INKS):
        left, top = 16 * (index % 4), 16 * (index // 4)
        image.paste(ink, (left, top, left + 16, top + 16))
    os.makedirs(os.path.dirname(output), exist_ok=True)
    image.save(output, quality=100)


if __name__ == "__main__":
    main()
