import Glibc
import Sodium
import Synchronization
import Transport

/// The device that already belongs to the person: it shows a code, announces it on the LAN and
/// waits for the new device (the guest) to prove it knows the code (docs/DESIGN.md §4.4).
///
/// One host serves one pairing: `run` returns after the first guest that pairs, and the host
/// cannot be run again. Guests are served one at a time; others wait in the listener's backlog.
public final class PairingHost: Sendable {
    /// The UDP port beacons go to, unless `$PARLEY_PAIRING_PORT` names another.
    public static let udpPort: UInt16 = 7749
    /// How often a beacon goes to each target.
    static let beaconInterval: Duration = .milliseconds(500)

    public let code: PairingCode
    let beaconTargets: [String]
    let expiry: Duration
    let maxWrongTries: Int
    let beaconPort: UInt16
    let listener: TCPListener
    private let cancelled = Atomic<Bool>(false)

    /// Binds the TCP listener on `0.0.0.0`, an ephemeral port, at once (so `port` can be shown).
    /// Beacons go to each of `beaconTargets` (numeric addresses or names) at the pairing port.
    public convenience init(code: PairingCode, beaconTargets: [String], expiry: Duration, maxWrongTries: Int = 3) throws(PairingError) {
        try self.init(code: code, beaconTargets: beaconTargets, expiry: expiry, maxWrongTries: maxWrongTries, beaconPort: Self.configuredUDPPort())
    }

    /// As the public init, with the beacons' UDP port given (tests run side by side).
    init(code: PairingCode, beaconTargets: [String], expiry: Duration, maxWrongTries: Int, beaconPort: UInt16) throws(PairingError) {
        precondition(maxWrongTries >= 1, "a pairing host must allow at least one try")
        self.code = code
        self.beaconTargets = beaconTargets
        self.expiry = expiry
        self.maxWrongTries = maxWrongTries
        self.beaconPort = beaconPort
        do {
            listener = try TCPListener(host: "0.0.0.0", port: 0)
        } catch {
            throw PairingError("cannot listen for the new device: \(error)")
        }
    }

    /// The TCP listener's port.
    public var port: UInt16 { listener.port }

    /// Ends a waiting `run` from another thread (the person closed the pairing): it throws
    /// `PairingError.cancelled` once the guest it may be serving is done.
    public func cancel() {
        cancelled.store(true, ordering: .sequentiallyConsistent)
        listener.close()
    }

    /// `$PARLEY_PAIRING_PORT` when it is a port number, else `udpPort`.
    static func configuredUDPPort() -> UInt16 {
        guard let text = getenv("PARLEY_PAIRING_PORT").map({ String(cString: $0) }), let port = UInt16(text), port != 0 else {
            return udpPort
        }
        return port
    }

    /// Blocks until one guest has paired, the expiry passes, or `maxWrongTries` guests failed
    /// the code, beaconing every 0.5 s meanwhile.
    ///
    /// `welcome` is the first sealed message (it confirms the key to the guest); `answer` turns
    /// the guest's request into the bundle; `finished` gets the guest's last message. The
    /// closures run on the calling thread, which must not be a Swift concurrency pool thread;
    /// what they throw comes out of `run` unchanged. The module's own failures are `PairingError`.
    public func run(welcome: [UInt8], answer: ([UInt8]) throws -> [UInt8], finished: ([UInt8]) throws -> Void) throws {
        defer { listener.close() }
        let expiresAt = ContinuousClock.now + expiry
        let beacons = try startBeacons()
        defer { beacons.cancel() }
        var wrongTries = 0
        while true {
            let connection: TCPConnection
            do {
                let listener = listener
                connection = try runBlocking(on: EventLoop.shared) { try await listener.accept(deadline: expiresAt) }
            } catch TransportError.timedOut {
                throw PairingError.expired(after: expiry)
            } catch {
                if cancelled.load(ordering: .sequentiallyConsistent) { throw PairingError.cancelled }
                throw PairingError("cannot take the new device's connection: \(error)")
            }
            let channel = PairingChannel(connection)
            defer { channel.close() }
            do {
                try serve(channel, expiresAt: expiresAt, welcome: welcome, answer: answer, finished: finished)
                return
            } catch HostSessionEnd.wrongTry {
                wrongTries += 1
                if wrongTries >= maxWrongTries { throw PairingError.spent(tries: wrongTries) }
            } catch HostSessionEnd.dropped {
                // A peer that learnt nothing about the code: not a try.
            }
            if ContinuousClock.now >= expiresAt { throw PairingError.expired(after: expiry) }
        }
    }

