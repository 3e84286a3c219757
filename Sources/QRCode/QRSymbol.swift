import CQRencode

#if canImport(Glibc)
    import Glibc
#endif

/// A QR code symbol: its module matrix, made by libqrencode from bytes in byte (8-bit) mode at
/// error-correction level M, the smallest version that holds them.
///
/// Byte mode keeps the text exactly as given (case and all, UTF-8); level M lets a phone read a
/// code with about 15 % of it smudged, moiré'd or cut by a terminal's line gaps. The symbol
/// holds no reference to C memory: the encoder's result is copied and freed at once, so it may
/// be made on any thread (Debian's libqrencode is built thread-safe) and passed between them.
/// Render it with `terminalLines(inverted:)` or `svg(moduleSize:)`, both with the quiet zone
/// the standard asks for (`quietZone` light modules on every side).
public struct QRSymbol: Sendable, Hashable {
    /// The most bytes a symbol holds: version 40 at level M in byte mode (ISO/IEC 18004,
    /// table 7). A pairing URI needs about 40.
    public static let maxBytes = 2331
    /// The light margin every rendering draws around the symbol, in modules (the standard's
    /// minimum; readers find the finder patterns by it).
    public static let quietZone = 4

    /// The symbol's version, 1...40; `size` is 17 + 4 × version.
    public let version: Int
    /// Modules per side, without the quiet zone.
    public let size: Int
    /// `size × size` modules, row by row; `true` is dark.
    private let modules: [Bool]

    /// Modules per side with the quiet zone on both sides: the width of `terminalLines` in
    /// character cells and of `svg` in modules.
    public var sizeWithQuietZone: Int { size + 2 * Self.quietZone }

    /// The symbol for `text`'s UTF-8 bytes.
    public init(encoding text: String) throws(QRCodeError) {
        try self.init(encoding: Array(text.utf8))
    }

    /// The symbol for `bytes` (any bytes, NUL included).
    public init(encoding bytes: [UInt8]) throws(QRCodeError) {
        guard !bytes.isEmpty else { throw .empty }
        guard bytes.count <= Self.maxBytes else { throw .tooLong(bytes: bytes.count, limit: Self.maxBytes) }
        // version 0: the smallest that holds the data.
        let result = bytes.withUnsafeBufferPointer { buffer -> (code: UnsafeMutablePointer<QRcode>?, errno: Int32) in
            errno = 0
            let code = QRcode_encodeData(Int32(buffer.count), buffer.baseAddress, 0, QR_ECLEVEL_M)
            return (code, errno)
        }
        guard let code = result.code else {
            if result.errno == ERANGE { throw .tooLong(bytes: bytes.count, limit: Self.maxBytes) }
            throw .encoderFailed(errno: result.errno)
        }
        defer { QRcode_free(code) }
        let version = Int(code.pointee.version)
        let width = Int(code.pointee.width)
        // The struct's data pointer imports as implicitly unwrapped: bind it as an optional so a
        // NULL is an error, never a crash.
        let data: UnsafeMutablePointer<UInt8>? = code.pointee.data
        guard let data, (1...40).contains(version), width == 17 + 4 * version else { throw .malformedSymbol }
        // Bit 0 of each byte is the module's colour (1 dark); the other bits tell what part of
        // the symbol it belongs to, which nothing here needs.
        let matrix = UnsafeBufferPointer(start: data, count: width * width).map { $0 & 1 == 1 }
        self.version = version
        self.size = width
        self.modules = matrix
    }

    /// Whether the module at `row`, `column` (0-based, from the top left) is dark; positions
    /// outside the symbol (the quiet zone and beyond) are light.
    public func isDark(row: Int, column: Int) -> Bool {
        guard (0..<size).contains(row), (0..<size).contains(column) else { return false }
        return modules[row * size + column]
    }

    /// The matrix as rows of `size` booleans (`true` dark), top row first.
    public var rows: [[Bool]] {
        (0..<size).map { row in Array(modules[(row * size)..<((row + 1) * size)]) }
    }
}

/// Why a QR code could not be made.
public enum QRCodeError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Nothing to encode.
    case empty
    /// More bytes than the largest symbol holds at level M.
    case tooLong(bytes: Int, limit: Int)
    /// libqrencode returned no symbol; `errno` as it reported (ENOMEM, EINVAL).
    case encoderFailed(errno: Int32)
    /// libqrencode returned a symbol whose version, width or data make no QR code.
    case malformedSymbol

    public var description: String {
        switch self {
        case .empty:
            return "nothing to put in a QR code: give at least one character"
        case .tooLong(let bytes, let limit):
            return "too long for a QR code: \(bytes) bytes, the limit is \(limit) bytes (version 40, error correction M); shorten the text"
        case .encoderFailed(let code):
            return "libqrencode could not make the QR code: \(String(cString: strerror(code))) (errno \(code))"
        case .malformedSymbol:
            return "libqrencode returned a malformed QR code; check the installed libqrencode (4.x)"
        }
    }
}
