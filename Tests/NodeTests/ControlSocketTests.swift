import Foundation
import SecureLink
import TestSupport
import Testing

extension NodeProcessTests {
    @Suite struct ControlSocket {
        @Test func socketIsPrivate_aStaleOneAfterKill9DoesNotBlock_andOneNodePerDirectory() async throws {
            let cluster = NodeCluster(slot: 2)
            defer { cluster.shutdown() }
            let node = try await cluster.node("solo")
            let arguments = ["--listen", "127.0.0.1:0", "--no-discovery"]

            let idle = await node.parley(["peers", "--json"])
            #expect(
                idle.exitCode == 1 && idle.stderr == "parley: no node is running for \(node.dataDir); start one with `parley run`\n",
                "\(idle)")

            try await node.start(arguments)
            let socket = node.dataDir + "/control.sock"
            var info = stat()
            #expect(stat(socket, &info) == 0 && info.st_mode & S_IFMT == S_IFSOCK)
            #expect(info.st_mode & 0o777 == 0o600, "control.sock has mode \(String(info.st_mode & 0o777, radix: 8))")

            let second = await node.parley(["run"] + arguments)
            #expect(second.exitCode == 1, "\(second)")
            #expect(
                second.stderr.split(separator: "\n").count == 1 && second.stderr.contains("already running for \(node.dataDir)"),
                "\(second)")

            node.kill()
            #expect(FileManager.default.fileExists(atPath: socket), "kill -9 leaves the socket file behind")
            let stale = await node.parley(["status"])
            #expect(stale.exitCode == 1 && stale.stderr.contains("no node is running"), "\(stale)")
            let offlineDoctor = await node.parley(["doctor"])
            #expect(offlineDoctor.exitCode == 0 && offlineDoctor.stdout.contains("no node is running"), "\(offlineDoctor)")

            try await node.start(arguments)
            let status = await node.parley(["status", "--json"])
            #expect(status.exitCode == 0 && status.stdout.contains(node.id), "\(status)")

            node.kill(SIGTERM)
            let process = try #require(node.process)
            let exited = await process.waitForExit(timeout: .seconds(5))
            #expect(exited && process.exitStatus == 0 && !process.endedBySignal, "SIGTERM must stop the node with status 0\n\(process.stderr)")
            #expect(!FileManager.default.fileExists(atPath: socket), "a clean stop removes the socket")
            #expect(process.stdout.contains("listening on 127.0.0.1:"), "\(process.stdout)")
        }

        /// Under systemd, stderr is the journal's stream and `JOURNAL_STREAM` names it: each line
        /// then starts with its syslog priority and carries no stamp and no escape sequence. The
        /// launcher points `JOURNAL_STREAM` at the captured stderr file as systemd would at its
        /// socket; SIGTERM, systemd's stop signal, ends the node with status 0.
        @Test func underTheJournal_linesCarryTheirPriority_andSIGTERMStopsCleanly() async throws {
            let cluster = NodeCluster(slot: 2)  // no discovery: the slot's port is never bound
            defer { cluster.shutdown() }
            let node = try await cluster.node("journal")
            let journal = ["/bin/sh", "-c", "export JOURNAL_STREAM=$(stat -L -c %d:%i /proc/self/fd/2); exec \"$@\"", "journal"]
            try await node.start(["--listen", "127.0.0.1:0", "--no-discovery", "--log-level", "debug"], launcher: journal)
            node.kill(SIGTERM)
            let process = try #require(node.process)
            let exited = await process.waitForExit(timeout: .seconds(10))
            #expect(exited && process.exitStatus == 0 && !process.endedBySignal, "SIGTERM must stop the node with status 0\n\(process.stderr)")
            let lines = process.stderr.split(separator: "\n")
            #expect(lines.count >= 2, "\(process.stderr)")
            for line in lines {
                #expect(["<7>", "<6>", "<4>", "<3>"].contains(line.prefix(3)), "not a journal line: \(line)")
                #expect(!line.contains("\u{1B}") && !line.contains("Z info"), "\(line)")
            }
            #expect(lines.contains { $0.hasPrefix("<6>") }, "\(process.stderr)")

            // The same node with stderr redirected since systemd set the variable: plain lines.
            let elsewhere = ["/bin/sh", "-c", "export JOURNAL_STREAM=1:1; exec \"$@\"", "plain"]
            try await node.start(["--listen", "127.0.0.1:0", "--no-discovery"], launcher: elsewhere)
            node.kill(SIGTERM)
            let plain = try #require(node.process)
            _ = await plain.waitForExit(timeout: .seconds(10))
            let first = try #require(plain.stderr.split(separator: "\n").first)
            #expect(first.hasPrefix("20") && first.contains("Z info"), "\(plain.stderr)")
        }

        @Test func portInUse_failsWithOneLineNamingTheFix() async throws {
            let cluster = NodeCluster(slot: 3)
            defer { cluster.shutdown() }
            let first = try await cluster.node("first"), second = try await cluster.node("second")
            let port = TestPorts.port(slot: 3)
            try await first.start(["--listen", "127.0.0.1:\(port)", "--no-discovery"])
            let clash = await second.parley(["run", "--listen", "127.0.0.1:\(port)", "--no-discovery"])
            #expect(clash.exitCode == 1, "\(clash)")
            #expect(clash.stderr.split(separator: "\n").count == 1, "\(clash)")
            #expect(clash.stderr.contains("already in use") && clash.stderr.contains("--listen"), "\(clash)")
        }
    }

    @Suite struct StaticPeers {
        @Test func twoNodesWithoutDiscovery_linkThroughThePeersFile_oneEntryKeylessViaTheKeyProbe() async throws {
            let cluster = NodeCluster(slot: 4)
            defer { cluster.shutdown() }
            let a = try await cluster.node("keyed"), b = try await cluster.node("keyless")
            let portA = TestPorts.port(slot: 5), portB = TestPorts.port(slot: 6)
            let peersA = cluster.root + "/a.peers", peersB = cluster.root + "/b.peers"
            try Data("# b, with its key\n127.0.0.1:\(portB) \(b.id)\n".utf8).write(to: URL(fileURLWithPath: peersA))
            try Data("127.0.0.1:\(portA)   # a, key unknown\n".utf8).write(to: URL(fileURLWithPath: peersB))
            try await a.start(["--listen", "127.0.0.1:\(portA)", "--no-discovery", "--peers", peersA] + NodeCluster.fastTiming)
            try await b.start(["--listen", "127.0.0.1:\(portB)", "--no-discovery", "--peers", peersB] + NodeCluster.fastTiming)

            let linked = await poll(timeout: .seconds(8)) { await allLinked([a, b]) }
            #expect(linked, "\(cluster.logs)")
            // b learnt a's key only from the probe: its keyless entry now names it.
            let learnt = await poll(timeout: .seconds(5)) {
                await b.parley(["doctor", "--json"]).stdout.replacingOccurrences(of: " ", with: "").contains("\"key\":\"\(a.id)\"")
            }
            let doctor = await b.parley(["doctor"]).stdout
            #expect(learnt, "b's peers-file entry did not learn a's key\n\(doctor)\n\(cluster.logs)")
        }
    }
}
