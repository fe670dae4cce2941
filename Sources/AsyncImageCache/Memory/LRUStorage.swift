/// The unsynchronised LRU behind ``MemoryCache``: a hash map into a doubly linked list kept in an
/// array, with freed slots reused, so no operation allocates a node or walks the list.
struct LRUStorage<Key: Hashable, Value> {
    private struct Node {
        var key: Key?
        var value: Value?
        var cost: Int
        var previous: Int  // towards the least recently used end; -1 at the end
        var next: Int  // towards the most recently used end; -1 at the end
    }

    let countLimit: Int
    let costLimit: Int
    private(set) var totalCost = 0
    private var nodes: [Node] = []
    private var index: [Key: Int] = [:]
    private var freeSlots: [Int] = []
    private var leastRecent = -1
    private var mostRecent = -1

    init(countLimit: Int, costLimit: Int) {
        self.countLimit = countLimit
        self.costLimit = costLimit
    }

    var count: Int { index.count }

    mutating func value(forKey key: Key, markingUsed: Bool) -> Value? {
        guard let slot = index[key] else { return nil }
        if markingUsed {
            unlink(slot)
            linkAsMostRecent(slot)
        }
        return nodes[slot].value
    }

    mutating func insert(_ value: Value, forKey key: Key, cost: Int) -> [Value] {
        var evicted: [Value] = []
        if let old = removeValue(forKey: key) { evicted.append(old) }
        guard cost <= costLimit, countLimit > 0 else {
            evicted.append(value)
            return evicted
        }
        let node = Node(key: key, value: value, cost: cost, previous: -1, next: -1)
        let slot: Int
        if let free = freeSlots.popLast() {
            slot = free
            nodes[slot] = node
        } else {
            slot = nodes.count
            nodes.append(node)
        }
        index[key] = slot
        totalCost += cost
        linkAsMostRecent(slot)
        while index.count > countLimit || totalCost > costLimit, leastRecent != -1 {
            let victim = nodes[leastRecent].key!
            if let value = removeValue(forKey: victim) { evicted.append(value) }
        }
        return evicted
    }

    mutating func removeValue(forKey key: Key) -> Value? {
        guard let slot = index.removeValue(forKey: key) else { return nil }
        unlink(slot)
        let value = nodes[slot].value
        totalCost -= nodes[slot].cost
        nodes[slot] = Node(key: nil, value: nil, cost: 0, previous: -1, next: -1)
        freeSlots.append(slot)
        return value
    }

    func keysFromLeastRecent() -> [Key] {
        var keys: [Key] = []
        var slot = leastRecent
        while slot != -1 {
            keys.append(nodes[slot].key!)
            slot = nodes[slot].next
        }
        return keys
    }

    private mutating func unlink(_ slot: Int) {
        let previous = nodes[slot].previous
        let next = nodes[slot].next
        if previous != -1 { nodes[previous].next = next } else { leastRecent = next }
        if next != -1 { nodes[next].previous = previous } else { mostRecent = previous }
        nodes[slot].previous = -1
        nodes[slot].next = -1
    }

    private mutating func linkAsMostRecent(_ slot: Int) {
        nodes[slot].previous = mostRecent
        nodes[slot].next = -1
        if mostRecent != -1 { nodes[mostRecent].next = slot } else { leastRecent = slot }
        mostRecent = slot
    }
}
