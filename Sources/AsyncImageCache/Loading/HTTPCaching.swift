import Foundation

/// What a response's headers say about keeping and reusing it (RFC 9111, the parts an image cache
/// needs): whether it may be stored, how long it stays fresh, and the validators to revalidate it.
public struct HTTPCachePolicy: Sendable, Equatable {
    /// `false` for `Cache-Control: no-store`: the bytes are never written to disk.
    public var isStorable = true
    /// Seconds the response stays fresh (`max-age`, else `Expires` less `Date`, less the `Age` a cache
    /// on the way such as a CDN reports; `0` for `no-cache`, for a `max-age` that is not a whole number
    /// of seconds, and for an `Expires` in the past or that is not a date, such as `0`); `nil` when the
    /// server said nothing, which the store treats as fresh until evicted, as image caches commonly do.
    public var maxAge: TimeInterval?
    /// The `ETag` validator, sent back as `If-None-Match`.
    public var entityTag: String?
    /// The `Last-Modified` validator, sent back as `If-Modified-Since`.
    public var lastModified: String?

    /// A policy with no directives and no validators: storable, fresh until evicted.
    public init(
        isStorable: Bool = true, maxAge: TimeInterval? = nil, entityTag: String? = nil, lastModified: String? = nil
    ) {
        self.isStorable = isStorable
        self.maxAge = maxAge
        self.entityTag = entityTag
        self.lastModified = lastModified
    }

    /// Reads the policy from response headers; `header` looks a name up case-insensitively.
    init(header: (String) -> String?) {
        let directives = (header("Cache-Control") ?? "").lowercased().split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces) }
        for directive in directives {
            if directive == "no-store" {
                isStorable = false
            } else if directive == "no-cache" {
                maxAge = 0
            } else if directive.hasPrefix("max-age="), maxAge == nil {
                // Delta-seconds, digits only (RFC 9111 1.2.2). Anything else ("abc", "1.5", "0x10") is
                // invalid, and a response with invalid freshness is stale (4.2.1), as with Expires. Of
                // two max-age the first counts (4.2.1); no-cache wins wherever it is.
                let value = directive.dropFirst("max-age=".count).trimmingCharacters(in: .init(charactersIn: "\""))
                maxAge = Self.deltaSeconds(value) ?? 0
            }
        }
        // RFC 9111 4.2.1 and 5.3: without max-age, Expires counts from the response's Date; an invalid
        // one ("0") is in the past.
        if maxAge == nil, let expires = header("Expires") {
            let sent = header("Date").flatMap { HTTPDate.parse($0) } ?? Date()
            maxAge = HTTPDate.parse(expires).flatMap { Self.lifetime($0.timeIntervalSince(sent)) } ?? 0
        }
        // A cache on the way has kept the response `Age` seconds already (RFC 9111 4.2.3). Of a list
        // (two Age lines joined), the first member counts; an Age that is not delta-seconds (5.1) says
        // nothing.
        let firstAge = header("Age")?.split(separator: ",", omittingEmptySubsequences: false).first
        if let lifetime = maxAge,
            let age = firstAge.flatMap({ Self.deltaSeconds($0.trimmingCharacters(in: .whitespaces)) })
        {
            maxAge = max(0, lifetime - age)
        }
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
        limited.maxAge = min(maxAge ?? limit, limit)
        return limited
    }

    /// Whether a request can ask the server if the stored bytes are still current.
    var hasValidators: Bool { entityTag != nil || lastModified != nil }

    /// The longest freshness lifetime kept: RFC 9111 (1.2.2) has a cache take any larger `max-age` as
    /// 2^31 seconds, about 68 years.
    static let longestLifetime: TimeInterval = 2_147_483_648

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
}

/// What a conditional load found.
public enum ConditionalLoadResult: Sendable {
    /// New bytes, with the policy their response carried.
    case modified(Data, HTTPCachePolicy)
    /// The server confirmed the stored bytes (`304 Not Modified`); the policy refreshes freshness.
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
struct HTTPCacheMetadata: Equatable, Sendable {
    /// When the entry stops being fresh; `nil` means fresh until evicted.
    var expires: Date?
    var entityTag: String?
    var lastModified: String?
    /// The freshness lifetime the response gave (`max-age`), which still holds after a `304` that
    /// gives none (RFC 9111 4.3.4: a 304 updates only the headers it carries).
    var lifetime: TimeInterval?
    /// After revalidations failed (kept in memory only, never encoded): when the next may start, and
    /// how many failed in a row.
    var retryAfter: Date?
    var failedRevalidations = 0

    init(policy: HTTPCachePolicy, receivedAt now: Date = Date()) {
        // A policy a custom loader made may hold any value: bounded here, so that every expiry encodes.
        lifetime = policy.maxAge.flatMap(HTTPCachePolicy.lifetime)
        expires = lifetime.map { now.addingTimeInterval($0) }
        entityTag = policy.entityTag
        lastModified = policy.lastModified
    }

    /// The metadata after a `304 Not Modified` whose headers gave `policy`, received at `now`: its own
    /// lifetime and validators where it gives them, these ones where it does not.
    ///
    /// An entry of an older build has an expiry but no lifetime: its response limited freshness, by how
    /// much is not known. After a 304 that gives none it is stale at once (lifetime 0), asked again at its
    /// next use; before, it became fresh until evicted.
    func refreshed(by policy: HTTPCachePolicy, at now: Date = Date()) -> HTTPCacheMetadata {
        var refreshed = HTTPCacheMetadata(policy: policy, receivedAt: now)
        if refreshed.lifetime == nil, let lifetime = lifetime ?? (expires == nil ? nil : 0) {
            refreshed.lifetime = lifetime
            refreshed.expires = now.addingTimeInterval(lifetime)
        }
        refreshed.entityTag = refreshed.entityTag ?? entityTag
        refreshed.lastModified = refreshed.lastModified ?? lastModified
        return refreshed
    }

    func isStale(at now: Date = Date()) -> Bool {
        expires.map { $0 <= now } ?? false
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

    /// `1`, then the expiry in seconds since 1970 (or `-`), the ETag, Last-Modified and the lifetime
    /// in seconds, one per line (empty when missing). Entries of older builds have no lifetime line.
    var encoded: [UInt8] {
        // Rounded down: an entry may go stale up to a second early (one extra revalidation), never late.
        let seconds = expires?.timeIntervalSince1970.rounded(.down)
        let expiry = seconds.flatMap { $0.isFinite && abs($0) < 1e18 ? String(Int64($0)) : nil } ?? "-"
        let lines = ["1", expiry, entityTag ?? "", lastModified ?? "", lifetime.map { String($0) } ?? ""]
        return Array(lines.joined(separator: "\n").utf8)
    }

    init?(encoded bytes: [UInt8]) {
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.count == 4 || lines.count == 5, lines[0] == "1" else { return nil }
        if lines.count == 5, !lines[4].isEmpty {
            guard let seconds = TimeInterval(lines[4]), let lifetime = HTTPCachePolicy.lifetime(seconds) else {
                return nil
            }
            self.lifetime = lifetime
        }
        if lines[1] == "-" {
            expires = nil
        } else if let seconds = Int64(lines[1]) {
            expires = Date(timeIntervalSince1970: TimeInterval(seconds))
        } else {
            return nil
        }
        entityTag = lines[2].isEmpty ? nil : String(lines[2])
        lastModified = lines[3].isEmpty ? nil : String(lines[3])
    }
}
