import Foundation
import Identity
import Replica
import SQLite
import Store
import Wire

/// Turns any error a command meets into the one-line `CLIError` a person sees.
///
/// Lower layers describe problems in their own terms (an SQLite result code, a rule violation);
/// this is the one place that says what they mean for someone at a terminal and what to do.
enum ErrorReport {
    /// The `CLIError` for `error`. `databasePath` names the store in database messages;
    /// `command` is the command whose `--help` a bad-input message points to.
    static func cliError(for error: any Error, databasePath: String?, command: String?) -> CLIError {
        switch error {
        case let error as CLIError:
            return error
        case let error as KeyFileError:
            return keyFileError(error)
        case let error as SQLiteError:
            return sqliteError(error, databasePath: databasePath)
        case let error as StoreError:
            return storeError(error, databasePath: databasePath, command: command)
        case is WireDecodingError:
            return damaged(databasePath)
        default:
            return .failure("unexpected error: \(String(describing: error)); please report this as a bug")
        }
    }

    /// Key file problems; their descriptions are already one line with a fix, except that a
    /// missing passphrase should say how to give one on the command line.
    static func keyFileError(_ error: KeyFileError) -> CLIError {
        if case .passphraseRequired(let path) = error {
            return .failure("the key file \(path) is protected by a passphrase; give it with --passphrase-file FILE or $PARLEY_PASSPHRASE")
        }
        return .failure(error.description)
    }

    static func damaged(_ databasePath: String?) -> CLIError {
        let path = databasePath ?? "parley.db"
        return .failure(
            "the database \(path) is damaged or not a Parley database; save what is readable with "
                + "`parley salvage --out FILE`, then move it away to start fresh (your identity is kept in identity.key)")
    }

    private static func sqliteError(_ error: SQLiteError, databasePath: String?) -> CLIError {
        let path = databasePath ?? "parley.db"
        // A full disk shows up as SQLITE_FULL, but also as a write or open error (SQLite's
        // IOERR, CANTOPEN): telling them apart needs the file system's free space.
        let diskFamily = [SQLiteError.full, SQLiteError.cantOpen, 10 /* SQLITE_IOERR */]
        if diskFamily.contains(error.code), let free = freeBytes(near: path), free < nearlyFullBytes {
            return .failure("the disk holding \(path) is full (\(free >> 10) KiB free); free some space and try again")
        }
        // A page of an encrypted store that fails its authentication check is damage, not a
        // passing disk error.
        if error.extendedCode == SQLiteError.pageFailedCheck { return damaged(databasePath) }
        switch error.code {
        case SQLiteError.corrupt, SQLiteError.notADatabase:
            return damaged(databasePath)
        case SQLiteError.readOnly, SQLiteError.cantOpen, 3 /* SQLITE_PERM */:
            return .failure(
                "cannot open the database \(path) for writing (\(error.message)); "
                    + "check that you may write to its directory, or choose another with --data-dir")
        case SQLiteError.busy, 6 /* SQLITE_LOCKED */:
            return .failure("the database \(path) is busy: another parley process is writing to it; try again in a moment")
        case SQLiteError.full:
            return .failure("the disk holding \(path) is full; free some space and try again")
        case 10 /* SQLITE_IOERR */:
            // Never "move it away": the file is most likely fine, and the change was rolled back.
            return .failure(
                "a disk error stopped the database \(path) (\(error.message)); nothing was half-written; "
                    + "check the disk (free space, `dmesg`) and try again")
        default:
            if error.message.contains("newer version") {
                return .failure("the database \(path) was written by a newer version of Parley; upgrade Parley to use it")
            }
            return .failure(
                "database error in \(path): \(error.message); if it persists, "
                    + "move the database away to start fresh (your identity is kept in identity.key)")
        }
    }

    /// Below this much free space, a write or open error is a full disk: one transaction may
    /// carry an 8 MiB attachment.
    static let nearlyFullBytes: UInt64 = 16 << 20

    /// Free bytes for unprivileged users on the file system of `path` (or of its directory).
    static func freeBytes(near path: String) -> UInt64? {
        let directory = (path as NSString).deletingLastPathComponent
        for candidate in [path, directory.isEmpty ? "." : directory] {
            if let attributes = try? FileManager.default.attributesOfFileSystem(forPath: candidate),
                let free = attributes[.systemFreeSize] as? NSNumber
            {
                return free.uint64Value
            }
        }
        return nil
    }

    private static func storeError(_ error: StoreError, databasePath: String?, command: String?) -> CLIError {
        switch error {
        case .rejected(.rule(.notAuthorOfTarget)):
            return .failure("you can only edit or delete your own messages")
        case .rejected(.rule(.quotaExceeded)):
            return .failure("this node's quota for partitions it carries for others is full; the change was not stored")
        case .notMember(let id):
            return .failure("you are not a member of conversation \(id.text); `parley conversations` lists yours")
        case .rejected(.authorForked(let seq)):
            return .failure(
                "your identity wrote two different changes at position \(seq) here (a fork: one identity.key used from two "
                    + "data directories does this), so peers refuse its later changes in this room, conversation or profile; "
                    + "run `parley device recover` (or restart the node, which does it) to go on writing as a new device of yours, "
                    + "and pair other machines (`parley device pair`) instead of copying identity.key")
        case .rejected(let reason):
            return .failure("the change was refused: \(reason)")
        case .invalidInput(let why):
            return .usage(why, command: command)
        case .unknownPartition:
            return .failure("this room or conversation is not known here; join it first")
        case .notFound(let what):
            return .failure(what)
        case .damaged:
            return damaged(databasePath)
        }
    }
}
