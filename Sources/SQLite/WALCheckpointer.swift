import CSQLite
import Dispatch
import Synchronization

/// Runs a file database's WAL checkpoints on a thread of its own, so a commit never waits for
/// the fsyncs a checkpoint costs.
///
/// SQLite's automatic checkpoint runs inside the commit that crosses its threshold: that commit
/// (and every apply queued behind it) waits while the WAL is synced, copied into the database
/// file and the file synced. Measured here with a 16 MiB WAL: 75–100 ms every 1.3 s at 500
/// writes/s, the whole p99 of the latency benchmark. Here SQLite reports the WAL's length after
/// each commit (`sqlite3_wal_hook`, which replaces the automatic checkpoint); once `pages`
/// frames are waiting, a PASSIVE checkpoint on a second connection copies them without
/// blocking the writer, and repeats while many frames were committed meanwhile; the writer
/// copies the last few itself (1–3 ms here, every ~1.5 s at 500 writes/s), which completes, so
/// the next write restarts the WAL from its beginning. Should that never happen, the WAL would
/// grow without end: past `backstopPages` frames the committing connection checkpoints itself,
/// as SQLite's automatic checkpoint would.
///
/// `@unchecked Sendable`: `state` is guarded by its mutex; `connection` is touched only on
/// `queue` (and in `stop`, after the queue has drained and the hook is gone).
final class WALCheckpointer: @unchecked Sendable {
    /// New WAL frames (pages) that start a background checkpoint, on average…
    let pages: Int32
    /// …give or take half this fraction of them, drawn anew for each run of the WAL (`threshold`).
    let jitter: Double
    /// WAL frames past which the committing connection checkpoints itself.
    let backstopPages: Int32
    private let path: String
    /// The VFS of the writer's connection: the checkpoint must see the file through the same
    /// layer as the writer (a test's file layer keeps writes the real file does not have yet).
    private let vfs: String?
    private let queue = DispatchQueue(label: "parley.sqlite.checkpoint")
    private let state: Mutex<State>
    private var connection: OpaquePointer?

    private struct State {
        var running = false
        /// Frames already copied into the database file by the last background checkpoint;
        /// back to 0 once the WAL restarts.
        var copied: Int32 = 0
        var stopped = false
        /// The WAL's length after the last commit, in frames.
        var walPages: Int32 = 0
        /// Waiting frames that start the next background checkpoint.
        var threshold: Int32
    }

    /// The WAL's length after the last commit and the frames of it already copied.
    var progress: (walFrames: Int, copied: Int) { state.withLock { (Int($0.walPages), Int($0.copied)) } }

    /// The waiting frames that start this run of the WAL's background checkpoint (tests).
    var currentThreshold: Int32 { state.withLock { $0.threshold } }

    /// Passes of one background run at most: each copies what the commits during the previous
    /// one wrote, so they shrink quickly; the backstop covers the rest.
    private static let maxPasses = 8
    /// Frames few enough for the writer to copy itself once the background is done: a few
    /// commits' worth, whose two fsyncs take about a millisecond each here. Passes in the
    /// background until then would race every commit, and a storm of small fsyncs (each an ext4
    /// journal commit) slowed every node's writes on the machine more than one copy here.
    static let catchUpPages: Int32 = 32

    init(path: String, vfs: String?, pages: Int32, jitter: Double, backstopPages: Int32) {
        self.path = path
        self.vfs = vfs
        self.pages = max(1, pages)
        self.jitter = min(max(jitter, 0), 1)
        self.backstopPages = max(self.pages, backstopPages)
        state = Mutex(State(threshold: Self.threshold(pages: self.pages, jitter: self.jitter)))
    }

    /// The frames that start a checkpoint in one run of the WAL: `pages` ± `pages × jitter / 2`,
    /// uniformly. Why random: replicas of one cluster on one host write the same ops, so
    /// with one threshold they all checkpoint at the same moment, and their syncs of the same
    /// size queue on the one disk (three nodes' 16 MiB syncs took 40–130 ms together, every
    /// 1.6 s, and every commit's catch-up behind them waited); drawn anew for each run of the WAL,
    /// the nodes drift apart.
    static func threshold(pages: Int32, jitter: Double, using random: inout some RandomNumberGenerator) -> Int32 {
        let spread = Int32(Double(pages) * jitter)
        return spread > 0 ? max(1, pages - spread / 2 + Int32.random(in: 0...spread, using: &random)) : pages
    }

    /// `threshold(pages:jitter:using:)` with the system's generator.
    static func threshold(pages: Int32, jitter: Double) -> Int32 {
        var random = SystemRandomNumberGenerator()
        return threshold(pages: pages, jitter: jitter, using: &random)
    }

