import Foundation

/// What a response's headers say about keeping and reusing it (RFC 9111, the parts an image cache
/// needs): whether it may be stored, how long it stays fresh, and the validators to revalidate it.
///
/// A policy read from headers also keeps where its freshness came from (`Cache-Control` or `Expires`),
/// so that a `304 Not Modified` updates the stored response's fields one by one; two policies with the
/// same ``maxAge`` from different fields are not equal. Setting ``maxAge`` or ``isStorable`` makes the
/// policy say it in `Cache-Control`.
public struct HTTPCachePolicy: Sendable, Equatable {
    /// What a `Cache-Control` field says about freshness and storing.
    struct CacheControl: Sendable, Equatable {
        /// `false` for `no-store`.
        var isStorable = true
        /// `max-age`, `0` for `no-cache` or an invalid `max-age`; `nil` for neither.
        var lifetime: TimeInterval?
    }

    /// The response's `Cache-Control`; `nil` when it has none (a `304` without one keeps the stored one).
    /// A `Pragma: no-cache` without `Cache-Control` stands as `Cache-Control: no-cache`.
    var cacheControl: CacheControl?
    /// Whether ``cacheControl`` stands for a `Pragma: no-cache`: on a `304`, it gives way to the stored
    /// response's own `Cache-Control` (RFC 9111 5.4).
    var cacheControlIsPragma = false
    /// Seconds from the response's `Date` (its arrival, without one) to its `Expires`: `0` for one in the
    /// past or that is not a date; `nil` without `Expires`.
    var expiresLifetime: TimeInterval?
    /// The `Age` a cache on the way reports; `0` without one.
    var age: TimeInterval = 0
    /// The response's `Date`, when it was made; `nil` without one. See ``apparentAge(at:)``.
    var date: Date?
    /// The shortest lifetime the redirects on the way allow; `nil` for no limit. A fact of this fetch,
    /// not of the response: a revalidation follows the redirects again.
    var redirectLifetime: TimeInterval?
    /// Whether the response's `Vary` lists `*`: it matches no later request (RFC 9111 4.1), so it is stale
    /// at once whatever its lifetime. `nil` without `Vary`, so that a `304` without one keeps what the
    /// stored response said (4.3.4).
    var variesOnEverything: Bool?

    /// `false` for `Cache-Control: no-store`: the bytes are never written to disk, and the copy kept in
    /// memory is stale at once (every load asks the server again).
    public var isStorable: Bool {
        get { cacheControl?.isStorable ?? true }
        set {
            cacheControl = CacheControl(isStorable: newValue, lifetime: cacheControl?.lifetime)
            // Said in Cache-Control now: on a 304 it replaces the stored response's, as a header's would.
            cacheControlIsPragma = false
        }
    }

    /// Seconds the response stays fresh (`max-age`, else `Expires` less `Date`, less the `Age` a cache
    /// on the way such as a CDN reports; `0` for `no-cache` (or, without `Cache-Control`,
    /// `Pragma: no-cache`), `no-store` and `Vary: *`, for a `max-age` that is not a whole number of
    /// seconds, and for an `Expires` in the past or that is not a date, such as `0`); `nil` when the
    /// server said nothing, which the store treats as fresh until evicted,
    /// as image caches commonly do (but for a status other than 200, 203, 204 and 206 among the 2xx,
    /// which is stale at once). The store also takes off how long before its arrival the response's
    /// `Date` was, where that is more than its `Age` (RFC 9111 4.2.3).
    /// Set, it is what the policy's `Cache-Control` says, in place of any `Expires`, `Age`, `Vary: *` or redirect;
    /// read back, it is still `0` while ``isStorable`` is `false`.
    public var maxAge: TimeInterval? {
        get {
            // No-store keeps only the copy shown, stale at once, however the policy was made: from the
            // header (which sets a lifetime of 0), or by ``isStorable`` or the initializer.
            if variesOnEverything == true || !isStorable { return 0 }
            // RFC 9111 4.2.1 and 5.3: max-age (or no-cache) before Expires.
            return Self.remainingLifetime(
                cacheControl?.lifetime ?? expiresLifetime, age: age, limit: redirectLifetime)
        }
        set {
            cacheControl =
                newValue == nil && isStorable ? nil : CacheControl(isStorable: isStorable, lifetime: newValue)
            cacheControlIsPragma = false
            (expiresLifetime, age, date, redirectLifetime, variesOnEverything) = (nil, 0, nil, nil, nil)
        }
    }

