// The machine's own limits, measured in the same run as Parley's figures: secretstream
// encryption (what every link frame goes through) and raw loopback TCP (what every link runs on).
import Foundation
import Sodium

#if canImport(Glibc)
    import Glibc
#endif

/// secretstream: `total` bytes pushed and pulled in messages of `size` bytes; MB/s of plaintext.
func secretStreamThroughput(messageSize size: Int, total: Int) throws -> Double {
    let key = SecureBytes((0..<SecretStream.keyBytes).map { UInt8(truncatingIfNeeded: $0 &* 7) })
    let pusher = try SecretStream.Pusher(key: key)
    let puller = try SecretStream.Puller(key: key, header: pusher.header)
    let message = [UInt8](repeating: 0x5a, count: size)
    let start = DispatchTime.now().uptimeNanoseconds
    var moved = 0
    while moved < total {
        let sealed = try pusher.push(message)
        let opened = try puller.pull(sealed)
        precondition(opened.message.count == size)
        moved += size
    }
    let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    return Double(moved) / seconds / 1e6
}

/// Ed25519 signatures of 200-byte messages per second (`sign`) or verifications per second.
func ed25519Rate(verify: Bool, count: Int) -> Double {
    let pair = Signing.KeyPair()
    let message = [UInt8](repeating: 0x33, count: 200)
    let signature = pair.sign(message)
    let start = DispatchTime.now().uptimeNanoseconds
    var valid = 0
    for _ in 0..<count {
        if verify {
            if Signing.isValidSignature(signature, for: message, publicKey: pair.publicKey) { valid += 1 }
        } else {
            valid += pair.sign(message).count == Signing.signatureBytes ? 1 : 0
        }
    }
    precondition(valid == count)
    return Double(count) / (Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
}

/// A connected pair of loopback TCP sockets (listen on 127.0.0.1:0, connect, accept).
private func loopbackPair() -> (Int32, Int32) {
    let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
            precondition(bind(listener, generic, length) == 0 && listen(listener, 1) == 0, "cannot listen on loopback")
            precondition(getsockname(listener, generic, &length) == 0)
        }
    }
    let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
            precondition(connect(client, generic, length) == 0, "cannot connect on loopback")
        }
    }
    let server = accept(listener, nil, nil)
    close(listener)
    var one: Int32 = 1
    for fd in [client, server] { setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size)) }
    return (client, server)
}

/// Raw loopback TCP: `total` bytes written in 64 KiB chunks by one thread and read by another;
/// MB/s.
func loopbackTCPThroughput(total: Int) -> Double {
    let (writer, reader) = loopbackPair()
    defer {
        close(writer)
        close(reader)
    }
    let start = DispatchTime.now().uptimeNanoseconds
    let sender = Thread {
        let chunk = [UInt8](repeating: 0xa5, count: 65536)
        var sent = 0
        while sent < total {
            let n = chunk.withUnsafeBytes { write(writer, $0.baseAddress, min(65536, total - sent)) }
            guard n > 0 else { return }
            sent += n
        }
    }
    sender.start()
    var buffer = [UInt8](repeating: 0, count: 65536)
    var received = 0
    while received < total {
        let n = buffer.withUnsafeMutableBytes { read(reader, $0.baseAddress, 65536) }
        guard n > 0 else { break }
        received += n
    }
    let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    return Double(received) / seconds / 1e6
}

/// Raw loopback TCP round trips of 64 bytes (an echo thread): p50 and p99 in ms.
func loopbackRoundTrip(rounds: Int) -> (p50: Double, p99: Double) {
    let (client, server) = loopbackPair()
    defer {
        close(client)
        close(server)
    }
    let echo = Thread {
        var buffer = [UInt8](repeating: 0, count: 64)
        for _ in 0..<rounds {
            var got = 0
            while got < 64 {
                let n = buffer.withUnsafeMutableBytes { read(server, $0.baseAddress! + got, 64 - got) }
                guard n > 0 else { return }
                got += n
            }
            _ = buffer.withUnsafeBytes { write(server, $0.baseAddress, 64) }
        }
    }
    echo.start()
    var message = [UInt8](repeating: 1, count: 64)
    var samples: [Double] = []
    samples.reserveCapacity(rounds)
    for _ in 0..<rounds {
        let start = DispatchTime.now().uptimeNanoseconds
        _ = message.withUnsafeBytes { write(client, $0.baseAddress, 64) }
        var got = 0
        while got < 64 {
            let n = message.withUnsafeMutableBytes { read(client, $0.baseAddress! + got, 64 - got) }
            guard n > 0 else { break }
            got += n
        }
        samples.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
    }
    return (percentile(samples, 0.5), percentile(samples, 0.99))
}

/// The `fraction` percentile (nearest rank) of `values`; NaN when empty.
func percentile(_ values: [Double], _ fraction: Double) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    let rank = Int((fraction * Double(sorted.count)).rounded(.up)) - 1
    return sorted[max(0, min(sorted.count - 1, rank))]
}
