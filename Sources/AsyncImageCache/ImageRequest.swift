import Foundation

/// What to load: a URL plus the presentation it should be prepared for.
///
/// A request is also the key of the memory tier of ready-to-draw variants. `targetWidth` and
/// `cornerRadius` are taken in floating point for convenience but rounded to whole pixels, so
/// layout jitter (`320.0` vs `320.4`) does not mint a second variant; the store prepares the image
/// with the rounded values.
///
/// ```swift
/// let request = ImageRequest(url: url, targetWidth: 840, cornerRadius: 10)
/// ```
public struct ImageRequest: Hashable, Sendable, CustomStringConvertible {
    /// The image's location: `http(s):`, `file:` or `data:`.
    ///
    /// Every tier keys the image by this URL's `absoluteString` as written but for the scheme, which
    /// is case-insensitive and folded to lower case (the disk file is named by the key's SHA-256),
    /// query string included: `HTTP://h/a.jpg` and `http://h/a.jpg` are one entry, but spellings that
    /// differ otherwise, such as `http://h:80/a.jpg` and `http://h/a.jpg`, `%7E` and `~`, or two
    /// `#fragment`s, are separate entries, each downloaded and stored. A redirect does not change the key.
    public let url: URL
    /// The URL's absolute string, its scheme in lower case: requests compare and hash by it, which is
    /// several times cheaper than comparing `URL` values and keeps `cachedImage(for:)` fast during layout.
    private let urlKey: String
    /// The width in pixels to scale the image to, keeping its aspect ratio; `nil` keeps the natural
    /// size. Rounded to the nearest whole pixel and capped at 1,000,000 (beyond any real image); a
    /// value that rounds below 1 (or is not finite) means `nil`.
    public let targetPixelWidth: Int?
    /// The corner radius in pixels at ``targetPixelWidth`` (at the natural width when that is
    /// `nil`); `0`, the default, leaves corners square. Rounded to the nearest whole pixel and capped
    /// at 1,000,000; negative and non-finite values mean `0`. Corners never reach past half the
    /// image's shorter side.
    ///
    /// A source narrower than ``targetPixelWidth`` is prepared at its own width, never scaled up,
    /// and its radius shrinks in proportion, so the corners look as asked when the image is drawn
    /// at the target width: a 120 px source asked for at 600 px with 20 px corners comes out 120 px
    /// wide with 4 px corners.
    public let cornerPixelRadius: Int

    /// Creates a request.
    ///
    /// - Parameters:
    ///   - url: The image's location.
    ///   - targetWidth: The width in pixels to prepare the image at, or `nil` (the default) for
    ///     its natural width. Images are scaled down, never up.
    ///   - cornerRadius: The radius in pixels, at `targetWidth`, of anti-aliased rounded corners;
    ///     `0` by default. See ``cornerPixelRadius`` for a source narrower than `targetWidth`.
    public init(url: URL, targetWidth: CGFloat? = nil, cornerRadius: CGFloat = 0) {
        self.url = url
        self.urlKey = url.cacheKey
        self.targetPixelWidth = targetWidth.flatMap(Self.wholePixels).flatMap { $0 >= 1 ? $0 : nil }
        self.cornerPixelRadius = max(0, Self.wholePixels(cornerRadius) ?? 0)
    }

    /// The same URL with no presentation transforms: the request for the natural-size image.
    public var original: ImageRequest { ImageRequest(url: url) }

    /// The corner radius in pixels of the image this request prepares from a source `naturalWidth`
    /// pixels wide (as displayed): ``cornerPixelRadius``, scaled down with the image when the source
    /// is narrower than ``targetPixelWidth``.
    func cornerPixelRadius(atNaturalWidth naturalWidth: Int) -> Int {
        guard let width = targetPixelWidth, width > naturalWidth, cornerPixelRadius > 0 else {
            return cornerPixelRadius
        }
        return Int((Double(cornerPixelRadius) * Double(naturalWidth) / Double(width)).rounded())
    }

    /// The URL, then the width and radius when set, e.g. `https://x/a.jpg w=320 r=8`.
    public var description: String {
        var text = url.absoluteString
        if let targetPixelWidth { text += " w=\(targetPixelWidth)" }
        if cornerPixelRadius > 0 { text += " r=\(cornerPixelRadius)" }
        return text
    }

    /// Two requests are equal when their URLs have the same absolute string but for the scheme's case
    /// (the key every tier uses, see ``url``: `HTTP://h/a.jpg` and `http://h/a.jpg` are equal) and their
    /// quantized width and radius match.
    public static func == (lhs: ImageRequest, rhs: ImageRequest) -> Bool {
        lhs.targetPixelWidth == rhs.targetPixelWidth && lhs.cornerPixelRadius == rhs.cornerPixelRadius
            && lhs.urlKey == rhs.urlKey
    }

    /// Hashes the URL's absolute string with the scheme in lower case, and the quantized width and radius.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(urlKey)
        hasher.combine(targetPixelWidth)
        hasher.combine(cornerPixelRadius)
    }

    private static func wholePixels(_ value: CGFloat) -> Int? {
        guard value.isFinite else { return nil }
        let rounded = value.rounded(.toNearestOrAwayFromZero)
        // Beyond any real image; also keeps the conversion to Int from trapping.
        return Int(max(-1_000_000, min(1_000_000, rounded)))
    }
}
