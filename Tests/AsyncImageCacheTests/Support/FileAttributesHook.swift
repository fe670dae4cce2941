import Foundation

@testable import AsyncImageCache

/// Extended attributes for a test that changes some calls and leaves the rest to the file system: every
/// call a conforming type does not implement itself goes to ``FileExtendedAttributes``, the real ones.
protocol FileAttributesHook: ExtendedAttributeStoring {}

extension FileAttributesHook {
    func read(named name: String, atPath path: UnsafePointer<CChar>, into buffer: UnsafeMutableRawBufferPointer) -> Int?
    {
        FileExtendedAttributes().read(named: name, atPath: path, into: buffer)
    }

    func setValue(_ value: [UInt8], named name: String, atPath path: String) throws {
        try FileExtendedAttributes().setValue(value, named: name, atPath: path)
    }

    func setValue(_ value: [UInt8], named name: String, onDescriptor descriptor: Int32) throws {
        try FileExtendedAttributes().setValue(value, named: name, onDescriptor: descriptor)
    }

    func removeValue(named name: String, atPath path: String) {
        FileExtendedAttributes().removeValue(named: name, atPath: path)
    }
}
