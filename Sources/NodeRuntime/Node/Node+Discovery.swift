import Discovery
import Identity
import Transport

/// The node as Discovery's shell: it feeds the instance datagrams, ticks and link outcomes, and
/// carries out its directives (docs/DESIGN.md §4.1).
extension Node {
    /// Creates the Discovery instance for the bound ports, adds the static peers and starts it.
    func startDiscovery() {
        guard let listener else { return }
        let port = configuration.discoveryPort ?? NodeConfiguration.defaultDiscoveryPort
        var discoveryConfiguration = DiscoveryConfiguration(
            identity: identity.id, instanceID: instance, tcpPort: listener.port,
            beaconKey: BeaconKey(networkKey: networkKey.bytes),
            targets: udp == nil ? [] : broadcastTargets.map { PeerEndpoint(host: $0, port: port) })
        configuration.discoveryTiming(&discoveryConfiguration)
        discovery = Discovery(configuration: discoveryConfiguration)
        if let udp { beaconSender = BeaconSender(socket: udp) }
        let now = clock.now()
        perform(discovery.addStaticPeers(configuration.staticPeers, now: now))
        perform(discovery.start(now: now))
    }

    /// A datagram arrived on the discovery port.
    func received(_ datagram: Datagram) {
        guard isRunning, !isBlockedBeacon(datagram.bytes) else { return }
        let source = PeerEndpoint(host: datagram.source.unmappedHost, port: datagram.source.port)
        perform(discovery.onBeacon(datagram.bytes, from: source, now: clock.now()))
    }

    /// Discovery's timer fired.
    func discoveryTick() {
        guard isRunning else { return }
        perform(discovery.onTick(now: clock.now()))
    }

    /// Carries out Discovery's directives, in order. No decisions here: each case is the one
    /// action the directive names, plus logging.
    func perform(_ directives: [DiscoveryDirective]) {
        for directive in directives {
            switch directive {
            case .sendBeacon(let bytes, let target):
                beaconSender?.send(bytes, to: target)
            case .connect(let peer, let endpoint):
                if let peer {
                    dial(peer, at: endpoint)
                } else {
                    probe(endpoint)
                }
            case .peerDiscovered(let info):
                log.info(
                    .discovered, "discovered \(displayName(of: info.id)) at \(info.addresses.first?.description ?? "no address") (\(info.origin.rawValue))")
            case .peerStateChanged(let peer, let state):
                // Links log themselves ("linked X at A"); the other changes are news.
                if state == .linked {
                    log.debug(.peerState, "\(displayName(of: peer)) is linked")
                } else {
                    log.info(.peerState, "\(displayName(of: peer)) is \(state.rawValue)")
                }
            case .peerForgotten(let peer):
                notes[peer] = nil
                log.debug(.forgotten, "forgot \(displayName(of: peer))")
            case .duplicateIdentity(let source):
                duplicateIdentitySource = source
                log.warn(
                    .duplicateIdentity,
                    "another process at \(source) runs with this node's identity; stop one of them "
                        + "(copying a data directory copies its identity)")
            case .scheduleTick(let after):
                discoveryTimer.arm(at: clock.instant(at: clock.now() + after), on: self) { self.discoveryTick() }
            case .disconnect(let peer):
                log.debug(.peerState, "closing the link to \(displayName(of: peer)): the overlay keeps enough links")
                closeLink(to: peer, reason: .overlay)
            }
        }
    }

    /// Keeps links to `peers` on top of the overlay (`Discovery.pin`).
    func pinLinks(_ peers: Set<UserID>) {
        guard isRunning, discovery != nil else { return }
        perform(discovery.pin(peers, now: clock.now()))
    }

    /// Sends each linked peer the addresses it may not know, periodically (Discovery's address
    /// exchange: one node on two subnets bridges them).
    func shareAddressesPeriodically() {
        addressTimer.arm(after: configuration.addressShareInterval, on: self) {
            guard self.isRunning else { return }
            for peer in self.current.keys { self.shareAddresses(with: peer) }
            self.shareAddressesPeriodically()
        }
    }

    /// Sends `peer` an ADDRESSES message, if there is anything to tell.
    func shareAddresses(with peer: UserID) {
        guard let id = current[peer], let link = links[id]?.link else { return }
        let addresses = discovery.shareableAddresses(for: peer)
        guard !addresses.isEmpty else { return }
        try? link.send(.addresses(addresses))
    }
}
