import Discovery
import Foundation
import Gossip
import Identity
import LinkProtocol
import Replica

/// Faults a node injects into itself, for `parley lab` and tests (NETWORK-TESTS.md: this kernel
/// has no netem, so loss, delay and splits are made in the application). None is active unless
/// asked for; a node in normal use pays one empty-set check per beacon, dial and link.
///
/// - **Split**: the node ignores the beacons of `blockedPeers`, dials none of them, and closes
///   any link to one as soon as its HELLO arrives. The lab blocks both sides of a split, so the
///   peers turn gone after three beacon intervals, as if a cable were pulled; clearing the set
///   heals it, and the first beacon heard again makes Discovery dial at once.
/// - **Loss and delay**: outbound NEW_OP pushes are dropped with probability `dropRate`, or sent
///   `delayMillis` later. Only whole pushes: a frame dropped inside the encrypted stream would
///   break the stream (the link would close, which is a split, not loss), and dropping a request
///   or an answer would leave a session waiting for its anti-entropy timeout rather than model a
///   lossy network. A lost push is what a datagram network loses; anti-entropy must repair it.
/// - **Broken node** (test only): incoming OPS and NEW_OP of partition `dropPartition` are
///   discarded before the sync session sees them, so this node never converges on that
///   partition. It exists to show that the lab can fail.
/// - **Clock skew** is not set here but at start (`FaultConfiguration.clockSkewMillis`), since a
///   clock that jumps while the node runs is a different fault.
public struct FaultSettings: Codable, Sendable, Equatable {
    /// User ids (text form) this node acts as if it could not reach.
    public var blockedPeers: [String]?
    /// Probability (0…1) that an outbound NEW_OP is dropped.
    public var dropRate: Double?
    /// Milliseconds added before an outbound NEW_OP leaves (0…60000).
    public var delayMillis: UInt64?
    /// Test only: a partition id (text form) whose incoming ops this node discards.
    public var dropPartition: String?

    public init(blockedPeers: [String]? = nil, dropRate: Double? = nil, delayMillis: UInt64? = nil, dropPartition: String? = nil) {
        (self.blockedPeers, self.dropRate, self.delayMillis, self.dropPartition) = (blockedPeers, dropRate, delayMillis, dropPartition)
    }
}

/// Faults fixed when the node starts (`parley run --clock-skew-ms`, `$PARLEY_CLOCK_SKEW_MS`).
public struct FaultConfiguration: Sendable, Equatable {
    /// Added to the wall clock the node uses for HLCs and `received_at` (never to its timers,
    /// which are monotonic): a node whose clock is minutes off.
    public var clockSkewMillis: Int64 = 0

    public init(clockSkewMillis: Int64 = 0) {
        self.clockSkewMillis = clockSkewMillis
    }

    /// The largest skew accepted: a day either way.
    public static let maxClockSkewMillis: Int64 = 86_400_000

    /// `millis` moved by `skew` (never below zero): the wall clock of a node or command run
    /// with `--clock-skew-ms` or `$PARLEY_CLOCK_SKEW_MS`.
    public static func skewed(_ millis: UInt64, by skew: Int64) -> UInt64 {
        skew >= 0 ? millis &+ UInt64(skew) : millis - min(millis, skew.magnitude)
    }
}

/// The faults a node has been asked to inject, validated (`FaultSettings` is their wire form).
struct FaultState: Sendable {
    var blocked: Set<UserID> = []
    var dropRate = 0.0
    var delayMillis: UInt64 = 0
    var dropPartition: PartitionID?
    var random = SystemRandomNumberGenerator()

    var isIdle: Bool { blocked.isEmpty && dropRate == 0 && delayMillis == 0 && dropPartition == nil }

    /// The settings checked like command-line input; the error names the field and the fix.
    init(_ settings: FaultSettings) throws(FaultSettingsError) {
        for text in settings.blockedPeers ?? [] {
            guard let id = UserID(text: text) else { throw FaultSettingsError("blocked_peers: '\(text)' is not a user id (52 base32 characters)") }
            blocked.insert(id)
        }
        if let rate = settings.dropRate {
            guard (0...1).contains(rate) else { throw FaultSettingsError("drop_rate must be from 0 to 1, not \(rate)") }
            dropRate = rate
        }
        if let delay = settings.delayMillis {
            guard delay <= 60_000 else { throw FaultSettingsError("delay_millis must be from 0 to 60000, not \(delay)") }
            delayMillis = delay
        }
        if let text = settings.dropPartition {
            guard let id = PartitionID(text: text) else { throw FaultSettingsError("drop_partition: '\(text)' is not a partition id") }
            dropPartition = id
        }
    }

    init() {}

