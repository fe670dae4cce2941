#!/usr/bin/env python3
"""Writes HEIF fixtures whose primary image is derived from others: overlays (`iovl`) around the
coded picture of photo.heic, and a 2x2 `grid` of the four tiles make-heif-fixtures.c encodes.

libheif 1.15 cannot encode either, so the boxes are written here: the coded images' `hvcC`, `ispe`,
`pixi` and data are copied as they are, and a primary derived item refers to them, its description
in `idat` (ISO/IEC 23008-12, 6.6.2). Usage: make-heif-derived.py FOLDER (reads FOLDER/photo.heic and
FOLDER/grid-tile-[0-3].heic, writes FOLDER/overlay*.heic and FOLDER/grid.heic, removes the tiles).
"""
import os
import struct
import sys


def box(kind, payload):
    return struct.pack(">I4s", 8 + len(payload), kind.encode()) + payload


def full_box(kind, version, flags, payload):
    return box(kind, struct.pack(">I", version << 24 | flags) + payload)


def children(data, start, end):
    """The (type, content start, end) of each box between start and end."""
    found = []
    while start < end:
        size, kind = struct.unpack(">I4s", data[start:start + 8])
        found.append((kind.decode("latin-1"), start + 8, start + size))
        start += size
    return found


def photo_parts(data):
    top = {kind: (s, e) for kind, s, e in children(data, 0, len(data))}
    meta_start, meta_end = top["meta"]
    meta = {kind: (s, e) for kind, s, e in children(data, meta_start + 4, meta_end)}
    iprp = {kind: (s, e) for kind, s, e in children(data, *meta["iprp"])}
    properties = {kind: data[s - 8:e] for kind, s, e in children(data, *iprp["ipco"])}
    # iloc version 0, 4-byte offsets, lengths and base offset, one item with one extent.
    iloc_start = meta["iloc"][0]
    assert data[iloc_start] == 0 and data[iloc_start + 4:iloc_start + 6] == b"\x44\x40"
    base, count, offset, length = struct.unpack(">IHII", data[iloc_start + 12:iloc_start + 26])
    assert count == 1
    offset += base
    return {
        "ftyp": data[top["ftyp"][0] - 8:top["ftyp"][1]],
        "hdlr": data[meta["hdlr"][0] - 8:meta["hdlr"][1]],
        "properties": properties,
        "coded": data[offset:offset + length],
    }


def derived_file(parts, tiles, kind, description, declared, extents=None):
    """A file whose primary item is a derived image of type `kind` (declaring `declared` in its ispe,
    described by `description` in idat, in `extents` pieces when given) made from the coded images
    `tiles` (parts of files, as photo_parts reads them), which are hidden items 1 to n."""
    count = len(tiles)
    derived = count + 1
    # infe version 2: item ID, protection index, item type, empty name; flag 1 hides an item.
    infe = lambda item, kind, hidden: full_box("infe", 2, 1 if hidden else 0,
                                               struct.pack(">HH4s", item, 0, kind.encode()) + b"\0")
    entries = b"".join(infe(index + 1, "hvc1", True) for index in range(count)) + infe(derived, kind, False)
    iinf = full_box("iinf", 0, 0, struct.pack(">H", derived) + entries)
    references = struct.pack(">HH", derived, count) + b"".join(struct.pack(">H", index + 1) for index in range(count))
    iref = full_box("iref", 0, 0, box("dimg", references))
    # Properties: every tile's hvcC, ispe and pixi, then the derived item's ispe.
    properties = b"".join(tile["properties"][kind] for tile in tiles for kind in ("hvcC", "ispe", "pixi"))
    declared_ispe = full_box("ispe", 0, 0, struct.pack(">II", *declared))
    ipco = box("ipco", properties + declared_ispe)
    associations = b"".join(
        struct.pack(">HB3B", index + 1, 3, 0x80 | (3 * index + 1), 3 * index + 2, 0x80 | (3 * index + 3))
        for index in range(count))
    associations += struct.pack(">HBB", derived, 1, 3 * count + 1)
    ipma = full_box("ipma", 0, 0, struct.pack(">I", derived) + associations)
    iprp = box("iprp", ipco + ipma)
    pitm = full_box("pitm", 0, 0, struct.pack(">H", derived))
    idat = box("idat", description)
    coded = b"".join(tile["coded"] for tile in tiles)

    def meta_with(coded_offset):
        # iloc version 1: 4-byte offsets and lengths, no base offset; the tiles one after another in
        # mdat, the derived item in idat (construction method 1).
        entries = b""
        offset = coded_offset
        for index, tile in enumerate(tiles):
            entries += struct.pack(">HHHHII", index + 1, 0, 0, 1, offset, len(tile["coded"]))
            offset += len(tile["coded"])
        pieces = extents or [len(description)]
        entries += struct.pack(">HHHH", derived, 1, 0, len(pieces))
        start = 0
        for length in pieces:
            entries += struct.pack(">II", start, length)
            start += length
        iloc = full_box("iloc", 1, 0, struct.pack(">BBH", 0x44, 0x00, derived) + entries)
        return full_box("meta", 0, 0, parts["hdlr"] + pitm + iloc + iinf + iref + iprp + idat)

    head = parts["ftyp"] + meta_with(0)
    coded_offset = len(head) + 8  # after the mdat header
    head = parts["ftyp"] + meta_with(coded_offset)
    assert len(head) + 8 == coded_offset
    return head + box("mdat", coded)


def overlay_description(canvas, position):
    """An iovl description: the photo placed at `position` on a black, opaque canvas."""
    description = struct.pack(">BB4H", 0, 0, 0, 0, 0, 0xFFFF)  # version, flags, RGBA fill
    return description + struct.pack(">HHhh", canvas[0], canvas[1], position[0], position[1])


def main():
    folder = sys.argv[1]
    with open(f"{folder}/photo.heic", "rb") as file:
        photo = photo_parts(file.read())
    variants = {
        # The photo on a canvas of its own size: the picture itself, as libheif composes it.
        "overlay.heic": ((96, 64), (96, 64), None),
        # Declares 96x64, but its canvas, which libheif allocates whole, is 8192x8192.
        "overlay-declares-96-canvas-8192.heic": ((96, 64), (8192, 8192), None),
        # The same, its description in two extents of idat (cut after the fill values), which libheif joins.
        "overlay-split-declares-96-canvas-8192.heic": ((96, 64), (8192, 8192), [10, 8]),
    }
    for name, (declared, canvas, extents) in variants.items():
        description = overlay_description(canvas, (0, 0))
        with open(f"{folder}/{name}", "wb") as file:
            file.write(derived_file(photo, [photo], "iovl", description, declared, extents))
    # The four quadrants of the picture as a 2x2 grid: version, flags, rows - 1, columns - 1, 16-bit size.
    tiles = []
    for index in range(4):
        path = f"{folder}/grid-tile-{index}.heic"
        with open(path, "rb") as file:
            tiles.append(photo_parts(file.read()))
        os.remove(path)
    with open(f"{folder}/grid.heic", "wb") as file:
        file.write(derived_file(photo, tiles, "grid", struct.pack(">BBBBHH", 0, 0, 1, 1, 96, 64), (96, 64)))


if __name__ == "__main__":
    main()
