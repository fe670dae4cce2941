extension ImageHeader {
    /// Reads a JPEG's size from its first frame header (SOFn) and its orientation from the first EXIF
    /// APP1 segment, walking the marker segments that come before the first scan.
    ///
    /// The EXIF segment may come after the frame header, as libjpeg, browsers and Pillow all allow, so
    /// the walk goes on to the scan. Past the frame header, bytes that make no sense only end the search:
    /// the size is known, and the orientation is what was found. Bytes that end before the scan are
    /// `.truncated` all the same, since the EXIF segment may still come: a reader of growing prefixes
    /// (``ImageStore/readHeader(from:)``) would otherwise take a prefix that ends inside it for an
    /// upright image, and report a photo turned by its EXIF with its width and height exchanged.
    static func parseJPEG(_ bytes: HeaderBytes) throws(ImageDecodingError) -> ImageHeader {
        var orientation: ImageOrientation?
        var frame: (offset: Int, length: Int)?
        do throws(ImageDecodingError) {
            let end = try walkJPEGSegments(bytes) { marker, offset, length throws(ImageDecodingError) in
                // In a hierarchical JPEG, the DHP segment (0xDE) before the first frame holds the size of
                // the whole image, in a frame header's layout: its frames may be smaller, scaled up (T.81 B.3.2).
                if isStartOfFrame(marker) || marker == 0xDE, frame == nil {
                    frame = (offset, length)
                } else if marker == 0xE1, orientation == nil {
                    let segment = try bytes.window(at: offset + 2, length: length - 2)
                    if segment.matches(Array("Exif".utf8) + [0, 0], at: 0) {
                        orientation = exifOrientation(in: segment)
                    }
                }
                return true
            }
            guard frame != nil else {
                throw bytes.corrupt(
                    end.marker == 0xD9 ? "end of image before a frame header" : "scan before a frame header")
            }
        } catch  where frame != nil && error.reason != .truncated {
            // After the frame header: the header stands with the orientation found so far.
        }
        guard let frame else { throw bytes.corrupt("no frame header") }
        return try frameHeader(bytes, at: frame.offset, length: frame.length, orientation: orientation ?? .up)
    }

    /// Walks a JPEG's marker segments after SOI, up to its first scan, calling `visit` with each
    /// segment's marker, the offset of its 2-byte length and that length, until `visit` returns false.
    /// Returns the marker the walk stopped at, SOS (0xDA), EOI (0xD9) or the one `visit` stopped on, and
    /// the offset just past it (for SOS, that of the scan header's 2-byte length).
    /// Bytes between segments that start no marker are skipped, as libjpeg skips them (with a warning), up to
    /// ``maximumStrayJPEGBytes`` of them, fill bytes and stuffed FF 00 pairs included.
    /// Throws `.truncated` when the bytes end first and `.corrupt` for a segment length under 2, more stray
    /// bytes than that or a second SOI.
    @discardableResult
    static func walkJPEGSegments(
        _ bytes: HeaderBytes, _ visit: (UInt8, Int, Int) throws(ImageDecodingError) -> Bool
    ) throws(ImageDecodingError) -> (marker: UInt8, offset: Int) {
        var offset = 2  // after SOI
        while true {
            // As libjpeg's next_marker: stray bytes before a marker (some writers leave a few between two
            // segments; libjpeg warns of "extraneous bytes", and decoders and browsers show the file) and
            // stuffed FF 00 pairs are passed over, and any number of 0xFF fill bytes may precede its code.
            // The bound counts them all, stray bytes, stuffed pairs and fill bytes before the marker's own 0xFF:
            // a run of 0xFF (erased flash) or of FF 00 pairs would otherwise go on as far as zeros did.
            let strayStart = offset
            func tooMany() -> ImageDecodingError {
                bytes.corrupt("\(maximumStrayJPEGBytes) bytes that start no marker at byte \(strayStart)")
            }
            var marker: UInt8
            if let code = bytes.jpegMarkerCode(at: offset) {
                // Right after the last segment, as most files have it: what the loop below would read.
                marker = code
                offset += 2
            } else {
                repeat {
                    while try bytes.byte(at: offset) != 0xFF {
                        offset += 1
                        guard offset - strayStart <= maximumStrayJPEGBytes else { throw tooMany() }
                    }
                    while try bytes.byte(at: offset) == 0xFF {
                        offset += 1
                        guard offset - strayStart <= maximumStrayJPEGBytes + 1 else { throw tooMany() }
                    }
                    marker = try bytes.byte(at: offset)
                    offset += 1
                } while marker == 0x00
            }
            switch marker {
            case 0x01, 0xD0...0xD7:
                continue  // TEM and RSTn stand alone, without a length
            case 0xD8:
                // Another image's start, as libjpeg fails it ("two SOI markers"): an EXIF thumbnail's, when a
                // segment's length falls short of its data, whose frame header would be read for this one's.
                throw bytes.corrupt("a second start of image at byte \(offset - 2)")
            case 0xD9, 0xDA:
                return (marker, offset)
            default:
                break
            }
            let length = try bytes.uint16BE(at: offset)
            guard length >= 2 else { throw bytes.corrupt("segment length \(length) at byte \(offset)") }
            guard try visit(marker, offset, length) else { return (marker, offset) }
            // Each pass moves forward by at least three bytes, so the walk always ends.
            offset += length
        }
    }

    /// The most bytes that start no marker the segment walk passes over between two segments, 4 KiB: writers
    /// that leave any leave a few. Without a bound, a file of a JPEG segment and then no marker (a 3 GB file
    /// named `.jpg`) was walked to the end of each prefix and taken for a header that runs past it, where
    /// `.corrupt` ends a read in growing prefixes (``ImageStore/readHeader(from:)``, `aic info`) and turns
    /// a large file away before it is read whole; under the 16 KiB of that first look, it still does.
    static let maximumStrayJPEGBytes = 4096

    /// SOF0-SOF15, except DHT (C4), JPG (C8) and DAC (CC), which share the range.
    static func isStartOfFrame(_ marker: UInt8) -> Bool {
        (0xC0...0xCF).contains(marker) && marker != 0xC4 && marker != 0xC8 && marker != 0xCC
    }

    /// Precision (1 byte), height and width (2 bytes each) follow the segment length.
    private static func frameHeader(
        _ bytes: HeaderBytes, at offset: Int, length: Int, orientation: ImageOrientation
    ) throws(ImageDecodingError) -> ImageHeader {
        guard length >= 8 else { throw bytes.corrupt("frame header of \(length) bytes") }
        let height = try bytes.uint16BE(at: offset + 3)
        let width = try bytes.uint16BE(at: offset + 5)
        if height == 0 {
            // Legal but rare: the height then comes in a DNL marker after the first scan.
            throw ImageDecodingError(format: .jpeg, reason: .unsupportedFeature("height defined by a DNL marker"))
        }
        return try validated(bytes, width: width, height: height, orientation: orientation)
    }
}
