import Foundation

/// The control socket's protocol: one JSON request per line in, one JSON response per line out,
/// on `control.sock` in the data directory (mode 0600). Keys are snake_case.
///
/// Requests: `{"request": "peers"}`, `"status"`, `"doctor"`, `"ping"`. A client may send several
/// requests on one connection; the node answers each in order. Responses carry `"ok": true` and
/// the field named after the request (`peers`, `status`, `doctor`, `pong`), or `"ok": false`
/// and `error`. Lines are at most `maxLineBytes`; a longer line gets an error and the
/// connection is closed.
///
/// Extending it (issue 4: `poke`, posting through the node): add a `ControlRequest.Kind` case,
/// its optional arguments to `ControlRequest`, its result field to `ControlResponse`, and a
/// case to `Node.respond(to:)`. Old clients ignore fields they do not know; an old node answers
/// an unknown request with `ok: false`.
public enum ControlProtocol {
    /// The longest line either side accepts.
    public static let maxLineBytes = 1 << 20

    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return decoder
    }()

    /// `value` as one line of JSON (no newline inside, none at the end).
    static func line<T: Encodable>(_ value: T) throws -> [UInt8] {
        Array(try encoder.encode(value))
    }
}

/// One request to the node.
public struct ControlRequest: Codable, Sendable, Equatable {
    /// What is asked.
    public enum Kind: String, Codable, Sendable, CaseIterable {
        /// The peer table (`parley peers`).
        case peers
        /// The node's state (`parley status`).
        case status
        /// What the node sees on the network (`parley doctor`).
        case doctor
        /// Liveness: answers at once.
        case ping
    }

    public var request: Kind

    public init(_ request: Kind) {
        self.request = request
    }
}

/// The node's answer to one request.
public struct ControlResponse: Codable, Sendable {
    public var ok: Bool
    public var error: String?
    public var peers: [PeerReport]?
    public var status: StatusReport?
    public var doctor: DoctorReport?
    public var pong: PongReport?

    public init(ok: Bool = true, error: String? = nil, peers: [PeerReport]? = nil, status: StatusReport? = nil,
                doctor: DoctorReport? = nil, pong: PongReport? = nil) {
        self.ok = ok
        self.error = error
        self.peers = peers
        self.status = status
        self.doctor = doctor
        self.pong = pong
    }

    /// A refusal.
    public static func failure(_ message: String) -> ControlResponse { ControlResponse(ok: false, error: message) }
}

/// The answer to `ping`.
public struct PongReport: Codable, Sendable, Equatable {
    public var pid: Int32
    public var id: String
}

/// One peer of `parley peers --json` (DESIGN §6.1). Times are Unix milliseconds.
public struct PeerReport: Codable, Sendable, Equatable {
    public var id: String
    public var nick: String?
    /// TCP endpoints, preferred first (`HOST:PORT`).
    public var addresses: [String]
    /// `linked`, `discovered`, `suspect` or `gone`.
    public var state: String
    public var since: UInt64
    public var lastSeen: UInt64?
    /// `inbound`/`outbound` for a linked peer, else nil.
    public var direction: LinkDirection?
    /// `beacon`, `static`, `exchanged` or `link`: how it was first learnt.
    public var origin: String
    /// Listed in the peers file.
    public var isStatic: Bool
}

/// `parley status`. Times are Unix milliseconds.
public struct StatusReport: Codable, Sendable, Equatable {
    public var pid: Int32
    public var startedAt: UInt64
    public var id: String
    public var nick: String?
    public var dataDirectory: String
    /// The bound link address, `HOST:PORT`.
    public var listen: String
    /// nil when discovery is off.
    public var discoveryPort: UInt16?
    public var broadcastTargets: [String]
    public var links: Int
    public var peersKnown: Int
    /// Ops held in the store.
    public var storeOps: Int
    public var sync: SyncStatus
}

/// The sync section of `status`, filled by the Gossip wiring (issue 4).
public struct SyncStatus: Codable, Sendable, Equatable {
    /// Ops received from peers since start.
    public var fetched: UInt64 = 0
    /// Ops known to be missing and asked for.
    public var wanted: UInt64 = 0
    public init() {}
}
