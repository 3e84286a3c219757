import Identity
import Replica
import Sodium
import TestSupport
import Wire

/// One random world: partitions, the ops honest and dishonest authors wrote, and which of them
/// break a rule (and so must never be stored).
///
/// The conversation is end-to-end encrypted as members' stores write it (docs/DESIGN.md §3.5): a
/// plaintext create and epoch-0 grant, an encrypted name, encrypted content under each
/// writer's latest key, shares to added members, a rotation by the creator on each removal and
/// by the next current writer after a leave — sometimes two concurrent rotations for one
/// epoch — and removed members who keep writing with old keys. Outsiders write with keys
/// nobody holds; members sometimes edit others' posts (stored, without effect).
struct Scenario {
    var partitions: [PartitionDescriptor] = []
    var ops: [Operation] = []
    var forbidden: [Operation] = []
    var conversation: PartitionDescriptor

    static func generate(authors: [Identity], random: inout SeededRandom) -> Scenario {
        var builder = ScenarioBuilder(authors: authors, random: &random)
        builder.run(random: &random)
        builder.maybeFork(random: &random)
        return builder.scenario
    }
}

struct ScenarioBuilder {
    typealias Post = (id: OpID, author: UserID, seq: UInt64)
    let authors: [Identity]
    var factory = OpFactory()
    var scenario: Scenario
    let room = PartitionDescriptor.room(RoomName("lobby")!)
    let room2 = PartitionDescriptor.room(RoomName("dev")!)
    let ownData: PartitionDescriptor
    var posts: [PartitionID: [Post]] = [:]
    var tasks: [PartitionID: [OpID]] = [:]
    // The conversation as its writers see it, in the order the ops are generated.
    var current: Set<UserID>
    var ever: Set<UserID>
    var requiredEpoch: UInt32 = 0
    var held: [UserID: [EpochKey]] = [:]
    var creator: Identity { authors[0] }
    var conversation: PartitionDescriptor { scenario.conversation }

    init(authors: [Identity], random: inout SeededRandom) {
        self.authors = authors
        let conversation = PartitionDescriptor.conversation(creator: authors[0].id, nonce: Bytes32(w0: random.next(), w1: 1, w2: 2, w3: 3))
        ownData = .ownData(owner: authors[1].id)
        scenario = Scenario(conversation: conversation)
        scenario.partitions = [room, room2, .directory, conversation, ownData]
        let initial = authors[1...3].filter { _ in random.chance(0.4) }.map(\.id)
        current = Set(initial + [authors[0].id])
        ever = current
        scenario.ops.append(factory.make(.conversationCreate(name: "", members: initial), in: conversation.id, by: authors[0]))
        grant(newKey(epoch: 0, random: &random), to: current, by: authors[0])
        _ = writeEncrypted(.conversationRename(name: "team"), by: authors[0], hlcOffset: 0, random: &random)
    }