    /// The `ETag` validator, sent back as `If-None-Match`.
    public var entityTag: String?
    /// The `Last-Modified` validator, sent back as `If-Modified-Since`.
    public var lastModified: String?

    /// A policy that says what its arguments say, as a custom ``DataLoading`` reports a response:
    /// `no-store` when `isStorable` is `false` (then stale at once, whatever `maxAge` says), `max-age`
    /// from `maxAge` (`nil`: none), and the validators `entityTag` and `lastModified`. With the defaults,
    /// a policy with no directives and no validators: storable, fresh until evicted.
    public init(
        isStorable: Bool = true, maxAge: TimeInterval? = nil, entityTag: String? = nil, lastModified: String? = nil
    ) {
        if !isStorable || maxAge != nil { cacheControl = CacheControl(isStorable: isStorable, lifetime: maxAge) }
        self.entityTag = entityTag
        self.lastModified = lastModified
    }

    /// Reads the policy from response headers; `header` looks a name up case-insensitively.
    init(header: (String) -> String?) {
        if let field = header("Cache-Control") {
            var cacheControl = CacheControl()
            for directive in Self.listMembers(of: field.lowercased()) {
                // name[=value], with any spaces around either taken away and a quoted value unquoted.
                let parts = directive.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let name = parts[0].trimmingCharacters(in: .whitespaces)
                let value =
                    parts.count > 1
                    ? parts[1].trimmingCharacters(in: .whitespaces).trimmingCharacters(in: .init(charactersIn: "\""))
                    : nil
                if name == "no-store" {
                    cacheControl.isStorable = false
                } else if name == "no-cache", value == nil {
                    // The qualified no-cache="field" only keeps fields from being reused: not our concern.
                    cacheControl.lifetime = 0
                } else if name == "max-age", cacheControl.lifetime == nil {
                    // Delta-seconds, digits only (RFC 9111 1.2.2). Anything else (none, "abc", "1.5", "0x10")
                    // is invalid, and a response with invalid freshness is stale (4.2.1), as with Expires.
                    // Of two max-age the first counts (4.2.1); no-cache wins wherever it is.
                    cacheControl.lifetime = value.flatMap(Self.deltaSeconds) ?? 0
                }
            }
            // May not be stored (RFC 9111 5.2.2.5): the copy kept in memory to show is stale at once, so
            // every load asks the server again, as for a redirect that says no-store.
            if !cacheControl.isStorable { cacheControl.lifetime = 0 }
            self.cacheControl = cacheControl
        } else if let pragma = header("Pragma"),
            pragma.lowercased().split(separator: ",").contains(where: {
                $0.trimmingCharacters(in: .whitespaces) == "no-cache"
            })
        {
            // An older server's no-cache (RFC 9111 5.4), which browsers honour in a response without
            // Cache-Control: stale at once, not fresh until evicted for want of a lifetime.
            cacheControl = CacheControl(lifetime: 0)
            cacheControlIsPragma = true
        }
        // A response that varies on `*` matches no later request (RFC 9111 4.1): stale at once, so every
        // load asks the server. Other Vary fields name request headers that are the same on every load.
        // Kept apart from Cache-Control, which a 304 may replace while the stored Vary stays.
        variesOnEverything = header("Vary").map { vary in
            vary.split(separator: ",").contains { $0.trimmingCharacters(in: .whitespaces) == "*" }
        }
        // RFC 9111 4.2.1 and 5.3: Expires counts from the response's Date; an invalid one ("0") is in the
        // past. Read even beside a max-age: a 304 that replaces the Cache-Control can leave it to count.
        date = header("Date").flatMap { HTTPDate.parse($0) }
        if let expires = header("Expires") {
            let sent = date ?? Date()
            expiresLifetime = HTTPDate.parse(expires).flatMap { Self.lifetime($0.timeIntervalSince(sent)) } ?? 0
        }
        // A cache on the way has kept the response `Age` seconds already (RFC 9111 4.2.3). Of a list
        // (two Age lines joined), the first member counts; an Age that is not delta-seconds (5.1) says
        // nothing.
        let firstAge = header("Age")?.split(separator: ",", omittingEmptySubsequences: false).first
        age = firstAge.flatMap { Self.deltaSeconds($0.trimmingCharacters(in: .whitespaces)) } ?? 0
        entityTag = header("ETag")
        lastModified = header("Last-Modified")
    }

