/// How stored pixels map to the upright picture: the eight values of the EXIF/TIFF orientation tag.
///
/// The raw value is the tag's value. Values outside 1...8 (the EXIF sample `Landscape_0.jpg` has 0)
/// are treated as ``up``.
public enum ImageOrientation: Int, Sendable, CaseIterable {
    /// 1: stored upright.
    case up = 1
    /// 2: mirrored left to right.
    case upMirrored = 2
    /// 3: rotated 180 degrees.
    case down = 3
    /// 4: mirrored top to bottom.
    case downMirrored = 4
    /// 5: mirrored along the top-left to bottom-right diagonal (transpose).
    case leftMirrored = 5
    /// 6: must be rotated 90 degrees clockwise to display.
    case right = 6
    /// 7: mirrored along the top-right to bottom-left diagonal (transverse).
    case rightMirrored = 7
    /// 8: must be rotated 90 degrees counter-clockwise to display.
    case left = 8

    /// Creates the orientation for an EXIF tag value, treating invalid values as ``up``.
    public init(exifValue: Int) {
        self = ImageOrientation(rawValue: exifValue) ?? .up
    }

    /// Whether displaying the image exchanges its width and height (orientations 5 to 8).
    public var swapsWidthAndHeight: Bool { rawValue >= 5 }

    /// The displayed size of an image whose stored pixels have `storedSize`.
    public func displaySize(ofStored storedSize: PixelSize) -> PixelSize {
        swapsWidthAndHeight ? storedSize.transposed : storedSize
    }

    /// The stored pixel that shows at (`x`, `y`) of the upright picture, for stored pixels of `storedSize`:
    /// the one mapping that ``Bitmap/oriented(_:)`` and the HEIF clean aperture's crop both follow.
    func storedPosition(ofDisplayed x: Int, _ y: Int, in storedSize: PixelSize) -> (x: Int, y: Int) {
        let (width, height) = (storedSize.width, storedSize.height)
        switch self {
        case .up: return (x, y)
        case .upMirrored: return (width - 1 - x, y)
        case .down: return (width - 1 - x, height - 1 - y)
        case .downMirrored: return (x, height - 1 - y)
        case .leftMirrored: return (y, x)
        case .right: return (y, height - 1 - x)
        case .rightMirrored: return (width - 1 - y, height - 1 - x)
        case .left: return (width - 1 - y, x)
        }
    }
}
