import Foundation
import NodeRuntime

/// `parley wipe`: panic wipe of the data directory (docs/DESIGN.md §5.1).
struct WipeCommand: Command {
    let name = "wipe"
    let summary = "destroy this node's keys and data for good, and stop its running node"
    let usage = ["wipe [--yes]"]
    static let yes = Flag.flag("yes", "wipe without asking (required when not on a terminal)")
    let options = [Self.yes.spec]
    let details = [
        "Overwrites store.key and identity.key in place and syncs them first: the store (parley.db, with every message, "
            + "key and attachment) is encrypted under the first, sealed by the second, so from that moment it cannot be "
            + "read, whatever its size. Then a running node is told to stop, and the data directory's Parley files are "
            + "removed (the directory too, once empty). Prints what was removed.",
        "Asks you to type `wipe` to confirm; without a terminal it refuses unless --yes is given. There is no undo: "
            + "the identity is gone with the data (a copy of identity.key kept elsewhere still is that identity, and "
            + "peers still hold what they received).",
    ]
    let examples = ["wipe", "wipe --yes"]

    /// How long to wait for a running node to stop after it was told to wipe.
    static let nodeStopDeadline: TimeInterval = 5

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 0...0, names: [])
        let directory = try context.dataDirectory()
        try directory.requireExisting()
        if !arguments[Self.yes] {
            guard isatty(STDIN_FILENO) == 1 else {
                throw CLIError.usage("wipe destroys the data for good and asks first; not on a terminal, run `parley wipe --yes`", command: name)
            }
            context.output.line("Destroy the identity and every message in \(directory.path), for good? Type 'wipe' to confirm:")
            context.output.flush()
            guard readLine(strippingNewline: true)?.trimmingCharacters(in: .whitespaces) == "wipe" else {
                context.output.line("not wiped")
                return 1
            }
        }
        let present = DataWipe.parleyFiles(in: directory.path)
        let started = Date()
        _ = DataWipe.destroyKeys(in: directory.path)
        let keysMillis = Int(Date().timeIntervalSince(started) * 1000)
        let stoppedNode = try stopNode(context, directory: directory.path)
        _ = DataWipe.removeFiles(in: directory.path)
        // The node removes files too; say what is gone, whoever removed it.
        let removed = present.filter { !FileManager.default.fileExists(atPath: directory.path + "/" + $0) }
        let totalMillis = Int(Date().timeIntervalSince(started) * 1000)
        if let pid = stoppedNode { context.output.line("stopped the running node (pid \(pid))") }
        context.output.line(
            "wiped \(directory.path): keys destroyed in \(keysMillis) ms, done in \(totalMillis) ms; removed "
                + (removed.isEmpty ? "nothing (no Parley files were there)" : removed.joined(separator: ", ")))
        return 0
    }

    /// Tells a running node to wipe and stop, and waits (bounded) until its control socket stops
    /// answering; returns its pid, nil when none ran.
    private func stopNode(_ context: Context, directory: String) throws(CLIError) -> Int32? {
        // Short waits: a node busy stopping may take a request and answer late, and the whole
        // wipe stays within a few seconds of the deadline.
        let patience: Duration = .seconds(2)
        guard let pong = try? NodeConnection.ask(ControlRequest(.ping), context, timeout: patience)?.pong else { return nil }
        _ = try? NodeConnection.ask(ControlRequest(.wipe), context, timeout: patience)
        let deadline = Date().addingTimeInterval(Self.nodeStopDeadline)
        while Date() < deadline {
            if kill(pong.pid, 0) != 0 && errno == ESRCH { return pong.pid }
            guard (try? NodeConnection.ask(ControlRequest(.ping), context, timeout: .milliseconds(500))) ?? nil != nil else { return pong.pid }
            usleep(20_000)
        }
        throw .failure(
            "the keys are destroyed and nothing can be read, but the node (pid \(pong.pid)) did not stop within "
                + "\(Int(Self.nodeStopDeadline)) s; stop it with `kill \(pong.pid)` and run `parley wipe --yes` again to remove the files")
    }
}