    /// How long, at most, a redirect (a 3xx with a `Location`) lets what it leads to stay fresh under
    /// the URL that was asked: its own freshness lifetime; `0` for `no-store` (the redirect is asked
    /// again every time), and for a 302, 303 or 307 that gives none, as those may not be kept on a guess
    /// (RFC 9111 4.2.2, RFC 9110 15.1); `nil` (no limit) for a 301 or 308 that gives none.
    static func redirectLifetime(status: Int, header: (String) -> String?) -> TimeInterval? {
        let policy = HTTPCachePolicy(header: header)
        guard policy.isStorable else { return 0 }
        if let lifetime = policy.maxAge { return lifetime }
        return isPermanentRedirect(status) ? nil : 0
    }

    /// Whether `status` is a permanent redirect (301, 308), which may be kept without a stated
    /// freshness (RFC 9110 15.1) and leads to the same place the next time.
    static func isPermanentRedirect(_ status: Int) -> Bool {
        status == 301 || status == 308
    }

    /// This policy with its freshness cut to `limit` (`nil`: no limit): the shorter of the two lifetimes.
    func limited(toLifetime limit: TimeInterval?) -> HTTPCachePolicy {
        guard let limit else { return self }
        var limited = self
        limited.redirectLifetime = min(redirectLifetime ?? limit, limit)
        return limited
    }

    /// This policy for a response with `status`: one whose status is not heuristically cacheable (RFC 9110
    /// 15.1; of the 2xx, all but 200, 203, 204 and 206) and whose headers give no freshness lifetime is
    /// stale at once (RFC 9111 4.2.2), not fresh until evicted: a `202 Accepted` placeholder served while
    /// an image is made is asked for again at the next load.
    func forStatus(_ status: Int) -> HTTPCachePolicy {
        guard ![200, 203, 204, 206, 300, 301, 304, 308, 404, 405, 410, 414, 501].contains(status),
            cacheControl?.lifetime == nil, expiresLifetime == nil
        else { return self }
        var policy = self
        policy.cacheControl = CacheControl(isStorable: isStorable, lifetime: 0)
        return policy
    }

    /// How old the response was on arriving at `now` by its `Date` (RFC 9111 4.2.3), less the second a
    /// Date's whole seconds hide; `0` without a `Date` or for one in the future. One made a day ago with
    /// `max-age=3600` and no `Age` (a cache on the way that adds none) is stale on arrival.
    func apparentAge(at now: Date) -> TimeInterval {
        date.flatMap { Self.lifetime(now.timeIntervalSince($0) - 1) } ?? 0
    }

    /// Whether a request can ask the server if the stored bytes are still current.
    var hasValidators: Bool { entityTag != nil || lastModified != nil }

    /// The longest freshness lifetime kept: RFC 9111 (1.2.2) has a cache take any larger `max-age` as
    /// 2^31 seconds, about 68 years.
    static let longestLifetime: TimeInterval = 2_147_483_648

