import Foundation
import Lab
import TestSupport
import Testing

/// The real `parley lab run` binary on small clusters: it must pass on a healthy one (with a
/// kill, a split and a clock skew) and fail on one with a broken node. Long and CPU-heavy: `make
/// test` runs these in the second pass, with the node tests; serialized, so two clusters never
/// share the two cores.
@Suite(.serialized) struct LabRunTests {
    /// Runs `parley lab run arguments --out DIR` and reads its report.
    func lab(
        _ arguments: [String], timeout: Duration, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> (
        CompletedProcess, LabReport?, String
    ) {
        let binary = try #require(ParleyExecutable.path, Comment(rawValue: ParleyExecutable.notFoundMessage), sourceLocation: sourceLocation)
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("parley-lab-test-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        let result = await CompletedProcess.run(
            binary, ["lab", "run", "--out", out] + arguments, environment: ["HOME": out], captureIn: out, timeout: timeout)
        let report = FileManager.default.contents(atPath: out + "/report.json").flatMap { try? LabReport.decode($0) }
        if result.timedOut {
            // The lab was killed with -9 and could not stop its nodes: stop them here, by pid.
            for pid in processes(mentioning: out).compactMap({ Int32($0) }) { kill(pid, SIGKILL) }
        }
        return (result, report, out)
    }

    /// Pids of processes whose command line mentions `text` (a lab's node left running).
    func processes(mentioning text: String) -> [String] {
        let pids = (try? FileManager.default.contentsOfDirectory(atPath: "/proc"))?.filter { Int($0) != nil } ?? []
        return pids.filter { pid in
            guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return false }
            return String(decoding: data.map { $0 == 0 ? 32 : $0 }, as: UTF8.self).contains(text)
        }
    }

    @Test func healthyCluster_withKillSplitAndSkew_convergesAndLosesNothing() async throws {
        let seed = SeededRandom.announce("LabRunTests.healthyCluster")
        let (result, report, out) = try await lab(
            ["--nodes", "4", "--duration", "16", "--rate", "12", "--seed", "\(seed)", "--settle-timeout", "45"], timeout: .seconds(150))
        defer { try? FileManager.default.removeItem(atPath: out) }
        let json = try #require(report, "no report.json: \(result)")
        #expect(result.exitCode == 0, "\(result)")
        #expect(json.converged, "\(result)")
        #expect(json.lostWrites == 0, "lost: \(json.lostSample)")
        #expect(json.acknowledgedWrites > 100)
        #expect(Set(json.faults.map(\.kind)) == ["kill", "split", "skew"])
        #expect(json.faults.first { $0.kind == "kill" }?.endSeconds != nil)
        #expect(json.nodes.count == 4 && json.nodes.allSatisfy { $0.peakRssBytes > 1_000_000 })
        #expect(json.nodes.contains { abs($0.clockSkewMs) == 180_000 })
        #expect(json.latencyMs.p50 != nil && json.latencyMs.count > 0)
        #expect(json.wireBytesPerOp > 0 && json.opsPerSecond > 5)
        // The bytes by message type add up to the bytes (but for each link's stream header), and
        // the ops went out in pushes or fetches, beside the summaries every link starts with.
        let byType = try #require(json.wireBytesPerOpByType)
        let typed = byType.values.reduce(0, +)
        #expect(typed <= json.wireBytesPerOp && typed > json.wireBytesPerOp * 0.9, "\(byType) against \(json.wireBytesPerOp)")
        #expect(byType["summary"] ?? 0 > 0 && (byType["newOp"] ?? 0) + (byType["ops"] ?? 0) > 0, "\(byType)")
        #expect(result.stdout.contains("wire bytes/op by message type: "), "\(result)")
        #expect(json.convergenceSeconds != nil)
        let html = try String(contentsOfFile: out + "/report.html", encoding: .utf8)
        #expect(html.contains("<svg") && html.contains("PASS") && !html.contains("<script"))
        // Everything it made is gone: no node directories, no node processes.
        #expect(!FileManager.default.fileExists(atPath: out + "/nodes"))
        #expect(processes(mentioning: out).isEmpty)
    }

