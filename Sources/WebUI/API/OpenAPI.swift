import Presentation

/// JSON Schema pieces of the API's shapes (the `--json` shapes of docs/DESIGN.md §6.1).
enum Schema {
    static func object(_ properties: [String: JSON], required: [String]? = nil) -> JSON {
        .object([
            "type": .string("object"), "properties": .object(properties),
            "required": .array((required ?? properties.keys.sorted()).map { .string($0) }),
        ])
    }

    static func body(_ properties: [String: JSON], required: [String]) -> JSON { object(properties, required: required) }

    static let taskStatus = JSON.object(["type": .string("string"), "enum": .array(["open", "in-progress", "complete"].map { .string($0) })])
    static let presenceMode = JSON.object(["type": .string("string"), "enum": .array(["online", "away", "hidden"].map { .string($0) })])
    static let attachment = object(["name": .string, "size": .integer, "mime": .string, "hash": .string])
    /// `parley doctor`'s report (NodeRuntime's `DoctorReport`, keys in snake case; an optional
    /// field that is nil is left out, so optional fields are not required, never null).
    static let doctor = object(
        [
            "interfaces": .list(
                object(
                    [
                        "name": .string, "address": .string, "netmask": .string, "broadcast": .string, "is_up": .boolean,
                        "is_loopback": .boolean,
                    ], required: ["name", "address", "netmask", "is_up", "is_loopback"])),
            "broadcast_targets": .list(.string),
            "sockets": object(
                ["listen": .string, "discovery_port": .integer, "control_socket": .string], required: ["listen", "control_socket"]),
            "beacons": object(
                [
                    "sent": .integer, "send_failures": .integer, "last_send_error": .string, "own_heard": .integer, "accepted": .integer,
                    "replayed": .integer, "rate_limited": .integer, "oversized": .integer, "duplicate_identity": .integer,
                    "duplicate_identity_source": .string, "dials_deferred": .integer,
                ],
                required: ["sent", "send_failures", "own_heard", "accepted", "replayed", "rate_limited", "oversized", "duplicate_identity"]),
            "sources": .list(object(["host": .string, "heard": .integer, "rejected": .integer, "rate_limited": .integer, "last_heard": .integer])),
            "rejections": .list(object(["reason": .string, "explanation": .string, "count": .integer, "last_source": .string])),
            "peers_file": .string,
            "static_peers": .list(object(["endpoint": .string, "key": .string, "state": .string], required: ["endpoint", "state"])),
            "links": .integer,
            "unlinked": .list(
                object(
                    ["id": .string, "nick": .string, "state": .string, "addresses": .list(.string), "why": .string],
                    required: ["id", "state", "addresses", "why"])),
            "admission": object(
                [
                    "unauthenticated": .integer, "refused": .integer, "links_refused": .integer, "violations": .integer,
                    "banned_hosts": .list(.string), "banned_peers": .list(.string),
                ], required: ["unauthenticated", "refused", "violations", "banned_hosts", "banned_peers"]),
            "clocks": .list(
                object(["id": .string, "nick": .string, "ahead_millis": .integer, "source": .string], required: ["id", "ahead_millis", "source"])),
            "forks": .list(fork),
        ],
        required: [
            "interfaces", "broadcast_targets", "sockets", "beacons", "sources", "rejections", "static_peers", "links", "unlinked", "admission",
        ])
    /// What `parley import --json` prints.
    static let importSummary = object(
        [
            "partitions": .integer, "applied": .integer, "already_present": .integer, "refused": .integer,
            "refused_by": .object(["type": .string("object"), "additionalProperties": .integer]), "fork_proofs": .integer,
            "blobs": .integer, "blobs_unnamed": .integer,
        ])
    static let message = object([
        "id": .string, "author": .string, "nick": .nullableString, "time": .string, "hlc": .integer, "seq": .integer, "text": .string,
        "edited": .boolean, "deleted": .boolean,
        "reactions": .object(["type": .string("object"), "additionalProperties": .list(.string), "description": .string("emoji: who reacted")]),
        "attachments": .list(attachment), "location": nullable(object(["lat": .number, "lon": .number])), "reply_to": .nullableString,
        "read_by": .list(.string),
    ])
    static let room = object([
        "name": .string, "partition": .string, "unread": .integer, "private": .boolean, "muted": .boolean, "topic": .string, "retention": .string,
        "history": .boolean, "owner": .nullableString,
    ])
    static let directoryRoom = object(["name": .string, "topic": .string, "people": .integer, "joined": .boolean])
    static let conversation = object([
        "id": .string, "name": .string, "members": .list(.string), "unread": .integer, "creator": .string, "member": .boolean, "muted": .boolean,
    ])
    static let avatar = nullable(attachment)
    static let person = object([
        "id": .string, "nick": .nullableString, "display_name": .nullableString, "status": .nullableString, "presence": .string,
        "last_seen": .nullableString, "me": .boolean, "avatar": avatar, "forks": .integer,
    ])
    static let device = object([
        "id": .string, "name": .string, "this": .boolean, "first": .boolean, "revoked": .boolean, "certified_by": .nullableString,
        "certified_at": .nullableString,
    ])
    static let pairing = object([
        "code": .string, "address": .nullableString, "uri": .string, "command": .string, "expires_at": .string, "qr_svg": .nullableString,
        "state": .string, "device": .nullableString, "device_name": .nullableString, "error": .nullableString,
    ])
    static let task = object(["id": .string, "title": .string, "status": taskStatus, "owner": .nullableString, "creator": .nullableString])
    static let profile = object([
        "id": .string, "nick": .nullableString, "display_name": .nullableString, "status": .nullableString, "presence": .nullableString,
        "avatar": avatar,
    ])
    static let me = object([
        "id": .string, "short": .string, "nick": .nullableString, "display_name": .nullableString, "status": .nullableString,
        "presence": .nullableString, "avatar": avatar, "web": .string,
    ])
    static let peer = object([
        "id": .string, "nick": .nullableString, "addresses": .list(.string), "state": .string, "since": .string, "last_seen": .nullableString,
        "direction": .nullableString, "origin": .string, "static": .boolean,
    ])
    static let status = object(
        [
            "pid": .integer, "started_at": .string, "id": .string, "nick": .nullableString, "data_dir": .string, "listen": .string,
            "discovery_port": .object(["type": .array([.string("integer"), .string("null")])]), "broadcast_targets": .list(.string),
            "links": .integer, "peers": .integer, "store_ops": .integer,
            "sync": object([
                "fetched": .integer, "wanted": .integer, "ops_received": .integer, "ops_sent": .integer,
                "peers": .list(
                    object([
                        "id": .string, "nick": .nullableString, "fetched": .integer, "wanted": .integer, "ops_received": .integer,
                        "ops_sent": .integer, "bytes_received": .integer, "bytes_sent": .integer, "frames_received": .integer,
                        "frames_sent": .integer, "since": .string,
                    ])),
            ]),
            "forks": .list(fork), "web": .string,
        ])
    /// A chain frozen by a fork, in `status` and `doctor`.
    static let fork = object([
        "partition": .string, "kind": .string, "name": .string, "author": .string, "person": .string, "seq": .integer,
    ])
    static let digest = object([
        "partition": .string, "kind": .string, "name": .string, "ops": .integer, "authors": .integer, "digest": .string, "joined": .boolean,
    ])
    static let error = object(["error": .string])
    /// This document: an OpenAPI 3.1 object.
    static let document = object(["openapi": .string, "info": .object(["type": .string("object")]), "paths": .object(["type": .string("object")])])

