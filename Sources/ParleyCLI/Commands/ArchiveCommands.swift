import Foundation
import JSONViews
import Presentation
import Replica
import Store

/// `parley export`: writes signed ops to a file, to carry between groups of nodes that never
/// meet. The receiving node verifies every op again, so the file can travel by any means.
struct ExportCommand: Command {
    let name = "export"
    let summary = "write signed ops to a file, to carry to nodes that never meet (USB stick)"
    let usage = ["export --out FILE [--room NAME | --conversation ID] [--no-files]"]
    static let out = Option.value("out", "FILE", "the file to write (refused if it exists, unless --force)")
    static let room = Option.value("room", "NAME", "only this room and the directory (default: every partition this node holds)")
    static let conversation = Option.value("conversation", "ID", "only this conversation, the directory and its members' inboxes (with their invites)")
    static let force = Flag.flag("force", "replace FILE if it exists")
    static let noFiles = Flag.flag("no-files", "leave out attachments and avatars (the messages still name them)")
    let options = [Self.out.spec, Self.room.spec, Self.conversation.spec, Self.noFiles.spec, Self.force.spec]
    let details = [
        "The file holds each partition's descriptor, its ops in chain order and any fork proofs, then the attachments "
            + "and avatars its messages and profiles name that this node holds (unless --no-files), with a checksum at the end. "
            + "Import it on another node with `parley import FILE`; both then show the same digest for those partitions.",
        "A conversation travels as ciphertext: the file holds nothing its members have not encrypted but the member list; "
            + "a member who imports it reads it, anyone else only carries it.",
        "Prints the number of ops and files written.",
    ]
    let examples = ["export --out /media/usb/lobby.parley --room lobby", "export --out plans.parley --conversation 3fkq7zxa", "export --out everything.parley"]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 0...0, names: [])
        let path = try arguments.required(Self.out)
        if arguments.has(Self.room) && arguments.has(Self.conversation) {
            throw CLIError.usage("give --room or --conversation, not both", command: name)
        }
        let store = try context.store()
        var partitions: [PartitionID]?
        if let room = try arguments.value(Self.room) {
            let name = try context.roomName(room, command: name)
            // A joined private room of that name first (every epoch of it): ciphertext, which an
            // importer reads once it joins with the passphrase.
            if let chain = try context.storeCall({ try store.privateRoom(named: name).map { try store.privateRoomChain($0.id) } }) {
                partitions = chain + [PartitionDescriptor.directory.id]
            } else {
                let id = PartitionDescriptor.room(name).id
                guard try context.storeCall({ try store.log.partition(id) }) != nil else {
                    throw CLIError.failure("this node holds nothing of \(name); join it first or leave out --room")
                }
                // The directory comes along, so the authors' names travel with their messages.
                partitions = [id, PartitionDescriptor.directory.id]
            }
        }
        if let text = try arguments.value(Self.conversation) {
            let conversation = try Lookup.conversation(text, context: context, command: name)
            partitions = try context.storeCall { try store.views.exportSet(forConversation: conversation.id) }
        }
        let summary = try ArchiveFile.write(to: path, force: arguments[Self.force], what: "the export") { writer in
            try context.storeCall(command: name) {
                try OpArchiver(store).export(partitions, to: writer, blobs: !arguments[Self.noFiles], nowMillis: context.nowMillis)
            }
        }
        let files = summary.blobs == 0 ? "" : " and \(summary.blobs) files (\(Format.byteCount(UInt64(summary.blobBytes))))"
        context.output.line("exported \(summary.ops) ops\(files) to \(path)")
        if summary.withheld > 0 {
            context.output.errorLine(
                "parley: warning: \(summary.withheld) ops were not exported: an op of their chain has a signature that does not verify; "
                    + "they were removed from this store, and a running node fetches good copies from its peers")
        }
        return 0
    }
}

/// `parley import`: applies the ops of an export file as if a peer had sent them.
struct ImportCommand: Command {
    let name = "import"
    let summary = "apply the signed ops of an export file (verified like ops from a peer)"
    let usage = ["import FILE [--json]"]
    static let json = Flag.flag(
        "json", "print one JSON array with {partitions, applied, already_present, refused, refused_by {REASON: N}, fork_proofs, blobs, blobs_unnamed}")
    let options = [Self.json.spec]
    let details = [
        "Every op is checked (signature, chain, partition rules) as if it came from a peer; nothing is trusted because it "
            + "is in a file. Rooms in the file are joined, and so are conversations an invite in your inbox names. A damaged "
            + "or cut-short file is reported after importing the ops it held intact.",
        "Prints how many ops were new, already here and refused, with the count for each reason (bad signature, broken "
            + "chain, earlier ops missing, ...), and how many files (attachments, avatars) were kept. A file is kept only "
            + "under the hash of its bytes and only when a message or profile here names that hash, as from a peer. "
            + "Exit status 1 when any op was refused or the file could not be read to the "
            + "end: the good ops are imported all the same.",
    ]
    let examples = ["import /media/usb/lobby.parley"]

