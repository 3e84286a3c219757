// swift-tools-version:6.0
// Parley: a serverless chat node for local networks.
// Targets follow the layers of DESIGN §2; dependencies point down only.
import PackageDescription

#if canImport(Foundation)
    import Foundation
#endif

let package = Package(
    name: "Parley",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "parley", targets: ["parley"])
    ],
    targets: [
        // System libraries (Debian packages).
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        // ncursesw: no pkgConfig (SwiftPM would drop its -D flags); the shim defines NCURSES_WIDECHAR.
        .systemLibrary(name: "CNcursesw", providers: [.apt(["libncurses-dev"])]),
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"])]),
        // epoll (glibc, no library to link): wrappers the Glibc module lacks.
        .systemLibrary(name: "CEpoll"),
        .systemLibrary(name: "CQRencode", pkgConfig: "libqrencode", providers: [.apt(["libqrencode-dev"])]),

        // Swift faces of the C libraries.
        .target(name: "Sodium", dependencies: ["CSodium"]),
        // Page-level encryption of the store through an SQLite VFS (libsodium's XChaCha20-Poly1305).
        .target(name: "CStoreCipher", dependencies: ["CSQLite", "CSodium"]),
        .target(name: "SQLite", dependencies: ["CSQLite", "CStoreCipher"]),
        // QR code symbols (libqrencode) and their renderings for a terminal and a web page.
        .target(name: "QRCode", dependencies: ["CQRencode"]),

        // Pure codecs and the replicated data model (no I/O).
        .target(name: "Wire"),
        .target(name: "Identity", dependencies: ["Sodium", "Wire"]),
        .target(name: "Replica", dependencies: ["Sodium", "Wire", "Identity"]),

        // The secret handshake, the key probe before it and encrypted framing of a link (pure state
        // machines, no sockets).
        .target(name: "SecureLink", dependencies: ["Sodium", "Wire", "Identity"]),

        // LAN discovery: authenticated beacons, the peer table, static peers (pure instance).
        .target(name: "Discovery", dependencies: ["Sodium", "Wire", "Identity"]),
        // Many nodes' protocol instances in one process, in simulated time (`parley sim`).
        .target(name: "Simulation", dependencies: ["Discovery", "Gossip", "Identity", "Replica", "Wire"]),

        // The one module that touches sockets: TCP listener/dialer, UDP, interfaces.
        .target(name: "Transport", dependencies: ["CEpoll"]),

        // Pairing a new device of a person by a short code over the LAN (DESIGN §4.4): beacons, a
        // PAKE and four sealed messages; it moves opaque bytes and knows nothing of persons or stores.
        .target(name: "Pairing", dependencies: ["Sodium", "Transport", "Wire"]),

        // Anti-entropy and live push between linked nodes (pure instance; the node is its shell).
        .target(name: "Gossip", dependencies: ["Replica", "Wire", "Identity"]),

        // The link layer's pure logic (no sockets, time passed in): the link message codec (HELLO,
        // PING/PONG, BYE, ADDRESSES around the sync frames), keepalive, rate limits, admission and
        // bans, the dial tie-break. Above Discovery and Gossip, whose address lists and sync
        // hello a link message carries, so neither of those depends on the other or on the link.
        .target(name: "LinkProtocol", dependencies: ["Discovery", "Gossip", "Identity", "Wire"]),

        // Persistence: the op log and materialized views in one SQLite file.
        .target(name: "Store", dependencies: ["SQLite", "Replica", "Identity", "Sodium", "Wire"]),

        // The node: an actor shell that owns sockets, timers and the store, and carries out the
        // directives of the pure protocol instances; plus the control socket and its client.
        .target(
            name: "NodeRuntime",
            dependencies: [
                "Transport", "LinkProtocol", "SecureLink", "Discovery", "Gossip", "Store", "SQLite", "Replica", "Identity", "Sodium", "Wire", "Pairing",
            ]),

        // What every interface shows: the JSON value, text formatting that is safe for terminals and
        // the rules for what a person types. Shared by the CLI, the terminal chat and the web UI;
        // below the store and the node, so the terminal chat's screen does not pull them in.
        .target(name: "Presentation", dependencies: ["Replica", "Identity"]),

        // The JSON shapes of the views and of the node's reports (a contract, DESIGN §6.1), shared
        // by the command line's --json and the web API: above Store and NodeRuntime, whose views
        // and control-protocol reports they render.
        .target(name: "JSONViews", dependencies: ["Presentation", "NodeRuntime", "Store", "Replica", "Identity"]),

        // The web UI and JSON API served by `parley run`: HTTP server (libmicrohttpd), auth,
        // routes, Server-Sent Events, the OpenAPI document; the page as plain HTML/CSS/JS resources.
        .target(
            name: "WebUI",
            dependencies: [
                "CMicroHTTPD", "Presentation", "JSONViews", "NodeRuntime", "Store", "Replica", "Identity", "Sodium", "Wire", "Pairing", "QRCode", "Transport",
            ],
            resources: [.copy("Assets")]),

        // The terminal chat's screen: a pure model, layout, wrapping and line editor, and the one
        // type that calls curses.
        .target(name: "TerminalUI", dependencies: ["CNcursesw", "Presentation"]),

        // Child processes started with posix_spawn (Foundation's Process crashes on this toolchain).
        .target(name: "Subprocess"),

        // The convergence lab: real `parley run` processes, a seeded workload, faults, a verdict
        // and a report (DESIGN §2: above NodeRuntime, below the executable).
        .target(name: "Lab", dependencies: ["NodeRuntime", "Subprocess", "Store", "SQLite", "Replica", "Identity", "Sodium", "Wire"]),

        // Command line: one small type per command; `parley` is a thin main.
        .target(
            name: "ParleyCLI",
            dependencies: [
                "Lab", "Presentation", "JSONViews", "TerminalUI", "WebUI", "NodeRuntime", "Store", "Replica", "Identity", "Sodium", "SQLite", "Wire", "Pairing",
                "QRCode", "Transport", "Simulation", "Discovery",
            ]),
        .executableTarget(name: "parley", dependencies: ["ParleyCLI"]),

        // Benchmarks (make bench); never part of the tests.
        .executableTarget(
            name: "parley-bench",
            dependencies: ["Store", "Replica", "Identity", "Sodium", "SQLite", "TestSupport", "Lab", "NodeRuntime", "Subprocess", "Transport"]),

        // Shared test fixtures.
        .target(name: "TestSupport", dependencies: ["Replica", "Identity", "Sodium", "Store", "Subprocess", "Wire"]),
        // A file layer under SQLite that cuts the power: unsynced writes are lost (tests only).
        .target(name: "PowerCutVFS", dependencies: ["CSQLite"], path: "Tests/PowerCutVFS"),

        .testTarget(name: "SodiumTests", dependencies: ["Sodium", "TestSupport"]),
        .testTarget(name: "SQLiteTests", dependencies: ["SQLite", "CSQLite", "TestSupport"]),
        .testTarget(name: "WireTests", dependencies: ["Wire", "TestSupport"]),
        .testTarget(name: "QRCodeTests", dependencies: ["QRCode", "TestSupport"]),
        .testTarget(name: "IdentityTests", dependencies: ["Identity", "Sodium", "TestSupport"]),
        .testTarget(name: "SecureLinkTests", dependencies: ["SecureLink", "Identity", "Sodium", "Wire", "TestSupport"]),
        .testTarget(name: "DiscoveryTests", dependencies: ["Discovery", "Identity", "Sodium", "Wire", "TestSupport"]),
        .testTarget(name: "SimulationTests", dependencies: ["Simulation", "Discovery", "Gossip", "Identity", "Replica", "Wire", "TestSupport"]),
        .testTarget(name: "TransportTests", dependencies: ["Transport", "TestSupport"]),
        .testTarget(name: "PairingTests", dependencies: ["Pairing", "Sodium", "Transport", "TestSupport"]),
        .testTarget(name: "GossipTests", dependencies: ["Gossip", "Store", "Replica", "Identity", "Wire", "TestSupport"]),
        .testTarget(name: "LinkProtocolTests", dependencies: ["LinkProtocol", "Gossip", "Discovery", "Identity", "Wire", "TestSupport"]),
        .testTarget(name: "ReplicaTests", dependencies: ["Replica", "Identity", "Sodium", "Wire", "TestSupport"]),
        .testTarget(name: "StoreTests", dependencies: ["Store", "SQLite", "Replica", "Identity", "Sodium", "Wire", "PowerCutVFS", "TestSupport"]),
        .testTarget(
            name: "NodeTests",
            dependencies: [
                "NodeRuntime", "LinkProtocol", "Gossip", "Store", "Replica", "SQLite", "TestSupport", "SecureLink", "Discovery", "Transport", "Identity",
                "Sodium", "Wire",
            ]),
        .testTarget(name: "TerminalUITests", dependencies: ["TerminalUI", "TestSupport", "Store", "Replica", "Identity", "NodeRuntime"]),
        .testTarget(
            name: "WebUITests", dependencies: ["WebUI", "Presentation", "NodeRuntime", "Store", "Replica", "Identity", "TestSupport"],
            exclude: ["browser"]),
        .testTarget(name: "CLITests", dependencies: ["ParleyCLI", "Presentation", "Store", "Replica", "Identity", "SQLite", "TestSupport"]),
        .testTarget(name: "LabTests", dependencies: ["Lab", "TestSupport", "Wire"]),
    ]
)

// The libFuzzer targets (`make fuzz`, Fuzz/README.md): only when PARLEY_FUZZ is set, so the normal
// build and tests never see them. scripts/fuzz.sh builds them in .build/fuzz with AddressSanitizer
// and libFuzzer's coverage, and links libFuzzer without its main.
#if canImport(Foundation)
    if ProcessInfo.processInfo.environment["PARLEY_FUZZ"] != nil {
        package.targets.append(.target(name: "CFuzzDriver", path: "Fuzz/Sources/CFuzzDriver"))
        package.targets.append(
            .executableTarget(
                name: "parley-fuzz",
                dependencies: ["CFuzzDriver", "WebUI", "LinkProtocol", "Gossip", "Discovery", "SecureLink", "Replica", "Identity", "Sodium", "Wire"],
                path: "Fuzz/Sources/parley-fuzz",
                swiftSettings: [.unsafeFlags(["-parse-as-library"])]))
    }
#endif