    /// Called from the WAL hook, on the committing thread, with the WAL's length in frames.
    func committed(walPages: Int32, on writer: OpaquePointer) {
        enum Step { case none, background, here, backstop }
        let step = state.withLock { state -> Step in
            state.walPages = walPages
            if walPages < state.copied {  // the WAL restarted
                state.copied = 0
                state.threshold = Self.threshold(pages: pages, jitter: jitter)
            }
            if walPages >= backstopPages { return .backstop }
            guard !state.running, !state.stopped else { return .none }
            let waiting = walPages - state.copied
            if waiting >= state.threshold {
                state.running = true
                return .background
            }
            // What the background left is a few commits' frames: copying them here completes
            // (nothing commits meanwhile) and lets the next write restart the WAL.
            return state.copied > 0 && waiting > 0 && waiting <= Self.catchUpPages ? .here : .none
        }
        switch step {
        case .none: return
        case .background: queue.async { self.run() }
        case .backstop, .here:
            // Past the backstop, after any background pass ends: the same copy, however long.
            if step == .backstop { queue.sync {} }
            var log: Int32 = 0
            var copied: Int32 = 0
            let code = sqlite3_wal_checkpoint_v2(writer, nil, SQLITE_CHECKPOINT_PASSIVE, &log, &copied)
            if code == SQLITE_OK, log >= 0 { state.withLock { $0.copied = copied } }
        }
    }

    /// Stops checkpointing and closes the second connection; waits for a running checkpoint.
    func stop() {
        state.withLock { $0.stopped = true }
        queue.sync {
            if let connection { sqlite3_close_v2(connection) }
            connection = nil
        }
    }

    /// Copies the waiting frames; again while the commits during a pass left more than the
    /// writer should copy itself. A pass copies the frames committed before it began.
    private func run() {
        defer { state.withLock { $0.running = false } }
        guard let connection = openIfNeeded() else { return }
        var before = state.withLock { $0.copied }
        for _ in 0..<Self.maxPasses {
            if state.withLock({ $0.stopped }) { return }
            var log: Int32 = 0
            var copied: Int32 = 0
            let code = sqlite3_wal_checkpoint_v2(connection, nil, SQLITE_CHECKPOINT_PASSIVE, &log, &copied)
            // Busy or failing: the next commit past the threshold, or the backstop, tries again.
            guard code == SQLITE_OK, log >= 0 else { return }
            let left = state.withLock { state -> Int32 in
                state.copied = copied
                return state.walPages - copied
            }
            if left <= Self.catchUpPages || copied - before <= Self.catchUpPages { return }
            before = copied
        }
    }

    private func openIfNeeded() -> OpaquePointer? {
        if let connection { return connection }
        var handle: OpaquePointer?
        _ = Database.processSettings
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX
        let code = if let vfs { sqlite3_open_v2(path, &handle, flags, vfs) } else { sqlite3_open_v2(path, &handle, flags, nil) }
        // A new connection learns the file is in WAL mode only when it first reads it; until then
        // a checkpoint is a no-op that reports -1 frames.
        guard code == SQLITE_OK, let handle, sqlite3_exec(handle, "SELECT count(*) FROM sqlite_master", nil, nil, nil) == SQLITE_OK
        else {
            sqlite3_close_v2(handle)
            return nil
        }
        connection = handle
        return handle
    }
}

extension Database {
    /// With `checkpointInBackground`: the WAL's length after the last commit, and how much of
    /// it is already copied into the database file, in frames.
    public var checkpointProgress: (walFrames: Int, copied: Int)? { checkpointer?.progress }

    /// The waiting frames that start this run of the WAL's background checkpoint (tests).
    var checkpointThreshold: Int32? { checkpointer?.currentThreshold }

    /// Moves this file database's WAL checkpoints to a background thread (`WALCheckpointer`):
    /// one starts once `pages` frames (a page each) are waiting — give or take `jitter` × `pages` ÷ 2,
    /// drawn for each run of the WAL, so replicas on one host do not checkpoint together — and
    /// past `backstopPages` the committing connection checkpoints itself. A no-op for read-only
    /// and in-memory databases.
    public func checkpointInBackground(pages: Int32 = 4096, jitter: Double = 0, backstopPages: Int32 = 16_384) throws {
        let connection = try openConnection()
        guard mode == .readWrite, let file = sqlite3_db_filename(connection, "main"), file.pointee != 0 else { return }
        self.checkpointer?.stop()
        let checkpointer = WALCheckpointer(path: String(cString: file), vfs: connectionVFS, pages: pages, jitter: jitter, backstopPages: backstopPages)
        self.checkpointer = checkpointer
        // The database keeps the checkpointer alive for as long as the hook is set.
        sqlite3_wal_hook(connection, walCommitHook, Unmanaged.passUnretained(checkpointer).toOpaque())
    }
}

/// The C callback for `sqlite3_wal_hook`; at file scope so it carries no actor isolation.
private func walCommitHook(
    _ context: UnsafeMutableRawPointer?, _ connection: OpaquePointer?, _ schema: UnsafePointer<CChar>?, _ pages: Int32
) -> Int32 {
    guard let context, let connection else { return SQLITE_OK }
    Unmanaged<WALCheckpointer>.fromOpaque(context).takeUnretainedValue().committed(walPages: pages, on: connection)
    return SQLITE_OK
}
