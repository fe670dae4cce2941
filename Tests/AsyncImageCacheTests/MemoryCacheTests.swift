import Testing

@testable import AsyncImageCache

@Suite struct MemoryCacheTests {
    @Test func evictsTheLeastRecentlyUsedEntryWhenOverTheCountLimit() {
        let cache = MemoryCache<String, Int>(countLimit: 3, costLimit: 1000)
        cache.insert(1, forKey: "a", cost: 1)
        cache.insert(2, forKey: "b", cost: 1)
        cache.insert(3, forKey: "c", cost: 1)
        #expect(cache.value(forKey: "a") == 1)  // "a" becomes the most recently used
        let evicted = cache.insert(4, forKey: "d", cost: 1)
        #expect(evicted == [2])
        #expect(cache.value(forKey: "b") == nil)
        #expect(cache.keysByRecency == ["c", "a", "d"])
        #expect(cache.count == 3)
    }

    @Test func aConditionalRemovalRemovesOnlyAMatchingValue() {
        let cache = MemoryCache<String, Int>(countLimit: 10, costLimit: 100)
        cache.insert(1, forKey: "a", cost: 1)
        #expect(!cache.removeValue(forKey: "a") { $0 == 2 })
        #expect(!cache.removeValue(forKey: "b") { _ in true })
        #expect(cache.value(forKey: "a") == 1)
        #expect(cache.removeValue(forKey: "a") { $0 == 1 })
        #expect(cache.count == 0)
    }

    @Test func evictsLeastRecentlyUsedEntriesUntilTheCostFits() {
        let cache = MemoryCache<String, Int>(countLimit: 100, costLimit: 100)
        cache.insert(1, forKey: "a", cost: 40)
        cache.insert(2, forKey: "b", cost: 40)
        _ = cache.value(forKey: "a")
        let evicted = cache.insert(3, forKey: "c", cost: 50)
        #expect(evicted == [2])
        #expect(cache.totalCost == 90)
        cache.insert(4, forKey: "d", cost: 60)
        #expect(cache.keysByRecency == ["d"])
        #expect(cache.totalCost == 60)
    }

    @Test func aValueCostingMoreThanTheWholeBudgetIsNotKeptAndDropsTheOlderValue() {
        let cache = MemoryCache<String, Int>(countLimit: 10, costLimit: 100)
        cache.insert(1, forKey: "a", cost: 10)
        cache.insert(2, forKey: "a", cost: 101)
        #expect(cache.value(forKey: "a") == nil)
        #expect(cache.totalCost == 0)
    }

    /// What an insert returns is every value that left the cache, as its documentation says: the value it
    /// replaced (wherever that stood in the order) before those evicted for room, and a value not kept.
    @Test func anInsertReturnsEveryValueThatLeftTheCache() {
        let cache = MemoryCache<String, Int>(countLimit: 10, costLimit: 100)
        cache.insert(1, forKey: "a", cost: 40)
        cache.insert(2, forKey: "b", cost: 40)
        cache.insert(3, forKey: "c", cost: 10)
        #expect(cache.insert(4, forKey: "c", cost: 50) == [3, 1])  // replaced "c", then evicted "a"
        #expect(cache.insert(5, forKey: "b", cost: 101) == [2, 5])  // not kept: the older "b", and itself
        #expect(cache.keysByRecency == ["c"] && cache.totalCost == 50)
        let closed = MemoryCache<String, Int>(countLimit: 0, costLimit: 100)
        #expect(closed.insert(6, forKey: "a", cost: -5) == [6] && closed.totalCost == 0)
    }

    @Test func replacingAValueUpdatesTheCostAndRecency() {
        let cache = MemoryCache<String, Int>(countLimit: 10, costLimit: 100)
        cache.insert(1, forKey: "a", cost: 10)
        cache.insert(2, forKey: "b", cost: 10)
        cache.insert(3, forKey: "a", cost: 30)
        #expect(cache.totalCost == 40)
        #expect(cache.keysByRecency == ["b", "a"])
        #expect(cache.value(forKey: "a") == 3)
    }

