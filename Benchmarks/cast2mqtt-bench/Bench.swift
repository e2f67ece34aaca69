import ArgumentParser
import CastProtocol
import Foundation

/// Benchmarks of cast2mqtt. Prints numbers; never passes or fails on time. Every run ends with
/// one `RESULT <benchmark> key=value ...` line for scripts.
@main
struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cast2mqtt-bench",
        abstract: "Measure framing, the bridge core and a fleet of simulated devices.",
        subcommands: [Framing.self, BridgeCoreCommand.self, Fleet.self])
}

func printResult(_ name: String, _ values: [String: String]) {
    print("RESULT \(name) " + values.keys.sorted().map { "\($0)=\(values[$0]!)" }.joined(separator: " "))
}

struct Framing: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Encode and decode throughput of a MEDIA_STATUS (~1.5 KB) and a PING through CastFraming / CastFrameDecoder.")

    @Option(help: "Seconds per measurement.") var seconds: Double = 1
    @Option(help: "Upper bound of messages per measurement.") var maxMessages: Int = 5_000_000

    func run() async throws {
        print(Measure.machineLine())
        let results = try FramingBench.run(seconds: min(seconds, 30), maxMessages: maxMessages)
        var values: [String: String] = [:]
        for r in results {
            print("  \(Format.pad(r.name, 26)) \(Format.pad(Format.count(r.perSecond) + " msg/s", 14)) \(Format.fixed(r.perMessage, 0)) ns/msg  (n=\(r.messages))")
            if let key = r.key { values[key + "_ns"] = Format.fixed(r.perMessage, 0) }
        }
        printResult("framing", values)
    }
}

struct BridgeCoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bridge-core",
        abstract: "BridgeCore.handle throughput and per-input latency for a realistic mix on N devices.")

    @Option(help: "Devices discovered, connected and playing.") var devices: Int = 1000
    @Option(help: "Steady-state inputs after the setup.") var inputs: Int = 200_000
    @Option(help: "Upper bound of the steady-state phase in seconds.") var maxSeconds: Double = 30
    @Option(help: "Devices that disconnect and come back after the steady state.") var storm: Int = 100

    func run() async throws {
        print(Measure.machineLine())
        let n = max(1, min(devices, 100_000))
        let r = try BridgeCoreBench.run(devices: n, inputs: max(1, min(inputs, 10_000_000)), maxSeconds: min(maxSeconds, 300), storm: max(0, min(storm, n)))
        print("bridge-core: \(n) devices; setup (4 inputs per device) \(Format.fixed(Double(r.setupNanos) / 1e6)) ms; "
              + "steady state \(r.steadyInputs) inputs in \(Format.fixed(Double(r.steadyNanos) / 1e9, 2)) s = "
              + "\(Format.count(Double(r.steadyInputs) / (Double(r.steadyNanos) / 1e9))) inputs/s (including the benchmark's own input building)")
        print("  \(Format.pad("input", 30)) \(Format.pad("n", 8)) \(Format.pad("mean us", 9)) \(Format.pad("p50 us", 9)) \(Format.pad("p99 us", 9)) \(Format.pad("max us", 9)) publications/input")
        var all = Samples()
        var steady = Samples()
        let steadyKinds: Set<BridgeCoreBench.Kind> = [.mediaPosition, .mediaState, .receiverVolume, .command, .completion, .tick]
        var values: [String: String] = ["devices": "\(n)", "setup_s": Format.fixed(Double(r.setupNanos) / 1e9, 1)]
        let resultKeys: [BridgeCoreBench.Kind: String] = [
            .discovered: "discovered", .mediaPosition: "media_status", .receiverVolume: "receiver_status",
            .command: "command", .completion: "completion", .stormDisconnected: "storm_disconnected",
            .stormReceiver: "storm_online",
        ]
        for kind in BridgeCoreBench.Kind.allCases {
            guard var s = r.stats[kind], s.samples.count > 0 else { continue }
            for v in s.samples.values { all.add(v); if steadyKinds.contains(kind) { steady.add(v) } }
            print("  \(Format.pad(kind.rawValue, 30)) \(Format.pad("\(s.samples.count)", 8)) \(Format.pad(Format.micros(UInt64(s.samples.mean)), 9)) "
                  + "\(Format.pad(Format.micros(s.samples.percentile(50)), 9)) \(Format.pad(Format.micros(s.samples.percentile(99)), 9)) "
                  + "\(Format.pad(Format.micros(s.samples.percentile(100)), 9)) \(Format.fixed(Double(s.publications) / Double(s.samples.count), 2))")
            if let key = resultKeys[kind] { values["\(key)_p50_us"] = Format.micros(s.samples.percentile(50)) }
        }
        print("  \(Format.pad("steady-state mix", 30)) \(Format.pad("\(steady.count)", 8)) \(Format.pad(Format.micros(UInt64(steady.mean)), 9)) "
              + "\(Format.pad(Format.micros(steady.percentile(50)), 9)) \(Format.pad(Format.micros(steady.percentile(99)), 9)) \(Format.micros(steady.percentile(100)))")
        values["steady_p50_us"] = Format.micros(steady.percentile(50))
        values["steady_p99_us"] = Format.micros(steady.percentile(99))
        values["inputs_per_s"] = Format.fixed(Double(r.steadyInputs) / (Double(r.steadyNanos) / 1e9), 0)
        printResult("bridge-core", values)
    }
}

struct Fleet: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "N simulated devices and N CastDeviceClients in one process: connect time, RSS, request round trips, idle CPU.")

    @Option(help: "Number of devices (and clients).") var devices: Int = 200
    @Option(help: "getReceiverStatus calls per phase (one in flight, then --concurrency in flight).") var requests: Int = 2000
    @Option(help: "Requests in flight in the concurrent phase.") var concurrency: Int = 32
    @Option(help: "Seconds of idle CPU measurement.") var idleSeconds: Double = 10
    @Option(help: "Heartbeat interval of clients and devices, seconds.") var heartbeat: Int = 5
    @Option(help: "Give up when not all devices connected after this many seconds.") var connectTimeout: Double = 120
    @Flag(help: "Run the simulated devices on the clients' event loop group instead of their own.") var sharedGroup = false
    @Option(help: "Device authentication of the clients: off, report or require (the simulator's test root trusted).")
    var deviceAuth: String = "off"

    func validate() throws {
        guard DeviceAuthMode(rawValue: deviceAuth) != nil else { throw ValidationError("--device-auth: off, report or require") }
    }

    func run() async throws {
        print(Measure.machineLine())
        let values = try await FleetBench.run(.init(
            devices: max(1, min(devices, 20_000)), requests: max(1, min(requests, 1_000_000)),
            concurrency: max(1, min(concurrency, 4096)), idleSeconds: max(1, min(idleSeconds, 300)),
            heartbeatSeconds: max(1, min(heartbeat, 60)), connectTimeout: max(1, min(connectTimeout, 600)),
            sharedGroup: sharedGroup, deviceAuth: DeviceAuthMode(rawValue: deviceAuth) ?? .off))
        print(Measure.machineLine())
        printResult(deviceAuth == "off" ? "fleet" : "fleet-auth-\(deviceAuth)", values)
    }
}
