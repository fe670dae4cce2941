import Foundation

#if canImport(CXattr)
import CXattr
#endif

/// Reads and writes extended attributes on files. The disk tier keeps each image's pixel size in
/// one; tests swap in an implementation that fails the way a file system without them does.
protocol ExtendedAttributeStoring: Sendable {
    /// The attribute's bytes, or `nil` when the file has no such attribute (or the file system
    /// does not support them).
    func value(named name: String, atPath path: String) -> [UInt8]?
    /// Sets the attribute; throws when the file system refuses.
    func setValue(_ value: [UInt8], named name: String, atPath path: String) throws
    /// Removes the attribute if present.
    func removeValue(named name: String, atPath path: String)
}

/// The operating system's extended attributes (`getxattr`/`setxattr`).
struct FileExtendedAttributes: ExtendedAttributeStoring {
    func value(named name: String, atPath path: String) -> [UInt8]? {
        // Every value the store writes is small; 64 bytes leaves room to detect a foreign one.
        var buffer = [UInt8](repeating: 0, count: 64)
        let length = buffer.withUnsafeMutableBytes { raw in
            #if canImport(Darwin)
            getxattr(path, name, raw.baseAddress, raw.count, 0, 0)
            #else
            getxattr(path, name, raw.baseAddress, raw.count)
            #endif
        }
        guard length >= 0 else { return nil }
        return Array(buffer[0..<length])
    }

    func setValue(_ value: [UInt8], named name: String, atPath path: String) throws {
        let result = value.withUnsafeBytes { raw in
            #if canImport(Darwin)
            setxattr(path, name, raw.baseAddress, raw.count, 0, 0)
            #else
            setxattr(path, name, raw.baseAddress, raw.count, 0)
            #endif
        }
        if result != 0 { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    }

    func removeValue(named name: String, atPath path: String) {
        #if canImport(Darwin)
        _ = removexattr(path, name, 0)
        #else
        _ = removexattr(path, name)
        #endif
    }
}

/// The pixel size attribute: 8 bytes, width then height, each a little-endian Int32.
enum PixelSizeAttribute {
    #if canImport(Darwin)
    static let name = "public.asyncimagecache.pixelsize"
    #else
    // Linux only lets ordinary processes use the `user.` namespace.
    static let name = "user.asyncimagecache.pixelsize"
    #endif

    static func encode(_ size: PixelSize) -> [UInt8] {
        let width = UInt32(truncatingIfNeeded: Int32(clamping: size.width))
        let height = UInt32(truncatingIfNeeded: Int32(clamping: size.height))
        return (0..<4).map { UInt8(truncatingIfNeeded: width >> UInt32($0 * 8)) }
            + (0..<4).map { UInt8(truncatingIfNeeded: height >> UInt32($0 * 8)) }
    }

    /// The size in `bytes`, or `nil` unless they are exactly 8 bytes holding two positive values.
    static func decode(_ bytes: [UInt8]) -> PixelSize? {
        guard bytes.count == 8 else { return nil }
        func int32(at offset: Int) -> Int {
            Int(Int32(bitPattern: (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[offset + $1]) << UInt32($1 * 8) }))
        }
        let size = PixelSize(width: int32(at: 0), height: int32(at: 4))
        return size.width > 0 && size.height > 0 ? size : nil
    }
}
