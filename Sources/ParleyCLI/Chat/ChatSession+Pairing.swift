import Identity
import NodeRuntime
import Presentation
import Store

/// `/pair`: a new device of this person paired while the chat goes on (docs/DESIGN.md §3.8,
/// §4.4). The offer waits on a thread of its own with a store connection of its own (the
/// session's store belongs to the chat's thread); `poll` shows how it ended.
extension ChatSession {
    func pair(_ arguments: [String]) {
        if arguments == ["stop"] {
            guard let pairing, pairing.state == .waiting else { return state.notice("no pairing is waiting", kind: .error, millis: now) }
            return pairing.cancel()
        }
        guard arguments.isEmpty else { return usage("/pair [stop]") }
        if let pairing, pairing.state == .waiting {
            return state.notice("a pairing is waiting already, code \(pairing.code.formatted); /pair stop ends it", kind: .error, millis: now)
        }
        let offer: DevicePairingOffer
        do {
            offer = try makeOffer()
        } catch {
            return state.notice(describe(error, command: "device pair"), kind: .error, millis: now)
        }
        pairing = offer
        offer.start()
        let minutes = DevicePairingOffer.defaultMinutes
        state.notice(
            "pairing: on the new computer, on this network, run  parley init --pair \(offer.code.formatted)  (good once, for \(minutes) min; "
                + "/pair stop ends it)", millis: now)
        if let address = offer.invitation.address {
            state.notice("where beacons do not reach: parley init --pair \(offer.code.formatted)@\(address)", millis: now)
        }
    }

    /// An offer whose answer certifies the new device with this device's key, on a store
    /// connection of its own, and tells the node to pass the news on.
    private func makeOffer() throws -> DevicePairingOffer {
        let (identity, person, node, skew) = (identity, me, node, context.clockSkewMillis)
        let (path, key) = (try context.dataDirectory().databasePath, try context.storeKey())
        return try DevicePairingOffer(
            person: person, beaconTargets: DevicePairingOffer.beaconTargets(for: configuration), listenHost: configuration.listenHost,
            minutes: DevicePairingOffer.defaultMinutes, nowMillis: now
        ) { request in
            let store = try ReplicaStore(path: path, key: key)
            defer { store.database.close() }
            let nowMillis = FaultConfiguration.skewed(Context.wallClockMillis(), by: skew)
            try store.certifyDevice(request, by: identity, nowMillis: nowMillis)
            let bundle = try DevicePairing.bundle(for: request.device, person: person, store: store)
            node.poke()
            return bundle
        }
    }

    /// Shows how the pairing ended, once (`poll` calls it).
    func showPairingEnd() {
        guard let pairing else { return }
        switch pairing.state {
        case .waiting: return
        case .paired(let device, let name):
            state.notice("paired \(Format.safe(name, keepNewlines: false)) (\(device.short)): it writes as you now; /devices lists it", millis: now)
        case .failed(let why):
            state.notice("pairing: \(why)", kind: .error, millis: now)
        }
        self.pairing = nil
    }
}
