import Foundation

/// A least-recently-used cache bounded by entry count and by total cost, behind a lock.
///
/// Every operation is O(1). When an insert takes the cache past either limit, the least recently
/// used entries are evicted until it is back within both; a read counts as a use. Eviction order is
/// deterministic. The store keeps its original bytes in one (cost: their byte count, and for a
/// `data:` URL its key's as well); its ready-to-draw variants go through the same least-recently-used
/// storage (cost: `width * height * 4`), with an index of each URL's variants beside it.
/// It is `Sendable` only when its keys and values are: a value read on one thread is the one inserted
/// on another, so a cache of a class that is not `Sendable` stays in one concurrency domain.
///
/// ```swift
/// let cache = MemoryCache<String, Data>(countLimit: 100, costLimit: 10 << 20)
/// cache.insert(data, forKey: "a", cost: data.count)
/// let hit = cache.value(forKey: "a")
/// ```
public final class MemoryCache<Key: Hashable, Value> {
    // `storage` is only touched inside `lock`. Both are `@usableFromInline` so the hot methods can
    // be inlined and specialised in client modules. The storage sits behind a pointer: the lock
    // already makes access exclusive, and a stored `var` would add a dynamic exclusivity check to
    // every lookup.
    @usableFromInline let lock = NSLock()
    @usableFromInline let storage: UnsafeMutablePointer<LRUStorage<Key, Value>>

    /// Creates an empty cache.
    ///
    /// - Parameters:
    ///   - countLimit: The most entries kept; at least 0.
    ///   - costLimit: The most total cost kept, in whatever unit inserts use (the store uses bytes).
    public init(countLimit: Int, costLimit: Int) {
        storage = .allocate(capacity: 1)
        storage.initialize(to: LRUStorage(countLimit: max(0, countLimit), costLimit: max(0, costLimit)))
    }

    deinit {
        storage.deinitialize(count: 1)
        storage.deallocate()
    }

    /// The value for `key`, marking it most recently used; `nil` on a miss.
    @inlinable
    public func value(forKey key: Key) -> Value? {
        lock.lock()
        defer { lock.unlock() }
        return storage.pointee.value(forKey: key, markingUsed: true)
    }

    /// Whether `key` has a value, without marking it used.
    public func contains(_ key: Key) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        return storage.pointee.value(forKey: key, markingUsed: false) != nil
    }

    /// Stores `value` for `key` as the most recently used entry, then evicts past the limits.
    ///
    /// A value whose cost alone exceeds the cost limit (or any value, under a count limit of 0) is not
    /// kept, and any older value for `key` is removed all the same: the cache never answers with a value
    /// that was replaced. A negative cost counts as 0.
    /// - Returns: Every value that left the cache: the older value for `key`, if there was one, then
    ///   the values evicted to make room, least recently used first; or, when `value` is not kept, the
    ///   older value for `key` and then `value` itself.
    @inlinable @discardableResult
    public func insert(_ value: Value, forKey key: Key, cost: Int) -> [Value] {
        lock.lock()
        let evicted = storage.pointee.insert(value, forKey: key, cost: max(0, cost)) { $1 }
        lock.unlock()
        return evicted  // released outside the lock: a value's deinit is arbitrary code
    }

    /// Removes the value for `key`, returning it.
    @discardableResult
    public func removeValue(forKey key: Key) -> Value? {
        lock.lock()
        defer { lock.unlock() }
        return storage.pointee.removeValue(forKey: key)
    }

    /// Removes the value for `key` if `matches` it, in one step: a value inserted for `key` meanwhile by
    /// another thread is never removed in its stead. `matches` runs under the cache's lock: it must not use
    /// the cache. Returns whether it removed one.
    @discardableResult
    func removeValue(forKey key: Key, if matches: (Value) -> Bool) -> Bool {
        lock.lock()
        var removed: Value?
        if let value = storage.pointee.value(forKey: key, markingUsed: false), matches(value) {
            removed = storage.pointee.removeValue(forKey: key)
        }
        lock.unlock()
        return removed != nil  // released outside the lock: a value's deinit is arbitrary code
    }

    /// Removes every entry.
    public func removeAll() {
        lock.lock()
        let old = storage.move()
        storage.initialize(to: LRUStorage(countLimit: old.countLimit, costLimit: old.costLimit))
        lock.unlock()
        _ = old  // released outside the lock
    }

    /// The number of entries.
    public var count: Int {
        lock.lock()
        defer { lock.unlock() }
        return storage.pointee.count
    }

    /// The sum of the costs of all entries.
    public var totalCost: Int {
        lock.lock()
        defer { lock.unlock() }
        return storage.pointee.totalCost
    }

    /// The keys from least to most recently used (O(n); for tests and diagnostics).
    public var keysByRecency: [Key] {
        lock.lock()
        defer { lock.unlock() }
        return storage.pointee.keysFromLeastRecent()
    }
}

// The lock makes the cache itself safe to share, but what goes in comes out on another thread: only
// Sendable keys and values may cross that way, or a class instance would be shared unchecked.
extension MemoryCache: @unchecked Sendable where Key: Sendable, Value: Sendable {}
