import Replica

/// `op`: the op envelope (export files, OPS and NEW_OP carry it). What parses re-encodes to the
/// same bytes; verifying and decoding its body never crash.
func fuzzOperation(_ bytes: [UInt8]) {
    guard let op = try? Operation(encoded: bytes) else { return }
    check(op.encoded == bytes, "an op did not encode back to its bytes")
    check(op.body.count <= Operation.maxBodyBytes, "an op body of \(op.body.count) bytes parsed")
    _ = try? op.verify()
    if let body = try? OperationBody(type: op.type, decoding: op.body) { checkBodyRoundTrip(body, type: op.type) }
    if let proof = try? ForkProof(encoded: Array(bytes.prefix(2 * Operation.headerBytes))) {
        check(proof.encoded.count == 2 * Operation.headerBytes, "a fork proof of another size")
    }
}

/// `body`: the first byte is the op type, the rest its body; every body type decodes, validates
/// and re-encodes stably. Also the partition descriptor, epoch-sealed bodies and task states.
func fuzzOperationBody(_ bytes: [UInt8]) {
    guard let type = bytes.first else { return }
    let rest = Array(bytes.dropFirst())
    if let body = try? OperationBody(type: type, decoding: rest) { checkBodyRoundTrip(body, type: type) }
    switch type {
    case 0:
        if let descriptor = try? PartitionDescriptor(decoding: rest) {
            let again = try? PartitionDescriptor(decoding: descriptor.encoded)
            check(again == descriptor, "a partition descriptor did not decode to itself")
        }
    case 1:
        _ = try? EncryptedBody(decoding: rest)
    default:
        break
    }
}

func checkBodyRoundTrip(_ body: OperationBody, type: UInt8, file: StaticString = #fileID, line: UInt = #line) {
    _ = body.validate()
    let encoded = body.encoded
    // Compare encodings, not values: a location may be NaN, which is not equal to itself.
    guard let again = try? OperationBody(type: type, decoding: encoded) else {
        check(false, "a decoded \(body) did not decode again", file: file, line: line)
        return
    }
    check(again.encoded == encoded, "a body did not re-encode stably: \(body)", file: file, line: line)
}

/// `archive`: `parley import`'s reader over a whole file; it stops at the first error and never
/// crashes or reads records past a bad one.
func fuzzOpArchive(_ bytes: [UInt8]) {
    var offset = 0
    let source: (Int) throws -> [UInt8] = { count in
        let end = min(bytes.count, offset + count)
        defer { offset = end }
        return Array(bytes[offset..<end])
    }
    guard let reader = try? OpArchive.Reader(source: source) else { return }
    var records: [OpArchive.Record] = []
    while let record = try? reader.next() {
        records.append(record)
        check(records.count <= bytes.count / 5, "more records than the bytes can hold")
    }
}
