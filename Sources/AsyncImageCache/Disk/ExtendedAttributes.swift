import Foundation

#if canImport(CXattr)
import CXattr
#endif

/// Reads and writes extended attributes on files. The disk tier keeps each image's pixel size in
/// one; tests swap in an implementation that fails the way a file system without them does.
protocol ExtendedAttributeStoring: Sendable {
    /// Reads the attribute into `buffer` and returns its length; `nil` when the file has no such
    /// attribute, the file system does not support them, or the value is larger than `buffer`.
    func read(named name: String, atPath path: UnsafePointer<CChar>, into buffer: UnsafeMutableRawBufferPointer) -> Int?
    /// Sets the attribute; throws when the file system refuses.
    func setValue(_ value: [UInt8], named name: String, atPath path: String) throws
    /// Sets the attribute on the open file `descriptor`, whatever its path names by now; throws when
    /// the file system refuses.
    func setValue(_ value: [UInt8], named name: String, onDescriptor descriptor: Int32) throws
    /// Removes the attribute if present.
    func removeValue(named name: String, atPath path: String)
}

extension ExtendedAttributeStoring {
    /// The attribute's bytes (up to 64), or `nil` when there is none.
    func value(named name: String, atPath path: String) -> [UInt8]? {
        withUnsafeTemporaryAllocation(byteCount: 64, alignment: 8) { buffer in
            path.withCString { read(named: name, atPath: $0, into: buffer) }.map { Array(buffer[0..<$0]) }
        }
    }
}

/// The operating system's extended attributes (`lgetxattr`/`lsetxattr`): a symbolic link is never
/// followed, so an attribute is never read from, or written onto, a file outside the folder.
struct FileExtendedAttributes: ExtendedAttributeStoring {
    func read(named name: String, atPath path: UnsafePointer<CChar>, into buffer: UnsafeMutableRawBufferPointer) -> Int?
    {
        #if canImport(Darwin)
        let length = getxattr(path, name, buffer.baseAddress, buffer.count, 0, XATTR_NOFOLLOW)
        #else
        let length = lgetxattr(path, name, buffer.baseAddress, buffer.count)
        #endif
        return length >= 0 ? length : nil
    }

    func setValue(_ value: [UInt8], named name: String, atPath path: String) throws {
        let result = value.withUnsafeBytes { raw in
            #if canImport(Darwin)
            setxattr(path, name, raw.baseAddress, raw.count, 0, XATTR_NOFOLLOW)
            #else
            lsetxattr(path, name, raw.baseAddress, raw.count, 0)
            #endif
        }
        if result != 0 { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    }

    func setValue(_ value: [UInt8], named name: String, onDescriptor descriptor: Int32) throws {
        let result = value.withUnsafeBytes { raw in
            #if canImport(Darwin)
            fsetxattr(descriptor, name, raw.baseAddress, raw.count, 0, 0)
            #else
            fsetxattr(descriptor, name, raw.baseAddress, raw.count, 0)
            #endif
        }
        if result != 0 { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    }

    func removeValue(named name: String, atPath path: String) {
        #if canImport(Darwin)
        _ = removexattr(path, name, XATTR_NOFOLLOW)
        #else
        _ = lremovexattr(path, name)
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

    /// The size in `bytes`, or `nil` unless they are exactly 8 bytes holding two positive values no
    /// larger than a header may declare (``ImageHeader/maximumDimension``): anything else was not
    /// written by the store, and the file's header must answer instead.
    static func decode(_ bytes: some RandomAccessCollection<UInt8>) -> PixelSize? {
        guard bytes.count == 8 else { return nil }
        func int32(at offset: Int) -> Int {
            let start = bytes.index(bytes.startIndex, offsetBy: offset)
            var value: UInt32 = 0
            for (shift, byte) in bytes[start...].prefix(4).enumerated() { value |= UInt32(byte) << UInt32(shift * 8) }
            return Int(Int32(bitPattern: value))
        }
        let size = PixelSize(width: int32(at: 0), height: int32(at: 4))
        let plausible = 1...ImageHeader.maximumDimension
        return plausible.contains(size.width) && plausible.contains(size.height) ? size : nil
    }
}
