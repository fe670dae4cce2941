import Foundation

@testable import AsyncImageCache

/// The real attributes, except that once armed the next write of caching facts onto a write's temporary
/// file (before its rename) waits on its thread until the gate opens.
final class CacheFactsWriteGate: FileAttributesHook, Sendable {
    let gate = ParkingGate()

    func setValue(_ value: [UInt8], named name: String, atPath path: String) throws {
        if name == HTTPCacheMetadata.attributeName, path.contains(DiskStore.temporaryPrefix) { gate.parkIfArmed() }
        try FileExtendedAttributes().setValue(value, named: name, atPath: path)
    }
}
