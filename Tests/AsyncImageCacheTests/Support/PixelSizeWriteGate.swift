import Foundation

@testable import AsyncImageCache

/// The real attributes, except that once armed the next write of the pixel-size attribute (a new disk
/// file's, before its rename) waits on its thread until the gate opens.
final class PixelSizeWriteGate: ExtendedAttributeStoring, Sendable {
    let gate = ParkingGate()

    func read(named name: String, atPath path: UnsafePointer<CChar>, into buffer: UnsafeMutableRawBufferPointer) -> Int?
    {
        FileExtendedAttributes().read(named: name, atPath: path, into: buffer)
    }

    func setValue(_ value: [UInt8], named name: String, atPath path: String) throws {
        if name == PixelSizeAttribute.name { gate.parkIfArmed() }
        try FileExtendedAttributes().setValue(value, named: name, atPath: path)
    }

    func setValue(_ value: [UInt8], named name: String, onDescriptor descriptor: Int32) throws {
        if name == PixelSizeAttribute.name { gate.parkIfArmed() }
        try FileExtendedAttributes().setValue(value, named: name, onDescriptor: descriptor)
    }

    func removeValue(named name: String, atPath path: String) {
        FileExtendedAttributes().removeValue(named: name, atPath: path)
    }
}
