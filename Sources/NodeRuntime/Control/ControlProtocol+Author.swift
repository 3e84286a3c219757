import Foundation

/// The `author` request and its answer without `Codable`: they are the control socket's hot path
/// (the benchmark's pacer and the lab's writers send hundreds a second), and `JSONDecoder` and
/// `JSONEncoder` cost 72,000 and 82,000 instructions per write, a quarter of what the node
/// spends on the write (`docs/BENCHMARKS.md`, *The control socket's JSON, …*). Both give way to
/// `Codable` for anything they are not sure to read or write exactly as it would, so the lines
/// and the errors stay the same.
extension ControlProtocol {
    /// An `author` request read with `JSONSerialization`; nil for any other request, or one
    /// with a field `Codable` would read differently (`null`, another type, `on`, another
    /// top-level field) or that this reader does not know (a field added to `AuthorRequest` and
    /// not here): the `Codable` decoder takes those, and explains what is wrong.
    static func authorRequest(from line: [UInt8]) -> ControlRequest? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any], object.count == 2,
            object["request"] as? String == ControlRequest.Kind.author.rawValue, let fields = object["author"] as? [String: Any],
            let kind = fields["kind"] as? String, fields["on"] == nil
        else { return nil }
        var request = AuthorRequest(kind: kind)
        for (key, value) in fields {
            switch key {
            case "kind": continue
            case "room": guard let text = value as? String else { return nil }; request.room = text
            case "conversation": guard let text = value as? String else { return nil }; request.conversation = text
            case "text": guard let text = value as? String else { return nil }; request.text = text
            case "target": guard let text = value as? String else { return nil }; request.target = text
            case "emoji": guard let text = value as? String else { return nil }; request.emoji = text
            case "status": guard let text = value as? String else { return nil }; request.status = text
            case "member": guard let text = value as? String else { return nil }; request.member = text
            case "members": guard let texts = value as? [String] else { return nil }; request.members = texts
            default: return nil
            }
        }
        return ControlRequest(.author, author: request)
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
