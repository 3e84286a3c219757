import Foundation

/// The `author` request and its answer without `Codable`: they are the control socket's hot path
/// (the benchmark's pacer and the lab's writers send hundreds a second), and `JSONDecoder` and
/// `JSONEncoder` cost 72,000 and 82,000 instructions per write, a quarter of what the node
/// spends on the write. Both give way to `Codable` for anything they are not sure to read or
/// write exactly as it would, so the lines and the errors stay the same.
extension ControlProtocol {
    /// An `author` request in the plain shape `PlainAuthorLine` reads (what the pacer and the
    /// lab send); nil for any other line, which `Codable` then reads or refuses.
    /// `JSONSerialization` read it before: 27,000 instructions per write, and of two equal keys
    /// it could keep another one than `Codable`.
    static func authorRequest(from line: [UInt8]) -> ControlRequest? {
        PlainAuthorLine.request(in: line)
    }

    /// The line `JSONEncoder` writes for an answer that carries only `report` (sorted keys),
    /// written directly; nil unless every text in it is letters and digits (base32 ids),
    /// which JSON writes without escapes.
    static func authorLine(_ report: AuthorReport) -> [UInt8]? {
        func plain(_ text: String) -> Bool {
            var text = text
            return text.withUTF8 { bytes in
                bytes.allSatisfy { byte in
                    switch byte {
                    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
                    default: false
                    }
                }
            }
        }
        guard plain(report.id), plain(report.partition), plain(report.author) else { return nil }
        var line: [UInt8] = []
        line.reserveCapacity(256)
        func append(_ text: String) { line.append(contentsOf: text.utf8) }
        append(#"{"author":{"author":""#)
        append(report.author)
        append(#"","hlc":"#)
        append(String(report.hlc))
        append(#","id":""#)
        append(report.id)
        append(#"","ops":"#)
        append(String(report.ops))
        append(#","partition":""#)
        append(report.partition)
        append(#"","seq":"#)
        append(String(report.seq))
        append(#"},"ok":true}"#)
        return line
    }
}

extension ControlResponse {
    /// The report of an answer that carries nothing else (for `ControlProtocol.authorLine`).
    var onlyAuthor: AuthorReport? {
        guard ok, error == nil, keysAreWords, pong == nil, typing == nil, watch == nil else { return nil }
        return author
    }
}

/// The `author` request line in its plain shape, read without a JSON library: the two keys
/// `request` ("author") and `author`, an object of the known text fields (and `members`, an
/// array of texts), texts without escapes or control characters, JSON whitespace anywhere
/// between. Anything else (an escape, a number, `null`, `true`, a key it does not know or twice)
/// is not read here: `request(in:)` answers nil and `Codable` reads the line, or refuses it with
/// its error. So what this reads, `Codable` reads the same (the test compares them).
struct PlainAuthorLine {
    private let bytes: [UInt8]
    private var at = 0

    static func request(in line: [UInt8]) -> ControlRequest? {
        var reader = PlainAuthorLine(bytes: line)
        return reader.request()
    }

    private init(bytes: [UInt8]) { self.bytes = bytes }

    private mutating func request() -> ControlRequest? {
        var (sawRequest, author): (Bool, AuthorRequest?) = (false, nil)
        guard take(UInt8(ascii: "{")) else { return nil }
        var index = 0
        while true {
            switch nextMember(index) {
            case .end:
                skipSpace()
                guard at == bytes.count, sawRequest, let author else { return nil }
                return ControlRequest(.author, author: author)
            case .key("request") where !sawRequest:
                guard text() == ControlRequest.Kind.author.rawValue else { return nil }
                sawRequest = true
            case .key("author") where author == nil:
                guard let fields = authorFields() else { return nil }
                author = fields
            case .key, .malformed: return nil
            }
            index += 1
        }
    }

    private mutating func authorFields() -> AuthorRequest? {
        var request = AuthorRequest(kind: "")
        var (seen, sawKind): (Set<String>, Bool) = ([], false)
        guard take(UInt8(ascii: "{")) else { return nil }
        var index = 0
        while true {
            switch nextMember(index) {
            case .end: return sawKind ? request : nil
            case .malformed: return nil
            case .key(let key):
                guard seen.insert(key).inserted else { return nil }
                if key == "members" {
                    guard let members = texts() else { return nil }
                    request.members = members
                } else {
                    guard let value = text() else { return nil }
                    switch key {
                    case "kind": (request.kind, sawKind) = (value, true)
                    case "room": request.room = value
                    case "conversation": request.conversation = value
                    case "text": request.text = value
                    case "target": request.target = value
                    case "emoji": request.emoji = value
                    case "status": request.status = value
                    case "member": request.member = value
                    default: return nil
                    }
                }
            }
            index += 1
        }
    }

    private enum Member: Equatable {
        /// A key and its `:`; its value comes next.
        case key(String)
        /// The object's `}`.
        case end
        case malformed
    }

    /// The next member of an object whose `{` and first `index` members were read.
    private mutating func nextMember(_ index: Int) -> Member {
        if take(UInt8(ascii: "}")) { return .end }
        guard index == 0 || take(UInt8(ascii: ",")), let key = text(), take(UInt8(ascii: ":")) else { return .malformed }
        return .key(key)
    }

    /// `[ "text", … ]`.
    private mutating func texts() -> [String]? {
        guard take(UInt8(ascii: "[")) else { return nil }
        var texts: [String] = []
        if take(UInt8(ascii: "]")) { return texts }
        repeat {
            guard let text = text() else { return nil }
            texts.append(text)
        } while take(UInt8(ascii: ","))
        return take(UInt8(ascii: "]")) ? texts : nil
    }

    /// A JSON string without escapes or control characters, valid UTF-8; nil for any other.
    private mutating func text() -> String? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = at
        var ascii = true
        while at < bytes.count {
            switch bytes[at] {
            case UInt8(ascii: "\""):
                defer { at += 1 }
                // ASCII needs no validation, and `String(validating:)` is a generic call.
                return ascii ? String(decoding: bytes[start..<at], as: UTF8.self) : String(validating: bytes[start..<at], as: UTF8.self)
            case UInt8(ascii: "\\"), 0..<0x20, 0x7F: return nil
            case 0x80...: (ascii, at) = (false, at + 1)
            default: at += 1
            }
        }
        return nil
    }

    /// Skips whitespace, then takes `byte` if it comes next.
    private mutating func take(_ byte: UInt8) -> Bool {
        skipSpace()
        guard at < bytes.count, bytes[at] == byte else { return false }
        at += 1
        return true
    }

    private mutating func skipSpace() {
        while at < bytes.count {
            switch bytes[at] {
            case 0x20, 0x09, 0x0A, 0x0D: at += 1
            default: return
            }
        }
    }
}
