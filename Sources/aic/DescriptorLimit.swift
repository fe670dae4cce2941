import Dispatch

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
    fileprivate static let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    #else
    fileprivate static let resource = RLIMIT_NOFILE
    #endif
}

/// A harness for the test suite, like the hidden subcommands: makes the demo's loopback server run out of
/// descriptors for real, which a limit set from outside could not do at one chosen moment without starving
/// the rest of the demo for good.
///
/// With `AIC_TEST_DESCRIPTOR_SQUEEZE_MS` set to a number of milliseconds, the server waits until its first
/// connection is pending, then lowers aic's soft limit on open files to the lowest free descriptor number for that long, so its `accept`
/// fails with the kernel's EMFILE until the limit comes back. Unset, as for every user, it does nothing.
enum DescriptorSqueeze {
    static let variable = "AIC_TEST_DESCRIPTOR_SQUEEZE_MS"

    /// Called by the server's accept thread before its first `accept` on `socket`.
    static func armIfAsked(listening socket: Int32) {
        guard let text = getenv(variable), let milliseconds = Int(String(cString: text)), milliseconds > 0 else {
            return
        }
        // Waiting for a connection first: the client's socket is made by then, so only the accept fails.
        var pending = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        guard poll(&pending, 1, -1) == 1 else { return }
        var limit = rlimit()
        guard getrlimit(DescriptorLimit.resource, &limit) == 0 else { return }
        let saved = limit
        // The lowest free number: as the limit, no new descriptor fits under it. Not 0, at which `poll`
        // fails with EINVAL (it checks its count against the limit) and the client fails instead.
        let lowestFree = fcntl(socket, F_DUPFD_CLOEXEC, 0)
        guard lowestFree >= 0 else { return }
        close(lowestFree)
        limit.rlim_cur = rlim_t(lowestFree)
        guard setrlimit(DescriptorLimit.resource, &limit) == 0 else { return }
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(milliseconds)) {
            var restored = saved
            _ = setrlimit(DescriptorLimit.resource, &restored)
        }
    }
}
