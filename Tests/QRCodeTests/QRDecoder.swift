import Foundation
import TestSupport
import Testing

/// A grey image (one byte per pixel, 0 black, 255 white), as a camera would see a screen.
struct GreyImage {
    let width: Int
    let height: Int
    var pixels: [UInt8]

    /// `grid` drawn with `scale` pixels per cell (`true` black), inside a `margin` of cells of
    /// `surroundings` (the screen around a terminal's code, say).
    init(grid: [[Bool]], scale: Int = 4, margin: Int = 0, surroundings: UInt8 = 255) {
        let rows = grid.count + 2 * margin
        let columns = (grid.map(\.count).max() ?? 0) + 2 * margin
        width = columns * scale
        height = rows * scale
        pixels = [UInt8](repeating: surroundings, count: width * height)
        for (row, cells) in grid.enumerated() {
            for (column, dark) in cells.enumerated() {
                for y in 0..<scale {
                    for x in 0..<scale {
                        pixels[((row + margin) * scale + y) * width + (column + margin) * scale + x] = dark ? 0 : 255
                    }
                }
            }
        }
    }

    /// The image as a binary PGM file (P5).
    var pgm: Data { Data("P5\n\(width) \(height)\n255\n".utf8) + Data(pixels) }
}

/// A real QR decoder: zxing-cpp's Python binding, pinned, in the virtual environment that
/// `scripts/install-deps.sh --test` makes at `.build/qr-decoder` (or `$PARLEY_QR_DECODER`, a
/// python with `zxingcpp`).
enum QRDecoder {
    static let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let python: String? = {
        let candidates: [String?] = [
            ProcessInfo.processInfo.environment["PARLEY_QR_DECODER"], package.appendingPathComponent(".build/qr-decoder/bin/python3").path,
        ]
        return candidates.compactMap { $0 }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()
    static var inCI: Bool { ProcessInfo.processInfo.environment["CI"] == "true" }
    /// Run when the decoder is here, and always in CI (where its absence is a failure).
    static var shouldRun: Bool { python != nil || inCI }
    static let missing: Comment = "the QR decoder is not installed: scripts/install-deps.sh --test; CI runs this always"

    /// Reads each PGM file named on the command line and prints one line per file: the hex of
    /// the one QR code's bytes and its error-correction level, or `none` / `several`. Only
    /// upright, dark-on-light codes at full resolution are looked for, so a code that needs
    /// inverting to be read does not pass.
    static let script = """
        import sys, zxingcpp
        for path in sys.argv[1:]:
            data = open(path, 'rb').read()
            magic, size, depth, pixels = data.split(b'\\n', 3)
            width, height = map(int, size.split())
            image = memoryview(pixels).cast('B', (height, width))
            found = zxingcpp.read_barcodes(image, formats=zxingcpp.BarcodeFormat.QRCode, try_rotate=False,
                                           try_downscale=False, try_invert=False)
            if len(found) == 1:
                print(found[0].bytes.hex(), found[0].ec_level)
            else:
                print('none' if not found else 'several')
        """

    /// What the decoder reads in each image: the bytes and the error-correction level, or nil
    /// where it found no code (or more than one).
    static func decode(_ images: [GreyImage], sourceLocation: SourceLocation = #_sourceLocation) async throws -> [(bytes: [UInt8], level: String)?] {
        let python = try #require(python, missing, sourceLocation: sourceLocation)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-qr-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var paths: [String] = []
        for (index, image) in images.enumerated() {
            let path = directory + "/image\(index).pgm"
            try image.pgm.write(to: URL(fileURLWithPath: path))
            paths.append(path)
        }
        let process = try ChildProcess(executable: python, arguments: ["-c", script] + paths, environment: [:], captureIn: directory, name: "decoder")
        defer { process.kill() }
        let exited = await process.waitForExit(timeout: .seconds(60))
        try #require(exited && process.exitStatus == 0, "the decoder failed: \(process.stderr)", sourceLocation: sourceLocation)
        let lines = process.stdout.split(separator: "\n").map(String.init)
        try #require(
            lines.count == images.count, "the decoder printed \(lines.count) lines for \(images.count) images: \(process.stdout)",
            sourceLocation: sourceLocation)
        return lines.map { line in
            let fields = line.split(separator: " ")
            guard fields.count == 2, let bytes = hexBytes(String(fields[0])) else { return nil }
            return (bytes, String(fields[1]))
        }
    }

    private static func hexBytes(_ hex: String) -> [UInt8]? {
        guard hex.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            guard let byte = UInt8(hex[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        return bytes
    }
}
