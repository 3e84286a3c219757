import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A `parley` (or any) process started in the background, with stdout and stderr captured in
/// files so a chatty child can never block on a full pipe.
///
/// Started with `posix_spawn`, not Foundation's `Process`: on Linux, `Process.run()` of
/// Swift 6.3.1 reads past a buffer while listing `/proc/self/fd` and crashes now and then
/// (swift-corelibs-foundation PR #5472), which a test spawning a thousand commands meets. The
/// child gets stdin from /dev/null, no descriptor of ours above 2, default signal handling
/// and an empty signal mask.
///
/// Callers MUST `kill()` every child they start, also on failure (`defer`); `deinit` kills as a
/// last resort. It lives in production code because `parley lab` spawns nodes too; tests reach
/// it through `TestSupport`.
public final class ChildProcess: Sendable {
    public let arguments: [String]
    public let stdoutPath: String
    public let stderrPath: String
    public let pid: Int32
    /// The raw `waitpid` status once the child was reaped; its lock also keeps two reaps apart.
    private let status = Mutex<Int32?>(nil)

    /// Starts `executable arguments` with `environment` (merged over a minimal clean one).
    public init(
        executable: String, arguments: [String], environment: [String: String], captureIn directory: String,
        name: String
    ) throws {
        self.arguments = arguments
        stdoutPath = directory + "/\(name).stdout"
        stderrPath = directory + "/\(name).stderr"
        var childEnvironment = ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8", "TZ": "UTC"]
        childEnvironment.merge(environment) { _, new in new }
        pid = try Self.spawn(executable, arguments: arguments, environment: childEnvironment, stdout: stdoutPath, stderr: stderrPath)
    }

    deinit {
        kill()
    }

    public var isRunning: Bool { reap(blocking: false) == nil }
    /// The exit status (or signal number) once it has ended.
    public var exitStatus: Int32? {
        guard let status = reap(blocking: false) else { return nil }
        return Self.exited(status) ? (status >> 8) & 0xFF : status & 0x7F
    }
    /// Whether it ended by a signal rather than by exiting.
    public var endedBySignal: Bool {
        guard let status = reap(blocking: false) else { return false }
        return !Self.exited(status)
    }

    /// Sends `signal` (SIGKILL by default) and, for SIGKILL, waits until it is gone.
    public func kill(_ signal: Int32 = SIGKILL) {
        guard isRunning else { return }
        Glibc.kill(pid, signal)
        if signal == SIGKILL { _ = reap(blocking: true) }
    }

    /// Waits until the process ends or `timeout` passes; true if it ended. Sleeps between
    /// checks rather than blocking a thread of the concurrency pool, which the tests share:
    /// 1 ms for the first 100 ms (most commands end by then), 5 ms after.
    public func waitForExit(timeout: Duration) async -> Bool {
        let start = ContinuousClock.now
        while isRunning, ContinuousClock.now < start + timeout {
            try? await Task.sleep(for: .milliseconds(ContinuousClock.now < start + .milliseconds(100) ? 1 : 5))
        }
        return !isRunning
    }

    /// What it wrote to stdout so far.
    public var stdout: String { (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? "" }
    /// What it wrote to stderr so far.
    public var stderr: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    // MARK: - Spawning and reaping

    private static func exited(_ status: Int32) -> Bool { status & 0x7F == 0 }

    /// The `waitpid` status, reaping the child once; nil while it runs.
    private func reap(blocking: Bool) -> Int32? {
        status.withLock { status in
            if let status { return status }
            var raw: Int32 = 0
            while true {
                let result = waitpid(pid, &raw, blocking ? 0 : WNOHANG)
                if result == pid {
                    status = raw
                    return raw
                }
                if result == -1, errno == EINTR { continue }
                return result == 0 ? nil : -1  // -1: not our child any more (should not happen)
            }
        }
    }

    /// `posix_spawn_file_actions_addclosefrom_np` (glibc 2.34+), which Swift's Glibc does not export.
    private typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private static let closeFrom: CloseFrom? = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np")
        .map { unsafeBitCast($0, to: CloseFrom.self) }

    private static func spawn(
        _ executable: String, arguments: [String], environment: [String: String], stdout: String,
        stderr: String
    ) throws -> Int32 {
        let outFD = open(stdout, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        let errFD = open(stderr, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        defer {
            if outFD >= 0 { close(outFD) }
            if errFD >= 0 { close(errFD) }
        }
        guard outFD >= 0, errFD >= 0 else { throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: stdout]) }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, outFD, 1)
        posix_spawn_file_actions_adddup2(&actions, errFD, 2)
        _ = closeFrom?(&actions, 3)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard result == 0 else { throw POSIXError(POSIXErrorCode(rawValue: result) ?? .EINVAL) }
        return pid
    }
}
