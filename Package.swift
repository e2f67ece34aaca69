// swift-tools-version: 6.2
import PackageDescription

// Swift 6 language mode (strict concurrency) everywhere, and every warning is an error.
let strict: [SwiftSetting] = [.treatAllWarnings(as: .error)]

/// A fuzz target `fuzz-<name>` in `Fuzz/fuzz-<name>` on top of FuzzSupport.
func fuzzTarget(_ name: String, _ dependencies: [Target.Dependency]) -> Target {
    .executableTarget(name: "fuzz-\(name)", dependencies: ["FuzzSupport"] + dependencies,
                      path: "Fuzz/fuzz-\(name)", swiftSettings: strict)
}

/// The web page's files in `Sources/Web/Assets`, each compiled into the binary.
let webAssets = ["index.html", "app.css", "favicon.svg", "app.js", "connection.js", "util.js", "devices.js",
                 "device.js", "bridge.js", "controls.js", "login.js"]

let package = Package(
    name: "cast2mqtt",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "cast2mqtt", targets: ["cast2mqtt"]),
        .executable(name: "cast-sim", targets: ["cast-sim"]),
        .library(name: "CastProtocol", targets: ["CastProtocol"]),
        .library(name: "CastClient", targets: ["CastClient"]),
        .library(name: "CastSimulator", targets: ["CastSimulator"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-protobuf.git", from: "1.39.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        // No traits: neither swift-configuration support nor full Foundation is needed.
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1", traits: []),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", from: "2.8.1"),
    ],
    targets: [
        // Pure Cast v2 protocol: framing, CastMessage, payloads, connection state machine.
        .target(
            name: "CastProtocol",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                // Device authentication (DeviceAuth/): chain and signature checks.
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
            ],
            exclude: ["Proto/cast_channel.proto", "Proto/ORIGIN.md", "DeviceAuth/ORIGIN.md"],
            swiftSettings: strict
        ),
        // SwiftNIO + NIOSSL client for one Cast device.
        .target(
            name: "CastClient",
            dependencies: [
                "CastProtocol",
                "StageTrace",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                // Cast messages and bytes in and out (exported by the daemon's /metrics).
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ],
            swiftSettings: strict
        ),
        // Simulated Cast devices (TLS server on loopback) with fault injection.
        .target(
            name: "CastSimulator",
            dependencies: [
                "CastProtocol",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "cast-sim",
            dependencies: [
                "CastSimulator", "Discovery",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Yams", package: "Yams"),
            ],
            swiftSettings: strict
        ),
        // libmosquitto, wrapped by the MQTT target only.
        .systemLibrary(
            name: "CMosquitto",
            pkgConfig: "libmosquitto",
            providers: [.apt(["libmosquitto-dev"])]
        ),
        // The configuration model (`BridgeConfiguration` and its sections): plain values, no
        // dependencies. Discovery and MQTT read their sections; Bridge parses it and re-exports it.
        .target(name: "Settings", swiftSettings: strict),
        // Optional timestamps along the command and status paths (benchmarks only; off unless
        // CAST2MQTT_STAGE_TRACE is set).
        .target(name: "StageTrace", swiftSettings: strict),
        .target(
            name: "MQTT",
            dependencies: [
                "CMosquitto",
                "Settings",
                "StageTrace",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // Avahi client, wrapped by the Discovery target only.
        .systemLibrary(
            name: "CAvahi",
            pkgConfig: "avahi-client",
            providers: [.apt(["libavahi-client-dev"])]
        ),
        .target(
            name: "Discovery",
            dependencies: [
                "CAvahi",
                "Settings",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // What the daemon knows about a device before the core: the one device table and the
        // rules of `eureka_info` facts, held and dynamic groups (pure; the daemon runs them).
        .target(
            name: "KnownDevices",
            dependencies: ["Discovery", "Bridge", "CastProtocol", "CastClient"],
            swiftSettings: strict
        ),
        // The domain: MQTT contract <-> Cast, through protocols only.
        // The MQTT contract's names: commands, requests, error codes, topic leaves.
        .target(name: "Contract", swiftSettings: strict),
        .target(
            name: "Bridge",
            dependencies: [
                "CastProtocol",
                "Contract",
                "Settings",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Yams", package: "Yams"),
            ],
            swiftSettings: strict
        ),
        // The web page (Hummingbird, one WebSocket), /metrics (swift-metrics → swift-prometheus)
        // and /healthz. HTML, CSS and JavaScript modules are embedded in the binary by SwiftPM
        // (`embedInCode`: byte arrays compiled in, no Bundle lookup at run time).
        .target(
            name: "Web",
            dependencies: [
                "Contract",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            resources: webAssets.map { .embedInCode("Assets/\($0)") },
            swiftSettings: strict
        ),
        .executableTarget(
            name: "cast2mqtt",
            dependencies: [
                "Bridge", "CastClient", "CastProtocol", "MQTT", "Discovery", "KnownDevices", "Web", "StageTrace",
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                // The Home Assistant Supervisor's services API (SupervisorClient.swift).
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Yams", package: "Yams"),
            ],
            swiftSettings: strict
        ),

        // Benchmarks (numbers only, never a pass/fail on time): scripts/bench, docs/performance.md.
        .executableTarget(
            name: "cast2mqtt-bench",
            dependencies: [
                "CastProtocol", "CastClient", "CastSimulator", "Bridge",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Benchmarks/cast2mqtt-bench",
            swiftSettings: strict
        ),

        // Fuzz targets (docs/reliability.md, scripts/fuzz). A normal build makes each one a
        // corpus replayer; `scripts/fuzz` builds them with `-DFUZZING -sanitize=fuzzer,address`
        // in `.build-fuzz`, where the same main hands control to libFuzzer.
        .target(name: "CFuzzer", path: "Fuzz/CFuzzer"),
        .target(
            name: "FuzzSupport",
            dependencies: ["CFuzzer", "CastProtocol"],
            path: "Fuzz/FuzzSupport",
            swiftSettings: strict
        ),
        fuzzTarget("frame", ["CastProtocol", .product(name: "NIOCore", package: "swift-nio")]),
        fuzzTarget("payload", ["CastProtocol"]),
        fuzzTarget("command", ["Bridge", "CastProtocol"]),
        fuzzTarget("config", ["Bridge"]),
        fuzzTarget("txt", ["Discovery", "Bridge"]),
        fuzzTarget("eureka", ["CastProtocol"]),
        fuzzTarget("deviceauth", ["CastProtocol"]),

        // Shared helpers for tests: free ports, service processes (mosquitto, avahi), waiting.
        .target(
            name: "TestSupport",
            dependencies: [],
            path: "Tests/TestSupport",
            swiftSettings: strict
        ),
        .testTarget(
            name: "CastProtocolTests",
            // CastSimulator only for its seeded random numbers.
            dependencies: ["CastProtocol", "CastSimulator", .product(name: "NIOCore", package: "swift-nio"),
                           .product(name: "X509", package: "swift-certificates")],
            // Public device-auth test data (DeviceAuthVectors/ORIGIN.md), read by path.
            exclude: ["DeviceAuthVectors"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "CastClientTests",
            dependencies: [
                "CastClient", "CastSimulator", "CastProtocol", "TestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "CastSimulatorTests",
            dependencies: [
                "CastSimulator", "CastProtocol", "TestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "MQTTTests",
            dependencies: ["MQTT", "TestSupport", "mqtt-test-client"],
            swiftSettings: strict
        ),
        // A tiny MQTT client process for the last-will test (killed with SIGKILL).
        .executableTarget(
            name: "mqtt-test-client",
            dependencies: ["MQTT", .product(name: "Logging", package: "swift-log")],
            path: "Tests/Tools/mqtt-test-client",
            swiftSettings: strict
        ),
        .testTarget(
            name: "DiscoveryTests",
            dependencies: ["Discovery", "TestSupport"],
            swiftSettings: strict
        ),
        // The daemon as a process against a real mosquitto and simulated devices.
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "CastSimulator", "CastProtocol", "MQTT", "TestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        // The daemon's own glue: error mapping, adapters.
        .testTarget(
            name: "DaemonTests",
            dependencies: ["cast2mqtt", "Bridge", "CastClient", "CastProtocol", "Discovery",
                           .product(name: "NIOConcurrencyHelpers", package: "swift-nio")],
            swiftSettings: strict
        ),
        // The device table and the facts rules (pure, no I/O).
        .testTarget(
            name: "KnownDevicesTests",
            dependencies: ["KnownDevices", "Bridge", "CastClient", "CastProtocol", "Discovery"],
            swiftSettings: strict
        ),
        // The web page's hub, authentication, metrics and the `web` configuration section.
        .testTarget(
            name: "WebTests",
            dependencies: [
                "Web", "Bridge", "TestSupport",
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "BridgeTests",
            // CastSimulator only for its seeded random numbers.
            dependencies: ["Bridge", "CastProtocol", "CastSimulator"],
            swiftSettings: strict
        ),
    ],
    swiftLanguageModes: [.v6]
)
