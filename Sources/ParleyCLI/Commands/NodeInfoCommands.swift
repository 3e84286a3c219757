import Foundation
import Identity
import JSONViews
import NodeRuntime
import Presentation
import Wire

/// `parley peers`: the running node's peer table (docs/DESIGN.md §6.1).
struct PeersCommand: Command {
    let name = "peers"
    let summary = "list the peers the running node knows: linked, discovered, suspect or gone"
    let usage = ["peers [--json]"]
    static let json = Flag.flag("json", "print one JSON array of {id, nick, addresses, state, since, last_seen, direction, origin, static}")
    let options = [Self.json.spec]
    let details = [
        "Asks the node running for the data directory (see `parley run`); without one it fails with exit status 1. "
            + "state is linked, discovered, suspect (its beacons or pings are late) or gone; direction is inbound or "
            + "outbound for a linked peer, else null; times are ISO 8601 in UTC."
    ]
    let examples = ["peers", "peers --json"]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 0...0, names: [])
        let peers = try NodeConnection.require(ControlRequest(.peers), context).peers ?? []
        if arguments[Self.json] {
            context.output.json(peers.map(ViewJSON.peer))
            return 0
        }
        guard !peers.isEmpty else {
            context.output.line("no peers known yet")
            return 0
        }
        let names = peers.map { peer in
            Format.person(UserID(text: peer.id) ?? UserID(Bytes32.zero), nick: peer.nick)
        }
        let width = max(4, names.map(\.count).max() ?? 0)
        context.output.line(
            HelpText.padded("PEER", width) + "  " + HelpText.padded("STATE", 10) + "  " + HelpText.padded("LINK", 8)
                + "  " + "LAST SEEN                 ADDRESSES")
        for (peer, name) in zip(peers, names) {
            let seen = peer.lastSeen.map { Format.isoTime(millis: $0) } ?? "never"
            context.output.line(
                HelpText.padded(name, width) + "  " + HelpText.padded(peer.state, 10) + "  "
                    + HelpText.padded(peer.direction?.rawValue ?? "-", 8) + "  " + HelpText.padded(seen, 24) + "  "
                    + peer.addresses.joined(separator: ", "))
        }
        return 0
    }
}

/// Where the running node's web UI listens, from the file `parley run` keeps (nil: no web UI).
func webAddress(_ context: Context) -> String? {
    guard let path = try? context.dataDirectory().webAddressPath, let data = FileManager.default.contents(atPath: path) else { return nil }
    let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    return text.hasPrefix("http://") ? text : nil
}

/// `parley status`: the running node at a glance.
struct StatusCommand: Command {
    let name = "status"
    let summary = "show the running node: identity, addresses, links, store size, sync progress"
    let usage = ["status [--json]"]
    static let json = Flag.flag(
        "json",
        "print one JSON array with one object: pid, started_at, id, nick, data_dir, listen, web, "
            + "discovery_port, broadcast_targets, links, peers, store_ops, sync {fetched, wanted, ops_received, ops_sent, "
            + "peers: [{id, nick, fetched, wanted, ops_received, ops_sent, bytes_received, bytes_sent, frames_received, frames_sent, since}]}, "
            + "forks: [{partition, kind, name, author, person, seq}]")
    let options = [Self.json.spec]
    let details = [
        "Asks the node running for the data directory; without one it fails with exit status 1.",
        "sync: fetched is the number of ops fetched from peers since the node started, wanted that number plus the ops "
            + "known to be missing now, so fetched = wanted means nothing is left to fetch; per linked peer the same for "
            + "the current link, ops received and sent in any sync message, and the link's bytes (encrypted, on the wire) "
            + "and frames each way.",
        "forks: chains frozen because one key signed two different changes at one seq (`parley doctor` says what to do).",
    ]
    let examples = ["status", "status --json"]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 0...0, names: [])
        guard let status = try NodeConnection.require(ControlRequest(.status), context).status else {
            throw CLIError.failure("the node sent no status; is it a different parley version? restart it")
        }
        if arguments[Self.json] {
            context.output.json([ViewJSON.status(status, extra: ["web": .optional(webAddress(context))])])
            return 0
        }
        let me = Format.person(UserID(text: status.id) ?? UserID(Bytes32.zero), nick: status.nick)
        context.output.line("node        \(me) (pid \(status.pid)), up since \(Format.isoTime(millis: status.startedAt))")
        context.output.line("data dir    \(status.dataDirectory)")
        context.output.line("listening   \(status.listen)")
        if let port = status.discoveryPort {
            context.output.line("discovery   UDP \(port), beacons to \(status.broadcastTargets.joined(separator: ", "))")
        } else {
            context.output.line("discovery   off")
        }
        context.output.line("web UI      \(webAddress(context).map { "\($0) (open the URL `parley run` printed: it carries the token)" } ?? "off")")
        context.output.line("links       \(status.links) (of \(status.peersKnown) known peers)")
        context.output.line("store       \(status.storeOps) ops")
        let left = status.sync.wanted - min(status.sync.wanted, status.sync.fetched)
        context.output.line(
            "sync        fetched \(status.sync.fetched) / \(status.sync.wanted) ops"
                + (left > 0 ? " (\(left) still missing)" : "") + "; \(status.sync.opsReceived) received, \(status.sync.opsSent) sent")
        for peer in status.sync.peers {
            let name = Format.person(UserID(text: peer.id) ?? UserID(Bytes32.zero), nick: peer.nick)
            context.output.line(
                "  \(name): fetched \(peer.fetched) / \(peer.wanted); ops in \(peer.opsReceived), out \(peer.opsSent); "
                    + "bytes in \(peer.bytesReceived), out \(peer.bytesSent)")
        }
        let forks = status.forks ?? []
        guard !forks.isEmpty else { return 0 }
        context.output.line("forks       \(forks.count) \(forks.count == 1 ? "chain" : "chains") frozen (`parley doctor` says what to do)")
        let mine: Set<String> = [status.id, ((try? context.me()) ?? UserID(text: status.id))?.text ?? status.id]
        for fork in forks {
            let who = ForkText.isMine(fork, me: mine) ? "your key" : UserID(text: fork.person).map { Format.person($0, nick: nil) } ?? fork.person
            context.output.line("  \(who) forked in \(ForkText.place(fork))")
        }
        return 0
    }
}
