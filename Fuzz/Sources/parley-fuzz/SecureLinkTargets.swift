import Identity
import SecureLink
import Sodium

/// Fixed keys, so a crash found once replays the same way.
enum LinkKeys {
    static let client = try! Identity(seed: [UInt8](repeating: 1, count: 32))
    static let server = try! Identity(seed: [UInt8](repeating: 2, count: 32))
    static let network = NetworkKey(deploymentSecret: nil)
    static func ephemeral(_ fill: UInt8) -> KeyExchange.KeyPair { KeyExchange.KeyPair(secretKey: SecureBytes([UInt8](repeating: fill, count: 32))) }

    static let probe = KeyProbe.makeProbe(networkKey: network, nonce: [UInt8](repeating: 6, count: 32))
    static let genuineProbeReply = KeyProbe.reply(to: probe, identity: server.id, networkKey: network)

    static func clientHandshake() -> Handshake {
        Handshake(role: .client(serverKey: server.id), identity: client, networkKey: network, startedAt: 0, ephemeralKeyPair: ephemeral(3))
    }

    static func serverHandshake() -> Handshake {
        Handshake(role: .server, identity: server, networkKey: network, startedAt: 0, ephemeralKeyPair: ephemeral(4))
    }
}

private func sent(_ actions: [HandshakeAction]) -> [UInt8]? {
    for case .send(let bytes) in actions { return bytes }
    return nil
}

private func isEstablished(_ actions: [HandshakeAction]) -> Bool {
    actions.contains { if case .established = $0 { true } else { false } }
}

private func failed(_ actions: [HandshakeAction]) -> Bool {
    actions.contains { if case .fail = $0 { true } else { false } }
}

/// `handshake`: the mode byte picks the message the input replaces (1 client hello, 2 server
/// hello, 3 client auth, 4 server accept; the genuine messages before it are exchanged first);
/// modes 5–8 run a genuine handshake and flip one byte of that message. A message that is not
/// the genuine one MUST fail the handshake without anything sent, and never establish it.
/// The input also goes to the key probe that shares the first message's slot: a reply that is
/// not the genuine one MUST NOT yield a key.
func fuzzHandshake(_ bytes: [UInt8]) {
    _ = KeyProbe.classify(bytes, networkKey: LinkKeys.network)
    if bytes != LinkKeys.genuineProbeReply {
        check(KeyProbe.key(fromReply: bytes, probe: LinkKeys.probe, networkKey: LinkKeys.network) == nil, "a forged probe reply gave a key")
    }
    var input = FuzzInput(bytes)
    let mode = Int(input.byte() % 8)
    let step = mode % 4 + 1
    var client = LinkKeys.clientHandshake()
    var server = LinkKeys.serverHandshake()
    var genuine: [UInt8] = sent(client.start()) ?? []
    _ = server.start()
    let flipped = mode >= 4
    let flipPosition = flipped ? Int(input.byte()) : 0
    let flip = flipped ? input.byte() | 1 : 0
    let forged = flipped ? [] : input.rest()
    func substitute(_ message: [UInt8]) -> [UInt8] {
        guard flipped, !message.isEmpty else { return forged }
        var changed = message
        changed[flipPosition % message.count] ^= flip
        return changed
    }
    // Steps 1..4 alternate: the server reads 1 and 3, the client 2 and 4.
    for current in 1...step {
        let message = current == step ? substitute(genuine) : genuine
        let isGenuine = message == genuine
        let actions = current % 2 == 1 ? server.receive(message) : client.receive(message)
        if current == step {
            if !isGenuine {
                check(!isEstablished(actions), "a handshake with a forged message \(step) was established")
                check(failed(actions), "a forged message \(step) did not fail the handshake")
                check(sent(actions) == nil, "a forged message \(step) got an answer")
            }
            return
        }
        guard let next = sent(actions) else {
            check(current == 4, "the genuine message \(current) got no answer")
            return
        }
        genuine = next
    }
}

/// `frame`: mode 0 feeds the input as a link's incoming bytes (after a genuine header); mode 1
/// splits the input into plaintexts, encrypts them, feeds the stream in fuzz-chosen pieces and
/// flips at most one byte. Unchanged, the frames MUST come back in order; changed, decoding MUST
/// fail or stop short, never yield a frame that was not sent.
func fuzzFrameDecoder(_ bytes: [UInt8]) {
    var input = FuzzInput(bytes)
    let key = SecureBytes([UInt8](repeating: 9, count: 32))
    let configuration = FrameConfiguration(maxPlaintextBytes: 4_096, rekeyInterval: 3)
    var encoder = FrameEncoder(key: key, configuration: configuration)
    var decoder = FrameDecoder(key: key, configuration: configuration)
    let mode = input.byte() % 2
    var stream = encoder.header
    var plaintexts: [[UInt8]] = []
    if mode == 0 {
        stream += input.rest()
    } else {
        let count = Int(input.byte() % 8)
        for _ in 0..<count {
            let plaintext = input.take(Int(input.byte()) * 4)
            plaintexts.append(plaintext)
            stream += try! encoder.encode(plaintext)
        }
        if input.byte() & 1 == 1 { stream += try! encoder.encodeGoodbye(reason: input.byte()) }
    }
    let position = input.u16()
    let flip = input.byte()
    let changed = mode == 1 && position < stream.count && flip != 0
    if changed { stream[position] ^= flip }
    var frames: [[UInt8]] = []
    var offset = 0
    var failedAt: FrameError?
    decoding: while offset < stream.count {
        let piece = max(1, Int(input.byte()))
        let end = min(stream.count, offset + piece)
        decoder.feed(stream[offset..<end])
        offset = end
        while true {
            do {
                guard let event = try decoder.next() else { break }
                if case .frame(let plaintext) = event {
                    check(plaintext.count <= configuration.maxPlaintextBytes, "a frame over the limit decoded")
                    frames.append(plaintext)
                }
            } catch {
                failedAt = error
                break decoding
            }
        }
    }
    if mode == 1 {
        check(frames.count <= plaintexts.count, "more frames decoded than sent")
        check(Array(plaintexts.prefix(frames.count)) == frames, "a frame decoded to something never sent")
        if !changed {
            check(failedAt == nil, "a genuine stream failed: \(String(describing: failedAt))")
            check(frames == plaintexts, "a genuine stream lost frames")
        }
    }
}
