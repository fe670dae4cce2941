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

    @Test func removeAllEmptiesTheCache() {
        let cache = MemoryCache<String, Int>(countLimit: 10, costLimit: 100)
        cache.insert(1, forKey: "a", cost: 10)
        cache.removeAll()
        #expect(cache.count == 0 && cache.totalCost == 0 && cache.value(forKey: "a") == nil)
    }
}
