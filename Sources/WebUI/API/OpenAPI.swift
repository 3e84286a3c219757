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
    static let file = object(["name": .string, "mime": .string, "data": .string], required: ["name", "data"])
    /// `parley doctor`'s report (NodeRuntime's `DoctorReport`, keys in snake case).
    static let doctor = object(
        [
            "interfaces": .list(.object([:])), "broadcast_targets": .list(.string), "sockets": .object(["type": .string("object")]),
            "beacons": .object(["type": .string("object")]), "sources": .list(.object([:])), "rejections": .list(.object([:])),
            "peers_file": .nullableString, "static_peers": .list(.object([:])), "links": .integer, "unlinked": .list(.object([:])),
            "admission": .object(["type": .string("object")]),
        ], required: ["interfaces", "broadcast_targets", "sockets", "beacons", "links", "unlinked", "admission"])
    /// What `parley import --json` prints.
    static let importSummary = object(
        [
            "partitions": .integer, "applied": .integer, "already_present": .integer, "refused": .integer,
            "refused_by": .object(["type": .string("object"), "additionalProperties": .integer]), "fork_proofs": .integer,
            "blobs": .integer, "blobs_unnamed": .integer,
        ])
    static let message = object([
        "id": .string, "author": .string, "nick": .nullableString, "time": .string, "hlc": .integer, "seq": .integer, "text": .string,
        "edited": .boolean, "deleted": .boolean, "reactions": .object(["type": .string("object")]), "attachments": .list(attachment),
        "location": .object(["type": .array([.string("object"), .string("null")])]), "reply_to": .nullableString,
    ])
    static let room = object([
        "name": .string, "partition": .string, "unread": .integer, "private": .boolean, "topic": .string, "retention": .string,
        "history": .boolean, "owner": .nullableString,
    ])
    static let directoryRoom = object(["name": .string, "topic": .string, "people": .integer, "joined": .boolean])
    static let conversation = object([
        "id": .string, "name": .string, "members": .list(.string), "unread": .integer, "creator": .string, "member": .boolean,
    ])
    static let avatar = JSON.object(["type": .array([.string("object"), .string("null")])])
    static let person = object([
        "id": .string, "nick": .nullableString, "display_name": .nullableString, "status": .nullableString, "presence": .string,
        "last_seen": .nullableString, "me": .boolean, "avatar": avatar,
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
            "links": .integer, "peers": .integer, "store_ops": .integer, "sync": .object(["type": .string("object")]), "web": .string,
        ])
    static let digest = object([
        "partition": .string, "kind": .string, "name": .string, "ops": .integer, "authors": .integer, "digest": .string, "joined": .boolean,
    ])
    static let error = object(["error": .string])
}

extension JSON {
    static let string = JSON.object(["type": .string("string")])
    static let nullableString = JSON.object(["type": .array([.string("string"), .string("null")])])
    static let integer = JSON.object(["type": .string("integer")])
    static let number = JSON.object(["type": .string("number")])
    static let boolean = JSON.object(["type": .string("boolean")])
    static func list(_ items: JSON) -> JSON { .object(["type": .string("array"), "items": items]) }
}

/// The OpenAPI 3.0 document of the API, made from `Route.all`.
enum OpenAPI {
    static let reasons = [
        200: "OK", 201: "Created", 204: "No Content", 400: "Malformed request", 401: "No or wrong token",
        403: "Foreign Host or Origin", 404: "Not found", 405: "Method not allowed", 409: "Refused by the state of things",
        413: "Body too large", 415: "Body not application/json",
    ]

    static let document: JSON = {
        var paths: [String: [String: JSON]] = [:]
        for route in Route.all {
            var responses: [String: JSON] = [:]
            var success: [String: JSON] = ["description": .string(reasons[route.success] ?? "OK")]
            if route.success != 204 {
                let schema = route.response ?? .object(["type": .string("string"), "format": .string("binary")])
                success["content"] = .object([route.contentType: .object(["schema": schema])])
            }
            responses[String(route.success)] = .object(success)
            let errors = route.errors + (route.needsToken ? [401, 403] : [403]) + (route.requestBody == nil ? [] : [415])
            for status in Set(errors).sorted() {
                responses[String(status)] = .object([
                    "description": .string(reasons[status] ?? "Error"),
                    "content": .object(["application/json": .object(["schema": .object(["$ref": .string("#/components/schemas/Error")])])]),
                ])
            }
            var parameters: [JSON] = route.segments.filter { $0.hasPrefix("{") }.map { segment in
                .object([
                    "name": .string(String(segment.dropFirst().dropLast())), "in": .string("path"), "required": .bool(true),
                    "schema": .string,
                ])
            }
            parameters += route.query.map { name, description in
                .object([
                    "name": .string(name), "in": .string("query"), "required": .bool(false), "description": .string(description),
                    "schema": name == "limit" ? .object(["type": .string("integer"), "minimum": .integer(1)]) : .string,
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
            "openapi": .string("3.0.3"),
            "info": .object([
                "title": .string("Parley node API"), "version": .string("1"),
                "description": .string(
                    "The JSON API of one Parley node, served by `parley run` (see docs/WEB.md). Every request needs the node's Host; "
                        + "the API needs the token from the start URL (cookie) or Authorization: Bearer."),
            ]),
            "paths": .object(paths.mapValues { .object($0) }),
            "components": .object([
                "schemas": .object(["Error": Schema.error]),
                "securitySchemes": .object(["bearer": .object(["type": .string("http"), "scheme": .string("bearer")])]),
            ]),
            "security": .array([.object(["bearer": .array([])])]),
        ])
    }()

    private static func operationID(_ route: Route) -> String {
        let words = route.segments.dropFirst().map { $0.hasPrefix("{") ? "by_" + $0.dropFirst().dropLast() : String($0) }
        return route.method.lowercased() + "_" + words.joined(separator: "_").replacingOccurrences(of: ".", with: "_")
    }
}