    @Test func containsDoesNotChangeRecency() {
        let cache = MemoryCache<String, Int>(countLimit: 2, costLimit: 100)
        cache.insert(1, forKey: "a", cost: 1)
        cache.insert(2, forKey: "b", cost: 1)
        #expect(cache.contains("a"))
        cache.insert(3, forKey: "c", cost: 1)
        #expect(!cache.contains("a"))
    }

    @Test func slotsAreReusedAfterRemovalAndOrderStaysConsistent() {
        let cache = MemoryCache<Int, Int>(countLimit: 50, costLimit: .max)
        for round in 0..<20 {
            for key in 0..<50 { cache.insert(key + round, forKey: key, cost: 1) }
            for key in stride(from: 0, to: 50, by: 3) { cache.removeValue(forKey: key) }
        }
        let keys = cache.keysByRecency
        #expect(keys.count == cache.count)
        #expect(Set(keys).count == keys.count)
        #expect(keys == (0..<50).filter { $0 % 3 != 0 })
    }

    /// Reads reorder the list in batches; whatever the mix of operations, what the cache evicts and
    /// reports must be what a plain least-recently-used list gives.
    @Test(arguments: [1, 2, 3])
    func aLongRandomRunMatchesAPlainLRUListStepByStep(seed: UInt64) {
        var generator = SeededGenerator(seed: seed)
        let cache = MemoryCache<Int, Int>(countLimit: 40, costLimit: 400)
        var model: [(key: Int, value: Int, cost: Int)] = []  // least recently used first
        for step in 0..<5_000 {
            let key = Int.random(in: 0..<60, using: &generator)
            switch Int.random(in: 0..<10, using: &generator) {
            case 0..<6:
                let index = model.firstIndex { $0.key == key }
                #expect(cache.value(forKey: key) == index.map { model[$0].value }, "step \(step)")
                if let index { model.append(model.remove(at: index)) }
            case 6..<9:
                let cost = Int.random(in: 1...30, using: &generator)
                let evicted = cache.insert(step, forKey: key, cost: cost)
                var expected: [Int] = []
                if let index = model.firstIndex(where: { $0.key == key }) {
                    expected.append(model.remove(at: index).value)
                }
                model.append((key, step, cost))
                while model.count > 40 || model.reduce(0, { $0 + $1.cost }) > 400 {
                    expected.append(model.removeFirst().value)
                }
                #expect(evicted == expected, "step \(step)")
            default:
                let index = model.firstIndex { $0.key == key }
                #expect(cache.removeValue(forKey: key) == index.map { model.remove(at: $0).value }, "step \(step)")
            }
            if step % 97 == 0 { #expect(cache.keysByRecency == model.map(\.key), "step \(step)") }
        }
        #expect(cache.keysByRecency == model.map(\.key))
        #expect(cache.totalCost == model.reduce(0) { $0 + $1.cost })
    }

    @Test func removeAllEmptiesTheCache() {
        let cache = MemoryCache<String, Int>(countLimit: 10, costLimit: 100)
        cache.insert(1, forKey: "a", cost: 10)
        cache.removeAll()
        #expect(cache.count == 0 && cache.totalCost == 0 && cache.value(forKey: "a") == nil)
    }

    /// With no practical cost limit (`.max`), costs that add up past `Int.max` must evict the least
    /// recently used entries, not overflow the running total (a trap).
    @Test func costsAddingUpPastIntMaxEvictInsteadOfOverflowing() async {
        await #expect(processExitsWith: .success) {
            let cache = MemoryCache<String, Int>(countLimit: 10, costLimit: .max)
            cache.insert(1, forKey: "a", cost: .max)
            let evicted = cache.insert(2, forKey: "b", cost: 1)
            precondition(evicted == [1], "evicted \(evicted)")
            precondition(cache.totalCost == 1 && cache.keysByRecency == ["b"])
        }
    }
}
