#!/usr/bin/env python3
"""Writes HEIF overlay (`iovl`) fixtures around the coded picture of photo.heic.

libheif 1.15 cannot encode overlays, so the boxes are written here: the photo's HEVC item (its
`hvcC`, `ispe`, `pixi` and coded data copied as they are) and a primary `iovl` item that places it
on a canvas, its description in `idat` (ISO/IEC 23008-12, 6.6.2.2). Usage:
make-heif-overlays.py FOLDER (reads FOLDER/photo.heic, writes FOLDER/overlay*.heic).
"""
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


def overlay_file(parts, declared, canvas, position, split=False):
    """A file whose primary item is an overlay of `canvas` (width, height) declaring `declared` in
    its ispe, with the photo placed at `position` on a black, opaque background; with `split`, its
    description in two extents of idat, cut after the fill values."""
    description = struct.pack(">BB4H", 0, 0, 0, 0, 0, 0xFFFF)  # version, flags, RGBA fill
    description += struct.pack(">HHhh", canvas[0], canvas[1], position[0], position[1])
    infe = lambda item, kind: full_box("infe", 2, 0, struct.pack(">HH4s", item, 0, kind.encode()) + b"\0")
    iinf = full_box("iinf", 0, 0, struct.pack(">H", 2) + infe(1, "hvc1") + infe(2, "iovl"))
    iref = full_box("iref", 0, 0, box("dimg", struct.pack(">HHH", 2, 1, 1)))
    props = parts["properties"]
    declared_ispe = full_box("ispe", 0, 0, struct.pack(">II", *declared))
    ipco = box("ipco", props["hvcC"] + props["ispe"] + props["pixi"] + declared_ispe)
    # Item 1: hvcC (essential), its ispe, pixi; item 2: the declared ispe.
    ipma = full_box("ipma", 0, 0, struct.pack(">I", 2) + struct.pack(">HB3B", 1, 3, 0x81, 0x02, 0x03)
                    + struct.pack(">HBB", 2, 1, 0x04))
    iprp = box("iprp", ipco + ipma)
    pitm = full_box("pitm", 0, 0, struct.pack(">H", 2))
    idat = box("idat", description)

    def meta_with(coded_offset):
        # iloc version 1: 4-byte offsets and lengths, no base offset; item 1 in the file, item 2 in idat.
        entries = struct.pack(">HHHHII", 1, 0, 0, 1, coded_offset, len(parts["coded"]))
        if split:
            entries += struct.pack(">HHHHIIII", 2, 1, 0, 2, 0, 10, 10, len(description) - 10)
        else:
            entries += struct.pack(">HHHHII", 2, 1, 0, 1, 0, len(description))
        iloc = full_box("iloc", 1, 0, struct.pack(">BBH", 0x44, 0x00, 2) + entries)
        return full_box("meta", 0, 0, parts["hdlr"] + pitm + iloc + iinf + iref + iprp + idat)

    head = parts["ftyp"] + meta_with(0)
    coded_offset = len(head) + 8  # after the mdat header
    head = parts["ftyp"] + meta_with(coded_offset)
    assert len(head) + 8 == coded_offset
    return head + box("mdat", parts["coded"])


def main():
    folder = sys.argv[1]
    with open(f"{folder}/photo.heic", "rb") as file:
        parts = photo_parts(file.read())
    variants = {
        # The photo on a canvas of its own size: the picture itself, as libheif composes it.
        "overlay.heic": ((96, 64), (96, 64), (0, 0)),
        # Declares 96x64, but its canvas, which libheif allocates whole, is 8192x8192.
        "overlay-declares-96-canvas-8192.heic": ((96, 64), (8192, 8192), (0, 0)),
    }
    for name, (declared, canvas, position) in variants.items():
        with open(f"{folder}/{name}", "wb") as file:
            file.write(overlay_file(parts, declared, canvas, position))
    # The same, its description in two pieces, which libheif joins.
    with open(f"{folder}/overlay-split-declares-96-canvas-8192.heic", "wb") as file:
        file.write(overlay_file(parts, (96, 64), (8192, 8192), (0, 0), split=True))


if __name__ == "__main__":
    main()
