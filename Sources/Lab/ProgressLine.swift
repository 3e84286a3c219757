import Foundation

/// The live progress line on stderr: rewritten in place (`\r`) on a terminal, a plain line
/// every five seconds otherwise (a log file or a test reading stderr gets no carriage
/// returns). Notes (a fault starts, a phase ends) are always lines of their own.
// @unchecked: `lastPlain` and `open` are touched only by the lab runner's task, the line's one writer.
public final class ProgressLine: @unchecked Sendable {
    private let isTerminal: Bool
    private let quiet: Bool
    private var lastPlain = Date.distantPast
    private var open = false

    public init(quiet: Bool = false) {
        isTerminal = isatty(2) == 1
        self.quiet = quiet
    }

    /// The current state, replacing the previous one.
    public func update(_ text: String) {
        guard !quiet else { return }
        if isTerminal {
            emit("\r\u{1B}[K" + text)
            open = true
        } else if Date().timeIntervalSince(lastPlain) >= 5 {
            emit(text + "\n")
            lastPlain = Date()
        }
    }

    /// A line that stays.
    public func note(_ text: String) {
        guard !quiet else { return }
        finishLine()
        emit("lab: " + text + "\n")
    }

    /// Ends an in-place line, so what follows starts on a new one.
    public func finishLine() {
        guard open else { return }
        emit("\n")
        open = false
    }

    private func emit(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }
}
