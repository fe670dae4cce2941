import Foundation

@testable import AsyncImageCache

/// The real attributes, except that once armed the next write of the pixel-size attribute (a new disk
/// file's, before its rename) waits on its thread until the gate opens.
final class PixelSizeWriteGate: FileAttributesHook, Sendable {
    let gate = ParkingGate()

    func setValue(_ value: [UInt8], named name: String, atPath path: String) throws {
        if name == PixelSizeAttribute.name { gate.parkIfArmed() }
        try FileExtendedAttributes().setValue(value, named: name, atPath: path)
    }

    func setValue(_ value: [UInt8], named name: String, onDescriptor descriptor: Int32) throws {
        if name == PixelSizeAttribute.name { gate.parkIfArmed() }
        try FileExtendedAttributes().setValue(value, named: name, onDescriptor: descriptor)
    }
}
