#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How many files aic may have open at once (`ulimit -n`), made enough before anything opens one.
///
/// Under a low limit aic failed in ways that did not name it: `ulimit -n 6` ended every command with SIGILL
/// (Dispatch traps when it cannot make its own descriptors), and from 7 to 12 the demo stopped at "Couldn't
/// connect to server" or "socket failed (errno 24)". The soft limit is raised as far as the hard one lets it
/// (programs may, and Go's runtime does so for every program); a hard limit below what aic needs is reported
/// at once.
enum DescriptorLimit {
    /// The fewest descriptors aic starts with: the demo, the largest need, ran with 16.
    static let minimum: rlim_t = 32
    /// The soft limit aic raises to when the hard limit allows it.
    static let wanted: rlim_t = 1024

    /// Raises the soft limit to ``wanted`` (or the hard limit, when lower) and returns the limit aic then
    /// has, or `nil` when it cannot be read.
    static func raise() -> rlim_t? {
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0 else { return nil }
        guard limit.rlim_cur < wanted else { return limit.rlim_cur }
        var raised = limit
        raised.rlim_cur = min(limit.rlim_max, wanted)
        return setrlimit(resource, &raised) == 0 ? raised.rlim_cur : limit.rlim_cur
    }

    #if canImport(Glibc)
    private static let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    #else
    private static let resource = RLIMIT_NOFILE
    #endif
}
