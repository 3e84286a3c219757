import Presentation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where a command's text goes: standard output for results, standard error for problems and
/// hints.
///
/// Results are buffered and written with plain `write(2)` calls: the C `stdout` global is shared
/// mutable state that Swift 6 refuses to touch, and one big write keeps a JSON document whole.
/// Not thread-safe; a command runs on one thread.
public final class Output {
    private let outputDescriptor: Int32
    private let errorDescriptor: Int32
    private var buffer: [UInt8] = []
    /// Where lines go instead of the descriptors (the terminal chat shows commands' output on
    /// its screen); `isError` tells stderr lines from stdout ones.
    private let capture: ((_ line: String, _ isError: Bool) -> Void)?
    /// Flush once this much is buffered, so a long history does not sit in memory twice.
    private static let flushThreshold = 64 * 1024

    /// Writes to the given file descriptors (1 and 2 for a real process).
    public init(outputDescriptor: Int32 = 1, errorDescriptor: Int32 = 2) {
        self.outputDescriptor = outputDescriptor
        self.errorDescriptor = errorDescriptor
        self.capture = nil
    }

    /// Hands every line to `capture` and writes nothing to any descriptor.
    public init(capturing capture: @escaping (_ line: String, _ isError: Bool) -> Void) {
        self.outputDescriptor = -1
        self.errorDescriptor = -1
        self.capture = capture
    }

    /// Appends `text` and a newline to standard output.
    public func line(_ text: String = "") {
        if let capture { return capture(text, false) }
        buffer.append(contentsOf: text.utf8)
        buffer.append(UInt8(ascii: "\n"))
        if buffer.count >= Self.flushThreshold { flush() }
    }

    /// Writes `text` to standard output now, without a newline (a prompt).
    public func prompt(_ text: String) {
        if let capture { return capture(text, false) }
        buffer.append(contentsOf: text.utf8)
        flush()
    }

    /// Writes one line to standard error at once (after anything already buffered for stdout,
    /// so the two streams interleave in the order they were produced).
    public func errorLine(_ text: String) {
        if let capture { return capture(text, true) }
        flush()
        Self.writeAll(Array((text + "\n").utf8), to: errorDescriptor)
    }

    /// Whether standard error is a terminal: friendly hints go there only for people, never
    /// into a script's captured stderr.
    public var errorIsTerminal: Bool { capture == nil && isatty(errorDescriptor) == 1 }

    /// Whether standard output is a terminal.
    public var outputIsTerminal: Bool { capture == nil && isatty(outputDescriptor) == 1 }

    /// Writes everything buffered for standard output.
    public func flush() {
        guard !buffer.isEmpty else { return }
        Self.writeAll(buffer, to: outputDescriptor)
        buffer.removeAll(keepingCapacity: true)
    }

    /// Writes all of `bytes`, retrying partial writes and `EINTR`; gives up silently on other
    /// errors (a closed pipe: the reader is gone, and nobody is left to tell).
    private static func writeAll(_ bytes: [UInt8], to descriptor: Int32) {
        bytes.withUnsafeBytes { raw in
            guard let base = raw.baseAddress else { return }
            var written = 0
            while written < raw.count {
                let n = write(descriptor, base + written, raw.count - written)
                if n > 0 {
                    written += n
                } else if n < 0 && errno == EINTR {
                    continue
                } else {
                    return
                }
            }
        }
    }
}

extension Output {
    /// Prints `items` as the one JSON array a `--json` read command outputs.
    func json(_ items: [JSON]) {
        line(JSON.array(items).text)
    }
}
