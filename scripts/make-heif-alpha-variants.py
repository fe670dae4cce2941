#!/usr/bin/env python3
"""Makes the HEIF fixtures whose alpha item carries transformations, from alpha.avif.

    scripts/make-heif-alpha-variants.py [FIXTURE_FOLDER]

Each copies Tests/AsyncImageCacheTests/Fixtures/heif/alpha.avif (one colour item, one alpha item) and
associates irot or clap properties with the colour item, the alpha item or both, in new ipco entries
marked essential; the coded data is untouched (iloc offsets shift with the meta box). Encoders do this:
libheif 1.15, given an orientation or an odd size, and libavif since 2025 put the same irot and clap on
both items. libheif 1.15 applies the alpha item's own transformations when it decodes the alpha with the
colour, even with its transformations ignored.
"""
import os
import struct
import sys

VARIANTS = {
    # name: (properties of the colour item, of the alpha item), in association order
    "alpha-rotated-8.avif": (["irot1"], ["irot1"]),
    "alpha-rotated-3.avif": (["irot2"], ["irot2"]),
    "alpha-cropped-both.avif": (["clap"], ["clap"]),
    "alpha-rotated-8-colour-only.avif": (["irot1"], []),
}

# A 70x40 aperture whose centre is 6 right of and 4 above the picture's: it shows x 19...88, y 8...47.
CLAP = struct.pack(">8i", 70, 1, 40, 1, 6, 1, -4, 1)


def box(kind, payload):
    return struct.pack(">I4s", 8 + len(payload), kind.encode()) + payload


def boxes(data, start, end):
    found, offset = [], start
    while offset < end:
        size, kind = struct.unpack(">I4s", data[offset:offset + 8])
        found.append((kind.decode("latin1"), data[offset + 8:offset + size], offset))
        offset += size
    return found


def first(found, kind):
    return next(payload for name, payload, _ in found if name == kind)


def parse_ipma(payload):
    version, flags, count = payload[0], int.from_bytes(payload[1:4], "big"), struct.unpack(">I", payload[4:8])[0]
    assert version == 0 and flags & 1 == 0, "only ipma version 0 with 1-byte indices"
    offset, entries = 8, []
    for _ in range(count):
        item = struct.unpack(">H", payload[offset:offset + 2])[0]
        n = payload[offset + 2]
        entries.append([item, list(payload[offset + 3:offset + 3 + n])])
        offset += 3 + n
    return entries


def shifted_iloc(payload, delta):
    """iloc with the file offsets of items stored in the file (construction method 0) moved by delta."""
    p = bytearray(payload)
    version, offset = p[0], 4
    offset_size, length_size = p[offset] >> 4, p[offset] & 15
    base_size, index_size = p[offset + 1] >> 4, (p[offset + 1] & 15) if version in (1, 2) else 0
    offset += 2
    count = struct.unpack(">H", p[offset:offset + 2])[0] if version < 2 else struct.unpack(">I", p[offset:offset + 4])[0]
    offset += 2 if version < 2 else 4
    for _ in range(count):
        offset += 2 if version < 2 else 4
        method = 0
        if version in (1, 2):
            method = struct.unpack(">H", p[offset:offset + 2])[0] & 15
            offset += 2
        offset += 2  # data reference index
        base = int.from_bytes(p[offset:offset + base_size], "big") if base_size else 0
        moved_base = method == 0 and base_size and base
        if moved_base:
            p[offset:offset + base_size] = (base + delta).to_bytes(base_size, "big")
        offset += base_size
        extents = struct.unpack(">H", p[offset:offset + 2])[0]
        offset += 2
        for _ in range(extents):
            offset += index_size
            if method == 0 and not moved_base and offset_size:
                value = int.from_bytes(p[offset:offset + offset_size], "big")
                p[offset:offset + offset_size] = (value + delta).to_bytes(offset_size, "big")
            offset += offset_size + length_size
    return bytes(p)


def variant(data, colour, alpha):
    top = boxes(data, 0, len(data))
    ftyp = first(top, "ftyp")
    meta = first(top, "meta")
    mdat_offset = next(offset for name, _, offset in top if name == "mdat")
    mdat = first(top, "mdat")
    children = [(name, payload) for name, payload, _ in boxes(meta, 4, len(meta))]
    meta_box = dict(children)
    iprp = boxes(meta_box["iprp"], 0, len(meta_box["iprp"]))
    properties = [(name, payload) for name, payload, _ in boxes(first(iprp, "ipco"), 0, len(first(iprp, "ipco")))]
    associations = parse_ipma(first(iprp, "ipma"))
    primary = struct.unpack(">H", meta_box["pitm"][4:6])[0]
    iref = meta_box["iref"]
    alpha_item = next(
        struct.unpack(">H", payload[0:2])[0] for name, payload, _ in boxes(iref, 4, len(iref)) if name == "auxl")
    for item, specs in ((primary, colour), (alpha_item, alpha)):
        entry = next(entry for entry in associations if entry[0] == item)
        for spec in specs:
            if spec.startswith("irot"):
                properties.append(("irot", bytes([int(spec[4:])])))
            else:
                properties.append(("clap", CLAP))
            assert len(properties) < 128
            entry[1].append(0x80 | len(properties))
    ipma = struct.pack(">I", len(associations)) + b"".join(
        struct.pack(">H", item) + bytes([len(indices)]) + bytes(indices) for item, indices in associations)
    ipco = box("ipco", b"".join(box(name, payload) for name, payload in properties))
    children = [(name, ipco + box("ipma", b"\0\0\0\0" + ipma) if name == "iprp" else payload)
                for name, payload in children]

    def built(iloc_delta):
        parts = [(name, shifted_iloc(payload, iloc_delta) if name == "iloc" else payload) for name, payload in children]
        return box("meta", meta[:4] + b"".join(box(name, payload) for name, payload in parts))

    delta = len(box("ftyp", ftyp)) + len(built(0)) - mdat_offset
    return box("ftyp", ftyp) + built(delta) + box("mdat", mdat)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    folder = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "Tests", "AsyncImageCacheTests", "Fixtures", "heif")
    with open(os.path.join(folder, "alpha.avif"), "rb") as file:
        source = file.read()
    for name, (colour, alpha) in VARIANTS.items():
        with open(os.path.join(folder, name), "wb") as file:
            file.write(variant(source, colour, alpha))
        print(name)


if __name__ == "__main__":
    main()
