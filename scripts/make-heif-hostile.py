#!/usr/bin/env python3
"""Writes HEIF files whose item references crash, hang or mislead libheif 1.15, around photo.heic's
coded picture, for the tests of HEIFDerivations (each is refused before libheif reads it).

Usage: make-heif-hostile.py FIXTURES (reads FIXTURES/photo.heic, writes FIXTURES/hostile/*.heic).
The box writing helpers come from make-heif-derived.py.
"""
import importlib.util
import os
import struct
import sys

_spec = importlib.util.spec_from_file_location(
    "derived", os.path.join(os.path.dirname(os.path.abspath(__file__)), "make-heif-derived.py"))
derived = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(derived)
box, full_box = derived.box, derived.full_box

# The alpha plane's auxiliary type, as an `auxC` property.
ALPHA = full_box("auxC", 0, 0, b"urn:mpeg:hevc:2015:auxid:1\0")
# A minimal EXIF item: offset to the TIFF header, then an empty big-endian TIFF structure.
EXIF = b"\0\0\0\0Exif\0\0MM\0\x2a\0\0\0\x08\0\0"


def ispe(width, height):
    return full_box("ispe", 0, 0, struct.pack(">II", width, height))


def overlay(inputs, width=96, height=64):
    """An iovl description: a black, opaque canvas with `inputs` images at (0, 0)."""
    description = struct.pack(">BB4HHH", 0, 0, 0, 0, 0, 0xFFFF, width, height)
    return description + b"".join(struct.pack(">hh", 0, 0) for _ in range(inputs))


def reference(kind, source, targets, size=None):
    """A reference box of iref version 0; `size` overrides the size its header declares."""
    payload = struct.pack(">HH", source, len(targets)) + b"".join(struct.pack(">H", t) for t in targets)
    return struct.pack(">I4s", 8 + len(payload) if size is None else size, kind.encode()) + payload


def meta_box(photo, items, references, primary, data_offset):
    """A meta box for `items` (ID, type, hidden, properties or None, data), their data stored one after
    another from `data_offset`, and the data to put there. An ID listed twice is declared twice but
    stored once."""
    infes = b"".join(
        full_box("infe", 2, 1 if hidden else 0, struct.pack(">HH4s", item, 0, kind.encode()) + b"\0")
        for item, kind, hidden, _, _ in items)
    iinf = full_box("iinf", 0, 0, struct.pack(">H", len(items)) + infes)
    properties, associations, associated = [], b"", set()
    for item, _, _, item_properties, _ in items:
        if item in associated or item_properties is None:
            continue
        associated.add(item)
        indices = []
        for value in item_properties:
            if value not in properties:
                properties.append(value)
            indices.append(properties.index(value) + 1)
        associations += struct.pack(">HB", item, len(indices)) + bytes(indices)
    ipma = full_box("ipma", 0, 0, struct.pack(">I", len(associated)) + associations)
    iprp = box("iprp", box("ipco", b"".join(properties)) + ipma)
    entries, stored, offset, data = b"", set(), data_offset, b""
    for item, _, _, _, item_data in items:
        if item in stored:
            continue
        stored.add(item)
        entries += struct.pack(">HHHHII", item, 0, 0, 1, offset, len(item_data))
        offset += len(item_data)
        data += item_data
    iloc = full_box("iloc", 1, 0, struct.pack(">BBH", 0x44, 0x00, len(stored)) + entries)
    pitm = full_box("pitm", 0, 0, struct.pack(">H", primary))
    iref = full_box("iref", 0, 0, references)
    return full_box("meta", 0, 0, photo["hdlr"] + pitm + iloc + iinf + iref + iprp), data


def file(photo, metas):
    """A file of one or more meta boxes (items, references, primary), their data in one mdat."""
    head = len(photo["ftyp"]) + sum(len(meta_box(photo, *meta, 0)[0]) for meta in metas) + 8
    boxes, data = [], b""
    for meta in metas:
        written, meta_data = meta_box(photo, *meta, head + len(data))
        boxes.append(written)
        data += meta_data
    return photo["ftyp"] + b"".join(boxes) + box("mdat", data)


def main():
    fixtures = sys.argv[1]
    with open(f"{fixtures}/photo.heic", "rb") as source:
        photo = derived.photo_parts(source.read())
    hevc = [photo["properties"]["hvcC"], photo["properties"]["ispe"]]
    coded = photo["coded"]
    picture = (1, "hvc1", True, hevc, coded)
    files = {}
    # Item 3 declared as EXIF, then again as the picture: libheif keeps the first and aborts.
    files["item-declared-twice"] = [(
        [(2, "iovl", False, [ispe(96, 64)], overlay(1)), (3, "Exif", False, None, EXIF),
         (3, "hvc1", True, hevc, coded)], reference("dimg", 2, [3]), 2)]
    # A dimg reference (to EXIF) inside a cdsc reference box whose size covers both: libheif reads it anyway.
    hidden = reference("dimg", 2, [3], size=0x12345678)
    outer = struct.pack(">I4s", 14 + len(hidden), b"cdsc") + struct.pack(">HHH", 3, 1, 2) + hidden
    files["reference-hidden-in-another"] = [(
        [picture, (2, "iovl", False, [ispe(96, 64)], overlay(1)), (3, "Exif", False, None, EXIF)], outer, 2)]
    # A plain picture's meta, then a second meta whose overlay is made from EXIF: libheif reads the second.
    files["two-meta-boxes"] = [
        ([(1, "hvc1", False, hevc, coded)], b"", 1),
        ([picture, (2, "iovl", False, [ispe(96, 64)], overlay(1)), (3, "Exif", False, None, EXIF)],
         reference("dimg", 2, [3]), 2)]
    # Two pictures, each the alpha of the other: libheif recurses until the stack runs out.
    files["alpha-of-each-other"] = [(
        [(1, "hvc1", False, hevc + [ALPHA], coded), (2, "hvc1", True, hevc + [ALPHA], coded)],
        reference("auxl", 1, [2]) + reference("auxl", 2, [1]), 1)]
    # The picture's alpha is an iden of the picture itself: the same.
    files["alpha-made-from-its-image"] = [(
        [(1, "hvc1", False, hevc, coded), (2, "iden", True, [ispe(96, 64), ALPHA], b"\0")],
        reference("dimg", 2, [1]) + reference("auxl", 2, [1]), 1)]
    # 40 overlays in a chain, each made from the next one twice: 2^40 decodes, and no cycle.
    items, references = [picture], b""
    for level in range(40):
        item = 2 + level
        items.append((item, "iovl", level != 0, [ispe(96, 64)], overlay(2)))
        references += reference("dimg", item, [item + 1] * 2 if level < 39 else [1, 1])
    files["overlays-doubling-40-times"] = [(items, references, 2)]
    os.makedirs(f"{fixtures}/hostile", exist_ok=True)
    for name, metas in files.items():
        with open(f"{fixtures}/hostile/{name}.heic", "wb") as output:
            output.write(file(photo, metas))


if __name__ == "__main__":
    main()
