// Stand-ins for the parts of Combine that `AsyncImageCacheUI` uses (see SwiftUI.swift beside it).
public final class ObservableObjectPublisher: @unchecked Sendable {
    public init() {}
    public func send() {}
}

public protocol ObservableObject: AnyObject {
    var objectWillChange: ObservableObjectPublisher { get }
}

extension ObservableObject {
    public var objectWillChange: ObservableObjectPublisher { ObservableObjectPublisher() }
}
