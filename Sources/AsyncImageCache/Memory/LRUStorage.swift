/// The unsynchronised LRU behind ``MemoryCache``: a hash map into a doubly linked list kept in
/// arrays, with freed slots reused, so no operation allocates a node or walks the list.
///
/// The links live in their own compact array (two `Int32` per entry) apart from keys and values,
/// so moving an entry to the front touches little memory even with tens of thousands of entries.
/// It is `@usableFromInline` so that `MemoryCache`'s generic code specialises in client modules.
@usableFromInline
struct LRUStorage<Key: Hashable, Value> {
    @usableFromInline
    struct Link {
        /// Towards the least recently used end; -1 at the end.
        @usableFromInline var previous: Int32
        /// Towards the most recently used end; -1 at the end.
        @usableFromInline var next: Int32

        @inlinable init(previous: Int32, next: Int32) {
            self.previous = previous
            self.next = next
        }
    }

    @usableFromInline let countLimit: Int
    @usableFromInline let costLimit: Int
    @usableFromInline var totalCost = 0
    @usableFromInline var index: [Key: Int32] = [:]
    @usableFromInline var keys: [Key?] = []
    @usableFromInline var values: [Value?] = []
    @usableFromInline var costs: [Int] = []
    @usableFromInline var links: [Link] = []
    @usableFromInline var freeSlots: [Int32] = []
    @usableFromInline var leastRecent: Int32 = -1
    @usableFromInline var mostRecent: Int32 = -1
    /// Slots read since the list was last reordered, oldest first (see ``value(forKey:markingUsed:)``).
    @usableFromInline var pendingUses: [Int32] = []

    /// The reads kept before the list is reordered for them.
    @usableFromInline static var pendingUseLimit: Int { 32 }

    @inlinable
    init(countLimit: Int, costLimit: Int) {
        // Slots are Int32; no memory tier holds two billion entries.
        self.countLimit = min(countLimit, Int(Int32.max))
        self.costLimit = costLimit
        // Room for the first entries from the start (a new or emptied cache, as after a relaunch), so that
        // they are not inserted through one regrowth of the table and the arrays after another.
        let initial = min(self.countLimit, Self.initialCapacity)
        index.reserveCapacity(initial)
        keys.reserveCapacity(initial)
        values.reserveCapacity(initial)
        costs.reserveCapacity(initial)
        links.reserveCapacity(initial)
    }

    /// The entries a new cache has room for before its storage first grows.
    @usableFromInline static var initialCapacity: Int { 128 }

    @inlinable
    var count: Int { index.count }

    /// The value for `key`. A read that marks the entry used is noted and applied to the list with
    /// the next few: moving entries to the front one by one, each read would wait on the links of
    /// three scattered entries in turn; a batch lets the processor fetch the links of several at once.
    /// Every other operation applies the pending reads first, in order, so the order it sees (and
    /// evicts by) is exactly least recently used.
    @inlinable
    mutating func value(forKey key: Key, markingUsed: Bool) -> Value? {
        guard let slot = index[key] else { return nil }
        if markingUsed {
            pendingUses.append(slot)
            if pendingUses.count >= Self.pendingUseLimit { applyPendingUses() }
        }
        return values[Int(slot)]
    }

    /// Moves the entries read since the last reordering to the front, in the order they were read.
    @inlinable
    mutating func applyPendingUses() {
        for slot in pendingUses where slot != mostRecent {
            unlink(slot)
            linkAsMostRecent(slot)
        }
        pendingUses.removeAll(keepingCapacity: true)
    }

    /// Inserts `value` as the most recently used entry and evicts past the limits; returns what
    /// left the cache, each entry as `left` makes it: a replaced value under `key`, the evicted
    /// entries, or `value` itself when it cannot fit at all. (Made as they leave, into one array: an
    /// insert that evicts allocates once.)
    @inlinable
    mutating func insert<Left>(
        _ value: Value, forKey key: Key, cost: Int, left: (Key, Value) -> Left
    ) -> [Left] {
        if !pendingUses.isEmpty { applyPendingUses() }
        var evicted: [Left] = []
        guard cost <= costLimit, countLimit > 0 else {
            if let old = removeValue(forKey: key) { evicted.append(left(key, old)) }
            evicted.append(left(key, value))
            return evicted
        }
        // The entry's slot is filled first, so that one hash of `key` both finds an older entry under it
        // and points it at the new slot (a lookup and then an insert hashed it twice).
        let slot: Int32
        if let free = freeSlots.popLast() {
            slot = free
            keys[Int(slot)] = key
            values[Int(slot)] = value
            costs[Int(slot)] = cost
        } else {
            slot = Int32(keys.count)
            keys.append(key)
            values.append(value)
            costs.append(cost)
            links.append(Link(previous: -1, next: -1))
        }
        if let old = index.updateValue(slot, forKey: key), let oldValue = release(old) {
            evicted.append(left(key, oldValue))
        }
        // Room is made before the entry counts, so the total never passes the limit: counting first and
        // evicting after would overflow it when the limit is near `Int.max`. As `cost` is at most
        // `costLimit`, `costLimit - cost` cannot overflow; the new entry is not linked yet, so never a victim.
        while index.count > countLimit || totalCost > costLimit - cost, leastRecent != -1 {
            let victim = keys[Int(leastRecent)]!
            if let value = removeValue(forKey: victim) { evicted.append(left(victim, value)) }
        }
        totalCost += cost
        linkAsMostRecent(slot)
        return evicted
    }

    @inlinable
    mutating func removeValue(forKey key: Key) -> Value? {
        if !pendingUses.isEmpty { applyPendingUses() }
        guard let slot = index.removeValue(forKey: key) else { return nil }
        return release(slot)
    }

    /// Unlinks and empties `slot`, whose key is already out of ``index``, for reuse; returns its value.
    @inlinable
    mutating func release(_ slot: Int32) -> Value? {
        unlink(slot)
        let position = Int(slot)
        let value = values[position]
        totalCost -= costs[position]
        keys[position] = nil
        values[position] = nil
        costs[position] = 0
        freeSlots.append(slot)
        return value
    }

    mutating func keysFromLeastRecent() -> [Key] {
        if !pendingUses.isEmpty { applyPendingUses() }
        var result: [Key] = []
        var slot = leastRecent
        while slot != -1 {
            result.append(keys[Int(slot)]!)
            slot = links[Int(slot)].next
        }
        return result
    }

    @inlinable
    mutating func unlink(_ slot: Int32) {
        let link = links[Int(slot)]
        if link.previous != -1 { links[Int(link.previous)].next = link.next } else { leastRecent = link.next }
        if link.next != -1 { links[Int(link.next)].previous = link.previous } else { mostRecent = link.previous }
        links[Int(slot)] = Link(previous: -1, next: -1)
    }

    @inlinable
    mutating func linkAsMostRecent(_ slot: Int32) {
        links[Int(slot)] = Link(previous: mostRecent, next: -1)
        if mostRecent != -1 { links[Int(mostRecent)].next = slot } else { leastRecent = slot }
        mostRecent = slot
    }
}
