import Glibc

/// One IPv4 address of a network interface, as `getifaddrs` reports it.
///
/// An interface with several IPv4 addresses appears once per address. For `parley doctor` and
/// for choosing where discovery beacons go — but on the project's own machines beacons go only
/// to 127.255.255.255 (NETWORK-TESTS.md): list these, never send to them in tests.
public struct NetworkInterface: Sendable, Hashable, CustomStringConvertible {
    /// The kernel's name: `lo`, `eth0`, `wlan0`…
    public let name: String
    /// The IPv4 address, e.g. `192.168.1.20`.
    public let address: String
    /// The netmask, e.g. `255.255.255.0`.
    public let netmask: String
    /// The broadcast address the kernel reports; nil unless `supportsBroadcast`.
    public let broadcastAddress: String?
    /// The interface is administratively up (`IFF_UP`).
    public let isUp: Bool
    /// The link is operational (`IFF_RUNNING`: cable in, Wi-Fi associated).
    public let isRunning: Bool
    /// The loopback interface (`IFF_LOOPBACK`).
    public let isLoopback: Bool
    /// The interface can broadcast (`IFF_BROADCAST`).
    public let supportsBroadcast: Bool

    /// The subnet's directed broadcast, `address | ~netmask`: 127.255.255.255 for `lo`, which
    /// reports none itself, yet delivers it to every socket bound to 0.0.0.0 on the host.
    public var directedBroadcast: String? {
        guard let address = SocketAddress.ipv4(address), let mask = SocketAddress.ipv4(netmask) else { return nil }
        return SocketAddress.text(in_addr(s_addr: address.s_addr | ~mask.s_addr))
    }

    public var description: String {
        var flags: [String] = []
        if isUp { flags.append("up") }
        if isRunning { flags.append("running") }
        if isLoopback { flags.append("loopback") }
        if supportsBroadcast { flags.append("broadcast") }
        let broadcast = broadcastAddress.map { " broadcast \($0)" } ?? ""
        return "\(name) \(address) netmask \(netmask)\(broadcast) <\(flags.joined(separator: ","))>"
    }
}

/// The machine's network interfaces.
public enum NetworkInterfaces {
    /// Every IPv4 address of every interface, in the kernel's order.
    public static func list() throws(TransportError) -> [NetworkInterface] {
        var first: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&first) == 0 else { throw .fromErrno(errno, call: "getifaddrs") }
        defer { freeifaddrs(first) }
        var interfaces: [NetworkInterface] = []
        var entry = first
        while let current = entry?.pointee {
            entry = current.ifa_next
            guard let address = current.ifa_addr, Int32(address.pointee.sa_family) == AF_INET,
                let host = SocketAddress(address)?.host
            else { continue }
            let netmask = current.ifa_netmask.flatMap { SocketAddress($0)?.host } ?? "255.255.255.255"
            let flags = Int32(bitPattern: current.ifa_flags)
            let supportsBroadcast = flags & Int32(IFF_BROADCAST) != 0
            // The union holds the broadcast address only for broadcast-capable interfaces.
            let broadcast = supportsBroadcast ? current.ifa_ifu.ifu_broadaddr.flatMap { SocketAddress($0)?.host } : nil
            interfaces.append(
                NetworkInterface(
                    name: String(cString: current.ifa_name), address: host, netmask: netmask,
                    broadcastAddress: broadcast,
                    isUp: flags & Int32(IFF_UP) != 0, isRunning: flags & Int32(IFF_RUNNING) != 0,
                    isLoopback: flags & Int32(IFF_LOOPBACK) != 0, supportsBroadcast: supportsBroadcast))
        }
        return interfaces
    }
}
