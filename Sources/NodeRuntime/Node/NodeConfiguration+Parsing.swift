import Discovery
import Foundation
import Transport

/// Reading `parley run`'s option values into a configuration; every error is one line naming the
/// problem and the fix, for the command line to print as it is.
extension NodeConfiguration {
    /// A bad option value.
    public struct OptionError: Error, Sendable, Equatable, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    /// `--listen HOST:PORT` (a bare host means port 7748; port 0 picks a free one).
    public mutating func setListen(_ text: String) throws(OptionError) {
        do {
            let endpoint = try HostPort(parsing: text, defaultPort: Self.defaultListenPort)
            listenHost = endpoint.host
            listenPort = endpoint.port
        } catch {
            throw OptionError("--listen \(text): write HOST:PORT, e.g. 0.0.0.0:7748 or 127.0.0.1:0")
        }
    }

    /// `--broadcast` when given (`option`), else `$PARLEY_BROADCAST` when set; else the targets
    /// stay the default. Every command that sends beacons (`run`, `device pair`) reads them so.
    public mutating func setBroadcast(option: String?, environment: [String: String]) throws(OptionError) {
        if let option {
            try setBroadcast(option)
        } else if let text = environment["PARLEY_BROADCAST"], !text.isEmpty {
            try setBroadcast(text, source: "$PARLEY_BROADCAST")
        }
    }

    /// `--broadcast ADDR[,ADDR...]` or `$PARLEY_BROADCAST`: numeric IPv4 addresses.
    public mutating func setBroadcast(_ text: String, source: String = "--broadcast") throws(OptionError) {
        let parts = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        guard !parts.isEmpty else { throw OptionError("\(source) needs at least one IPv4 address, e.g. 127.255.255.255") }
        for part in parts {
            guard let address = try? SocketAddress(ipAddress: part, port: 0), address.family == .ipv4 else {
                throw OptionError("\(source): '\(part)' is not an IPv4 address; write e.g. 127.255.255.255 or 192.168.1.255")
            }
        }
        broadcastTargets = parts
    }

    /// `--peers FILE`: reads and parses the static peers file (`PeersFile`).
    public mutating func loadPeersFile(_ path: String) throws(OptionError) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw OptionError("cannot read the peers file \(path); check the path and its permissions")
        }
        do {
            staticPeers = try PeersFile.parse(Array(data))
            peersFile = path
        } catch {
            throw OptionError("\(path): \(error)")
        }
    }

    /// The interfaces of this machine as `parley doctor` shows them.
    public static func interfaceReports() -> [DoctorReport.Interface] {
        ((try? NetworkInterfaces.list()) ?? []).map { interface in
            DoctorReport.Interface(
                name: interface.name, address: interface.address, netmask: interface.netmask,
                broadcast: interface.isLoopback ? interface.directedBroadcast : interface.broadcastAddress,
                isUp: interface.isUp, isLoopback: interface.isLoopback)
        }
    }

    /// Where beacons go by default on this machine (every interface's directed broadcast and the
    /// loopback broadcast).
    public static func defaultBroadcastTargets() -> [String] {
        defaultBroadcastTargets((try? NetworkInterfaces.list()) ?? [])
    }
}

extension ControlProtocol {
    /// `value` as indented JSON with sorted snake_case keys (`parley doctor --json`).
    public static func prettyJSON<T: Encodable>(_ value: T) -> String {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "null"
    }
}
