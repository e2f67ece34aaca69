import ArgumentParser
import CastProtocol
import CastSimulator
import Discovery
import Foundation
import Logging
import NIOCore
import NIOPosix

/// `cast-sim`: runs simulated Cast devices and speaker groups with a JSON-over-HTTP control
/// endpoint on 127.0.0.1.
@main
struct CastSim: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cast-sim",
        abstract: "Simulated Google Cast devices and speaker groups (TLS, Cast v2, eureka_info) with fault injection.",
        discussion: """
            Prints one JSON line per device once it listens: {"name":..,"id":..,"host":..,"port":..}, one \
            per group: {"group":{"id":..,"name":..,"host":..,"port":..,"leader":..,"members":[..],..}}, then \
            {"control_port":N} when the control endpoint is up. SIGTERM or SIGINT stops cleanly.
            """)

    @Option(name: .customLong("device"),
            help: "A device as \"NAME:PORT[:ID]\" (PORT 0 = any free port; ID = 32 hex chars, default derived from NAME). Repeatable.")
    var devices: [String] = []

    @Option(help: "A YAML or JSON file of devices (each may have an address of its own) and groups; see docs/simulator.md.")
    var config: String?

    @Option(help: "Give every --device an address of its own, counting up from this IPv4 address (e.g. 127.0.0.2): Cast on 8009, eureka_info on 8008 and 8443; the PORT of --device is then ignored.")
    var ownAddresses: String?

    @Option(name: .customLong("group"),
            help: "A speaker group of the devices as \"NAME=MEMBER,MEMBER...\" (names or ids; the first member leads). Repeatable.")
    var groups: [String] = []

    @Option(help: "With --mdns: announce on this network interface only (default: all).")
    var mdnsInterface: String?

    @Option(help: "Port of the HTTP control endpoint (on --control-address; 0 = any free port; omit to disable).")
    var controlPort: Int?

    @Option(help: "Address of the control endpoint (e.g. a test host's address when cast-sim runs in a network namespace).")
    var controlAddress: String = "127.0.0.1"

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

    @Option(help: "Write the PEM of the simulator's device-auth test root to this file at start (give it to the bridge as cast.device_auth_roots).")
    var deviceAuthRoot: String?

    @Option(help: "How every device answers AuthChallenges at start: \(DeviceAuthBehaviour.allCases.map(\.rawValue).joined(separator: ", ")) (per device later: the device_auth fault action).")
    var deviceAuth: String = DeviceAuthBehaviour.correct.rawValue

    func validate() throws {
        guard !devices.isEmpty || config != nil else {
            throw ValidationError("give at least one --device NAME:PORT[:ID] or a --config file")
        }
        if let ownAddresses, Self.ipv4(ownAddresses) == nil { throw ValidationError("--own-addresses: an IPv4 address") }
        for spec in groups { _ = try Self.parseGroup(spec) }
        guard SimulatedCastType(rawValue: castType) != nil else { throw ValidationError("--cast-type: video, audio or group") }
        for spec in devices { _ = try Self.parseDevice(spec) }
        if let hostile, HostileClass.parseList(hostile) == nil {
            throw ValidationError("--hostile: all, or a comma-separated list of \(HostileClass.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard (10...3_600_000).contains(hostileIntervalMs) else { throw ValidationError("--hostile-interval-ms: 10-3600000") }
        guard DeviceAuthBehaviour(rawValue: deviceAuth) != nil else {
            throw ValidationError("--device-auth: \(DeviceAuthBehaviour.allCases.map(\.rawValue).joined(separator: ", "))")
        }
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

    /// Parses "NAME=MEMBER,MEMBER..." (the name may not contain `=`).
    static func parseGroup(_ spec: String) throws -> SimulatedGroupConfiguration {
        guard let equals = spec.firstIndex(of: "=") else { throw ValidationError("--group \(spec): expected NAME=MEMBER,...") }
        let name = String(spec[..<equals])
        let members = spec[spec.index(after: equals)...].split(separator: ",").map(String.init).filter { !$0.isEmpty }
        guard !name.isEmpty, !members.isEmpty else { throw ValidationError("--group \(spec): expected NAME=MEMBER,...") }
        return SimulatedGroupConfiguration(name: name, members: members)
    }

    /// An IPv4 address as a number (for counting addresses up), nil when it is not one.
    static func ipv4(_ text: String) -> UInt32? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false).map { UInt32($0) }
        guard parts.count == 4, parts.allSatisfy({ ($0 ?? 256) < 256 }) else { return nil }
        return parts.reduce(0) { $0 << 8 | ($1 ?? 0) }
    }

    static func ipv4String(_ value: UInt32) -> String {
        [24, 16, 8, 0].map { String((value >> UInt32($0)) & 0xFF) }.joined(separator: ".")
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
        let base = SimulatedDeviceConfiguration(
            name: "", model: model, castType: type,
            launchLatency: .milliseconds(Int64(max(0, launchLatencyMs))),
            stopLatency: .milliseconds(Int64(max(0, stopLatencyMs))),
            replyLatency: .milliseconds(Int64(max(0, replyLatencyMs))),
            heartbeatInterval: heartbeatInterval > 0 ? TimeAmount.nanoseconds(Duration.seconds(clamping: heartbeatInterval).clampedNanoseconds) : nil,
            idleScreen: !noIdleScreen, supportedMediaCommands: supportedMediaCommands, clock: clock,
            tickInterval: .milliseconds(Int64(min(max(1, mediaTickMs), 60_000))))
        var configurations = try devices.enumerated().map { index, spec -> SimulatedDeviceConfiguration in
            let parsed = try Self.parseDevice(spec)
            var configuration = base
            configuration.name = parsed.name
            configuration.id = parsed.id ?? SimulatedDeviceConfiguration.deviceID(forName: parsed.name)
            configuration.port = parsed.port
            if let first = ownAddresses.flatMap(Self.ipv4) {
                configuration = configuration.onOwnAddress(Self.ipv4String(first &+ UInt32(index)))
            }
            return configuration
        }
        var groupConfigurations = try groups.map(Self.parseGroup)
        if let config {
            let file: SimulatorFile
            do {
                file = try SimulatorFile.load(config)
            } catch {
                logger.error("\(error)")
                throw ExitCode(2)
            }
            configurations += file.deviceConfigurations(base: base)
            groupConfigurations += file.groupConfigurations
        }

        // Install the signal handlers before anything listens, so an early SIGTERM still stops cleanly.
        let stop = StopSignal()
        let simulator: CastSimulator
        do {
            simulator = try await CastSimulator.start(configurations, logger: logger)
            for group in groupConfigurations { try await simulator.addGroup(group) }
        } catch {
            logger.error("could not start: \(error)")
            throw ExitCode(1)
        }
        if let deviceAuthRoot {
            do {
                try DeviceAuthority.shared.rootPEM.write(toFile: deviceAuthRoot, atomically: true, encoding: .utf8)
            } catch {
                logger.error("could not write the device-auth root to \(deviceAuthRoot): \(error)")
                await simulator.shutdown()
                throw ExitCode(1)
            }
        }
        if let behaviour = DeviceAuthBehaviour(rawValue: deviceAuth), behaviour != .correct {
            for device in simulator.devices { await device.setDeviceAuthBehaviour(behaviour) }
        }
        if let hostile, let classes = HostileClass.parseList(hostile) {
            for device in simulator.devices {
                await device.startHostile(classes, interval: .milliseconds(Int64(hostileIntervalMs)), seed: hostileSeed)
            }
            logger.warning("hostile mode: \(classes.map(\.rawValue).joined(separator: ",")) every \(hostileIntervalMs) ms")
        }
        for device in simulator.devices where !device.isGroup {
            struct Line: Encodable { var name: String; var id: String; var host: String; var port: Int }
            Self.printLine((try? CastJSON.encode(Line(name: device.name, id: device.id, host: device.host,
                                                      port: device.port))) ?? "{}")
        }
        for summary in await simulator.groupSummaries() {
            struct Line: Encodable { var group: SimulatedGroupSummary }
            Self.printLine((try? CastJSON.encode(Line(group: summary))) ?? "{}")
        }
        // mDNS: every device and group as a real one announces itself (`ServiceAnnouncement`),
        // kept up to date as groups move, come and go.
        var publisher: MDNSPublisher?
        if mdns {
            do {
                let avahi = try MDNSPublisher(logger: logger)
                let interface = mdnsInterface
                simulator.onAnnouncementsChanged { announcements in
                    var services: [String: PublishedService] = [:]
                    for announcement in announcements {
                        services[announcement.key] = PublishedService(
                            name: announcement.instanceName, port: announcement.port, txt: announcement.txt,
                            hostName: announcement.hostName, address: announcement.address, interface: interface)
                    }
                    avahi.sync(services)
                }
                publisher = avahi
            } catch {
                logger.error("cannot announce over mDNS: \(error)")
            }
        }
        defer { publisher?.stop() }
        var control: ControlServer?
        if let controlPort {
            do {
                control = try await ControlServer.start(simulator: simulator, host: controlAddress, port: controlPort)
                Self.printLine("{\"control_port\":\(control?.port ?? 0)}")
            } catch {
                logger.error("could not start the control endpoint on \(controlAddress):\(controlPort): \(error)")
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