    /// The members of a comma-separated field value (RFC 9110 5.6.1), split only at commas outside a
    /// quoted string (5.6.4, where a backslash escapes the next character): `no-cache="Set-Cookie, no-store"`
    /// is one directive, which names two fields, not a `no-store`.
    static func listMembers(of field: String) -> [Substring] {
        var members: [Substring] = []
        var start = field.startIndex
        var (isQuoted, isEscaped) = (false, false)
        for index in field.indices {
            let character = field[index]
            if isEscaped {
                isEscaped = false
            } else if isQuoted && character == "\\" {
                isEscaped = true
            } else if character == "\"" {
                isQuoted.toggle()
            } else if character == ",", !isQuoted {
                members.append(field[start..<index])
                start = field.index(after: index)
            }
        }
        members.append(field[start...])
        return members.filter { !$0.allSatisfy(\.isWhitespace) }
    }

    /// `text` as delta-seconds (RFC 9111 1.2.2): digits only, more than ``longestLifetime`` taken as
    /// that; `nil` for anything else.
    static func deltaSeconds(_ text: String) -> TimeInterval? {
        guard !text.isEmpty, text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
            return nil
        }
        return TimeInterval(text).flatMap(lifetime) ?? longestLifetime
    }

    /// `seconds` as a freshness lifetime: within 0...``longestLifetime``; `nil` for NaN.
    static func lifetime(_ seconds: TimeInterval) -> TimeInterval? {
        seconds.isNaN ? nil : min(max(0, seconds), longestLifetime)
    }

    /// What is left of `lifetime` (`nil`: none given) once a cache on the way has kept the response
    /// `age` seconds, within `limit`, the shortest lifetime the redirects allow (`nil`: no limit).
    static func remainingLifetime(_ lifetime: TimeInterval?, age: TimeInterval, limit: TimeInterval?) -> TimeInterval? {
        let remaining = lifetime.map { max(0, $0 - age) }
        guard let limit else { return remaining }
        return min(remaining ?? limit, limit)
    }
}

/// What a conditional load found.
public enum ConditionalLoadResult: Sendable {
    /// New bytes, with the policy their response carried.
    case modified(Data, HTTPCachePolicy)
    /// The server confirmed the stored bytes (`304 Not Modified`); the fields the policy read (or, from
    /// ``HTTPCachePolicy/init(isStorable:maxAge:entityTag:lastModified:)``, the `maxAge`, `no-store` and
    /// validators it gives) replace the stored ones, and the others stay (RFC 9111 4.3.4). One whose
    /// `entityTag` is not the stored one's (a strong tag compared strongly, a weak one weakly) updates
    /// nothing: the store then loads the image again without validators.
    case notModified(HTTPCachePolicy)
}

extension DataLoading {
    /// Loads `url`, revalidating with `validators` when given. This default fetches the bytes
    /// unconditionally and reports an empty policy; ``DataLoader`` implements real HTTP caching.
    public func loadData(
        for url: URL, revalidating validators: HTTPCachePolicy?
    ) async throws(ImageLoadingError) -> ConditionalLoadResult {
        .modified(try await loadData(for: url), HTTPCachePolicy())
    }
}

