/// Splits a byte stream into newline-terminated lines, bounded in size: the framing of the
/// control socket's JSON lines.
struct LineBuffer: Sendable {
    /// A line longer than `limit` bytes (newline excluded) arrived.
    struct Overflow: Error, Equatable {}

    let limit: Int
    private var buffer: [UInt8] = []
    private var scanned = 0

    init(limit: Int) {
        self.limit = limit
    }

    /// Appends received bytes.
    mutating func feed(_ bytes: [UInt8]) {
        buffer += bytes
    }

    /// The next complete line without its `\n` (and a `\r` before it), or nil when more bytes
    /// are needed. Throws `Overflow` once the pending line passes the limit.
    mutating func nextLine() throws(Overflow) -> [UInt8]? {
        guard let newline = buffer[scanned...].firstIndex(of: UInt8(ascii: "\n")) else {
            scanned = buffer.count
            if buffer.count > limit { throw Overflow() }
            return nil
        }
        guard newline <= limit else { throw Overflow() }
        var line = Array(buffer[..<newline])
        if line.last == UInt8(ascii: "\r") { line.removeLast() }
        buffer.removeFirst(newline + 1)
        scanned = 0
        return line
    }
}
