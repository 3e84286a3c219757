/// libsodium declares its pointer parameters non-null, while Swift gives an empty buffer a nil
/// base address; these accessors return a valid pointer in every case.
nonisolated(unsafe) private let emptyByte = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)

extension UnsafeRawBufferPointer {
    var u8: UnsafePointer<UInt8> {
        baseAddress.map { $0.assumingMemoryBound(to: UInt8.self) } ?? UnsafePointer(emptyByte)
    }
}

extension UnsafeMutableRawBufferPointer {
    var u8: UnsafeMutablePointer<UInt8> {
        baseAddress.map { $0.assumingMemoryBound(to: UInt8.self) } ?? emptyByte
    }
}