/// The caching facts the disk tier keeps beside an entry's bytes, in an extended attribute.
///
/// Beside the expiry it keeps the stored response's freshness fields as they came, each on its own:
/// a `304 Not Modified` updates the stored fields (RFC 9111 4.3.4), those it carries replaced and the
/// others kept, and the expiry is worked out again from the result.
struct HTTPCacheMetadata: Equatable, Sendable {
    /// When the entry stops being fresh; `nil` means fresh until evicted.
    var expires: Date?
    var entityTag: String?
    var lastModified: String?
    /// The freshness lifetime the stored response's `Cache-Control` gives (`max-age`, `0` for `no-cache`),
    /// which still holds after a `304` without `Cache-Control`; `nil` for none.
    var cacheControlLifetime: TimeInterval?
    /// The stored response's `Expires` as its server's clock has it (its `Date`, or its arrival without
    /// one, plus the lifetime they give); `nil` without `Expires`. It counts when no `Cache-Control`
    /// lifetime does, from the `Date` of the latest response: after a `304` that keeps it, the 304's
    /// (RFC 9111 4.2.1, 4.3.4), not the stored response's age again.
    var expiresAt: Date?
    /// `false` when the stored response's `Cache-Control` says `no-store` (kept in memory only: such an
    /// entry has no file).
    var isStorable = true
    /// Whether the stored response's `Vary` lists `*`: stale at once whatever its lifetime, until a `304`
    /// brings a `Vary` without it (RFC 9111 4.1, 4.3.4).
    var variesOnEverything = false
    /// Read from an older build's attribute, whose lifetime came from `max-age` or from `Expires`, it is
    /// not known which (kept in memory only).
    var lifetimeSourceIsUnknown = false
    /// After revalidations failed (kept in memory only, never encoded): when the next may start, and
    /// how many failed in a row.
    var retryAfter: Date?
    var failedRevalidations = 0
    /// Read from the disk tier with bytes of another response than the one the store last kept of the URL
    /// (another store or process wrote the file since): stale whatever their lifetime, until a check answers
    /// about them (kept in memory only, never encoded).
    var awaitsCheck = false

    /// About what the facts for `key` take in memory: the validators as a server sent them (a header line
    /// may be as long as 100 KB), the key, and the fixed fields. The store's memory of facts counts it
    /// (``ImageStore/cacheMetadataByteLimit``), so that servers sending long validators cannot make it
    /// hold more than that.
    func memoryCost(forKey key: String) -> Int {
        128 + key.utf8.count + (entityTag?.utf8.count ?? 0) + (lastModified?.utf8.count ?? 0)
    }

    init(policy: HTTPCachePolicy, receivedAt now: Date = Date()) {
        // A policy a custom loader made may hold any value: bounded here, so that every expiry encodes.
        // A no-store policy made by a custom loader may state a lifetime, or none: stale at once all the
        // same, as one read from the header is (see ``HTTPCachePolicy/isStorable``). A NaN lifetime is stale
        // at once too, as the policy's `maxAge` reads it back and as a header's invalid `max-age` is.
        cacheControlLifetime =
            policy.isStorable
            ? policy.cacheControl?.lifetime.flatMap { HTTPCachePolicy.lifetime($0.isNaN ? 0 : $0) } : 0
        expiresAt = policy.expiresLifetime.flatMap(HTTPCachePolicy.lifetime).map {
            (policy.date ?? now).addingTimeInterval($0)
        }
        isStorable = policy.isStorable
        variesOnEverything = policy.variesOnEverything ?? false
        entityTag = policy.entityTag
        lastModified = policy.lastModified
        expires = expiry(of: policy, at: now)
    }

    /// The metadata after a `304 Not Modified` whose headers gave `policy`, received at `now`: the
    /// `Cache-Control`, `Expires` and validators it carries replace these ones, those it does not carry
    /// stay (RFC 9111 4.3.4), and the lifetime they give runs from `now`. A kept `max-age` still comes
    /// before an `Expires` the 304 brings (5.3). The `Age` counted is the 304's own: one without `Age` was
    /// answered by the server itself (5.1), however long a cache had kept the stored response.
    ///
    /// Only for a 304 that ``isUpdated(by:)`` allows: the store fetches the image whole after another.
    ///
    /// An entry of an older build has one lifetime of unknown source (an expiry without a lifetime: `0`).
    /// It stays after a 304 without `Cache-Control` or `Expires`, and else gives way, as it did there.
    func refreshed(by policy: HTTPCachePolicy, at now: Date = Date()) -> HTTPCacheMetadata {
        var refreshed = HTTPCacheMetadata(policy: policy, receivedAt: now)
        // Merged into the stored fields, a 304's `Pragma: no-cache` counts only where they hold no `Cache-Control`
        // lifetime (one that gave none, such as `public`, is not told apart from none: the Pragma counts then).
        let bringsCacheControl =
            policy.cacheControl != nil && !(policy.cacheControlIsPragma && cacheControlLifetime != nil)
        if !bringsCacheControl {
            refreshed.isStorable = isStorable
            if !(lifetimeSourceIsUnknown && policy.expiresLifetime != nil) {
                refreshed.cacheControlLifetime = cacheControlLifetime
            }
        }
        refreshed.variesOnEverything = policy.variesOnEverything ?? variesOnEverything
        refreshed.expiresAt = refreshed.expiresAt ?? expiresAt
        refreshed.entityTag = refreshed.entityTag ?? entityTag
        refreshed.lastModified = refreshed.lastModified ?? lastModified
        refreshed.expires = refreshed.expiry(of: policy, at: now)
        return refreshed
    }

