import Foundation
import Subprocess

/// `--netns`: each node in its own network namespace, its `eth0` a veth into a switch
/// namespace (NETWORK-TESTS.md). Every port starts on `br0`; a split moves the ports of each
/// group but the first onto a bridge of its own (`addBridge`) (link down, new master, link up:
/// the cables are pulled and plugged into another switch), and a heal moves them back. The host
/// namespace is never touched, and beacons go to the bridge subnet's broadcast only.
struct Namespaces {
    let prefix: String
    let nodes: Int
    let cleanup: LabCleanup

    var switchName: String { prefix + "sw" }
    func name(_ node: Int) -> String { prefix + "n\(node)" }
    /// 10.79.x.y/16: room for 64 nodes and more.
    func address(_ node: Int) -> String { "10.79.\(1 + node / 250).\(1 + node % 250)" }
    static let broadcast = "10.79.255.255"

    /// Whether namespaces can be made here (root and `ip`), or why not.
    static func unavailableReason() -> String? {
        if getuid() != 0 { return "--netns needs root (network namespaces); run as root or leave --netns out" }
        if ipPath == nil { return "--netns needs the ip command (iproute2); install it or leave --netns out" }
        return nil
    }

    static let ipPath: String? = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"].first { FileManager.default.isExecutableFile(atPath: $0) }

    /// Creates the switch and one namespace per node; throws with the failing command.
    func create(logDirectory: String) async throws(LabError) {
        try await Self.ip(["netns", "add", switchName], logDirectory)
        cleanup.track(namespace: switchName)
        try await addBridge(0, logDirectory: logDirectory)
        for node in 0..<nodes {
            let namespace = name(node)
            try await Self.ip(["netns", "add", namespace], logDirectory)
            cleanup.track(namespace: namespace)
            try await Self.ip(["-n", switchName, "link", "add", "p\(node)", "type", "veth", "peer", "name", "eth0", "netns", namespace], logDirectory)
            try await Self.ip(["-n", switchName, "link", "set", "p\(node)", "master", "br0"], logDirectory)
            try await Self.ip(["-n", switchName, "link", "set", "p\(node)", "up"], logDirectory)
            try await Self.ip(["-n", namespace, "link", "set", "lo", "up"], logDirectory)
            try await Self.ip(["-n", namespace, "addr", "add", address(node) + "/16", "brd", "+", "dev", "eth0"], logDirectory)
            try await Self.ip(["-n", namespace, "link", "set", "eth0", "up"], logDirectory)
        }
    }

    /// Adds bridge `brN` to the switch.
    func addBridge(_ number: Int, logDirectory: String) async throws(LabError) {
        try await Self.ip(["-n", switchName, "link", "add", "br\(number)", "type", "bridge"], logDirectory)
        try await Self.ip(["-n", switchName, "link", "set", "br\(number)", "up"], logDirectory)
    }

    /// Puts `node`'s port on bridge `bridge`.
    func plug(_ node: Int, into bridge: Int, logDirectory: String) async throws(LabError) {
        try await Self.ip(["-n", switchName, "link", "set", "p\(node)", "down"], logDirectory)
        try await Self.ip(["-n", switchName, "link", "set", "p\(node)", "master", "br\(bridge)"], logDirectory)
        try await Self.ip(["-n", switchName, "link", "set", "p\(node)", "up"], logDirectory)
    }

    /// The command prefix that runs a program inside `node`'s namespace.
    func launcher(_ node: Int) -> [String] {
        [Self.ipPath ?? "ip", "netns", "exec", name(node)]
    }

    static func delete(_ name: String) {
        guard let ip = ipPath,
            let child = try? ChildProcess(
                executable: ip, arguments: ["netns", "del", name], environment: [:], captureIn: NSTemporaryDirectory(),
                name: "parley-lab-netns-del-\(getpid())")
        else { return }
        let deadline = Date().addingTimeInterval(5)
        while child.isRunning, Date() < deadline { usleep(5_000) }
        child.kill()
        try? FileManager.default.removeItem(atPath: child.stdoutPath)
        try? FileManager.default.removeItem(atPath: child.stderrPath)
    }

    private static func ip(_ arguments: [String], _ logDirectory: String) async throws(LabError) {
        guard let ip = ipPath else { throw .failure("the ip command is missing") }
        let result = await LabProcess.run(ip, arguments, captureIn: logDirectory, timeout: .seconds(10))
        guard result.status == 0 else {
            throw .failure("ip \(arguments.joined(separator: " ")) failed: \(result.stderr.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
    }
}