    /// `schema` (an object) that may also be null.
    static func nullable(_ schema: JSON) -> JSON {
        guard case .object(var fields) = schema else { return schema }
        fields["type"] = .array([.string("object"), .string("null")])
        return .object(fields)
    }
}

extension JSON {
    static let string = JSON.object(["type": .string("string")])
    static let nullableString = JSON.object(["type": .array([.string("string"), .string("null")])])
    static let integer = JSON.object(["type": .string("integer")])
    static let number = JSON.object(["type": .string("number")])
    static let boolean = JSON.object(["type": .string("boolean")])
    static func list(_ items: JSON) -> JSON { .object(["type": .string("array"), "items": items]) }
}

/// The OpenAPI 3.1 document of the API (JSON Schema 2020-12), made from `Route.all`: its
/// parameters and bodies are the schemas the server checks (`Route.validate`), its statuses those
/// `Route.statuses` derives, so the document and the server cannot drift apart.
enum OpenAPI {
    static let reasons = [
        200: "OK", 201: "Created", 204: "No Content",
        400: "The request breaks its schema (the message names the field and the rule)", 401: "No or wrong token",
        403: "Foreign Host or Origin", 404: "Names nothing here (no such room, conversation, message, task or person, or not one you can see)",
        409: "Refused by the state of things (not yours, not a member, deleted)",
        413: "Too large: the body over the route's limit, a file over 8 MiB, or a text field over its limit in UTF-8 bytes (its description says which)",
        415: "Body not application/json",
        422: "As the schema says, but not what it must be: a user id in the body that is not a public key, an archive that is not a `parley export` file",
    ]

