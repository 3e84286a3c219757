import Foundation
import Identity
import NodeRuntime
import Presentation
import Replica
import SQLite
import Sodium
import Wire

/// `parley doctor`: explains what the node sees on the network and why a peer is not linked
/// (docs/DESIGN.md §4.1). Without a running node it says so and shows what this machine offers.
struct DoctorCommand: Command {
    let name = "doctor"
    let summary = "explain what the node sees: interfaces, sockets, beacons heard and rejected, why peers are not linked"
    let usage = ["doctor [--json]"]
    static let json = Flag.flag("json", "print one JSON array with the running node's report (nothing without a node)")
    let options = [Self.json.spec]
    let details = [
        "With a node running for the data directory: its sockets, the interfaces and broadcast addresses, beacons "
            + "heard per source address, beacons rejected and what that means (e.g. a node using a different "
            + "network secret), the peers file's entries, and for every known peer without a link, why.",
        "Without a running node it says so and lists the interfaces and the broadcast targets `parley run` would use.",
        "Either way it reads the whole database file (SQLite's quick check, safe while a node runs) and says whether it is "
            + "sound; exit status 1 when it is damaged, with the way out: `parley salvage` saves every op still readable.",
        "Forks: a key that signed two different changes at one position (one identity.key used from two data directories) "
            + "loses its later changes in that room or conversation on every node. A fork of your own key is marked `!`, with "
            + "what to do; someone else's is a note. Neither changes the exit status.",
    ]
    let examples = ["doctor"]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 0...0, names: [])
        let dataDirectory = try context.dataDirectory()
        let directory = dataDirectory.path
        guard let report = try NodeConnection.ask(ControlRequest(.doctor), context)?.doctor else {
            if arguments[Self.json] {
                context.output.line("[]")
                return 0
            }
            offline(context, directory: directory)
            return storageThenForks(context.output, dataDirectory, context)
        }
        if arguments[Self.json] {
            context.output.line("[" + ControlProtocol.prettyJSON(report) + "]")
            return 0
        }
        let out = context.output
        out.line("A node is running for \(directory).")
        section(out, "Sockets")
        out.line("  links       TCP \(report.sockets.listen)")
        out.line(
            "  discovery   "
                + (report.sockets.discoveryPort.map { "UDP \($0), beacons to \(report.broadcastTargets.joined(separator: ", "))" }
                    ?? "off (--no-discovery): only the peers file is dialed"))
        out.line("  control     \(report.sockets.controlSocket)")
        interfaces(out, report.interfaces)
        beacons(out, report)
        staticPeers(out, report)
        section(out, "Links (\(report.links) up)")
        if report.unlinked.isEmpty {
            out.line("  every known peer is linked")
        } else {
            out.line("  known peers without a link:")
            for peer in report.unlinked {
                let who = UserID(text: peer.id).map { Format.person($0, nick: peer.nick) } ?? peer.addresses.joined(separator: ", ")
                out.line("  - \(who) (\(peer.state)): \(Format.safe(peer.why, keepNewlines: false))")
            }
        }
        clocks(out, report.clocks ?? [])
        let admission = report.admission
        section(out, "Incoming connections")
        let linksRefused = admission.linksRefused ?? 0
        out.line(
            "  \(admission.unauthenticated) in handshake now; \(admission.refused) refused (caps or bans; \(linksRefused) of them "
                + "after the handshake, by the caps on links); \(admission.violations) protocol violations")
        if !admission.bannedHosts.isEmpty { out.line("  banned hosts: \(admission.bannedHosts.joined(separator: ", "))") }
        if !admission.bannedPeers.isEmpty { out.line("  banned peers: \(admission.bannedPeers.joined(separator: ", "))") }
        return storageThenForks(out, dataDirectory, context)
    }

    /// The storage check, then the forks: the storage check reads the files as they are (their
    /// modes, their pages) before the store is opened for the forks, which takes loose modes off.
    private func storageThenForks(_ out: Output, _ dataDirectory: DataDirectory, _ context: Context) -> Int32 {
        let status = storage(out, dataDirectory, context)
        forks(out, dataDirectory, context)
        return status
    }

    /// Chains frozen by forks (`Forks.chains()`): a fork of this node's key or of a device of its
    /// person is a problem with what to do; someone else's is a note. Read from the store, with
    /// or without a node; nothing when there is none, or no store yet, or it cannot be opened
    /// (the storage check says why). Leaves the exit status alone: a fork stays on record for
    /// good, whatever the user does next.
    private func forks(_ out: Output, _ dataDirectory: DataDirectory, _ context: Context) {
        guard FileManager.default.fileExists(atPath: dataDirectory.databasePath), let identity = try? context.identity(),
            let store = try? context.store(), let chains = try? store.forks.chains(), !chains.isEmpty
        else { return }
        let person = (try? store.devices.person(of: identity.id)) ?? identity.id
        let me: Set<String> = [identity.id.text, person.text]
        section(out, "Forks")
        for fork in chains.map(ForkReport.init) {
            if ForkText.isMine(fork, me: me) {
                out.line("  ! " + ForkText.problem(fork))
            } else {
                let nick = UserID(text: fork.person).flatMap { try? store.directory.profile($0)?.nick }
                out.line("  " + ForkText.note(fork, nick: nick))
            }
        }
    }

    /// Peers and authors whose clocks are off from this node's, and what that does.
    private func clocks(_ out: Output, _ clocks: [DoctorReport.Clock]) {
        section(out, "Clocks")
        guard !clocks.isEmpty else {
            out.line("  every linked peer's clock is within a second of this node's")
            return
        }
        for clock in clocks {
            let who = Format.safe(clock.nick.map { "\($0)#\(clock.id.prefix(6))" } ?? clock.id, keepNewlines: false)
            let direction = clock.aheadMillis >= 0 ? "ahead of" : "behind"
            let span = DoctorReport.Clock.span(clock.aheadMillis)
            switch clock.source {
            case "held ops":
                out.line("  ! \(who)'s ops are stamped \(span) \(direction) this node's clock: held here until then")
            default:
                out.line("  \(clock.aheadMillis.magnitude >= HybridClock.maxLeadMillis ? "! " : "")\(who)'s clock is \(span) \(direction) this node's")
            }
        }
        out.line(
            "  Ops stamped more than \(HybridClock.maxLeadMillis / 60_000) minutes ahead of a node's clock wait there until its clock "
                + "reaches them; set the clocks right (e.g. NTP: timedatectl set-ntp true).")
    }

    /// The data directory's privacy, then the whole database file checked
    /// (`Database.quickCheck`), read-only beside a running node. Returns the exit status: 1 when
    /// the file is damaged.
    private func storage(_ out: Output, _ dataDirectory: DataDirectory, _ context: Context) -> Int32 {
        section(out, "Storage")
        for loose in Self.looseModes(in: dataDirectory.path) {
            out.line(
                "  ! \(loose.path) is mode \(String(loose.mode, radix: 8)): others on this machine may read it; "
                    + "run `chmod \(loose.isDirectory ? "700" : "600") \(loose.path)` (any parley command that writes does it too)")
        }
        let databasePath = dataDirectory.databasePath
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: databasePath) else {
            out.line("  \(databasePath): none yet (the first command that writes creates it)")
            return 0
        }
        let size = (attributes[.size] as? Int) ?? 0
        // An encrypted store is read with its key, which takes the identity (and its passphrase).
        var key: SecureBytes?
        if Database.fileFormat(at: databasePath) == .encrypted {
            do {
                key = try context.storeKey()
            } catch {
                out.line("  \(databasePath): encrypted; give the identity's passphrase (--passphrase-file FILE) to check its pages")
                return 0
            }
        }
        let started = Date()
        let problems: [String]
        var refusedSignatures = 0
        do {
            let database = try Database(path: databasePath, mode: .readOnly, cipherKey: key?.bytes)
            problems = database.quickCheck(limit: 5)
            // A store from before the table has none (the read fails there).
            refusedSignatures = ((try? database.scalar("SELECT count(*) FROM refused_signatures", as: Int.self)) ?? nil) ?? 0
        } catch {
            problems = ["\(error)"]
        }
        let seconds = String(format: "%.2f", Date().timeIntervalSince(started))
        let mb = String(format: "%.1f", Double(size) / 1_048_576)
        guard !problems.isEmpty else {
            out.line("  \(databasePath): \(mb) MB, every page read back sound (\(seconds) s)")
            if refusedSignatures > 0 {
                out.line(
                    "  \(refusedSignatures) ops were removed because their signatures do not verify; a running node fetches "
                        + "good copies from its peers, and refuses a peer that sends such an op again")
            }
            return 0
        }
        out.line("  ! \(databasePath) is damaged: \(Format.safe(problems[0], keepNewlines: false))")
        for problem in problems.dropFirst() { out.line("    \(Format.safe(problem, keepNewlines: false))") }
        out.line(
            "  Save what is still readable with `parley salvage --out FILE`, then stop the node, move the file away "
                + "and `parley import FILE` into a fresh one (identity.key is kept; peers send back what they hold).")
        return 1
    }

    /// The data directory and the files in it that group or others may read or write.
    static func looseModes(in directory: String) -> [(path: String, mode: mode_t, isDirectory: Bool)] {
        var loose: [(path: String, mode: mode_t, isDirectory: Bool)] = []
        var info = stat()
        guard lstat(directory, &info) == 0 else { return [] }
        if info.st_mode & 0o077 != 0 { loose.append((directory, info.st_mode & 0o777, true)) }
        for name in (try? FileManager.default.contentsOfDirectory(atPath: directory).sorted()) ?? [] {
            let path = directory + "/" + name
            guard lstat(path, &info) == 0, info.st_mode & S_IFMT != S_IFLNK, info.st_mode & 0o077 != 0 else { continue }
            loose.append((path, info.st_mode & 0o777, info.st_mode & S_IFMT == S_IFDIR))
        }
        return loose
    }

    private func offline(_ context: Context, directory: String) {
        let out = context.output
        out.line(NodeConnection.noNode(directory) + ".")
        out.line("What `parley run` would find on this machine:")
        interfaces(out, NodeConfiguration.interfaceReports())
        section(out, "Broadcast targets")
        if let fromEnvironment = context.environment["PARLEY_BROADCAST"], !fromEnvironment.isEmpty {
            out.line("  \(fromEnvironment) (from $PARLEY_BROADCAST)")
        } else {
            out.line("  \(NodeConfiguration.defaultBroadcastTargets().joined(separator: ", ")) (default; --broadcast replaces it)")
        }
        out.line("  links on TCP \(NodeConfiguration.defaultListenPort), discovery on UDP \(NodeConfiguration.defaultDiscoveryPort) unless told otherwise")
    }

    private func section(_ out: Output, _ title: String) {
        out.line()
        out.line(title + ":")
    }

    private func interfaces(_ out: Output, _ interfaces: [DoctorReport.Interface]) {
        section(out, "Interfaces")
        for interface in interfaces {
            var flags = [interface.isUp ? "up" : "down"]
            if interface.isLoopback { flags.append("loopback") }
            out.line(
                "  " + HelpText.padded(interface.name, 8) + " " + HelpText.padded("\(interface.address)/\(interface.netmask)", 32)
                    + " broadcast " + HelpText.padded(interface.broadcast ?? "none", 16) + " " + flags.joined(separator: ","))
        }
    }

    private func beacons(_ out: Output, _ report: DoctorReport) {
        guard report.sockets.discoveryPort != nil else { return }
        let beacons = report.beacons
        section(out, "Beacons")
        var sent = "  sent \(beacons.sent)"
        if beacons.sendFailures > 0 { sent += ", \(beacons.sendFailures) failed (last: \(beacons.lastSendError ?? "?"))" }
        out.line(sent + "; our own heard back \(beacons.ownHeard)" + (beacons.ownHeard == 0 ? " (none: is the broadcast target reachable?)" : ""))
        out.line("  accepted \(beacons.accepted), replayed \(beacons.replayed), rate-limited \(beacons.rateLimited), oversized \(beacons.oversized)")
        if let deferred = beacons.dialsDeferred, deferred > 0 {
            out.line("  ! \(deferred) dials put off: more new peers than this node dials a second (a flood of made-up identities?)")
        }
        if beacons.duplicateIdentity > 0 {
            out.line(
                "  ! \(beacons.duplicateIdentity) beacons carry this node's identity from another process"
                    + (beacons.duplicateIdentitySource.map { " at \($0)" } ?? "") + ": stop one of them")
        }
        out.line("  heard from:" + (report.sources.isEmpty ? " nobody" : ""))
        for source in report.sources {
            out.line(
                "    " + HelpText.padded(source.host, 16) + " \(source.heard) datagrams, \(source.rejected) rejected, "
                    + "\(source.rateLimited) rate-limited, last at \(Format.isoTime(millis: source.lastHeard))")
        }
        for rejection in report.rejections {
            out.line("  ! \(rejection.count) rejected: \(rejection.explanation) (last from \(rejection.lastSource))")
        }
    }

    private func staticPeers(_ out: Output, _ report: DoctorReport) {
        guard let file = report.peersFile else { return }
        section(out, "Peers file \(file)")
        if report.staticPeers.isEmpty { out.line("  (no entries)") }
        for entry in report.staticPeers {
            out.line(
                "  " + HelpText.padded(entry.endpoint, 24) + " " + HelpText.padded(entry.key.map { String($0.prefix(12)) + "…" } ?? "(no key)", 14)
                    + " \(entry.state)")
        }
    }
}
