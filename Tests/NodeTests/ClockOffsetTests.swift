import Foundation
import Identity
import Replica
import Store
import TestSupport
import Testing

@testable import NodeRuntime

/// A node whose clock is ten minutes fast: its peer's `doctor` names it and by how much (from
/// its HELLO), and holds its ops until their time instead of showing them below every later one.
@Suite struct ClockOffsetTests {
    @Test func aPeerTenMinutesFast_isNamedByDoctor_andItsOpsWaitForTheirTime() async throws {
        let nodes = InProcessNodes()
        defer { nodes.removeFiles() }
        let steady = Fixtures.identity(70), fast = Fixtures.identity(71)
        let skew: Int64 = 600_000
        try nodes.prepare(["steady", "fast"], joining: lobby)
        let steadyLog = LogLines()
        let (steadyNode, steadyAddress) = try await nodes.start(nodes.configuration("steady"), identity: steady, log: steadyLog.log(.warn))
        var fastConfiguration = nodes.configuration("fast")
        fastConfiguration.faults.clockSkewMillis = skew
        fastConfiguration.staticPeers = [InProcessNodes.peer(steady, at: steadyAddress)]
        let (fastNode, _) = try await nodes.start(fastConfiguration, identity: fast)
        #expect(await eventually { await steadyNode.linkedPeers.contains(fast.id) })

        func clock(_ node: Node, _ peer: UserID, _ source: String) async -> DoctorReport.Clock? {
            await node.doctor().clocks?.first { $0.id == peer.text && $0.source == source }
        }
        let clocks = await steadyNode.doctor().clocks ?? []
        let seen = try #require(await clock(steadyNode, fast.id, "link"), "\(clocks)")
        #expect((skew - 5_000...skew + 5_000).contains(seen.aheadMillis), "\(seen)")
        let seenBack = try #require(await clock(fastNode, steady.id, "link"))
        #expect((-skew - 5_000 ... -skew + 5_000).contains(seenBack.aheadMillis), "\(seenBack)")

        // The fast node writes with its own clock: the steady node holds the op, and says why.
        let wall = UInt64(Date().timeIntervalSince1970 * 1000)
        try nodes.withStore("fast") { store in
            _ = try store.author(post("ten minutes early"), in: lobby.id, by: fast, nowMillis: wall + UInt64(skew))
        }
        _ = await fastNode.respond(to: ControlRequest(.poke))
        #expect(await eventually { await clock(steadyNode, fast.id, "held ops") != nil }, "\(steadyLog.all)")
        #expect(steadyLog.contains("ahead of this node's clock; held until then"), "\(steadyLog.all)")
        #expect(try nodes.withStore("steady") { try $0.views.history(lobby.id) }.isEmpty)
        await nodes.stopAll()
    }
}
