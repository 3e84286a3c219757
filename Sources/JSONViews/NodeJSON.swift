import Identity
import NodeRuntime
import Presentation
import Replica
import Store

/// The JSON objects of what the running node and the store report (`peers`, `status`,
/// `profile`, `digest`), shared by the command line's `--json` and the web API.
extension ViewJSON {
    /// What `parley import --json` prints and `POST /api/import` answers.
    public static func importSummary(_ summary: OpArchiver.ImportSummary) -> JSON {
        .object([
            "partitions": .integer(Int64(summary.partitions)), "applied": .integer(Int64(summary.applied)),
            "already_present": .integer(Int64(summary.alreadyPresent)), "refused": .integer(Int64(summary.refused)),
            "refused_by": .object(summary.refusedBy.mapValues { .integer(Int64($0)) }),
            "fork_proofs": .integer(Int64(summary.forkProofs)), "blobs": .integer(Int64(summary.blobs)),
            "blobs_unnamed": .integer(Int64(summary.blobsUnnamed)),
        ])
    }

    /// One peer of `peers`.
    public static func peer(_ peer: PeerReport) -> JSON {
        .object([
            "id": .string(peer.id), "nick": .optional(peer.nick), "addresses": .array(peer.addresses.map { .string($0) }),
            "state": .string(peer.state), "since": .string(Format.isoTime(millis: peer.since)),
            "last_seen": .optional(peer.lastSeen.map { Format.isoTime(millis: $0) }),
            "direction": .optional(peer.direction?.rawValue), "origin": .string(peer.origin), "static": .bool(peer.isStatic),
        ])
    }

    /// The object of `status`; `extra` adds fields (the web UI's address). `forks` lists the
    /// chains frozen by forks (empty from a node that reports none).
    public static func status(_ status: StatusReport, extra: [String: JSON] = [:]) -> JSON {
        var fields: [String: JSON] = [
            "pid": .integer(Int64(status.pid)), "started_at": .string(Format.isoTime(millis: status.startedAt)),
            "id": .string(status.id), "nick": .optional(status.nick), "data_dir": .string(status.dataDirectory),
            "listen": .string(status.listen), "discovery_port": status.discoveryPort.map { .integer(Int64($0)) } ?? .null,
            "broadcast_targets": .array(status.broadcastTargets.map { .string($0) }), "links": .integer(Int64(status.links)),
            "peers": .integer(Int64(status.peersKnown)), "store_ops": .integer(Int64(status.storeOps)),
            "sync": .object([
                "fetched": .unsigned(status.sync.fetched), "wanted": .unsigned(status.sync.wanted),
                "ops_received": .unsigned(status.sync.opsReceived), "ops_sent": .unsigned(status.sync.opsSent),
                "peers": .array(
                    status.sync.peers.map { peer in
                        .object([
                            "id": .string(peer.id), "nick": .optional(peer.nick), "fetched": .unsigned(peer.fetched),
                            "wanted": .unsigned(peer.wanted), "ops_received": .unsigned(peer.opsReceived),
                            "ops_sent": .unsigned(peer.opsSent), "bytes_received": .unsigned(peer.bytesReceived),
                            "bytes_sent": .unsigned(peer.bytesSent), "frames_received": .unsigned(peer.framesReceived),
                            "frames_sent": .unsigned(peer.framesSent), "since": .string(Format.isoTime(millis: peer.since)),
                        ])
                    }),
            ]),
            "forks": .array((status.forks ?? []).map(fork)),
        ]
        fields.merge(extra) { _, new in new }
        return .object(fields)
    }

    /// One chain frozen by a fork: `partition`, `kind`, `name`, `author`, `person`, `seq`.
    public static func fork(_ fork: ForkReport) -> JSON {
        .object([
            "partition": .string(fork.partition), "kind": .string(fork.kind), "name": .string(fork.name), "author": .string(fork.author),
            "person": .string(fork.person), "seq": .unsigned(fork.seq),
        ])
    }

    /// The object of `profile`: `id`, `nick`, `display_name`, `status`, `presence`, `avatar`
    /// (empty texts read as null).
    public static func profile(_ user: UserID, _ profile: ProfileView?) -> JSON {
        func present(_ text: String?) -> String? { text.flatMap { $0.isEmpty ? nil : $0 } }
        return .object([
            "id": .string(user.text), "nick": .optional(present(profile?.nick)), "display_name": .optional(present(profile?.displayName)),
            "status": .optional(present(profile?.status)), "presence": .optional(profile?.presence?.description),
            "avatar": profile?.avatar.map(attachment) ?? .null,
        ])
    }

    /// One partition of `digest`.
    public struct DigestRow: Sendable {
        public let partition: PartitionID
        public let kind: PartitionKind
        public let name: String
        public let ops: Int
        public let authors: Int
        public let digest: PartitionDigest
        public let joined: Bool
    }

    /// Every partition's digest row, as `digest` lists them.
    public static func digestRows(_ store: ReplicaStore) throws -> [DigestRow] {
        try store.log.partitions().map { record in
            let heads = try store.log.heads(record.id)
            let name: String
            switch record.descriptor {
            case .room(let room): name = room.value
            case .conversation: name = try store.views.conversation(record.id)?.name ?? ""
            // The name this node joined it under; a carrier knows none.
            case .privateRoom: name = try store.privateRoomName(record.id)?.value ?? ""
            case .directory, .inbox, .ownData: name = record.descriptor.kind.description
            }
            return DigestRow(
                partition: record.id, kind: record.descriptor.kind, name: name, ops: try store.log.opCount(record.id),
                authors: heads.filter { $0.maxSeq > 0 }.count, digest: PartitionDigest(heads: heads), joined: record.joined)
        }
    }

    /// One row of `digest`.
    public static func digest(_ row: DigestRow) -> JSON {
        .object([
            "partition": .string(row.partition.text), "kind": .string(row.kind.description), "name": .string(row.name),
            "ops": .integer(Int64(row.ops)), "authors": .integer(Int64(row.authors)), "digest": .string(row.digest.text),
            "joined": .bool(row.joined),
        ])
    }
}
