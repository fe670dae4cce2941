// Stand-ins for the parts of SwiftUI that `AsyncImageCacheUI` uses, shaped after Apple's declarations,
// so that `scripts/typecheck` can type-check the view on Linux: its use of the library's own
// API (names, labels, types, actor isolation) then fails here as it would on a Mac. Only what the view
// and the documentation's examples use is declared; where a declaration differs from Apple's, Apple's
// is right and this one is fixed.
@_exported import Combine
@_exported import Foundation

@MainActor @preconcurrency public protocol View {
    associatedtype Body: View
    @ViewBuilder @MainActor var body: Body { get }
}

extension Never: View {
    public var body: Never { fatalError() }
}

extension Optional: View where Wrapped: View {
    public var body: Never { fatalError() }
}

/// What the stand-in modifiers and builders return: the real types are SwiftUI's own.
public struct StandInView: View {
    nonisolated public init() {}
    public var body: Never { fatalError() }
}

/// One of two views, as SwiftUI's `_ConditionalContent`.
public struct Conditional<First: View, Second: View>: View {
    nonisolated public init() {}
    public var body: Never { fatalError() }
}

@MainActor @resultBuilder public enum ViewBuilder {
    public static func buildBlock() -> StandInView { StandInView() }
    public static func buildBlock<Content: View>(_ content: Content) -> Content { content }
    public static func buildIf<Content: View>(_ content: Content?) -> Content? { content }
    public static func buildEither<First: View, Second: View>(first: First) -> Conditional<First, Second> {
        Conditional()
    }
    public static func buildEither<First: View, Second: View>(second: Second) -> Conditional<First, Second> {
        Conditional()
    }
}

public enum ContentMode: Hashable, Sendable {
    case fit, fill
}

public enum RoundedCornerStyle: Sendable {
    case circular, continuous
}

public protocol Shape: Sendable {}

public struct RoundedRectangle: Shape {
    public init(cornerRadius: CGFloat, style: RoundedCornerStyle = .continuous) {}
}

public struct Color: View {
    public static let clear = Color()
    public var body: Never { fatalError() }
}

public struct Image: View {
    #if canImport(UIKit)
    public init(uiImage: UIImage) {}
    #elseif canImport(AppKit)
    public init(nsImage: NSImage) {}
    #else
    /// Linux has neither `UIImage` nor `NSImage`: the view's `PlatformImage` is the library's `Bitmap`.
    public init(nsImage: Any) {}
    #endif
    public func resizable() -> Image { self }
    public var body: Never { fatalError() }
}

public struct GeometryProxy {
    public var size: CGSize { .zero }
}

public struct EnvironmentValues {
    public var displayScale: CGFloat { 1 }
}

@propertyWrapper public struct Environment<Value>: Sendable {
    public init(_ keyPath: KeyPath<EnvironmentValues, Value> & Sendable) {}
    public var wrappedValue: Value { fatalError() }
}

@MainActor @propertyWrapper public struct StateObject<ObjectType: ObservableObject> {
    public init(wrappedValue thunk: @autoclosure @escaping () -> ObjectType) {}
    public var wrappedValue: ObjectType { fatalError() }
}

extension View {
    public func overlay<V: View>(alignment: Alignment = .center, @ViewBuilder content: () -> V) -> StandInView {
        StandInView()
    }
    public func clipShape<S: Shape>(_ shape: S) -> StandInView { StandInView() }
    public func aspectRatio(_ aspectRatio: CGFloat? = nil, contentMode: ContentMode) -> StandInView { StandInView() }
    public func aspectRatio(_ aspectRatio: CGSize, contentMode: ContentMode) -> StandInView { StandInView() }
    public func onGeometryChange<T: Equatable>(
        for type: T.Type, of transform: @escaping @Sendable (GeometryProxy) -> T,
        action: @escaping (_ newValue: T) -> Void
    ) -> StandInView { StandInView() }
    public func task<T: Equatable>(
        id value: T, priority: TaskPriority = .userInitiated,
        _ action: @escaping @MainActor @Sendable () async -> Void
    ) -> StandInView { StandInView() }
    public func onDisappear(perform action: (() -> Void)? = nil) -> StandInView { StandInView() }
    public func frame(maxWidth: CGFloat? = nil) -> StandInView { StandInView() }
}

public struct Alignment: Sendable {
    public static let center = Alignment()
}
