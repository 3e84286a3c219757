import CFuzzDriver
import Glibc

/// One libFuzzer binary for every target; `PARLEY_FUZZ_TARGET` picks the one to run
/// (`make fuzz TARGET=beacon`, Fuzz/README.md). Each target decodes what arrives from outside
/// the node and checks, where cheap, that what decodes encodes back to the same thing.
@main
enum ParleyFuzz {
    /// Every target by name.
    static let targets: [String: @Sendable ([UInt8]) -> Void] = [
        "beacon": fuzzBeacon,
        "handshake": fuzzHandshake,
        "frame": fuzzFrameDecoder,
        "sync": fuzzSyncMessage,
        "link": fuzzLinkMessage,
        "op": fuzzOperation,
        "body": fuzzOperationBody,
        "peers": fuzzPeersFile,
        "addresses": fuzzPeerAddressList,
        "archive": fuzzOpArchive,
        "web": fuzzWebRequest,
    ]

    static func main() {
        if CommandLine.arguments.count == 3, CommandLine.arguments[1] == "--write-seeds" {
            do { try Seeds.write(to: CommandLine.arguments[2]) } catch { fatalError("cannot write the seeds: \(error)") }
            exit(0)
        }
        let name = String(cString: getenv("PARLEY_FUZZ_TARGET") ?? strdup(""))
        guard let target = targets[name] else {
            print("set PARLEY_FUZZ_TARGET to one of: \(targets.keys.sorted().joined(separator: " "))")
            exit(2)
        }
        selected = target
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(
            LLVMFuzzerRunDriver(&argc, &argv) { data, size in
                ParleyFuzz.selected(data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
                return 0
            })
    }

    /// The target of this run; set once in `main`, before libFuzzer starts.
    nonisolated(unsafe) static var selected: @Sendable ([UInt8]) -> Void = { _ in }
}

/// Stops the run with a message libFuzzer records as a crash: an invariant does not hold.
func check(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) {
    if !condition() { fatalError("invariant: \(message())", file: file, line: line) }
}

/// Reads fuzz input as a stream of small choices (mode bytes, lengths) and payloads.
struct FuzzInput {
    private var bytes: [UInt8]
    private var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { index >= bytes.count }

    mutating func byte() -> UInt8 {
        guard index < bytes.count else { return 0 }
        defer { index += 1 }
        return bytes[index]
    }

    mutating func u16() -> Int { Int(byte()) << 8 | Int(byte()) }

    mutating func take(_ count: Int) -> [UInt8] {
        let end = min(bytes.count, index + max(0, count))
        defer { index = end }
        return Array(bytes[min(index, end)..<end])
    }

    mutating func rest() -> [UInt8] { take(bytes.count - index) }
}
