import Dispatch
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A minimal HTTP/1.1 server on 127.0.0.1 that serves a fixed set of files, so the demo can show
/// the disk tier (which only keeps remote images) without any network beyond loopback.
final class LoopbackServer: Sendable {
    let port: UInt16
    private let socketDescriptor: Int32
    private let files: [String: Data]
    private let hits = LockedCounter()
    /// Set by ``stop()`` before it closes the socket: the one reason for the accept loop to end.
    private let stopped = LockedFlag()

    enum Failure: Error, CustomStringConvertible {
        case socket(String)
        var description: String {
            switch self {
            case .socket(let step): "cannot start the loopback server: \(step) failed (errno \(errno))"
            }
        }
    }

    /// Starts serving `files` (path -> bytes) on an ephemeral port.
    init(files: [String: Data]) throws {
        self.files = files
        #if canImport(Glibc)
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0 else { throw Failure.socket("socket") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(descriptor, 64) == 0 else {
            close(descriptor)
            throw Failure.socket("bind/listen")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        socketDescriptor = descriptor
        port = UInt16(bigEndian: address.sin_port)
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    /// The URL of `path` on this server.
    func url(_ path: String) -> URL {
        URL(string: "http://127.0.0.1:\(port)\(path)")!
    }

    /// Requests served so far.
    var requestCount: Int { hits.value }

    /// Stops accepting connections; later requests fail to connect.
    func stop() {
        stopped.set()
        shutdown(socketDescriptor, Int32(SHUT_RDWR))
        close(socketDescriptor)
    }

    /// Accepts until ``stop()``. A failed `accept` ends the loop only once `stop()` has closed the socket:
    /// the others pass (out of descriptors, EMFILE or ENFILE, until a connection being served closes one;
    /// ECONNABORTED, ENOBUFS, ENOMEM, EPROTO, EPERM), and the loop tries again after a short pause. It
    /// returned on any of them, and every later request of the demo hung or failed.
    private func acceptLoop() {
        DescriptorSqueeze.armIfAsked(listening: socketDescriptor)
        while true {
            let client = accept(socketDescriptor, nil, nil)
            if client < 0 {
                let error = errno
                if stopped.isSet { return }
                if error == EINTR { continue }
                // The pending connection stays queued; a pause keeps a lasting EMFILE from spinning a core.
                usleep(5_000)
                continue
            }
            DispatchQueue.global().async { [self] in serve(client) }
        }
    }

    private func serve(_ client: Int32) {
        defer { close(client) }
        var request = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while request.count < 16 * 1024, !request.ends(with: [13, 10, 13, 10]) {
            let count = recv(client, &buffer, buffer.count, 0)
            guard count > 0 else { return }
            request += buffer[0..<count]
        }
        hits.increment()
        let requestLine = String(decoding: request.prefix { $0 != 13 }, as: UTF8.self).split(separator: " ")
        let path = requestLine.count >= 2 ? String(requestLine[1]) : ""
        let body = files[path]
        let status = body == nil ? "404 Not Found" : "200 OK"
        let contentType = path.hasSuffix(".png") ? "image/png" : "image/jpeg"
        let head =
            "HTTP/1.1 \(status)\r\nContent-Type: \(contentType)\r\nContent-Length: \(body?.count ?? 0)\r\nConnection: close\r\n\r\n"
        write(Array(head.utf8) + (body.map(Array.init) ?? []), to: client)
    }

    private func write(_ bytes: [UInt8], to client: Int32) {
        var offset = 0
        while offset < bytes.count {
            #if canImport(Glibc)
            let flags = Int32(MSG_NOSIGNAL)
            #else
            let flags: Int32 = 0
            #endif
            let sent = bytes.withUnsafeBytes { send(client, $0.baseAddress! + offset, bytes.count - offset, flags) }
            guard sent > 0 else { return }
            offset += sent
        }
    }
}

/// A counter safe to bump from any thread.
final class LockedCounter: @unchecked Sendable {
    // `count` is only touched while holding `lock`.
    private let lock = NSLock()
    private var count = 0
    var value: Int { lock.withLock { count } }
    func increment() { lock.withLock { count += 1 } }
}

/// A flag safe to set and read from any thread.
final class LockedFlag: @unchecked Sendable {
    // `value` is only touched while holding `lock`.
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
}

extension Array where Element == UInt8 {
    fileprivate func ends(with suffix: [UInt8]) -> Bool {
        count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix
    }
}
