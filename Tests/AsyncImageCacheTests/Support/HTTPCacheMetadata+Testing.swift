import Foundation

@testable import AsyncImageCache

extension HTTPCacheMetadata {
    /// Whether the entry stops being fresh `lifetime` seconds after a response that arrived between
    /// `start` and `end`: on disk the expiry is kept in whole seconds, rounded down, so up to a second
    /// early. `nil`, fresh until evicted.
    func expires(after lifetime: TimeInterval?, receivedBetween start: Date, and end: Date) -> Bool {
        guard let lifetime else { return expires == nil }
        guard let expires else { return false }
        return expires >= start.addingTimeInterval(lifetime - 1) && expires <= end.addingTimeInterval(lifetime)
    }
}