    func run(_ context: Context, _ arguments: ParsedArguments) throws -> Int32 {
        try expectPositionals(arguments, 1...1, names: ["FILE"])
        let path = arguments.positionals[0]
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw CLIError.failure("cannot read \(path): no such file or no permission; check the path")
        }
        defer { try? handle.close() }
        let identity = try context.identity()
        let store = try context.store()
        let reader: OpArchive.Reader
        do {
            reader = try OpArchive.Reader { count in Array(try handle.read(upToCount: count) ?? Data()) }
        } catch let error as OpArchive.ArchiveError {
            throw CLIError.failure("cannot import \(path): \(error); check that it was written by `parley export`")
        }
        let summary = try context.storeCall(command: name) {
            let summary = try OpArchiver(store).importArchive(reader, me: try context.me(), nowMillis: context.nowMillis)
            try store.processInbox(me: identity)  // invites that came in the file
            return summary
        }
        if arguments[Self.json] {
            context.output.json([ViewJSON.importSummary(summary)])
        } else {
            let files =
                summary.blobs + summary.blobsUnnamed == 0
                ? "" : ", and \(summary.blobs) files" + (summary.blobsUnnamed > 0 ? " (\(summary.blobsUnnamed) named by nothing here, left out)" : "")
            context.output.line(
                "imported \(summary.applied) new ops (\(summary.alreadyPresent) already here, \(summary.refused) refused"
                    + (summary.refused > 0 ? ": \(summary.refusalsText)" : "") + ") in \(summary.partitions) partitions" + files
                    + (summary.forkProofs > 0 ? "; \(summary.forkProofs) \(summary.forkProofs == 1 ? "fork" : "forks") found (`parley doctor` says more)" : ""))
        }
        if let problem = summary.problem {
            throw CLIError.failure("\(path) could not be read to the end: \(problem); the ops before that point were imported")
        }
        if summary.refused > 0 {
            let onlyWaiting = summary.refusedBy.keys.allSatisfy { $0 == OpArchiver.missingEarlierOps }
            throw CLIError.failure(
                "\(summary.refused) ops in \(path) were refused (\(summary.refusalsText)); "
                    + (onlyWaiting
                        ? "they follow ops this file does not hold (a salvaged store's lost ones, or a partial export): "
                            + "import it again once a peer has sent those"
                        : "the file was changed or damaged after `parley export`, or holds ops this node cannot check yet: "
                            + "ask its sender for a fresh export"))
        }
        return 0
    }
}

/// Writing an export file (`export`, `salvage`): into `PATH.partial`, synced, then renamed over
/// `path`, so a crash or a full disk never leaves half a file under the name.
enum ArchiveFile {
    /// Runs `body` with a writer into the file and returns what it returned. `force`: replace an
    /// existing file; `what` names the contents in an error ("the export"). A `CLIError` from
    /// `body` passes through; any other error becomes "cannot write" with the fix.
    static func write<T>(to path: String, force: Bool, what: String, _ body: (OpArchive.Writer) throws -> T) throws -> T {
        if FileManager.default.fileExists(atPath: path) && !force {
            throw CLIError.failure("\(path) already exists; choose another file or pass --force to replace it")
        }
        let temporary = path + ".partial"
        guard FileManager.default.createFile(atPath: temporary, contents: nil), let handle = FileHandle(forWritingAtPath: temporary) else {
            throw CLIError.failure("cannot write \(path): check that its directory exists and is writable")
        }
        let result: T
        do {
            defer { try? handle.close() }
            result = try body(try OpArchive.Writer { try handle.write(contentsOf: $0) })
            try handle.synchronize()
        } catch {
            try? FileManager.default.removeItem(atPath: temporary)
            if let error = error as? CLIError { throw error }
            throw CLIError.failure("cannot write \(path): \(error.localizedDescription); check free space and permissions")
        }
        _ = try? FileManager.default.removeItem(atPath: path)
        do {
            try FileManager.default.moveItem(atPath: temporary, toPath: path)
        } catch {
            throw CLIError.failure("cannot move \(what) into \(path): \(error.localizedDescription)")
        }
        return result
    }
}
