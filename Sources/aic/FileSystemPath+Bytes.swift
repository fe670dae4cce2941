@_spi(Tools) import AsyncImageCache
import Foundation

extension FileSystemPath {
    /// The path's bytes, without the NUL that ends them.
    var bytes: [UInt8] {
        withCString { Array(UnsafeRawBufferPointer(start: $0, count: strlen($0))) }
    }
}
