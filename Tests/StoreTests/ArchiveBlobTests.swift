import Foundation
import Identity
import Replica
import Sodium
import Store
import TestSupport
import Testing
import Wire

/// Exports carry the blobs their partitions' views name; an import keeps a blob only under the
/// hash of its bytes and only where a view names that hash, as a blob from a peer.
@Suite struct ArchiveBlobTests {
    let alice = Fixtures.identity(0)
    let bob = Fixtures.identity(1)
    let now = Fixtures.now()
    let lobby = PartitionDescriptor.room(RoomName("lobby")!)

    /// Alice's store with a message carrying `content` in #lobby; the attachment.
    func storeWithAttachment(_ content: [UInt8]) throws -> (ReplicaStore, Replica.Attachment) {
        let store = try Nodes.store(alice)
        try store.log.ensurePartition(lobby, joined: true)
        let attachment = try store.attach(content, name: "map.bin", mime: "application/octet-stream", in: lobby.id, by: alice, nowMillis: now)
        try store.author(.post(text: "the map", attachments: [attachment], location: nil, replyTo: nil), in: lobby.id, by: alice, nowMillis: now)
        return (store, attachment)
    }

    func records(_ bytes: [UInt8]) throws -> [OpArchive.Record] {
        let reader = try Self.reader(bytes)
        var records: [OpArchive.Record] = []
        while let record = try reader.next() { records.append(record) }
        return records
    }

    static func reader(_ bytes: [UInt8]) throws -> OpArchive.Reader {
        var offset = 0
        return try OpArchive.Reader { count in
            defer { offset = min(bytes.count, offset + count) }
            return Array(bytes[offset..<min(bytes.count, offset + count)])
        }
    }

    func importing(_ records: [OpArchive.Record]) throws -> (ReplicaStore, OpArchiver.ImportSummary) {
        var bytes: [UInt8] = []
        let writer = try OpArchive.Writer { bytes += $0 }
        for record in records { try writer.write(record) }
        try writer.finish()
        let fresh = try Nodes.store(bob)
        return (fresh, try OpArchiver(fresh).importArchive(try Self.reader(bytes), me: bob.id, nowMillis: now))
    }

    @Test func anExport_carriesTheAttachment_andTheImportOpensIt() throws {
        let content = (0..<5_000).map { UInt8($0 % 251) }
        let (store, attachment) = try storeWithAttachment(content)
        var bytes: [UInt8] = []
        let summary = try OpArchiver(store).export([lobby.id], to: try OpArchive.Writer { bytes += $0 }, nowMillis: now)
        #expect(summary.blobs == 1 && summary.blobBytes == content.count)
        #expect(try records(bytes).contains(.blob(content)))

        let (fresh, imported) = try importing(try records(bytes))
        #expect(imported.blobs == 1 && imported.blobsUnnamed == 0 && imported.refused == 0, "\(imported)")
        #expect(try fresh.blobs.attachmentContent(attachment, in: lobby.id) == .content(content))
        #expect(try fresh.blobs.missingBlobs().isEmpty)
    }

    @Test func withoutBlobs_theExportHasNone_andTheImportStillMissesTheFile() throws {
        let (store, attachment) = try storeWithAttachment([1, 2, 3])
        var bytes: [UInt8] = []
        let summary = try OpArchiver(store).export([lobby.id], to: try OpArchive.Writer { bytes += $0 }, blobs: false, nowMillis: now)
        #expect(summary.blobs == 0)
        let (fresh, imported) = try importing(try records(bytes))
        #expect(imported.blobs == 0 && imported.applied == 1)
        #expect(try fresh.blobs.attachmentContent(attachment, in: lobby.id) == .notFetched)
    }

    /// A file whose checksum is intact but whose blob was swapped (or that carries bytes no
    /// message names) stores nothing of it: the hash is computed, never read from the file.
    @Test func aSwappedOrUnnamedBlob_isLeftOut() throws {
        let content = [UInt8](repeating: 7, count: 300)
        let (store, attachment) = try storeWithAttachment(content)
        var bytes: [UInt8] = []
        try OpArchiver(store).export([lobby.id], to: try OpArchive.Writer { bytes += $0 }, nowMillis: now)
        var swapped = content
        swapped[0] ^= 0xFF
        let forged = try records(bytes).map { record -> OpArchive.Record in
            if case .blob = record { return .blob(swapped) }
            return record
        }
        let (fresh, imported) = try importing(forged + [.blob(Array("nobody names me".utf8))])
        #expect(imported.blobs == 0 && imported.blobsUnnamed == 2, "\(imported)")
        #expect(try fresh.blobs.attachmentContent(attachment, in: lobby.id) == .notFetched)
        #expect(try !fresh.blobs.hasBlob(Bytes32(GenericHash.hash(swapped))!))
    }

    /// A blob record before any partition's descriptor names nothing.
    @Test func aBlobBeforeAnyPartition_isLeftOut() throws {
        let (_, imported) = try importing([.blob([9, 9, 9])])
        #expect(imported.blobs == 0 && imported.blobsUnnamed == 1)
    }

    /// Files of the previous format (no blob records) still import.
    @Test func aVersion2File_stillImports() throws {
        let (store, _) = try storeWithAttachment([4, 5, 6])
        var bytes: [UInt8] = []
        try OpArchiver(store).export([lobby.id], to: try OpArchive.Writer { bytes += $0 }, blobs: false, nowMillis: now)
        // Same records under the PRLYOPS2 magic, with the checksum recomputed.
        var old = OpArchive.magicVersion2 + bytes[OpArchive.magic.count..<(bytes.count - 37)]
        let hasher = GenericHash.Hasher()
        hasher.update(old)
        old += [0xFF, 0, 0, 0, 32] + hasher.finalize()
        let fresh = try Nodes.store(bob)
        let imported = try OpArchiver(fresh).importArchive(try Self.reader(old), me: bob.id, nowMillis: now)
        #expect(imported.problem == nil && imported.applied == 1, "\(imported)")
    }
}