    /// Whether a `304 Not Modified` whose headers gave `policy` may update this stored response (RFC
    /// 9111 4.3.4): one with a strong tag only when this response has the same strong tag, and one with a
    /// weak tag only when this response's tag matches it weakly (RFC 9110 8.8.3.2); one without an entity
    /// tag unless it has a `Last-Modified` other than this response's (another instant). A 304 with other
    /// validators names a response the store does not hold: a server that answers 304 to an
    /// `If-Modified-Since` whenever its file is not newer, once that file was put back to an older one, sends
    /// that file's date, and the stored image would be kept as if unchanged, then checked with the older
    /// date for good.
    func isUpdated(by policy: HTTPCachePolicy) -> Bool {
        guard let tag = policy.entityTag else {
            guard let modified = policy.lastModified, let lastModified else { return true }
            return Self.isSameInstant(modified, lastModified)
        }
        guard let entityTag else { return false }
        if tag.hasPrefix("W/") { return Self.opaque(tag) == Self.opaque(entityTag) }
        return tag == entityTag
    }

    /// Whether two `Last-Modified` values name the same instant: as dates when both read as HTTP dates
    /// (of any of the three forms), else as the same text.
    private static func isSameInstant(_ one: String, _ other: String) -> Bool {
        guard let first = HTTPDate.parse(one), let second = HTTPDate.parse(other) else { return one == other }
        return first == second
    }

    /// An entity tag without its weakness prefix (`W/`), for a weak comparison (RFC 9110 8.8.3.2).
    private static func opaque(_ tag: String) -> Substring { tag.hasPrefix("W/") ? tag.dropFirst(2) : Substring(tag) }

    /// Whether these facts name another response of the URL than `other` does, by their validators: another
    /// entity tag (compared weakly), or, where neither has one, another Last-Modified; or an entity tag where
    /// `other` has none, or none where it has one. Facts without validators name no response, and differ
    /// from none: a file whose validators could not be written (too long for an attribute) is not taken for
    /// another response's.
    func namesAnotherResponse(than other: HTTPCacheMetadata) -> Bool {
        switch (entityTag, other.entityTag) {
        case (let tag?, let otherTag?): return Self.opaque(tag) != Self.opaque(otherTag)
        case (nil, nil): return lastModified != nil && lastModified != other.lastModified
        case (_?, nil): return true
        case (nil, _?): return lastModified != nil
        }
    }

    /// The expiry these fields give a response received at `now` through the fetch that gave `policy`:
    /// less its age (its `Age`, or how long before `now` its `Date` was where that is longer), within what
    /// its redirects allow.
    private func expiry(of policy: HTTPCachePolicy, at now: Date) -> Date? {
        if variesOnEverything { return now }
        let lifetime = HTTPCachePolicy.remainingLifetime(
            cacheControlLifetime ?? expiresAt.map { $0.timeIntervalSince(policy.date ?? now) },
            age: max(policy.age, policy.apparentAge(at: now)),
            limit: policy.redirectLifetime.flatMap(HTTPCachePolicy.lifetime))
        return lifetime.map { now.addingTimeInterval($0) }
    }

    func isStale(at now: Date = Date()) -> Bool {
        awaitsCheck || expires.map { $0 <= now } ?? false
    }