    /// Two of five nodes are paired devices of two others' persons (`--devices`), paired with
    /// the real commands, and every node writes at once under the default faults: the cluster
    /// converges, loses nothing, and no chain forks.
    @Test func pairedDevices_writeAtOnceWithTheirPersons_andNothingForks() async throws {
        let seed = SeededRandom.announce("LabRunTests.pairedDevices")
        let (result, report, out) = try await lab(
            ["--nodes", "5", "--devices", "2", "--duration", "12", "--rate", "12", "--seed", "\(seed)", "--settle-timeout", "45"],
            timeout: .seconds(150))
        defer { try? FileManager.default.removeItem(atPath: out) }
        let json = try #require(report, "no report.json: \(result)")
        #expect(result.exitCode == 0, "\(result)")
        #expect(json.converged && json.lostWrites == 0, "lost: \(json.lostSample)")
        #expect(json.forks == 0)
        #expect(json.configuration.devices == 2)
        #expect(json.nodes.map(\.deviceOf) == [nil, nil, nil, 0, 1])
        #expect(json.nodes.filter { $0.deviceOf != nil }.allSatisfy { $0.writesAcknowledged > 0 }, "\(json.nodes)")
        #expect(Set(json.nodes.map(\.id)).count == 5, "each device has a key of its own")
    }

    /// Eight node processes with the overlay (`--active-peers 3`: about three links each, not
    /// seven) and `extra`, 14 s at 10 writes/s under the default faults: the run passes, the
    /// cluster converges, loses nothing and forks nothing. The output directory is the caller's
    /// to remove.
    func overlayLab(_ label: String, extra: [String], sourceLocation: SourceLocation = #_sourceLocation) async throws -> String {
        let seed = SeededRandom.announce(label)
        let (result, report, out) = try await lab(
            ["--nodes", "8", "--active-peers", "3", "--duration", "14", "--rate", "10", "--seed", "\(seed)", "--settle-timeout", "60"] + extra,
            timeout: .seconds(180), sourceLocation: sourceLocation)
        let json = try #require(report, "no report.json: \(result)", sourceLocation: sourceLocation)
        #expect(result.exitCode == 0, "\(result)", sourceLocation: sourceLocation)
        #expect(json.converged && json.lostWrites == 0, "lost: \(json.lostSample)", sourceLocation: sourceLocation)
        #expect(json.forks == 0, sourceLocation: sourceLocation)
        return out
    }

    /// With the broadcast tree (`--push-tree`): the tree's prunes, announcements and grafts
    /// between real processes lose nothing under a node killed and a split.
    @Test func broadcastTree_convergesAndLosesNothing() async throws {
        let out = try await overlayLab("LabRunTests.tree", extra: ["--push-tree"])
        try? FileManager.default.removeItem(atPath: out)
    }

    /// With two of the nodes devices pinned to their persons: the overlay did close links (a
    /// refusal or a rotation, in the logs).
    @Test func overlay_withDevices_convergesAndLosesNothing() async throws {
        let out = try await overlayLab("LabRunTests.overlay", extra: ["--devices", "2"])
        defer { try? FileManager.default.removeItem(atPath: out) }
        let logs = try FileManager.default.contentsOfDirectory(atPath: out + "/logs").filter { $0.hasSuffix(".stderr") }
        let overlayClosed = try logs.contains { try String(contentsOfFile: out + "/logs/" + $0, encoding: .utf8).contains("(overlay)") }
        #expect(overlayClosed, "no link was closed by the overlay: it did not run")
    }

    @Test func brokenNode_makesTheLabFail() async throws {
        let seed = SeededRandom.announce("LabRunTests.brokenNode")
        let (result, report, out) = try await lab(
            [
                "--nodes", "3", "--duration", "6", "--rate", "15", "--seed", "\(seed)", "--rooms", "1", "--conversations", "0",
                "--faults", "broken:node=2,room=0", "--settle-timeout", "6",
            ], timeout: .seconds(90))
        defer { try? FileManager.default.removeItem(atPath: out) }
        let json = try #require(report, "no report.json: \(result)")
        #expect(result.exitCode == 1, "\(result)")
        #expect(!json.converged || json.lostWrites > 0)
        #expect(json.lostWrites > 0)
        #expect(json.lostSample.allSatisfy { $0.missingOn == [2] })
        let raw = try #require(FileManager.default.contents(atPath: out + "/report.json"))
        let object = try #require(try JSONSerialization.jsonObject(with: raw) as? [String: Any])
        #expect(object["converged"] as? Bool == false)
        #expect(object.keys.contains("convergence_seconds"), "written as null, not left out")
        #expect(result.stdout.contains("FAIL"))
    }

    @Test func badOptions_exitTwoWithOneLine() async throws {
        for arguments in [["--nodes", "0"], ["--faults", "kill:node=7"], ["--rate", "fast"], ["--devices", "4"]] {
            let (result, report, out) = try await lab(arguments, timeout: .seconds(20))
            defer { try? FileManager.default.removeItem(atPath: out) }
            #expect(result.exitCode == 2, "\(result)")
            #expect(report == nil)
            #expect(result.stderr.split(separator: "\n").count == 1, "\(result)")
        }
    }
}
