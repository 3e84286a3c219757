import Foundation
import Identity
import JSONViews
import NodeRuntime
import Pairing
import Presentation
import QRCode
import Replica
import Store
import Transport

/// The person's devices on the page (docs/DESIGN.md §3.8): the list, revoking one, and pairing
/// a new one (the code and its QR code shown while this node waits for the new device).
extension API {
    /// `GET /api/devices`: the person's devices.
    static func devices(_ call: Call) async throws -> HTTPReply {
        let (me, this) = (call.access.me, call.access.identity.id)
        return json(.array(try await call.access.read { try $0.devices.devices(of: me) }.map { ViewJSON.device($0, this: this) }))
    }

    /// `POST /api/devices/{device}/revoke`: another device of the person, revoked for everyone.
    static func revokeDevice(_ call: Call) async throws -> HTTPReply {
        let device = try userID(call.parameter("device"), field: "device", inPath: true)
        let (me, identity) = (call.access.me, call.access.identity)
        guard let found = try await call.access.read({ try $0.devices.devices(of: me) }).first(where: { $0.device == device }) else {
            throw WebError.notFound("\(device.short) is not one of your devices; GET /api/devices lists them")
        }
        guard device != identity.id else { throw WebError.conflict("that is this device; revoke it from another of your devices, or wipe this one") }
        if !found.revoked {
            try await call.access.write { store in _ = try store.revokeDevice(device, by: identity, nowMillis: call.access.nowMillis()) }
        }
        let after = try await call.access.read { try $0.devices.devices(of: me) }.first { $0.device == device } ?? found
        return json(ViewJSON.device(after, this: identity.id))
    }

    /// `POST /api/devices/pair` with `{"minutes": N}` (optional): offers a pairing, answered at
    /// once with its code while this node waits for the new device on a thread of its own. One
    /// at a time: 409 while another waits.
    static func startPairing(_ call: Call) async throws -> HTTPReply {
        let body = try call.body
        let minutes = Int(try body.number("minutes") ?? Double(DevicePairingOffer.defaultMinutes))
        let access = call.access
        let (person, identity) = (access.me, access.identity)
        let configuration = access.node.configuration
        let targets = DevicePairingOffer.beaconTargets(for: configuration)
        let offer = try access.pairing.withLock { current throws(WebError) -> DevicePairingOffer in
            if let current, current.state == .waiting {
                throw WebError.conflict("a pairing is waiting already (code \(current.code.formatted)); DELETE /api/devices/pair ends it")
            }
            do {
                let offer = try DevicePairingOffer(
                    person: person, beaconTargets: targets, listenHost: configuration.listenHost, minutes: minutes, nowMillis: access.nowMillis()
                ) { request in
                    try runBlocking {
                        try await access.write { store in
                            try store.certifyDevice(request, by: identity, nowMillis: access.nowMillis())
                            return try DevicePairing.bundle(for: request.device, person: person, store: store)
                        }
                    }
                }
                current = offer
                return offer
            } catch {
                throw WebError.internalError("\(error)")
            }
        }
        offer.start()
        return json(pairingJSON(offer), status: 201)
    }

    /// `GET /api/devices/pair`: the last pairing offered from the page, and where it stands.
    static func pairing(_ call: Call) async throws -> HTTPReply {
        guard let offer = call.access.pairing.withLock({ $0 }) else {
            throw WebError.notFound("no pairing was started here; POST /api/devices/pair starts one")
        }
        return json(pairingJSON(offer))
    }

    /// `DELETE /api/devices/pair`: ends a waiting pairing (its code is no good from then on).
    static func cancelPairing(_ call: Call) async throws -> HTTPReply {
        guard let offer = call.access.pairing.withLock({ $0 }) else {
            throw WebError.notFound("no pairing was started here; POST /api/devices/pair starts one")
        }
        offer.cancel()
        return noContent
    }

    /// An offer as the page shows it: the code, the line to type on the new device, the QR code
    /// of the invitation, and its state.
    static func pairingJSON(_ offer: DevicePairingOffer) -> JSON {
        let (state, device, name, problem): (String, JSON, JSON, JSON) =
            switch offer.state {
            case .waiting: ("waiting", .null, .null, .null)
            case .paired(let device, let name): ("paired", .string(device.text), .string(name), .null)
            case .failed(let why): ("failed", .null, .null, .string(why))
            }
        let address = offer.invitation.address.map { "\(offer.code.formatted)@\($0)" }
        return .object([
            "code": .string(offer.code.formatted), "address": address.map { .string($0) } ?? .null, "uri": .string(offer.invitation.uri),
            "command": .string("parley init --pair \(address ?? offer.code.formatted)"),
            "expires_at": .string(Format.isoTime(millis: offer.expiresAtMillis)),
            "qr_svg": (try? QRSymbol(encoding: offer.invitation.uri)).map { .string($0.svg()) } ?? .null,
            "state": .string(state), "device": device, "device_name": name, "error": problem,
        ])
    }
}