    /// Whether a revalidation is due: the entry is stale, and any delay a failed one set has passed.
    func needsRevalidation(at now: Date = Date()) -> Bool {
        isStale(at: now) && (retryAfter.map { $0 <= now } ?? true)
    }

    /// This metadata after a revalidation failed at `now`: the next one waits 30 seconds, twice as
    /// long after each further failure in a row, at most an hour. A successful one starts afresh.
    func afterFailedRevalidation(at now: Date = Date()) -> HTTPCacheMetadata {
        var next = self
        next.failedRevalidations += 1
        let doublings = Double(min(next.failedRevalidations - 1, 16))
        next.retryAfter = now.addingTimeInterval(min(3600, 30 * pow(2, doublings)))
        return next
    }

    /// The validators to send when revalidating.
    var validators: HTTPCachePolicy {
        HTTPCachePolicy(entityTag: entityTag, lastModified: lastModified)
    }

    #if canImport(Darwin)
    static let attributeName = "public.asyncimagecache.http"
    #else
    static let attributeName = "user.asyncimagecache.http"
    #endif

    /// `2`, then the expiry in seconds since 1970 (or `-`), the ETag, Last-Modified, the `Cache-Control`
    /// lifetime in seconds and when `Expires` passes in seconds since 1970, one per line (empty when
    /// missing); for a response that varies on `*`, `3` in place of `2` and a seventh line, `*` (so an
    /// older build reads every other entry as before). Older builds wrote `1` with four lines, or five
    /// with one lifetime of either source.
    var encoded: [UInt8] {
        var lines = [
            "2", Self.encode(expires) ?? "-", entityTag ?? "", lastModified ?? "",
            cacheControlLifetime.map { String($0) } ?? "", Self.encode(expiresAt) ?? "",
        ]
        if variesOnEverything {
            lines[0] = "3"
            lines.append("*")
        }
        return Array(lines.joined(separator: "\n").utf8)
    }

    init?(encoded bytes: [UInt8]) {
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        switch (lines.first, lines.count) {
        case ("2", 6), ("3", 7):
            guard let expiresAt = Self.decode(lines[5], missing: "") else { return nil }
            self.expiresAt = expiresAt
            if lines.count == 7 {
                guard lines[6] == "*" else { return nil }
                variesOnEverything = true
            }
        case ("1", 4), ("1", 5):
            lifetimeSourceIsUnknown = true
        default:
            return nil
        }
        if lines.count > 4, !lines[4].isEmpty {
            guard let seconds = TimeInterval(lines[4]), let lifetime = HTTPCachePolicy.lifetime(seconds) else {
                return nil
            }
            cacheControlLifetime = lifetime
        }
        guard let expires = Self.decode(lines[1], missing: "-") else { return nil }
        self.expires = expires
        entityTag = lines[2].isEmpty ? nil : String(lines[2])
        lastModified = lines[3].isEmpty ? nil : String(lines[3])
        // An older build's expiry without a lifetime: its response limited freshness, by how much is not
        // known. Kept as a lifetime of 0: stale at once after a 304 that says nothing.
        if lifetimeSourceIsUnknown, cacheControlLifetime == nil, expires != nil { cacheControlLifetime = 0 }
    }

    /// `date` in whole seconds since 1970, rounded down: an entry may go stale up to a second early (one
    /// extra revalidation), never late. `nil` for no date, or one too far off to write.
    private static func encode(_ date: Date?) -> String? {
        let seconds = date?.timeIntervalSince1970.rounded(.down)
        return seconds.flatMap { $0.isFinite && abs($0) < 1e18 ? String(Int64($0)) : nil }
    }

    /// The date `line` holds in seconds since 1970: `.some(nil)` for `missing`, `nil` when it is neither.
    private static func decode(_ line: Substring, missing: Substring) -> Date?? {
        if line == missing { return .some(nil) }
        return Int64(line).map { Date(timeIntervalSince1970: TimeInterval($0)) }
    }
}
