/// How many times each URL's image has been replaced (by a revalidation that found new bytes, or
/// forgotten by `removeImage(for:)`), as a count that a load reads before it looks anything up and
/// checks again before it keeps what it found: a changed count means the image it found may be the
/// old one.
///
/// A count is per URL, so a replacement never touches another URL's loads. Counts are stamps of one
/// clock, so a URL's count only ever goes up, and goes up at each of its replacements. URLs never
/// replaced share ``floor``. To stay bounded, past `limit` URLs the older half is forgotten, and
/// past `byteLimit` bytes of their keys (a URL may be as long as a signed query makes it) the older
/// ones until those kept take half of it: their counts, and every unreplaced URL's, become the raised
/// floor, which is at least each forgotten stamp, so no count ever goes back to a value read before a
/// replacement. The one cost: a load in flight at that moment whose count changed keeps nothing (it
/// still delivers), as after a replacement of its own; that happens once per `limit / 2` replacements
/// (or `byteLimit / 2` bytes of keys), not at each.
struct ReplacementLedger {
    /// URLs whose count is kept on its own; past this, the older half joins the floor.
    let limit: Int
    /// The most bytes of keys kept; past this, the older URLs join the floor until those kept take half.
    let byteLimit: Int
    private var clock = 0
    private var floor = 0
    private var stamps: [String: Int] = [:]
    /// The bytes of the keys in `stamps`.
    private var keyBytes = 0

    init(limit: Int = 4096, byteLimit: Int = 4 << 20) {
        self.limit = max(limit, 2)
        self.byteLimit = max(byteLimit, 0)
    }

    /// The count of the URL whose `cacheKey` is `key`.
    func count(ofKey key: String) -> Int {
        stamps[key] ?? floor
    }

    /// Raises the count of the URL whose `cacheKey` is `key`.
    mutating func raise(forKey key: String) {
        clock += 1
        if stamps.updateValue(clock, forKey: key) == nil { keyBytes += key.utf8.count }
        guard stamps.count > limit || keyBytes > byteLimit else { return }
        // Never under the floor: a count forgotten before must not go back.
        var threshold = max(clock - limit / 2, floor)
        if keyBytes > byteLimit {
            // The newest URLs whose keys take up to half the byte limit stay (the one just raised at least).
            var kept = 0
            for (key, stamp) in stamps.sorted(by: { $0.value > $1.value }) {
                kept += key.utf8.count
                if kept > byteLimit / 2, stamp < clock {
                    threshold = max(threshold, stamp)
                    break
                }
            }
        }
        stamps = stamps.filter { $0.value > threshold }
        keyBytes = stamps.keys.reduce(0) { $0 + $1.utf8.count }
        floor = threshold
    }

    /// The bytes of the keys of the URLs that have a count of their own (tests).
    var trackedKeyBytes: Int { keyBytes }

    /// How many URLs have a count of their own (tests).
    var trackedCount: Int { stamps.count }
}
