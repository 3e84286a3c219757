import NodeRuntime
import Presentation
import Replica

/// The JSON Schemas of what requests carry: path parameters, query parameters, bodies. The server
/// checks every request against them before a handler runs (`SchemaCheck`, 400 naming the field),
/// and the OpenAPI document publishes the same values.
///
/// Parley's size limits are UTF-8 bytes (`BodyLimits`), JSON Schema's `maxLength` counts
/// characters: a field's `maxLength` is its byte limit in characters (no text within the byte
/// limit has more characters than bytes) and the byte rule itself is answered 413 naming the field
/// (`WebError.fieldTooLong`), as each field's description and each route's 413 say.
enum RequestSchema {
    /// Unicode's White_Space characters, as a regex class body: what names and texts are trimmed
    /// of and what "blank" means (`Text.isSpace`; a test checks the two agree on every scalar).
    static let whiteSpace = #"\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000"#
    /// White_Space and the control characters (Cc: U+0000–001F, U+007F–009F), as a class body.
    static let spaceOrControl = #"\x00-\x20\x7F-\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000"#

    static func string(_ description: String, minLength: Int? = nil, maxLength: Int? = nil, pattern: String? = nil) -> JSON {
        var fields: [String: JSON] = ["type": .string("string"), "description": .string(description)]
        if let minLength { fields["minLength"] = .integer(Int64(minLength)) }
        if let maxLength { fields["maxLength"] = .integer(Int64(maxLength)) }
        if let pattern { fields["pattern"] = .string(pattern) }
        return .object(fields)
    }

    static func nullable(_ schema: JSON) -> JSON {
        guard case .object(var fields) = schema, let type = fields["type"]?.stringValue else { return schema }
        fields["type"] = .array([.string(type), .string("null")])
        return .object(fields)
    }

    static func integer(_ description: String, minimum: Int, maximum: Int) -> JSON {
        .object([
            "type": .string("integer"), "description": .string(description), "minimum": .integer(Int64(minimum)),
            "maximum": .integer(Int64(maximum)),
        ])
    }

    /// An object with exactly these fields (no others: a misspelt field is an error, not ignored).
    static func object(_ properties: [String: JSON], required: [String] = [], minProperties: Int? = nil, anyOf: [JSON]? = nil) -> JSON {
        var fields: [String: JSON] = [
            "type": .string("object"), "properties": .object(properties), "additionalProperties": .bool(false),
        ]
        if !required.isEmpty { fields["required"] = .array(required.map { .string($0) }) }
        if let minProperties { fields["minProperties"] = .integer(Int64(minProperties)) }
        if let anyOf { fields["anyOf"] = .array(anyOf) }
        return .object(fields)
    }

    /// A 52-character base32 id, as the API writes them (capitals are read as small letters).
    /// 52 characters carry 260 bits, so the last one holds 1 bit and 4 zero bits: `a` or `q`.
    static func id(_ what: String) -> JSON {
        string(
            "\(what): 52 characters of base32 (a-z and 2-7, capitals read as small letters; the last one a or q)", minLength: 52, maxLength: 52,
            pattern: "^[A-Za-z2-7]{51}[AQaq]$")
    }

    /// A user id; one that is not a public key names no one (in a path 404, in a body 422).
    static func user(_ what: String, inPath: Bool = false) -> JSON {
        id("\(what): a user id (one that is not a public key names no one: \(inPath ? 404 : 422))")
    }

    /// A room's name as typed: an optional `#`, then no spaces, control characters, `#` or `/`.
    /// Capitals are folded; at most 64 UTF-8 bytes once folded (over: 413, or 404 in a path).
    static let roomName = withExamples(
        string(
            "a room name: an optional #, then characters other than spaces, control characters, # and /; case-folded; at most \(RoomName.maxBytes) UTF-8 bytes once folded",
            minLength: 1, maxLength: RoomName.maxBytes + 1, pattern: "^#?[^\(spaceOrControl)#/]+$"))

    /// `schema` with `examples`: #lobby, the room every node joins when it is made.
    static func withExamples(_ schema: JSON) -> JSON {
        guard case .object(var fields) = schema else { return schema }
        fields["examples"] = .array([.string("lobby")])
        return .object(fields)
    }

    /// Text with something besides white space in it (what is trimmed away does not count).
    static func text(_ description: String, maxBytes: Int) -> JSON {
        string("\(description); not only white space; at most \(maxBytes) UTF-8 bytes (over: 413)", maxLength: maxBytes, pattern: "[^\(whiteSpace)]")
    }

    /// Base64 with its padding. `SchemaCheck` checks it natively (`isBase64`) as well: ICU keeps
    /// backtracking state for each group of four and runs out on an upload's megabytes.
    static let base64 = "^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"

    /// `{name, mime, data}`: a file, its content in base64 (at most 8 MiB decoded: over, 413).
    static func file(mime: JSON) -> JSON {
        object(
            [
                "name": text("the file's name", maxBytes: BodyLimits.nameBytes * 2), "mime": mime,
                "data": string("the content in base64 (RFC 4648 with padding), at most 8 MiB decoded (over: 413)", pattern: base64),
            ], required: ["name", "data"])
    }

    static let anyMime = string(
        "its media type, such as image/png (empty or left out: application/octet-stream); at most \(BodyLimits.nameBytes) UTF-8 bytes (over: 413)",
        maxLength: BodyLimits.nameBytes, pattern: "^$|/")
    static let imageMime = string(
        "an image's media type: image/...; at most \(BodyLimits.nameBytes) UTF-8 bytes (over: 413)", maxLength: BodyLimits.nameBytes, pattern: "^image/")

