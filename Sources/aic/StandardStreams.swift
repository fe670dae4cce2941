#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Holds stdin, stdout and stderr open when aic's parent left them closed (`aic info a.jpg >&-`).
///
/// A closed descriptor 0, 1 or 2 is the lowest free one, so the first descriptor the process opened took its
/// number: Dispatch's epoll or event descriptor, a socket of the demo's server, a file being written. Output
/// meant for the closed stream then went there. With stdout closed, `aic info` reported "cannot write to
/// stdout: Invalid argument" (its line had gone to the epoll descriptor), and a progress line of 8 bytes
/// written to an event descriptor is taken as a count, waking Dispatch for nothing.
///
/// Each closed one is opened on `/dev/null` the wrong way round (stdin for writing, stdout and stderr for
/// reading), so it still refuses what it refused closed: a write to stdout fails with "Bad file descriptor"
/// and aic exits with 1, saying so; one to stderr is dropped, as ``Console/error(_:)`` drops what it cannot
/// write.
enum StandardStreams {
    /// Opens each closed standard descriptor on `/dev/null`. Call first, before anything opens a descriptor.
    static func holdClosedOnes() {
        for (descriptor, mode) in [(STDIN_FILENO, O_WRONLY), (STDOUT_FILENO, O_RDONLY), (STDERR_FILENO, O_RDONLY)] {
            guard fcntl(descriptor, F_GETFD) == -1, errno == EBADF else { continue }
            let opened = open("/dev/null", mode)
            // The lowest free descriptor: this one, since those below it are open by now.
            if opened >= 0, opened != descriptor {
                _ = dup2(opened, descriptor)
                close(opened)
            }
        }
    }
}
