import Discovery
import Identity
import TestSupport
import Testing
import Wire

// MARK: - Keys and addresses

let networkKey = [UInt8](repeating: 0x4E, count: 32)
let beaconKey = BeaconKey(networkKey: networkKey)
let otherBeaconKey = BeaconKey(networkKey: [UInt8](repeating: 0x4F, count: 32))

/// A user id whose bytes order like `n` does, so tests can pick who has the smaller key.
func user(_ n: UInt64) -> UserID { UserID(Bytes32(w0: n, w1: 0xA5A5, w2: 0, w3: n)) }

/// Our node's identity, between `smallerPeer` and `largerPeer`.
let me = user(50)
let smallerPeer = user(10)
let largerPeer = user(90)

/// The broadcast target of the test LAN (a namespace address; never sent anywhere).
let lanBroadcast = PeerEndpoint(host: "10.77.0.255", port: 7747)

/// The UDP source address of host `n` on the test LAN.
func lanHost(_ n: Int) -> PeerEndpoint { PeerEndpoint(host: "10.77.0.\(n)", port: 7747) }

// MARK: - Instances

func makeConfiguration(_ configure: (inout DiscoveryConfiguration) -> Void = { _ in }) -> DiscoveryConfiguration {
    var configuration = DiscoveryConfiguration(
        identity: me, instanceID: InstanceID(raw: 0xAAAA), tcpPort: 7748,
        beaconKey: beaconKey, targets: [lanBroadcast])
    // The tests check each rule's exact time; `stateChangesFallOnTheGrid` checks the grid.
    configuration.stateCheckGranularity = 1
    configure(&configuration)
    return configuration
}

/// A started instance at time `now` (the start's directives are dropped).
func startedDiscovery(now: UInt64 = 0, _ configure: (inout DiscoveryConfiguration) -> Void = { _ in }) -> Discovery {
    var discovery = Discovery(configuration: makeConfiguration(configure))
    _ = discovery.start(now: now)
    return discovery
}

/// Another node on the LAN: makes its beacons with increasing seqs.
struct FakePeer {
    var id: UserID
    var instance = InstanceID(raw: 0xBEEF)
    var tcpPort: UInt16 = 7748
    var seq: UInt64 = 0
    var host: PeerEndpoint
    var key = beaconKey

    init(_ id: UserID, host: PeerEndpoint) {
        self.id = id
        self.host = host
    }

    /// The dial endpoint Discovery derives from this peer's beacons.
    var dialEndpoint: PeerEndpoint { host.with(port: tcpPort) }

    mutating func beacon(leaving: Bool = false, interval: UInt32 = 1_000) -> [UInt8] {
        seq += 1
        return Beacon(isLeaving: leaving, tcpPort: tcpPort, instanceID: instance, identity: id, seq: seq, interval: interval)
            .encoded(key: key)
    }
}

extension Discovery {
    /// Delivers `peer`'s next beacon from its host.
    mutating func hear(
        _ peer: inout FakePeer, leaving: Bool = false, interval: UInt32 = 1_000, now: UInt64
    )
        -> [DiscoveryDirective]
    {
        onBeacon(peer.beacon(leaving: leaving, interval: interval), from: peer.host, now: now)
    }

    /// Ticks at every millisecond in `times` and collects the directives.
    mutating func tick(at times: some Sequence<UInt64>) -> [DiscoveryDirective] {
        times.flatMap { onTick(now: $0) }
    }
}

// MARK: - Reading directives

extension [DiscoveryDirective] {
    /// Everything but beacons and tick requests: what the peer table decided.
    var decisions: [DiscoveryDirective] {
        filter {
            switch $0 {
            case .sendBeacon, .scheduleTick: false
            default: true
            }
        }
    }

    var connects: [DiscoveryDirective] {
        filter { if case .connect = $0 { true } else { false } }
    }

    /// The beacons sent, decoded (with the test network's key).
    var sentBeacons: [Beacon] {
        compactMap { if case .sendBeacon(let bytes, _) = $0 { try? Beacon(decoding: bytes, key: beaconKey) } else { nil } }
    }

    var tickRequests: [UInt64] {
        compactMap { if case .scheduleTick(let after) = $0 { after } else { nil } }
    }
}

// MARK: - Randomness

/// A seed for a random test, printed so a failure can be replayed by pasting it in.
func freshSeed(_ test: String = #function) -> UInt64 {
    let seed = UInt64.random(in: .min ... .max)
    print("\(test): seed \(seed)")
    return seed
}

// MARK: - A shell with a manual clock

/// Plays the shell: delivers events in time order, fires the one timer the instance asks for,
/// and logs every directive with the time it was emitted.
struct TestShell {
    var discovery: Discovery
    private(set) var now: UInt64 = 0
    private(set) var timer: UInt64?
    private(set) var log: [(time: UInt64, directive: DiscoveryDirective)] = []

    init(_ configure: (inout DiscoveryConfiguration) -> Void = { _ in }) {
        discovery = Discovery(configuration: makeConfiguration(configure))
    }

    /// Starts the instance at `time`.
    @discardableResult
    mutating func start(at time: UInt64 = 0) -> [DiscoveryDirective] {
        now = time
        return record(discovery.start(now: time))
    }

    /// Fires every timer due up to `time`, then sets the clock to `time`.
    @discardableResult
    mutating func advance(to time: UInt64) -> [DiscoveryDirective] {
        precondition(time >= now, "time runs forward")
        var emitted: [DiscoveryDirective] = []
        while let due = timer, due <= time {
            now = due
            timer = nil
            emitted += record(discovery.onTick(now: due))
        }
        now = time
        return emitted
    }

    /// Advances to `time` and delivers one event there; returns the event's directives.
    @discardableResult
    mutating func at(_ time: UInt64, _ event: (inout Discovery, UInt64) -> [DiscoveryDirective]) -> [DiscoveryDirective] {
        advance(to: time)
        return record(event(&discovery, time))
    }

    /// The logged directives (beacons and tick requests left out) emitted within `times`.
    func decisions(in times: ClosedRange<UInt64> = 0...UInt64.max) -> [DiscoveryDirective] {
        log.filter { times.contains($0.time) }.map(\.directive).decisions
    }

    /// The times at which `.connect` was emitted.
    var connectTimes: [UInt64] {
        log.filter { if case .connect = $0.directive { true } else { false } }.map(\.time)
    }

    /// Our beacons: when each was sent, and the interval it announced.
    var beaconLog: [(time: UInt64, interval: UInt32)] {
        log.compactMap { entry in
            guard case .sendBeacon(let bytes, _) = entry.directive, let beacon = try? Beacon(decoding: bytes, key: beaconKey)
            else { return nil }
            return (entry.time, beacon.interval)
        }
    }

    private mutating func record(_ directives: [DiscoveryDirective]) -> [DiscoveryDirective] {
        for directive in directives {
            log.append((now, directive))
            if case .scheduleTick(let after) = directive { timer = now + after }
        }
        return directives
    }
}