    static let nick = string(
        "a nickname: 1 to \(Validation.maximumNickLength) characters, no spaces, control characters or #", minLength: 1,
        maxLength: Validation.maximumNickLength, pattern: "^[^\(spaceOrControl)#]+$")
    static let conversationName = text("the conversation's name", maxBytes: BodyLimits.nameBytes)
    static let taskTitle = text("the task's title", maxBytes: BodyLimits.textBytes)
    static let emoji = string(
        "one emoji or a short word: no spaces; at most \(BodyLimits.emojiBytes) UTF-8 bytes (over: 413)", minLength: 1, maxLength: BodyLimits.emojiBytes,
        pattern: "^[^\(whiteSpace)]+$")
    static let taskStatus = JSON.object(["type": .string("string"), "enum": .array(["open", "in-progress", "complete"].map { .string($0) })])
    static let presence = JSON.object(["type": .string("string"), "enum": .array(["online", "away", "hidden"].map { .string($0) })])

    // MARK: Bodies

    static let join = object(
        [
            "name": roomName,
            "passphrase": string(
                "the private room's passphrase: \(PrivateRoomKeys.minPassphraseBytes) to \(PrivateRoomKeys.maxPassphraseBytes) UTF-8 bytes (over: 413)",
                minLength: PrivateRoomKeys.minPassphraseBytes, maxLength: PrivateRoomKeys.maxPassphraseBytes),
        ], required: ["name"])
    /// The panic wipe's confirmation: the word itself, so no other body can wipe.
    static let wipe = object(["confirm": .object(["const": .string("wipe"), "description": .string("the word wipe")])], required: ["confirm"])
    static let createConversation = object(
        [
            "name": conversationName,
            "members": .object([
                "type": .string("array"), "items": user("a member"), "minItems": .integer(1), "maxItems": .integer(Int64(BodyLimits.members)),
            ]),
        ], required: ["name", "members"])
    static let renameConversation = object(["name": conversationName], required: ["name"])
    static let addMember = object(["user": user("who to add")], required: ["user"])
    static let post: JSON = {
        let text = string("the message's text; at most \(BodyLimits.textBytes) UTF-8 bytes (over: 413)", maxLength: BodyLimits.textBytes)
        let attachments = JSON.object([
            "type": .string("array"), "items": file(mime: anyMime), "maxItems": .integer(Int64(BodyLimits.attachments)),
        ])
        let location = object(
            [
                "lat": .object(["type": .string("number"), "minimum": .integer(-90), "maximum": .integer(90)]),
                "lon": .object(["type": .string("number"), "minimum": .integer(-180), "maximum": .integer(180)]),
            ], required: ["lat", "lon"])
        // A message needs something to read: text that is not only white space, or a file (a
        // place comes with one of them; an op without text or files is refused everywhere).
        let needs: [JSON] = [
            .object([
                "description": .string("text that is not only white space"), "required": .array([.string("text")]),
                "properties": .object(["text": .object(["pattern": .string("[^\(whiteSpace)]")])]),
            ]),
            .object([
                "description": .string("an attachment"), "required": .array([.string("attachments")]),
                "properties": .object(["attachments": .object(["minItems": .integer(1)])]),
            ]),
        ]
        return object(["text": text, "attachments": attachments, "location": location], anyOf: needs)
    }()
    static let addTask = object(["title": taskTitle, "owner": nullable(user("who owns it (null: no one)"))], required: ["title"])
    static let edit = object(["text": text("the new text", maxBytes: BodyLimits.textBytes)], required: ["text"])
    static let react = object(
        ["emoji": emoji, "on": .object(["type": .string("boolean"), "description": .string("false takes it back")])], required: ["emoji"])
    static let mute = object(
        ["muted": .object(["type": .string("boolean"), "description": .string("true mutes the chat, false unmutes it")])], required: ["muted"])
    static let updateTask = object(
        ["status": taskStatus, "title": taskTitle, "owner": nullable(user("who owns it (null clears it)"))], minProperties: 1)
    static let updateProfile = object(
        [
            "nick": nick,
            "display_name": string(
                "a display name (empty clears it); at most \(BodyLimits.nameBytes) UTF-8 bytes (over: 413)", maxLength: BodyLimits.nameBytes),
            "status": string("a status line (empty clears it); at most \(BodyLimits.statusBytes) UTF-8 bytes (over: 413)", maxLength: BodyLimits.statusBytes),
            "presence": presence,
        ], minProperties: 1)
    static let avatar: JSON = {
        guard case .object(var fields) = file(mime: imageMime) else { return .null }
        fields["required"] = .array(["name", "mime", "data"].map { .string($0) })
        return .object(fields)
    }()
    static let pair = object([
        "minutes": integer(
            "how long the code stays good, in minutes", minimum: DevicePairingOffer.minutesRange.lowerBound,
            maximum: DevicePairingOffer.minutesRange.upperBound)
    ])
    static let importArchive = object(["archive": file(mime: anyMime)], required: ["archive"])
}

/// White space as the schemas' `whiteSpace` class has it (Unicode's White_Space property).
enum Text {
    static func isSpace(_ scalar: Unicode.Scalar) -> Bool { scalar.properties.isWhitespace }

    /// `text` without leading and trailing white space.
    static func trimmed(_ text: String) -> String {
        let scalars = text.unicodeScalars
        guard let start = scalars.firstIndex(where: { !isSpace($0) }), let end = scalars.lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(scalars[start...end])
    }
}
