import Foundation
import Glibc
import NodeRuntime
import Synchronization

/// Sends the latency clusters' paced `author` requests at the least cost to the machine it
/// measures: one thread per node, which sleeps to the request's due time (`clock_nanosleep`,
/// absolute), writes the request line (encoded before the pacing starts) to the node's control
/// socket and reads the answer, all blocking.
///
/// Why not tasks: the first pacer (a task per node, `Task.sleep`, the lab's control client)
/// took 0.15–0.18 cores of the two it measures, a third in JSON and half in thread hand-offs
/// (the timer's thread, the loop's, the task's). That CPU is taken from the nodes being measured.
///
/// The schedule is the same: request `k` goes to node `k % count` at `start + k × interval`, and
/// a node gets its next request only once it answered the last (a slow node falls behind, as a
/// user waiting for `parley send` would).
enum Pacer {
    /// One acknowledged write: the node that wrote it and the op's id.
    struct Write: Sendable {
        let node: Int
        let id: String
    }

    /// Sends `total` requests, `intervalNanos` apart in total, round robin over the nodes whose
    /// data directories are given; `request(k)` is the `k`th. Returns the acknowledged writes and
    /// the seconds from the first due time to the last answer.
    static func run(
        dataDirectories: [String], total: Int, intervalNanos: UInt64, request: (Int) -> ControlRequest
    ) async throws -> (writes: [Write], seconds: Double) {
        let count = dataDirectories.count
        let lines = try (0..<count).map { node in
            try stride(from: node, to: total, by: count).map { (k: $0, line: try ControlProtocol.requestLine(request($0))) }
        }
        let sockets = try dataDirectories.map { try connect(path: $0 + "/control.sock") }
        defer { for fd in sockets { close(fd) } }
        let start = monotonicNanos() + 100_000_000
        let results = Mutex<(writes: [Write], running: Int)>(([], count))
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            for node in 0..<count {
                let (fd, requests) = (sockets[node], lines[node])
                let thread = Thread {
                    let ids = pace(fd: fd, requests: requests, start: start, intervalNanos: intervalNanos)
                    let last = results.withLock { results -> Bool in
                        results.writes += ids.map { Write(node: node, id: $0) }
                        results.running -= 1
                        return results.running == 0
                    }
                    if last { done.resume() }
                }
                thread.name = "parley-bench pacer \(node)"
                thread.start()
            }
        }
        let seconds = Double(monotonicNanos() - start) / 1e9
        return (results.withLock { $0.writes }, seconds)
    }

    /// One node's share of the schedule: the ids of the ops it acknowledged. Stops at the first
    /// failed write or read (a node that died or stalled for 10 s): its later writes are then
    /// missing from the figures, and the achieved writes/s shows it.
    private static func pace(fd: Int32, requests: [(k: Int, line: [UInt8])], start: UInt64, intervalNanos: UInt64) -> [String] {
        var ids: [String] = []
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        for (k, line) in requests {
            sleep(until: start + UInt64(k) * intervalNanos)
            guard writeAll(fd, line) else { return ids }
            // The answer: one line. Earlier answers were read whole, so what is pending is its start.
            var newline: Int?
            while newline == nil {
                let got = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                guard got > 0 else { return ids }
                pending += buffer[0..<got]
                newline = pending.firstIndex(of: UInt8(ascii: "\n"))
            }
            if let id = authoredID(in: pending[..<newline!]) { ids.append(id) }
            pending.removeSubrange(...newline!)
        }
        return ids
    }

    /// The op id of an `author` answer (`{"author":{…,"id":"ID",…},"ok":true}`; a refusal has
    /// none), found as the one `"id":"` in it rather than decoded: `JSONDecoder` made the
    /// pacer's ten threads cost 0.06 cores, taken from the nodes it measures.
    static func authoredID(in answer: ArraySlice<UInt8>) -> String? {
        let key = Array(#""id":""#.utf8)
        guard answer.count > key.count,
            let start = answer.indices.dropLast(key.count - 1).first(where: { answer[$0..<$0 + key.count].elementsEqual(key) })
        else { return nil }
        let value = answer[(start + key.count)...]
        guard let end = value.firstIndex(of: UInt8(ascii: "\"")) else { return nil }
        return String(decoding: value[..<end], as: UTF8.self)
    }

    /// Writes all of `bytes` to a blocking socket; false once the peer is gone or a write fails
    /// (no SIGPIPE). The floor cluster's links use it too.
    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let wrote = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if wrote < 0, errno == EINTR { continue }
            guard wrote > 0 else { return false }
            offset += wrote
        }
        return true
    }

    /// A blocking connection to a node's control socket; reads and writes give up after 10 s.
    private static func connect(path: String) throws -> Int32 {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard path.utf8.count < capacity else { throw BenchError("the control socket path \(path) is too long") }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: path.utf8)
            raw[path.utf8.count] = 0
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BenchError("cannot create a socket: \(String(cString: strerror(errno)))") }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard status == 0 else {
            let message = String(cString: strerror(errno))
            close(fd)
            throw BenchError("cannot connect to \(path): \(message)")
        }
        return fd
    }

    static func monotonicNanos() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    static func sleep(until nanos: UInt64) {
        var due = timespec(tv_sec: Int(nanos / 1_000_000_000), tv_nsec: Int(nanos % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &due, nil) == EINTR {}
    }
}
