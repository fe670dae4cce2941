#if canImport(UIKit)
import UIKit

/// The image type the store hands out: `UIImage` on iOS, tvOS and visionOS.
public typealias PlatformImage = UIImage
#elseif canImport(AppKit)
import AppKit

/// The image type the store hands out: `NSImage` on macOS.
public typealias PlatformImage = NSImage
#else
/// The image type the store hands out: on Linux, the package's own immutable ``Bitmap``.
public typealias PlatformImage = Bitmap
#endif
