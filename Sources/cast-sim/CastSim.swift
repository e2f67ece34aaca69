import ArgumentParser
import CastProtocol
import CastSimulator
import Discovery
import Foundation
import Logging
import NIOCore
import NIOPosix

/// `cast-sim`: runs simulated Cast devices on 127.0.0.1 with a JSON-over-HTTP control endpoint.
@main
struct CastSim: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cast-sim",
        abstract: "Simulated Google Cast devices on 127.0.0.1 (TLS, Cast v2) with fault injection.",
        discussion: """
            Prints one JSON line per device once it listens: {"name":..,"id":..,"port":..}, then \
            {"control_port":N} when the control endpoint is up. SIGTERM or SIGINT stops cleanly.
            """)

    @Option(name: .customLong("device"),
            help: "A device as \"NAME:PORT[:ID]\" (PORT 0 = any free port; ID = 32 hex chars, default derived from NAME). Repeatable.")
    var devices: [String] = []

    @Option(help: "Port of the HTTP control endpoint on 127.0.0.1 (0 = any free port; omit to disable).")
    var controlPort: Int?

    @Option(help: "Delay from LAUNCH to the app being up, in milliseconds.")
    var launchLatencyMs: Int = 300

    @Option(help: "Milliseconds a receiver STOP takes before the app is gone.")
    var stopLatencyMs: Int = 100

    @Option(help: "Delay before every reply and broadcast, in milliseconds.")
    var replyLatencyMs: Int = 2

    @Option(help: "Interval of the device's own PINGs in seconds (0 disables them).")
    var heartbeatInterval: Double = 5

    @Option(help: "Model name (md); default per cast type.")
    var model: String?

    @Option(help: "video, audio or group.")
    var castType: String = "video"

    @Flag(help: "Show no application when idle instead of the Backdrop idle screen.")
    var noIdleScreen = false

    @Option(help: "supportedMediaCommands bitmask of media sessions.")
    var supportedMediaCommands: Int = SimulatedDeviceConfiguration.defaultSupportedMediaCommands

    @Option(help: "How often the media clock checks for ends of media, in milliseconds (a fleet of idle devices wakes up this often per device).")
    var mediaTickMs: Int = 50

    @Flag(help: "Run the media clock manually (advance with POST /devices/<id>/clock/advance).")
    var manualClock = false

    @Flag(help: "Announce the devices over mDNS (_googlecast._tcp through avahi-daemon).")
    var mdns = false

    @Option(help: "Hostile mode: every device keeps sending mutated messages of these classes (all, or a comma-separated list of \(HostileClass.allCases.map(\.rawValue).joined(separator: ", "))), one class per interval in turn.")
    var hostile: String?

    @Option(help: "Milliseconds between two rounds of hostile messages.")
    var hostileIntervalMs: Int = 1000

    @Option(help: "Seed of the hostile messages' random choices (same seed, same messages).")
    var hostileSeed: UInt64 = 1

    @Option(help: "Log level (trace, debug, info, notice, warning, error, critical).")
    var logLevel: String = "info"

    func validate() throws {
        guard !devices.isEmpty else { throw ValidationError("give at least one --device NAME:PORT[:ID]") }
        guard SimulatedCastType(rawValue: castType) != nil else { throw ValidationError("--cast-type: video, audio or group") }
        for spec in devices { _ = try Self.parseDevice(spec) }
        if let hostile, HostileClass.parseList(hostile) == nil {
            throw ValidationError("--hostile: all, or a comma-separated list of \(HostileClass.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard (10...3_600_000).contains(hostileIntervalMs) else { throw ValidationError("--hostile-interval-ms: 10-3600000") }
    }

    /// Parses "NAME:PORT[:ID]"; the name may itself contain colons.
    static func parseDevice(_ spec: String) throws -> (name: String, port: Int, id: String?) {
        var parts = spec.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        var id: String?
        if parts.count >= 3, let last = parts.last, last.count == 32, last.allSatisfy(\.isHexDigit) {
            id = last.lowercased()
            parts.removeLast()
        }
        guard parts.count >= 2, let port = Int(parts.removeLast()), (0...65535).contains(port) else {
            throw ValidationError("--device \(spec): expected NAME:PORT[:ID]")
        }
        let name = parts.joined(separator: ":")
        guard !name.isEmpty else { throw ValidationError("--device \(spec): empty name") }
        return (name, port, id)
    }

    func run() async throws {
        let level = Logger.Level(rawValue: logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "cast-sim")
        let type = SimulatedCastType(rawValue: castType) ?? .video
        let clock: any SimulatorClock = manualClock ? ManualSimulatorClock() : SystemSimulatorClock()
        let configurations = try devices.map { spec -> SimulatedDeviceConfiguration in
            let parsed = try Self.parseDevice(spec)
            return SimulatedDeviceConfiguration(
                name: parsed.name, id: parsed.id, port: parsed.port, model: model, castType: type,
                launchLatency: .milliseconds(Int64(max(0, launchLatencyMs))),
                stopLatency: .milliseconds(Int64(max(0, stopLatencyMs))),
                replyLatency: .milliseconds(Int64(max(0, replyLatencyMs))),
                heartbeatInterval: heartbeatInterval > 0 ? .nanoseconds(Int64(heartbeatInterval * 1e9)) : nil,
                idleScreen: !noIdleScreen, supportedMediaCommands: supportedMediaCommands, clock: clock,
                tickInterval: .milliseconds(Int64(min(max(1, mediaTickMs), 60_000))))
        }

        // Install the signal handlers before anything listens, so an early SIGTERM still stops cleanly.
        let stop = StopSignal()
        let simulator: CastSimulator
        do {
            simulator = try await CastSimulator.start(configurations, logger: logger)
        } catch {
            logger.error("could not start: \(error)")
            throw ExitCode(1)
        }
        if let hostile, let classes = HostileClass.parseList(hostile) {
            for device in simulator.devices {
                await device.startHostile(classes, interval: .milliseconds(Int64(hostileIntervalMs)), seed: hostileSeed)
            }
            logger.warning("hostile mode: \(classes.map(\.rawValue).joined(separator: ",")) every \(hostileIntervalMs) ms")
        }
        for device in simulator.devices {
            struct Line: Encodable { var name: String; var id: String; var port: Int }
            Self.printLine((try? CastJSON.encode(Line(name: device.name, id: device.id, port: device.port))) ?? "{}")
        }
        // mDNS: one `_googlecast._tcp` service per device, with the TXT keys a real device
        // announces, named like a real one (model with dashes, then the id).
        var publishers: [ServicePublisher] = []
        if mdns {
            for device in simulator.devices {
                do {
                    let publisher = try ServicePublisher(logger: logger)
                    let instance = device.configuration.model.replacingOccurrences(of: " ", with: "-") + "-" + device.id
                    try publisher.publish(name: String(instance.prefix(63)), port: device.port,
                                          txt: device.configuration.txtRecord)
                    publishers.append(publisher)
                } catch {
                    logger.error("cannot announce \(device.name) over mDNS: \(error)")
                }
            }
        }
        defer { for publisher in publishers { publisher.stop() } }
        var control: ControlServer?
        if let controlPort {
            do {
                control = try await ControlServer.start(simulator: simulator, port: controlPort)
                Self.printLine("{\"control_port\":\(control?.port ?? 0)}")
            } catch {
                logger.error("could not start the control endpoint on port \(controlPort): \(error)")
                await simulator.shutdown()
                throw ExitCode(1)
            }
        }
        let signal = await stop.wait()
        logger.info("stopping on signal \(signal)")
        await control?.shutdown()
        await simulator.shutdown()
    }

    static func printLine(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
}

/// Waits for SIGTERM or SIGINT (dispatch sources; the default handlers are disabled).
final class StopSignal {
    private let sources: [any DispatchSourceSignal]
    private let stream: AsyncStream<Int32>
    private let continuation: AsyncStream<Int32>.Continuation

    init() {
        (stream, continuation) = AsyncStream.makeStream(of: Int32.self)
        let continuation = self.continuation
        sources = [SIGTERM, SIGINT].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { continuation.yield(number) }
            source.resume()
            return source
        }
    }

    func wait() async -> Int32 {
        for await number in stream { return number }
        return SIGTERM
    }
}
