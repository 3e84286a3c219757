import Foundation
import Identity
import Pairing
import Replica
import Store
import Synchronization
import Transport

/// A pairing this device offers a new device of its person (docs/DESIGN.md §3.8, §4.4): the
/// code, where the new device reaches it, and the host that waits. `parley device pair` runs it
/// in the foreground; the page and the chat start it on a thread of its own and read its state
/// while they go on.
public final class DevicePairingOffer: Sendable {
    /// Where an offer stands.
    public enum State: Sendable, Equatable {
        case waiting
        case paired(device: UserID, name: String)
        case failed(String)
    }

    /// How long a code stays good unless the person says otherwise, and the most they may say.
    public static let defaultMinutes = 10
    public static let minutesRange = 1...60

    public let code: PairingCode
    /// The code with the address a new device reaches this one at, when there is one.
    public let invitation: PairingInvitation
    /// When the code stops being good, in wall-clock milliseconds.
    public let expiresAtMillis: UInt64
    private let host: PairingHost
    private let welcome: [UInt8]
    private let answer: @Sendable (DeviceRequest) throws -> [UInt8]
    private let current = Mutex<State>(.waiting)

    /// Opens the host: a fresh code, beacons to `beaconTargets`, good for `minutes`. `answer`
    /// certifies the new device's request and returns the bundle it gets (`DevicePairing.bundle`);
    /// it runs on the thread that runs the offer.
    ///
    /// With no beacon targets (discovery off), the address shown is `listenHost`'s when it is
    /// one address, else the first interface's.
    public init(
        person: UserID, beaconTargets: [String], listenHost: String = "0.0.0.0", minutes: Int, nowMillis: UInt64,
        answer: @escaping @Sendable (DeviceRequest) throws -> [UInt8]
    ) throws(PairingError) {
        let host = try PairingHost(code: .generate(), beaconTargets: beaconTargets, expiry: .seconds(minutes * 60))
        self.host = host
        code = host.code
        let address = Self.address(for: beaconTargets, listenHost: listenHost)
        invitation = PairingInvitation(code: host.code, address: address.map { HostPort(host: $0, port: host.port) })
        expiresAtMillis = nowMillis + UInt64(minutes) * 60_000
        welcome = DevicePairing.welcome(person: person)
        self.answer = answer
    }

    public var state: State { current.withLock { $0 } }

    /// Waits on the calling thread (not a concurrency pool thread) until a device paired, the
    /// code expired or was spent, or `cancel` was called; returns how it ended.
    @discardableResult
    public func run() -> State {
        let answer = answer
        var paired: DeviceRequest?
        let outcome: State
        do {
            try host.run(
                welcome: welcome,
                answer: { bytes in
                    let request = try DevicePairing.request(decoding: bytes)
                    let bundle = try answer(request)
                    paired = request
                    return bundle
                },
                finished: { _ in })
            outcome = paired.map { .paired(device: $0.device, name: $0.name) } ?? .failed("the pairing ended without a device")
        } catch {
            outcome = .failed("\(error)")
        }
        current.withLock { $0 = outcome }
        return outcome
    }

    /// Runs the offer on a thread of its own; `ended` gets how it ended, on that thread.
    public func start(ended: @escaping @Sendable (State) -> Void = { _ in }) {
        let thread = Thread { [self] in ended(run()) }
        thread.name = "parley-pairing"
        thread.start()
    }

    /// Ends a waiting offer: `run` returns `.failed` with the cancellation.
    public func cancel() {
        host.cancel()
    }

    /// Where a node with `configuration` sends pairing beacons: where its discovery beacons go,
    /// and nowhere when discovery is off (a person who turned it off wants nothing broadcast).
    public static func beaconTargets(for configuration: NodeConfiguration) -> [String] {
        guard configuration.discoveryPort != nil else { return [] }
        return configuration.broadcastTargets ?? NodeConfiguration.defaultBroadcastTargets()
    }

    /// The address a new device reaches this one at: loopback for the loopback broadcast; the
    /// first interface whose broadcast is a target; with no targets, `listenHost` when it is one
    /// address, else the first interface that is up.
    static func address(for targets: [String], listenHost: String) -> String? {
        if targets.isEmpty, listenHost != "0.0.0.0" { return listenHost }
        if !targets.isEmpty, targets.allSatisfy({ $0.hasPrefix("127.") }) { return "127.0.0.1" }
        let interfaces = ((try? NetworkInterfaces.list()) ?? []).filter { $0.isUp && !$0.isLoopback }
        if targets.isEmpty { return interfaces.first?.address }
        return interfaces.first { $0.directedBroadcast.map(targets.contains) == true }?.address
    }
}