    mutating func run(random: inout SeededRandom) {
        for _ in 0..<Int.random(in: 8...36, using: &random) {
            let author = authors.prefix(4).randomElement(using: &random)!
            var partition = [room, room2, room, conversation].randomElement(using: &random)!
            if partition == conversation && !ever.contains(author.id) && !random.chance(0.3) { partition = room }
            let p = partition.id
            let body: OperationBody
            switch Int.random(in: 0..<14, using: &random) {
            case 0...3:
                body = .post(
                    text: "m\(random.next() % 1000)", attachments: [],
                    location: random.chance(0.1) ? Location(latitude: 1.5, longitude: 2.5) : nil, replyTo: nil)
            case 4:
                // Own posts; in the conversation sometimes someone else's (stored, no effect).
                let others = partition == conversation && random.chance(0.3)
                guard let target = posts[p]?.filter({ others || $0.author == author.id }).randomElement(using: &random) else { continue }
                body = .edit(target: target.id, targetSeq: target.seq, text: "edited \(random.next() % 100)")
            case 5:
                guard let own = posts[p]?.filter({ $0.author == author.id }).randomElement(using: &random) else { continue }
                body = .delete(target: own.id, targetSeq: own.seq)
            case 6:
                guard let any = posts[p]?.randomElement(using: &random) else { continue }
                body = .react(target: any.id, emoji: ["👍", "🎉", "❤️"].randomElement(using: &random)!, on: random.chance(0.7))
            case 7:
                body = .taskCreate(title: "t\(random.next() % 100)", owner: random.chance(0.3) ? authors.randomElement(using: &random)!.id : nil)
            case 8:
                guard let task = tasks[p]?.randomElement(using: &random) else { continue }
                body = .taskUpdate(
                    target: task, title: random.chance(0.3) ? "renamed" : nil, status: TaskStatus.allCases.randomElement(using: &random),
                    owner: random.chance(0.3) ? .set(authors.randomElement(using: &random)!.id) : (random.chance(0.2) ? .cleared : .unchanged))
            case 9:
                guard let task = tasks[p]?.randomElement(using: &random) else { continue }
                body = random.chance(0.3) ? .taskDelete(target: task) : .taskUpdate(target: task, title: nil, status: .complete, owner: .unchanged)
            case 10:
                let profile = OperationBody.profile(
                    subject: author.id, nick: "n\(random.next() % 50)", displayName: random.chance(0.5) ? "D" : nil,
                    status: random.chance(0.3) ? "busy" : nil, presence: random.chance(0.3) ? .away : nil, avatar: nil)
                scenario.ops.append(factory.make(profile, in: PartitionDescriptor.directory.id, by: author))
                continue
            case 11:
                changeMembership(by: author, random: &random)
                continue
            case 12:
                if author.id == authors[1].id {
                    let marker = OperationBody.readMarker(partition: room.id, position: HLC(raw: random.next() >> 8))
                    scenario.ops.append(factory.make(marker, in: ownData.id, by: author))
                }
                continue
            default:
                addRuleBreaker(random: &random)
                continue
            }
            let offset = Int64.random(in: -3...3, using: &random)
            let op: Operation
            if partition == conversation {
                op = writeEncrypted(body, by: author, hlcOffset: offset, random: &random)
            } else {
                op = factory.make(body, in: p, by: author, hlcOffset: offset)
                scenario.ops.append(op)
            }
            if case .post = body { posts[p, default: []].append((op.id, author.id, op.seq)) }
            if case .taskCreate = body { tasks[p, default: []].append(op.id) }
        }
    }

    // MARK: The conversation

    mutating func newKey(epoch: UInt32, random: inout SeededRandom) -> EpochKey {
        EpochKey(partition: conversation.id, epoch: epoch, key: SecureBytes((0..<32).map { _ in UInt8.random(in: 0...255, using: &random) }))!
    }

    mutating func grant(_ key: EpochKey, to members: Set<UserID>, by author: Identity) {
        scenario.ops.append(factory.makeGrant(key, to: Array(members), by: author))
        for member in members { held[member, default: []].append(key) }
    }

    /// The key `author` writes with, rotating first — as a store does — when it is a current
    /// member without a key for the required epoch; sometimes another member rotates too.
    mutating func writeKey(for author: Identity, random: inout SeededRandom) -> EpochKey? {
        if current.contains(author.id), !(held[author.id] ?? []).contains(where: { $0.epoch == requiredEpoch }) {
            grant(newKey(epoch: requiredEpoch, random: &random), to: current, by: author)
            if random.chance(0.3), let other = authors.first(where: { $0.id != author.id && current.contains($0.id) }) {
                grant(newKey(epoch: requiredEpoch, random: &random), to: current, by: other)
            }
        }
        return held[author.id]?.max { $0.epoch < $1.epoch }
    }

    /// Appends `body` by `author` encrypted with its key; an outsider uses a key nobody holds.
    mutating func writeEncrypted(_ body: OperationBody, by author: Identity, hlcOffset: Int64, random: inout SeededRandom) -> Operation {
        let key = writeKey(for: author, random: &random) ?? newKey(epoch: requiredEpoch, random: &random)
        let op = factory.makeEncrypted(body, with: key, by: author, hlcOffset: hlcOffset)
        scenario.ops.append(op)
        return op
    }

    /// A current member adds someone (sharing its key), the creator removes someone (and
    /// rotates), or a member leaves (the next writer rotates).
    mutating func changeMembership(by author: Identity, random: inout SeededRandom) {
        guard current.contains(author.id) else { return }
        let target = authors.randomElement(using: &random)!.id
        let c = conversation.id
        if author.id == creator.id && random.chance(0.3) {
            scenario.ops.append(factory.make(.memberRemove(target), in: c, by: author))
            current.remove(target)
            requiredEpoch += 1
            grant(newKey(epoch: requiredEpoch, random: &random), to: current, by: author)
        } else if random.chance(0.15) {
            scenario.ops.append(factory.make(.memberLeave, in: c, by: author))
            current.remove(author.id)
            requiredEpoch += 1
        } else {
            scenario.ops.append(factory.make(.memberAdd(target), in: c, by: author))
            current.insert(target)
            ever.insert(target)
            if let key = held[author.id]?.max(by: { $0.epoch < $1.epoch }) { grant(key, to: [target], by: author) }
        }
    }