    var settings: FaultSettings {
        FaultSettings(
            blockedPeers: blocked.map(\.text).sorted(), dropRate: dropRate, delayMillis: delayMillis,
            dropPartition: dropPartition?.text)
    }
}

/// A `faults` request that cannot be applied; one line naming the field and the fix.
public struct FaultSettingsError: Error, Sendable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// The answer to `faults`: what is in force now.
public struct FaultReport: Codable, Sendable, Equatable {
    public var settings: FaultSettings
    public var clockSkewMillis: Int64
    /// NEW_OP pushes dropped and delayed so far.
    public var droppedPushes: UInt64
    public var delayedPushes: UInt64
    /// Incoming sync messages discarded by `drop_partition`.
    public var discardedMessages: UInt64
}

/// Counters of what the fault layer did, for `FaultReport`.
struct FaultCounters: Sendable {
    var droppedPushes: UInt64 = 0
    var delayedPushes: UInt64 = 0
    var discardedMessages: UInt64 = 0
}

// MARK: - The node's hooks

extension Node {
    /// `faults`: replaces the faults in force with `settings` (an empty object clears them),
    /// and closes the links of peers now blocked.
    func applyFaults(_ settings: FaultSettings?) -> ControlResponse {
        if let settings {
            do {
                faults = try FaultState(settings)
            } catch {
                return .failure(error.description)
            }
            for peer in faults.blocked where current[peer] != nil {
                log.info("fault injection: cutting the link to \(displayName(of: peer))")
                closeLink(to: peer, reason: .shutdown)
            }
            log.info("fault injection: \(faults.isIdle ? "none" : "\(faults.settings)")")
        }
        return ControlResponse(
            faults: FaultReport(
                settings: faults.settings, clockSkewMillis: configuration.faults.clockSkewMillis,
                droppedPushes: faultCounters.droppedPushes, delayedPushes: faultCounters.delayedPushes,
                discardedMessages: faultCounters.discardedMessages))
    }

    /// Whether a datagram is a beacon of a blocked peer (a split hides it).
    func isBlockedBeacon(_ bytes: [UInt8]) -> Bool {
        guard !faults.blocked.isEmpty,
            let beacon = try? Beacon(decoding: bytes, key: BeaconKey(networkKey: networkKey.bytes))
        else { return false }
        return faults.blocked.contains(beacon.identity)
    }

    /// Whether links to `peer` are refused (a split).
    func refusesLink(to peer: UserID) -> Bool {
        !faults.blocked.isEmpty && faults.blocked.contains(peer)
    }

    /// Loss and delay of an outbound sync frame: nil to send it now; true when the fault layer
    /// took it (dropped, or sent later).
    func injectOutboundFault(_ frame: SyncFrame, to peer: UserID) -> Bool? {
        guard frame.type == SyncMessageType.newOp.rawValue, faults.dropRate > 0 || faults.delayMillis > 0 else { return nil }
        if faults.dropRate > 0, Double.random(in: 0..<1, using: &faults.random) < faults.dropRate {
            faultCounters.droppedPushes += 1
            return true
        }
        guard faults.delayMillis > 0, let id = current[peer] else { return nil }
        faultCounters.delayedPushes += 1
        let key = nextDelayedPush
        nextDelayedPush += 1
        var timer = NodeTimer()
        timer.arm(after: faults.delayMillis, on: self) {
            self.delayedPushes[key] = nil
            self.sendDelayed(frame, to: peer, link: id)
        }
        delayedPushes[key] = timer
        return true
    }

    private func sendDelayed(_ frame: SyncFrame, to peer: UserID, link id: LinkID) {
        guard current[peer] == id, let link = links[id]?.link else { return }
        try? link.send(.sync(frame))
    }

    /// Test only (`drop_partition`): whether an incoming sync frame carries ops of the
    /// partition this node was told to lose.
    func discardsInbound(_ frame: SyncFrame) -> Bool {
        guard let dropped = faults.dropPartition else { return false }
        let partition: PartitionID?
        switch SyncMessageType(rawValue: frame.type) {
        case .ops: partition = PartitionID(bytes: frame.payload.prefix(32))
        case .newOp:
            if case .newOp(let op)? = try? SyncMessage.decode([frame.type] + frame.payload) {
                partition = op.partition
            } else {
                partition = nil
            }
        default: partition = nil
        }
        guard partition == dropped else { return false }
        faultCounters.discardedMessages += 1
        return true
    }

    /// The wall clock for HLCs and `received_at`, with the configured skew.
    nonisolated func skewedWallMillis(_ millis: UInt64) -> UInt64 {
        FaultConfiguration.skewed(millis, by: configuration.faults.clockSkewMillis)
    }
}
