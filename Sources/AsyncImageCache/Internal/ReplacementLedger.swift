/// How many times each URL's image has been replaced (by a revalidation that found new bytes, or
/// forgotten by `removeImage(for:)`), as a count that a load reads before it looks anything up and
/// checks again before it keeps what it found: a changed count means the image it found may be the
/// old one.
///
/// A count is per URL, so a replacement never touches another URL's loads. Counts are stamps of one
/// clock, so a URL's count only ever goes up, and goes up at each of its replacements. URLs never
/// replaced share ``floor``. To stay bounded, past `limit` URLs the older half is forgotten:
/// their counts, and every unreplaced URL's, become the raised floor, which is at least each forgotten
/// stamp, so no count ever goes back to a value read before a replacement. The one cost: a load in
/// flight at that moment whose count changed keeps nothing (it still delivers), as after a
/// replacement of its own; that happens once per `limit / 2` replacements, not at each.
struct ReplacementLedger {
    /// URLs whose count is kept on its own; past this, the older half joins the floor.
    let limit: Int
    private var clock = 0
    private var floor = 0
    private var stamps: [String: Int] = [:]

    init(limit: Int = 4096) {
        self.limit = max(limit, 2)
    }

    /// The count of the URL whose `cacheKey` is `key`.
    func count(ofKey key: String) -> Int {
        stamps[key] ?? floor
    }

    /// Raises the count of the URL whose `cacheKey` is `key`.
    mutating func raise(forKey key: String) {
        clock += 1
        stamps[key] = clock
        guard stamps.count > limit else { return }
        let threshold = clock - limit / 2
        stamps = stamps.filter { $0.value > threshold }
        floor = threshold
    }

    /// How many URLs have a count of their own (tests).
    var trackedCount: Int { stamps.count }
}