    // MARK: Rule breakers and forks

    /// An op that breaks a rule and so must be refused by every replica: a profile written for
    /// someone else, an edit of someone else's room message, a write into another user's
    /// `self` partition, a plaintext post in the conversation, or a second create. Signed by a
    /// dedicated breaker on a throwaway chain position.
    mutating func addRuleBreaker(random: inout SeededRandom) {
        let breaker = authors[4]
        let op: Operation
        switch Int.random(in: 0..<5, using: &random) {
        case 0:
            op = factory.make(
                .profile(subject: authors[0].id, nick: "impostor", displayName: nil, status: nil, presence: nil, avatar: nil),
                in: PartitionDescriptor.directory.id, by: breaker, seq: 1, prev: .zero)
        case 1:
            guard let other = posts[room.id]?.first(where: { $0.author != breaker.id }) else { return }
            op = factory.make(.edit(target: other.id, targetSeq: other.seq, text: "hijacked"), in: room.id, by: breaker, seq: 1, prev: .zero)
        case 2:
            op = factory.make(.readMarker(partition: room.id, position: HLC(raw: 1)), in: ownData.id, by: breaker, seq: 1, prev: .zero)
        case 3:
            op = factory.make(.post(text: "in the clear", attachments: [], location: nil, replyTo: nil), in: conversation.id, by: breaker, seq: 1, prev: .zero)
        default:
            op = factory.make(.conversationCreate(name: "public name", members: []), in: conversation.id, by: breaker, seq: 1, prev: .zero)
        }
        scenario.ops.append(op)
        scenario.forbidden.append(op)
    }

    /// Sometimes an author forks: signs a second, different op at a seq it already used.
    mutating func maybeFork(random: inout SeededRandom) {
        let honest = scenario.ops.filter { op in !scenario.forbidden.contains { $0.id == op.id } }
        guard random.chance(0.25), let victim = honest.randomElement(using: &random) else { return }
        let author = authors.first { $0.id == victim.author }!
        let kind = scenario.partitions.first { $0.id == victim.partition }!.kind
        guard PartitionRules.allows(.post, in: kind), !(victim.partition == conversation.id && victim.seq == 1) else { return }
        // A fork that cuts off a room delete of a post below the fork point leaves the post
        // erased where the delete applied first and whole elsewhere: views then differ, as
        // documented (docs/ARCHITECTURE.md, *A delete erases the words*), so no such fork here.
        let cutsOffAnErasure =
            kind == .room
            && honest.contains { op in
                guard op.author == victim.author, op.partition == victim.partition, op.seq >= victim.seq,
                    case .delete(_, let targetSeq, _)? = try? OperationBody(type: op.type, decoding: op.body)
                else { return false }
                return targetSeq < victim.seq
            }
        guard !cutsOffAnErasure else { return }
        func body(_ text: String) -> (flags: Operation.Flags, bytes: [UInt8]) {
            let plain = OperationBody.post(text: text, attachments: [], location: nil, replyTo: nil)
            guard kind == .conversation else { return ([], plain.encoded) }
            let key = held[author.id]?.last ?? Fixtures.epochKey(conversation.id, epoch: 0, seed: 99)
            return (.bodyEncrypted, try! EncryptedBody.seal(plain.encoded, with: key, type: .post, author: author.id))
        }
        let fork = body("fork \(random.next() % 100)")
        let twin = factory.make(type: .post, flags: fork.flags, body: fork.bytes, in: victim.partition, by: author, seq: victim.seq, prev: victim.prev)
        scenario.ops.append(twin)
        // The forked branch continues.
        factory.setHead(victim.partition, author.id, seq: twin.seq, id: twin.id)
        if random.chance(0.5) {
            let after = body("after fork")
            scenario.ops.append(factory.make(type: .post, flags: after.flags, body: after.bytes, in: victim.partition, by: author))
        }
    }
}