    /// Sends the beacon to every target until cancelled. Send failures (a target that is not
    /// reachable now) are skipped: the next round tries again.
    private func startBeacons() throws(PairingError) -> Task<Void, Never> {
        let socket: UDPSocket
        do {
            socket = try UDPSocket(host: "0.0.0.0", port: 0, broadcast: true)
        } catch {
            throw PairingError("cannot send pairing beacons: \(error)")
        }
        let beacon = PairingBeacon(tag: code.tag, port: port).encoded
        let (targets, beaconPort) = (beaconTargets, beaconPort)
        return Task(executorPreference: EventLoop.shared) {
            defer { socket.close() }
            while !Task.isCancelled {
                for target in targets { try? await socket.send(beacon, to: target, port: beaconPort) }
                try? await Task.sleep(for: Self.beaconInterval)
            }
        }
    }

    /// How a session with one guest ended when it did not pair.
    enum HostSessionEnd: Error {
        /// The guest could have tested a guess of the code (it got the sealed welcome) but did not
        /// prove it knew the code: a wrong try.
        case wrongTry
        /// The connection ended before the host sent anything that depends on the code.
        case dropped
    }

    /// One guest: the handshake, then welcome, request, bundle and done.
    private func serve(
        _ channel: PairingChannel, expiresAt: ContinuousClock.Instant, welcome: [UInt8], answer: ([UInt8]) throws -> [UInt8],
        finished: ([UInt8]) throws -> Void
    ) throws {
        func deadline() -> ContinuousClock.Instant { min(.now + PairingChannel.frameTimeout, expiresAt) }
        guard welcome.count <= PairingChannel.maxMessageBytes else { throw PairingError.oversized(welcome.count) }

        // Before the welcome, a failure tells the peer nothing about the code.
        var toGuest: SealedDirection
        var fromGuest: SealedDirection
        do {
            let sessionID = Sodium.randomBytes(PairingPAKE.sessionIDBytes)
            try channel.send(PairingHello.magicAndVersion + sessionID, deadline: deadline())
            let guestShare = try channel.receive(exactly: Ristretto255.pointBytes, deadline: deadline())
            let generator = PairingPAKE.generator(code: code, sessionID: sessionID)
            let share = PairingPAKE.Share(generator: generator)
            let keys: PairingKeys
            do {
                keys = try PairingPAKE.keys(
                    share: share, peerShare: guestShare, sessionID: sessionID, guestShare: guestShare, hostShare: share.publicShare)
            } catch {
                throw HostSessionEnd.dropped  // an invalid point, or one that forces the identity
            }
            try channel.send(share.publicShare, deadline: deadline())
            toGuest = SealedDirection(key: keys.hostToGuest, label: PairingHello.hostToGuestLabel)
            fromGuest = SealedDirection(key: keys.guestToHost, label: PairingHello.guestToHostLabel)
        } catch is PairingError {
            throw HostSessionEnd.dropped
        }

        // From the welcome on, the guest can test its guess: until its request opens, any end is a wrong try.
        let request: [UInt8]
        do {
            try channel.send(toGuest.seal(welcome), deadline: deadline())
            request = try fromGuest.open(try channel.receiveSealed(deadline: deadline()))
        } catch {
            throw HostSessionEnd.wrongTry
        }

        // The guest knows the code: failures now are the pairing's, told as they are.
        let bundle = try answer(request)
        guard bundle.count <= PairingChannel.maxMessageBytes else { throw PairingError.oversized(bundle.count) }
        try channel.send(toGuest.seal(bundle), deadline: deadline())
        let done: [UInt8]
        do {
            done = try fromGuest.open(try channel.receiveSealed(deadline: deadline()))
        } catch let error as PairingError {
            throw error
        } catch {
            throw PairingError.broken("the other device's last message was garbled")
        }
        try finished(done)
    }
}

/// The host's first frame and the direction labels of sealed messages.
///
/// | bytes | field |
/// |---|---|
/// | 8 | magic `PRLYPAIR` |
/// | 1 | version (1) |
/// | 16 | session id, random |
enum PairingHello {
    static let magicAndVersion: [UInt8] = PairingBeacon.magic + [PairingBeacon.version]
    static let size = magicAndVersion.count + PairingPAKE.sessionIDBytes
    static let hostToGuestLabel: UInt8 = 1
    static let guestToHostLabel: UInt8 = 2
}

extension PairingError {
    /// A closure handed over a message over the limit.
    static func oversized(_ count: Int) -> PairingError {
        PairingError("a pairing message of \(count) bytes is over the \(PairingChannel.maxMessageBytes >> 20) MiB limit; send less")
    }
}
