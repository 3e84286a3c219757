import Identity
import Replica
import Wire

/// The names (partition ids, author keys) one side of a link numbered, for the compact messages
/// (COMPACT_VECTOR, COMPACT_ANNOUNCE, COMPACT_SKIP, COMPACT_RESUME; docs/DESIGN.md §4.3.1): the first time a name goes out it goes in full, and
/// both sides give it the next number; from then on the number stands for it. Each direction of
/// a link has its own numbering, kept in step because a link delivers every frame in order or
/// closes. At most `SyncMessage.maxLinkNames` are numbered; past them, names go in full.
struct SentLinkNames: Sendable {
    private var numbers: [Bytes32: UInt32] = [:]

    /// How to send `raw` now: by its number, or in full (numbered from now on, while there is room).
    mutating func name(_ raw: Bytes32) -> LinkName {
        if let number = numbers[raw] { return .number(number) }
        if numbers.count < SyncMessage.maxLinkNames { numbers[raw] = UInt32(numbers.count + 1) }
        return .full(raw)
    }
}

/// The peer's numbering of the names it sent on this link (`SentLinkNames`, the other side).
struct ReceivedLinkNames: Sendable {
    private var names: [Bytes32] = []

    /// The name `name` stands for; nil for a number the peer never gave. Every name of a
    /// received message goes through here, in the order it was sent (even one the session then
    /// ignores), or the numbering falls out of step.
    mutating func resolve(_ name: LinkName) -> Bytes32? {
        switch name {
        case .full(let raw):
            if names.count < SyncMessage.maxLinkNames { names.append(raw) }
            return raw
        case .number(let number):
            return number >= 1 && Int(number) <= names.count ? names[Int(number) - 1] : nil
        }
    }
}

extension GossipSession {
    /// `message` as it goes on this link: VECTOR, ANNOUNCE, SKIP and RESUME with their names by
    /// number when both sides speak the compact messages, else unchanged.
    mutating func compacted(_ message: SyncMessage) -> SyncMessage {
        guard compactNames else { return message }
        switch message {
        case .vector(let partition, let more, let heads):
            let partitionName = namesSent.name(partition.raw)
            var compact: [CompactHead] = []
            compact.reserveCapacity(heads.count)
            for head in heads {
                compact.append(
                    CompactHead(author: namesSent.name(head.author.raw), maxSeq: head.maxSeq, headID: head.headID, frozenAt: head.frozenAt))
            }
            return .compactVector(partition: partitionName, more: more, heads: compact)
        case .announce(let partition, let heads):
            let partitionName = namesSent.name(partition.raw)
            var compact: [CompactAnnouncedHead] = []
            compact.reserveCapacity(heads.count)
            for head in heads { compact.append(CompactAnnouncedHead(author: namesSent.name(head.author.raw), seq: head.seq)) }
            return .compactAnnounce(partition: partitionName, heads: compact)
        case .skip(let chains):
            return .compactSkip(compactChains(chains))
        case .resume(let chains):
            return .compactResume(compactChains(chains))
        default:
            return message
        }
    }

    private mutating func compactChains(_ chains: [ChainKey]) -> [CompactChain] {
        var compact: [CompactChain] = []
        compact.reserveCapacity(chains.count)
        for chain in chains {
            let partition = namesSent.name(chain.partition.raw)
            compact.append(CompactChain(partition: partition, author: namesSent.name(chain.author.raw)))
        }
        return compact
    }

    /// A compact message with its names resolved: the message it stands for. Nil (and
    /// the link closes) when it names by a number the peer never gave.
    mutating func expanded(_ message: SyncMessage) -> SyncMessage? {
        switch message {
        case .compactVector(let partitionName, let more, let named):
            guard let partition = resolve(partitionName) else { return nil }
            var heads: [Head] = []
            heads.reserveCapacity(named.count)
            for head in named {
                guard let author = resolve(head.author) else { return nil }
                heads.append(Head(author: UserID(author), maxSeq: head.maxSeq, headID: head.headID, frozenAt: head.frozenAt))
            }
            return .vector(partition: PartitionID(partition), more: more, heads: heads)
        case .compactAnnounce(let partitionName, let named):
            guard let partition = resolve(partitionName) else { return nil }
            var heads: [AnnouncedHead] = []
            heads.reserveCapacity(named.count)
            for head in named {
                guard let author = resolve(head.author) else { return nil }
                heads.append(AnnouncedHead(author: UserID(author), seq: head.seq))
            }
            return .announce(partition: PartitionID(partition), heads: heads)
        case .compactSkip(let named):
            return resolveChains(named).map { .skip($0) }
        case .compactResume(let named):
            return resolveChains(named).map { .resume($0) }
        default:
            return message
        }
    }

    private mutating func resolveChains(_ named: [CompactChain]) -> [ChainKey]? {
        var chains: [ChainKey] = []
        chains.reserveCapacity(named.count)
        for chain in named {
            guard let partition = resolve(chain.partition), let author = resolve(chain.author) else { return nil }
            chains.append(ChainKey(partition: PartitionID(partition), author: UserID(author)))
        }
        return chains
    }

    private mutating func resolve(_ name: LinkName) -> Bytes32? {
        guard let raw = namesReceived.resolve(name) else {
            if case .number(let number) = name { close(.malformedMessage(.unknownLinkName(number))) }
            return nil
        }
        return raw
    }
}
