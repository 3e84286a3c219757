import Dispatch
import Foundation
import Identity
import NodeRuntime
import Replica
import Synchronization
import WebUI

/// `parley run`: the node in the foreground — discovery, links, sync, the control socket — until
/// SIGINT or SIGTERM.
struct RunCommand: Command {
    let name = "run"
    let summary = "run the node: find peers on the LAN, link to them, sync your rooms, serve the control socket"
    let usage = [
        "run [--listen HOST:PORT] [--discovery-port N | --no-discovery] [--broadcast ADDR[,ADDR...]] "
            + "[--peers FILE] [--network-secret-file FILE] [--web HOST:PORT [--web-allow-remote] | --no-web] "
            + "[--log-level LEVEL] [--join ROOM]..."
    ]
    var options: [OptionSpec] { Self.nodeOptions }
    var advancedOptions: [OptionSpec] { Self.nodeAdvancedOptions }

    /// The options that configure a node; `parley chat` accepts them too (for the node it starts).
    static let listen = Option.value("listen", "HOST:PORT", "where links are accepted (default 0.0.0.0:7748; port 0 picks a free port)")
    static let discoveryPort = Option.value("discovery-port", "N", "the UDP port of beacons (default 7747)") { port, command throws(CLIError) in
        guard let value = UInt16(port), value > 0 else {
            throw CLIError.usage("--discovery-port must be a port from 1 to 65535, not '\(port)'", command: command)
        }
        return value
    }
    static let noDiscovery = Flag.flag("no-discovery", "send and hear no beacons (link only to --peers)")
    static let broadcast = Option.value("broadcast", "ADDR[,...]", "where beacons go (default: every interface's broadcast and 127.255.255.255)")
    static let peers = Option.value("peers", "FILE", "static peers, one 'host:port [key]' a line (see Peers.example)")
    static let networkSecretFile = Option.value("network-secret-file", "FILE", "the deployment secret: nodes with different secrets never talk")
    static let logLevel = Option.value("log-level", "LEVEL", "debug, info (default), warn or error") { text, command throws(CLIError) in
        guard let level = NodeLog.Level(name: text) else {
            throw CLIError.usage("--log-level must be debug, info, warn or error, not '\(text)'", command: command)
        }
        return level
    }
    static let join = Option.value("join", "ROOM", "join ROOM before starting (repeatable)")
    static let web = Option.value("web", "HOST:PORT", "where the web UI and JSON API listen (default 127.0.0.1:7749; port 0 picks a free port)") {
        text, command throws(CLIError) in try webHostPort(text, command: command)
    }
    static let webAllowRemote = Flag.flag("web-allow-remote", "allow --web on an address other than loopback (others on the network can then reach it)")
    static let noWeb = Flag.flag("no-web", "serve no web UI")
    static let unlisted = Flag.flag("unlisted", "do not list the rooms you joined to peers (the room directory, `rooms --all`)")
    static let nodeOptions = [
        listen.spec, discoveryPort.spec, noDiscovery.spec, broadcast.spec, peers.spec, networkSecretFile.spec, logLevel.spec, join.spec, web.spec,
        webAllowRemote.spec, noWeb.spec, unlisted.spec,
    ]
    static let beaconInterval = milliseconds("beacon-interval", "MS", "the fast beacon interval (default 1000)")
    static let maxBeaconInterval = milliseconds(
        "max-beacon-interval", "MS", "the ceiling of the stable beacon interval (default 30000); peers expire after 3 intervals")
    static let pingInterval = milliseconds("ping-interval", "MS", "link ping interval (default 15000); a silent link is suspect after 2")
    static let idleTimeout = milliseconds("idle-timeout", "MS", "close a link silent this long (default 3 ping intervals)")
    static let handshakeTimeout = milliseconds("handshake-timeout", "MS", "the handshake deadline (default 5000)")
    static let syncInterval = milliseconds("sync-interval", "MS", "anti-entropy: re-send changed summaries this often (default 30000)")
    static let syncCredit = number(
        "sync-credit", "N", "ops asked for in one WANT, 1-256 (default 256; small values make catch-up many round trips, for tests)", 1...256)
    static let pollInterval = milliseconds("poll-interval", "MS", "check the store for other processes' writes this often (default 250)")
    static let rateLimit = number(
        "rate-limit", "FRAMES", "frames a second a peer may send before its link is closed as a flood (default 20000; the burst is 5 seconds' worth)",
        10...10_000_000)
    static let frameStallLimit = milliseconds(
        "frame-stall-limit", "MS", "close a link whose peer starts a frame and does not finish it within MS (default 30000)")
    static let banLoopback = Flag.flag(
        "ban-loopback",
        "apply the per-address caps (handshakes, links) and address bans to 127.x too; exempt by default, as every "
            + "local node connects from 127.0.0.1 (for tests that attack from another 127.x address)")
    static let authorRateLimit = number(
        "author-rate-limit", "OPS",
        "live pushes (NEW_OP) of one author a peer may send a second before its link is closed as a flood "
            + "(default 1000; the burst is 10 seconds' worth); this node pushes at most 80% of it", 10...10_000_000)
    static let clockSkewMs = Option.value(
        "clock-skew-ms", "MS",
        "run with the wall clock MS milliseconds off, negative for behind (or $PARLEY_CLOCK_SKEW_MS, which every "
            + "command honours): the stamps of every op this node writes (its own, the web UI's, the chat's) and "
            + "what it tells peers of its clock follow it; timers do not (the lab's clock-skew fault)"
    ) { text, command throws(CLIError) in
        try Context.clockSkew(text, from: "--clock-skew-ms", command: command)
    }
    static let activePeers = number(
        "active-peers", "K",
        "past K peers heard, keep about K links to random ones (at most 2K) instead of linking to all (the overlay, "
            + "docs/DESIGN.md §4.1.2; off by default: room attachments, the room directory and typing in rooms reach only linked peers)",
        2...64)
    static let pushTree = Flag.flag(
        "push-tree",
        "with --active-peers, push along a broadcast tree (each op arrives about once, over more hops) instead of one pusher per "
            + "chain (docs/DESIGN.md §4.3.3)")
    static let nodeAdvancedOptions = [
        activePeers.spec, pushTree.spec, beaconInterval.spec, maxBeaconInterval.spec, pingInterval.spec, idleTimeout.spec, handshakeTimeout.spec,
        syncInterval.spec,
        syncCredit.spec,
        pollInterval.spec, rateLimit.spec, frameStallLimit.spec, banLoopback.spec, authorRateLimit.spec, clockSkewMs.spec,
    ]
    let details = [
        "Runs in the foreground and logs to stderr (peers discovered, linked and gone, as nick#short and address). "
            + "Under systemd, when stderr is the journal, each line carries its level as the entry's priority instead of "
            + "a stamp (journalctl -u parley -p warning). "
            + "Prints where it listens on stdout. SIGINT or SIGTERM stops it gracefully: a leaving beacon, "
            + "a goodbye on every link, the store closed; exit status 0.",
        "Beacons go to --broadcast, else $PARLEY_BROADCAST, else every interface's broadcast address and "
            + "127.255.255.255. On machines whose network is not yours, use --broadcast 127.255.255.255 or --no-discovery.",
        "Sync: every room both nodes joined, the directory, and (for members) conversations are kept equal on every "
            + "link: summaries at link-up and every --sync-interval, missing ops fetched in batches, new ops pushed live. "
            + "Progress of long fetches is logged and shown by `parley status`.",
        "Other commands reach the running node through control.sock in the data directory (mode 0600): they write the "
            + "store themselves and poke the node, which pushes the new ops to its peers at once (it also checks the "
            + "store every --poll-interval). One node per data directory: a second `parley run` on it fails.",
        "Web UI: a page and a JSON API (its OpenAPI document at /api/openapi.json) on --web, by default 127.0.0.1:7749. "
            + "The URL printed at start carries a new random access token; open it in a browser (it then stays in a cookie), "
            + "or send the token as Authorization: Bearer TOKEN. If the default port is taken, the node runs without a web UI "
            + "and says so. See docs/WEB.md.",
    ]
    let examples = [
        "run", "run --listen 127.0.0.1:0 --broadcast 127.255.255.255",
        "run --no-discovery --peers ~/parley-peers.txt --network-secret-file ~/team.secret",
    ]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 0...0, names: [])
        let web = try webAddress(arguments)
        let configuration = try Self.nodeConfiguration(context, arguments, command: name)
        let level = try Self.logLevel(arguments)
        if !(try context.dataDirectory().hasKeyFile) {
            // A first run: the identity is made here, and the page (or `parley profile`) asks
            // for a nickname, rather than a refusal that sends the person to `parley init`.
            let (identity, _) = try context.setUpIdentity(nick: nil, command: name)
            context.closeStore()
            let note =
                "parley: made a new identity \(identity.id.short) in \(try context.dataDirectory().path); "
                + "pick a nickname on the page or with `parley profile --nick NAME`\n"
            FileHandle.standardError.write(Data(note.utf8))
        }
        if let recovery = try Self.recoverFromFork(context) {
            FileHandle.standardError.write(Data("parley: \(recovery.summary)\n".utf8))
        }
        let identity = try context.identity()
        let node = Node(configuration: configuration, identity: identity, log: NodeLog(level: level, format: .detect()))
        do {
            let address = try NodeConnection.wait { try await node.start() }
            let discovery = configuration.discoveryPort.map { "UDP \($0)" } ?? "off"
            context.output.line("parley node listening on \(address) (discovery \(discovery); control \(configuration.controlSocketPath))")
            context.output.flush()
        } catch let error as NodeError {
            throw CLIError.failure(error.description)
        }
        let addressFile = try context.dataDirectory().webAddressPath
        try? FileManager.default.removeItem(atPath: addressFile)
        let server: WebServer?
        do {
            server = try web.flatMap { address throws(CLIError) in
                try startWeb(address, node: node, identity: identity, context: context, explicit: arguments.has(Self.web))
            }
        } catch {
            try? NodeConnection.wait { await node.stop() }  // leave cleanly: goodbyes, store closed
            throw error
        }
        if let server {
            let shown = web?.host == "0.0.0.0" ? "127.0.0.1" : web?.host ?? "127.0.0.1"
            _ = FileManager.default.createFile(
                atPath: addressFile, contents: Data("http://\(shown):\(server.port)/\n".utf8), attributes: [.posixPermissions: 0o600])
        }
        defer { try? FileManager.default.removeItem(atPath: addressFile) }
        let signals = SignalWatcher {
            Task {
                await server?.stop()
                await node.stop()
            }
        }
        // A node can stop itself (a wipe from the page): the answer that asked for it still goes
        // out before the process ends.
        try NodeConnection.wait {
            await node.waitUntilStopped()
            await server?.stop()
        }
        signals.cancel()
        return 0
    }

    /// A person key that forked in this store hands over to a new device before the node starts
    /// (`parley device recover`, docs/DESIGN.md §3.8), so the person goes on writing; `run` and
    /// `chat` do this first. A directory another node holds, or one without an identity yet, is
    /// left alone.
    static func recoverFromFork(_ context: Context) throws -> ForkRecovery? {
        guard try context.dataDirectory().hasKeyFile, context.storeMayHoldForks(),
            let lock = try? DataDirectoryLock(directory: context.dataDirectory().path)
        else { return nil }
        defer { lock.release() }
        defer { context.closeStore() }
        return try context.recoverFromFork(name: InitCommand.defaultDeviceName)
    }

    /// `--web` / `--no-web` / `--web-allow-remote`: where to serve the web UI, or nil for nowhere.
    private func webAddress(_ arguments: ParsedArguments) throws(CLIError) -> (host: String, port: UInt16, allowRemote: Bool)? {
        if arguments[Self.noWeb] {
            if arguments.has(Self.web) || arguments[Self.webAllowRemote] {
                throw .usage("--no-web excludes --web and --web-allow-remote", command: name)
            }
            return nil
        }
        let address: (host: String, port: UInt16)
        if let given = try arguments.value(Self.web) {
            address = given
        } else {
            address = try Self.webHostPort(WebServer.defaultAddress, command: name)
        }
        return (address.host, address.port, arguments[Self.webAllowRemote])
    }

    /// `--web`'s HOST:PORT (`localhost` is 127.0.0.1).
    private static func webHostPort(_ text: String, command: String) throws(CLIError) -> (host: String, port: UInt16) {
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else {
            throw .usage("--web must be HOST:PORT, such as 127.0.0.1:7749, not '\(text)'", command: command)
        }
        var host = String(text[..<colon])
        if host == "localhost" { host = "127.0.0.1" }
        return (host, port)
    }

    /// Starts the web server and prints the URL to open (with its token; it is printed nowhere
    /// else). A default port that is taken is a warning; an explicit `--web` that fails is an error.
    private func startWeb(
        _ address: (host: String, port: UInt16, allowRemote: Bool), node: Node, identity: Identity, context: Context, explicit: Bool
    ) throws(CLIError) -> WebServer? {
        let server: WebServer
        do throws(WebError) {
            server = try WebServer(
                node: node, identity: identity, host: address.host, port: address.port,
                allowRemote: address.allowRemote)
            let url = try server.start()
            if !address.host.hasPrefix("127.") {
                FileHandle.standardError.write(
                    Data(
                        "parley: warning: the web UI listens on \(address.host):\(server.port), reachable from the network; anyone with the URL's token can act as you\n"
                            .utf8))
            }
            context.output.line("parley web UI on port \(server.port): open \(url)")
            context.output.flush()
            return server
        } catch {
            if case .badAddress(let why) = error { throw .usage(why, command: name) }
            guard explicit else {
                FileHandle.standardError.write(Data("parley: warning: no web UI: \(error.message); use --web HOST:PORT or --no-web\n".utf8))
                return nil
            }
            throw .failure("cannot serve the web UI: \(error.message)")
        }
    }

    /// The `--log-level` given (info when none).
    static func logLevel(_ arguments: ParsedArguments) throws(CLIError) -> NodeLog.Level {
        try arguments.value(Self.logLevel) ?? .info
    }

    /// The node's configuration from the `nodeOptions` in `arguments` and the environment
    /// (`$PARLEY_BROADCAST`); usage errors name `command`.
    static func nodeConfiguration(_ context: Context, _ arguments: ParsedArguments, command name: String) throws(CLIError) -> NodeConfiguration {
        var configuration = NodeConfiguration(dataDirectory: try context.dataDirectory().path)
        let (listen, broadcast, peers) = (try arguments.value(Self.listen), try arguments.value(Self.broadcast), try arguments.value(Self.peers))
        do throws(NodeConfiguration.OptionError) {
            if let listen { try configuration.setListen(listen) }
            try configuration.setBroadcast(option: broadcast, environment: context.environment)
            if let peers { try configuration.loadPeersFile(peers) }
        } catch {
            throw .usage(error.description, command: name)
        }
        if arguments[Self.noDiscovery] {
            if arguments.has(Self.discoveryPort) { throw .usage("--no-discovery and --discovery-port exclude each other", command: name) }
            configuration.discoveryPort = nil
        } else if let port = try arguments.value(Self.discoveryPort) {
            configuration.discoveryPort = port
        }
        if let file = try arguments.value(Self.networkSecretFile) {
            configuration.networkSecret = try readSmallFile(file, what: "network secret file")
        }
        configuration.joinRooms = try arguments.values(Self.join).map { text throws(CLIError) in
            try context.roomName(text, command: name)
        }
        if let value = try arguments.value(Self.activePeers) { configuration.activePeers = value }
        if arguments[Self.pushTree] { configuration.gossip.treePush = true }
        if let value = try arguments.value(Self.beaconInterval) { configuration.beaconInterval = value }
        if let value = try arguments.value(Self.maxBeaconInterval) { configuration.maxBeaconInterval = value }
        if let value = try arguments.value(Self.pingInterval) {
            configuration.link.pingInterval = value
            configuration.link.idleTimeout = 3 * value
        }
        if let value = try arguments.value(Self.idleTimeout) { configuration.link.idleTimeout = value }
        if let value = try arguments.value(Self.handshakeTimeout) {
            configuration.handshakeTimeout = value
            configuration.link.helloTimeout = value
        }
        if let value = try arguments.value(Self.frameStallLimit) { configuration.link.frameStallLimit = value }
        if arguments[Self.banLoopback] { configuration.admission.exemptLoopback = false }
        if arguments[Self.unlisted] { configuration.gossip.listsRooms = false }
        if let value = try arguments.value(Self.syncInterval) { configuration.gossip.antiEntropyInterval = value }
        if let value = try arguments.value(Self.pollInterval) { configuration.localWritePollInterval = value }
        if let value = try arguments.value(Self.syncCredit) { configuration.gossip.wantCredit = value }
        if let skew = try arguments.value(Self.clockSkewMs) {
            configuration.faults.clockSkewMillis = skew
            context.clockSkewMillis = configuration.faults.clockSkewMillis
        } else {
            configuration.faults.clockSkewMillis = context.clockSkewMillis
        }
        if let value = try arguments.value(Self.rateLimit) {
            configuration.link.rateLimit.framesPerSecond = UInt64(value)
            configuration.link.rateLimit.frameBurst = UInt64(value) * 5
        }
        if let value = try arguments.value(Self.authorRateLimit) {
            configuration.gossip.authorPushRate.perSecond = UInt64(value)
            configuration.gossip.authorPushRate.burst = UInt64(value) * 10
        }
        return configuration
    }

    /// An option of a whole number in `range`.
    private static func number(_ name: String, _ valueName: String, _ help: String, _ range: ClosedRange<Int>) -> Option<Int> {
        Option.value(name, valueName, help) { text, command throws(CLIError) in
            guard let value = Int(text), range.contains(value) else {
                throw .usage("--\(name) must be a number from \(range.lowerBound) to \(range.upperBound), not '\(text)'", command: command)
            }
            return value
        }
    }

    /// An option of milliseconds (an interval or a deadline), from 10 to 3600000.
    private static func milliseconds(_ name: String, _ valueName: String, _ help: String) -> Option<UInt64> {
        Option.value(name, valueName, help) { text, command throws(CLIError) in
            guard let value = UInt64(text), (10...3_600_000).contains(value) else {
                throw .usage("--\(name) must be a number of milliseconds from 10 to 3600000, not '\(text)'", command: command)
            }
            return value
        }
    }
}

/// Turns SIGINT and SIGTERM into a call of `onSignal` (once), through Dispatch signal sources on
/// a global queue — never a C handler, which could only do async-signal-safe work.
final class SignalWatcher {
    private let sources: [any DispatchSourceSignal]

    init(onSignal: @escaping @Sendable () -> Void) {
        signal(SIGPIPE, SIG_IGN)  // a closed pipe is an error to handle, not a reason to die
        let once = OnceFlag()
        sources = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)  // let the source, not the default action, see it
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { if once.claim() { onSignal() } }
            source.resume()
            return source
        }
    }

    func cancel() {
        for source in sources { source.cancel() }
    }
}

/// True for the first caller only.
private final class OnceFlag: Sendable {
    private let claimed = Mutex(false)

    func claim() -> Bool {
        claimed.withLock { claimed in
            defer { claimed = true }
            return !claimed
        }
    }
}
