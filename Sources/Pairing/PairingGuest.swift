import Sodium
import Transport

/// The new device: it knows the code (typed, or scanned as a URI), finds the host and pairs
/// (docs/DESIGN.md §4.4).
public struct PairingGuest: Sendable {
    public let invitation: PairingInvitation
    /// How long to look for the host (its beacons, or its address answering).
    public let timeout: Duration
    let beaconPort: UInt16

    public init(invitation: PairingInvitation, timeout: Duration = .seconds(60)) {
        self.init(invitation: invitation, timeout: timeout, beaconPort: PairingHost.configuredUDPPort())
    }

    /// As the public init, with the beacons' UDP port given (tests run side by side).
    init(invitation: PairingInvitation, timeout: Duration, beaconPort: UInt16) {
        self.invitation = invitation
        self.timeout = timeout
        self.beaconPort = beaconPort
    }

    /// Blocks: finds the host (`invitation.address`, else a beacon with the code's tag on the
    /// pairing port), runs the PAKE, then receives the welcome, sends `request(welcome)`, receives
    /// the bundle and sends `done(bundle)`.
    ///
    /// The closures run on the calling thread, which must not be a Swift concurrency pool thread;
    /// what they throw comes out of `run` unchanged. The module's own failures are `PairingError`.
    public func run(request: ([UInt8]) throws -> [UInt8], done: ([UInt8]) throws -> [UInt8]) throws {
        let deadline = ContinuousClock.now + timeout
        if let address = invitation.address {
            do {
                let channel = try connect(host: address.host, port: address.port, deadline: deadline)
                defer { channel.close() }
                try pair(over: channel, request: request, done: done)
            } catch GuestSessionEnd.beforeKey(let failure) {
                throw failure
            }
            return
        }
        let socket: UDPSocket
        do {
            socket = try UDPSocket(host: "0.0.0.0", port: beaconPort, broadcast: false)
        } catch {
            throw PairingError("cannot listen for pairing beacons on UDP port \(beaconPort): \(error)")
        }
        defer { socket.close() }
        var lastFailure: PairingError?
        while true {
            let datagram: Datagram
            do {
                datagram = try runBlocking(on: EventLoop.shared) { try await socket.receive(deadline: deadline) }
            } catch {
                throw lastFailure ?? PairingError.nothingHeard(invitation.code, after: timeout)
            }
            // Beacons of other codes, and anything malformed, are not for us.
            guard let beacon = PairingBeacon(decoding: datagram.bytes), beacon.tag == invitation.code.tag else { continue }
            do {
                let channel = try connect(host: datagram.source.host, port: beacon.port, deadline: deadline)
                defer { channel.close() }
                try pair(over: channel, request: request, done: done)
                return
            } catch GuestSessionEnd.beforeKey(let failure) {
                lastFailure = failure  // a host that is busy or gone, or not one of ours: keep listening
            }
        }
    }

    /// How a session ended before anything depended on the code: worth trying the next beacon.
    enum GuestSessionEnd: Error {
        case beforeKey(PairingError)
    }

    private func connect(host: String, port: UInt16, deadline: ContinuousClock.Instant) throws(GuestSessionEnd) -> PairingChannel {
        let remaining = max(deadline - .now, .milliseconds(100))
        do {
            let connection = try runBlocking(on: EventLoop.shared) {
                try await TCPConnection.connect(host: host, port: port, timeout: min(remaining, .seconds(5)))
            }
            return PairingChannel(connection)
        } catch {
            throw .beforeKey(PairingError("cannot reach the other device at \(HostPort(host: host, port: port)): \(error)"))
        }
    }

    /// The handshake and the four messages over one connection.
    private func pair(over channel: PairingChannel, request: ([UInt8]) throws -> [UInt8], done: ([UInt8]) throws -> [UInt8]) throws {
        func deadline() -> ContinuousClock.Instant { .now + PairingChannel.frameTimeout }
        var toHost: SealedDirection
        var fromHost: SealedDirection
        do {
            let hello = try channel.receive(exactly: PairingHello.size, deadline: deadline())
            guard hello.starts(with: PairingHello.magicAndVersion) else {
                throw PairingError.broken("the other side is not a parley device offering pairing, or runs another version")
            }
            let sessionID = Array(hello.dropFirst(PairingHello.magicAndVersion.count))
            let share = PairingPAKE.Share(generator: PairingPAKE.generator(code: invitation.code, sessionID: sessionID))
            try channel.send(share.publicShare, deadline: deadline())
            let hostShare = try channel.receive(exactly: Ristretto255.pointBytes, deadline: deadline())
            let keys: PairingKeys
            do {
                keys = try PairingPAKE.keys(
                    share: share, peerShare: hostShare, sessionID: sessionID, guestShare: share.publicShare, hostShare: hostShare)
            } catch {
                throw PairingError.broken("the other device sent an invalid key share")
            }
            toHost = SealedDirection(key: keys.guestToHost, label: PairingHello.guestToHostLabel)
            fromHost = SealedDirection(key: keys.hostToGuest, label: PairingHello.hostToGuestLabel)
        } catch let failure as PairingError {
            throw GuestSessionEnd.beforeKey(failure)
        }

        // The welcome confirms the key: if it does not open, the codes differ. Say nothing to the host.
        let sealedWelcome = try channel.receiveSealed(deadline: deadline())
        let welcome: [UInt8]
        do {
            welcome = try fromHost.open(sealedWelcome)
        } catch {
            throw PairingError.wrongCode
        }
        let requestMessage = try request(welcome)
        guard requestMessage.count <= PairingChannel.maxMessageBytes else { throw PairingError.oversized(requestMessage.count) }
        try channel.send(toHost.seal(requestMessage), deadline: deadline())
        let bundle: [UInt8]
        do {
            bundle = try fromHost.open(try channel.receiveSealed(deadline: deadline()))
        } catch let error as PairingError {
            throw error
        } catch {
            throw PairingError.broken("the other device's message was garbled")
        }
        let last = try done(bundle)
        guard last.count <= PairingChannel.maxMessageBytes else { throw PairingError.oversized(last.count) }
        try channel.send(toHost.seal(last), deadline: deadline())
    }
}
