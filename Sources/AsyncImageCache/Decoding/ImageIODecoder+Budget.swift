import Foundation

extension ImageDecodingContext {
    /// The pixels ImageIO holds while it decodes `data` as this context asks, which
    /// `ImageDecoders.ImageIO` checks against ``pixelBudget`` before it calls ImageIO.
    ///
    /// - A JPEG coded in one interleaved scan: ``coveringSize``, since ImageIO decodes it at a reduced
    ///   scale, as libjpeg does for ``ImageDecoders/JPEG``; never less than an eighth of each side, the
    ///   smallest scale either decodes at.
    /// - A progressive or multi-scan JPEG: the full stored size. Its scans refine every block of the
    ///   image in turn, so a decoder keeps the coefficients of the whole image whatever the output scale;
    ///   ``ImageDecoders/JPEG`` checks the full size for such a file too.
    /// - An arithmetic-coded JPEG: the full stored size too. Its decoding time follows that size and not
    ///   its bytes (a few kilobytes can declare 65500x65500), and ``ImageDecoders/JPEG`` checks it.
    /// - HEIF and AVIF: the full stored size, or the largest size the file's codec streams, grids and
    ///   overlays code (`HEIFCodedSize`) when that is larger: the codec allocates what the stream codes,
    ///   whatever the file declares, and ``ImageDecoders/HEIF`` checks both.
    /// - Any other format: the full stored size, which ImageIO may decode before scaling.
    func imageIODecodedPixels(of data: Data) -> Int {
        let stored = header.storedSize.pixelCount
        switch header.format {
        case .jpeg:
            if ImageHeader.jpegDecodesItsFullSize(data) { return stored }
            // A JPEG decoder scales by 1/8 at most while it decodes (DCT scaling), then resamples: it holds at
            // least an eighth of each side, as ``ImageDecoders/JPEG`` counts its n/8 output.
            let eighth = PixelSize(width: (header.storedSize.width + 7) / 8, height: (header.storedSize.height + 7) / 8)
            return max(coveringSize.pixelCount, eighth.pixelCount)
        case .heif, .avif:
            return max(stored, HEIFCodedSize.largest(in: data)?.pixelCount ?? 0)
        default:
            return stored
        }
    }
}

extension ImageHeader {
    /// Whether a JPEG's image comes in more than one scan, as libjpeg decides it: its frame is progressive
    /// (SOF2, SOF6, SOF10 or SOF14), or its first scan codes fewer components than the frame has. Such a
    /// file keeps the whole image's coefficients in memory while it decodes. A file whose headers cannot be
    /// read as far as its first scan counts as one, so its full size is what gets checked.
    static func jpegHasMultipleScans(_ data: Data) -> Bool {
        jpegFrameAndFirstScan(data)?.hasMultipleScans ?? true
    }

    /// Whether decoding a JPEG goes through its full size whatever the output scale, as
    /// ``ImageDecoders/JPEG`` counts it against the budget: it has multiple scans (see
    /// ``jpegHasMultipleScans(_:)``), or its frame is arithmetic-coded (SOF9 to SOF11, SOF13 to SOF15,
    /// libjpeg's `arith_code`). A file whose headers cannot be read as far as its first scan does.
    static func jpegDecodesItsFullSize(_ data: Data) -> Bool {
        guard let layout = jpegFrameAndFirstScan(data) else { return true }
        return layout.hasMultipleScans || layout.isArithmeticCoded
    }

    /// What the first frame header and the first scan header of a JPEG say of its decoding.
    private struct JPEGScanLayout {
        var frameMarker: UInt8
        var frameComponents: Int
        var scanComponents: Int

        var hasMultipleScans: Bool {
            [0xC2, 0xC6, 0xCA, 0xCE].contains(frameMarker) || scanComponents < frameComponents
        }

        var isArithmeticCoded: Bool { [0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF].contains(frameMarker) }
    }

    /// The first frame header's marker and component count, and the component count of the first
    /// scan; `nil` when the headers cannot be read that far.
    private static func jpegFrameAndFirstScan(_ data: Data) -> JPEGScanLayout? {
        let bytes = HeaderBytes(data, format: .jpeg)
        guard bytes.matches([0xFF, 0xD8], at: 0) else { return nil }
        var frame: (marker: UInt8, components: Int)?
        do {
            let end = try walkJPEGSegments(bytes) { marker, offset, length throws(ImageDecodingError) in
                // Precision, height and width, then the component count.
                if isStartOfFrame(marker), frame == nil, length >= 8 {
                    frame = (marker, Int(try bytes.byte(at: offset + 7)))
                }
                return true
            }
            guard let frame, end.marker == 0xDA else { return nil }
            // The scan header: its length, then the number of components in the scan.
            return JPEGScanLayout(
                frameMarker: frame.marker, frameComponents: frame.components,
                scanComponents: Int(try bytes.byte(at: end.offset + 2)))
        } catch {
            return nil
        }
    }
}
