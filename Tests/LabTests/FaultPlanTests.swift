import Testing

@testable import Lab

@Suite struct FaultPlanTests {
    @Test func parse_readsEveryKindWithItsKeys() throws {
        let plan = try FaultPlan.parse(
            "kill:node=1,at=5,for=4; pause:node=2,at=1,for=2;split:groups=3,at=8,for=5;skew:node=0,at=2,offset=-120;"
                + "loss:at=3,for=6,rate=0.5,delay=40;broken:node=3,room=1",
            nodes: 4, duration: 20, seed: 1)
        #expect(plan.faults.map(\.kind) == [.broken, .pause, .skew, .loss, .kill, .split])
        let kill = try #require(plan.faults.first { $0.kind == .kill })
        #expect(kill.node == 1 && kill.at == 5 && kill.duration == 4 && kill.heal == 9)
        let split = try #require(plan.faults.first { $0.kind == .split })
        #expect(split.groups == 3 && split.node == nil)
        let skew = try #require(plan.faults.first { $0.kind == .skew })
        #expect(skew.offsetSeconds == -120 && skew.node == 0 && skew.heal == 2 && !skew.hasEnd)
        let loss = try #require(plan.faults.first { $0.kind == .loss })
        #expect(loss.node == nil && loss.rate == 0.5 && loss.delayMillis == 40)
        #expect(plan.faults.first { $0.kind == .broken }?.room == 1)
        #expect(plan.lastHeal == 13)
    }

    @Test func parse_noneAndDefault() throws {
        #expect(try FaultPlan.parse("none", nodes: 4, duration: 20, seed: 1).faults.isEmpty)
        #expect(try FaultPlan.parse("default", nodes: 4, duration: 20, seed: 9) == FaultPlan.defaultPlan(nodes: 4, duration: 20, seed: 9))
    }

    @Test(arguments: [
        ("", "is empty"),
        ("explode:node=1", "unknown fault 'explode'"),
        ("kill:node=9", "node must be a number from 0 to 3"),
        ("kill:at=30", "at must be seconds from 0 to 20"),
        ("kill:node", "is not key=value"),
        ("split:node=1", "split takes no 'node'"),
        ("loss:rate=2", "rate must be from 0 to 1"),
        ("skew:offset=abc", "offset must be seconds"),
        ("random:count=0", "count must be a number from 1 to 100"),
    ])
    func parse_badSpec_namesTheProblem(spec: String, expected: String) {
        #expect {
            try FaultPlan.parse(spec, nodes: 4, duration: 20, seed: 1)
        } throws: { error in
            (error as? FaultSpecError)?.description.contains(expected) == true
        }
    }

    @Test func defaultPlan_hasAKillASplitAndASkew_healedBefore65Percent() {
        for seed: UInt64 in [1, 2, 3, 99] {
            let plan = FaultPlan.defaultPlan(nodes: 20, duration: 60, seed: seed)
            #expect(Set(plan.faults.map(\.kind)) == [.kill, .split, .skew])
            #expect(plan.lastHeal <= 60 * 0.65 + 1e-9)
            let kill = plan.faults.first { $0.kind == .kill }!, skew = plan.faults.first { $0.kind == .skew }!
            #expect(kill.node != skew.node)
            #expect(abs(skew.offsetSeconds) == 180)
        }
    }

    @Test func randomPlan_isTheSameForTheSameSeed_andDiffersAcrossSeeds() throws {
        let one = try FaultPlan.parse("random:count=6", nodes: 8, duration: 60, seed: 42)
        let again = try FaultPlan.parse("random:count=6", nodes: 8, duration: 60, seed: 42)
        let other = try FaultPlan.parse("random:count=6", nodes: 8, duration: 60, seed: 43)
        #expect(one == again)
        #expect(one != other)
        #expect(one.faults.count == 6)
        for fault in one.faults {
            #expect(fault.kind != .broken)
            #expect(fault.at >= 6 && fault.at <= 36)
            if let node = fault.node { #expect((0..<8).contains(node)) }
        }
    }

    @Test func overlappingSplits_cutIntoTheCellsOfBoth() {
        #expect(LabRunner.cells(of: [], nodes: 3) == [0, 0, 0])
        #expect(LabRunner.cells(of: [[[0, 2], [1, 3]]], nodes: 4) == [0, 1, 0, 1])
        #expect(LabRunner.cells(of: [[[0, 1, 2], [3, 4, 5]], [[0, 3], [1, 2, 4, 5]]], nodes: 6) == [0, 1, 1, 2, 3, 3])
    }

    @Test func description_roundTripsThroughParse() throws {
        let plan = FaultPlan.defaultPlan(nodes: 5, duration: 40, seed: 3)
        let spec = plan.faults.map(\.description).joined(separator: ";")
        #expect(try FaultPlan.parse(spec, nodes: 5, duration: 40, seed: 77) == plan)
    }
}