    /// One Server-Sent Event as the tester reads it (`event`, `data`): each event's name and its
    /// data, one line of JSON. OpenAPI 3.1 has no schema for a stream's items (3.2's `itemSchema`);
    /// the `schema` of a `text/event-stream` answer describes one event, as tools read it.
    static let event: JSON = {
        let id = "\"[a-z2-7]{51}[aq]\""
        func variant(_ name: String, _ what: String, data: JSON) -> JSON {
            .object([
                "type": .string("object"), "description": .string(what), "required": .array([.string("event"), .string("data")]),
                "properties": .object(["event": .object(["const": .string(name)]), "data": data]),
            ])
        }
        func json(_ pattern: String, _ schema: JSON) -> JSON {
            .object([
                "type": .string("string"), "pattern": .string(pattern), "contentMediaType": .string("application/json"), "contentSchema": schema,
            ])
        }
        let empty = JSON.object(["const": .string("{}")])
        let idSchema = JSON.object(["type": .string("string"), "pattern": .string("^[a-z2-7]{51}[aq]$")])
        return .object([
            "anyOf": .array([
                variant("hello", "the stream is live (the first event)", data: empty),
                variant(
                    "changed", "these partitions' views changed (messages, edits, reactions, tasks, read markers); an empty list: any may have",
                    data: json(
                        "^\\{\"partitions\": \\[(\(id)(, \(id))*)?\\]\\}$",
                        Schema.object(["partitions": .list(idSchema)]))),
                variant("partitions", "rooms or conversations came or went", data: empty),
                variant(
                    "typing", "someone is typing in a room or conversation",
                    data: json(
                        "^\\{\"nick\": (null|\"([^\"\\\\]|\\\\.)*\"), \"partition\": \(id), \"user\": \(id)\\}$",
                        Schema.object(["partition": idSchema, "user": idSchema, "nick": .nullableString]))),
                variant("presence", "someone's presence may have changed", data: empty),
                variant("peers", "the peer table changed", data: empty),
            ])
        ])
    }()

    static let document: JSON = {
        var paths: [String: [String: JSON]] = [:]
        for route in Route.all {
            var responses: [String: JSON] = [:]
            for status in route.statuses {
                var answer: [String: JSON] = ["description": .string(reasons[status] ?? "OK")]
                if status == route.success {
                    if status != 204 {
                        let schema =
                            route.contentTypes == ["text/event-stream"]
                            ? event : route.response ?? .object(["type": .string("string"), "format": .string("binary")])
                        answer["content"] = .object(Dictionary(uniqueKeysWithValues: route.contentTypes.map { ($0, .object(["schema": schema])) }))
                    }
                    if !links(route).isEmpty { answer["links"] = .object(links(route)) }
                } else {
                    answer["content"] = .object([
                        "application/json": .object(["schema": .object(["$ref": .string("#/components/schemas/Error")])])
                    ])
                }
                responses[String(status)] = .object(answer)
            }
            var parameters: [JSON] = route.pathParameters.map { name in
                let schema = Route.pathSchemas[name] ?? .string
                return .object([
                    "name": .string(name), "in": .string("path"), "required": .bool(true), "schema": schema,
                    "description": schema["description"] ?? .string(name),
                ])
            }
            parameters += route.query.map { parameter in
                .object([
                    "name": .string(parameter.name), "in": .string("query"), "required": .bool(false),
                    "description": .string(parameter.description), "schema": parameter.schema,
                ])
            }
            var operation: [String: JSON] = [
                "summary": .string(route.summary), "operationId": .string(operationID(route)), "responses": .object(responses),
            ]
            if !parameters.isEmpty { operation["parameters"] = .array(parameters) }
            if let body = route.requestBody {
                operation["requestBody"] = .object([
                    "required": .bool(true), "content": .object(["application/json": .object(["schema": body])]),
                ])
            }
            if !route.needsToken { operation["security"] = .array([]) }
            paths[route.path, default: [:]][route.method.lowercased()] = .object(operation)
        }
        return .object([
            "openapi": .string("3.1.0"),
            "info": .object([
                "title": .string("Parley node API"), "version": .string("1"),
                "description": .string(
                    "The JSON API of one Parley node, served by `parley run` (see docs/WEB.md). Every request needs the node's Host; "
                        + "the API needs the token from the start URL (cookie) or Authorization: Bearer. The server checks every request "
                        + "against the schemas below before it acts (400 names the field); text limits in UTF-8 bytes, which a schema "
                        + "cannot state, are answered 413."),
            ]),
            "paths": .object(paths.mapValues { .object($0) }),
            "components": .object([
                "schemas": .object(["Error": Schema.error]),
                "securitySchemes": .object(["bearer": .object(["type": .string("http"), "scheme": .string("bearer")])]),
            ]),
            "security": .array([.object(["bearer": .array([])])]),
        ])
    }()

    /// What `route` supplies, as OpenAPI links to every route that takes it as a path parameter.
    private static func links(_ route: Route) -> [String: JSON] {
        var links: [String: JSON] = [:]
        for target in Route.all where target.path != route.path || target.method != route.method {
            // The parameters it supplies; the target's others are the caller's to choose.
            let given = target.pathParameters.filter { route.supplies[$0] != nil }
            guard !given.isEmpty else { continue }
            links[operationID(target)] = .object([
                "operationId": .string(operationID(target)),
                "parameters": .object(Dictionary(uniqueKeysWithValues: given.map { ($0, JSON.string("$response.body#" + route.supplies[$0]!)) })),
            ])
        }
        return links
    }

    private static func operationID(_ route: Route) -> String {
        let words = route.segments.dropFirst().map { $0.hasPrefix("{") ? "by_" + $0.dropFirst().dropLast() : String($0) }
        return route.method.lowercased() + "_" + words.joined(separator: "_").replacingOccurrences(of: ".", with: "_")
    }
}
