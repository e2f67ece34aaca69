import ArgumentParser
import Bridge
import Discovery
import Foundation
import Logging
import ServiceLifecycle
import Web

@main
struct Cast2MQTT: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cast2mqtt",
        abstract: "Bridges Google Cast devices to MQTT.",
        version: BridgeConfiguration().version,
        subcommands: [Run.self, CheckConfig.self, Devices.self],
        defaultSubcommand: Run.self)
}

struct CommonOptions: ParsableArguments {
    @Option(name: .shortAndLong, help: "Configuration file (YAML). Without one, defaults and CAST2MQTT_* variables apply.")
    var config: String?

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical (overrides log.level).")
    var logLevel: String?

    func load() throws -> BridgeConfiguration {
        do {
            var environment = ProcessInfo.processInfo.environment
            var addonDevices: [BridgeConfiguration.StaticDevice] = []
            // A Home Assistant add-on: its options over the environment, the broker from the
            // Supervisor unless mqtt.url names one (docs/configuration.md).
            if Supervisor.token(environment) != nil {
                let options = try SupervisorClient.options(environment)
                let yaml = config.flatMap { try? String(contentsOfFile: $0, encoding: .utf8) }
                environment = Supervisor.environment(environment, options: options, yaml: yaml,
                                                     generatedToken: SupervisorClient.randomToken())
                addonDevices = options.devices
            }
            var loaded = try ConfigurationLoader.load(path: config, environment: environment)
            loaded.discovery.devices += addonDevices
            if loaded.mqtt.url == Supervisor.brokerFromSupervisor, Supervisor.token(environment) == nil {
                throw ConfigurationError(path: "mqtt.url", message: "supervisor needs SUPERVISOR_TOKEN (set by Home Assistant for its add-ons)")
            }
            // The device-auth trust anchors are read now, so `check-config` finds a bad file too.
            _ = try Adapt.deviceAuthPolicy(loaded)
            return loaded
        } catch {
            // A bad configuration is the operator's to fix, not a crash to restart from: one
            // line naming the key and what it accepts, and exit code 2 (systemd's
            // RestartPreventExitStatus=2 keeps it from looping).
            FileHandle.standardError.write(Data("cast2mqtt: configuration: \(error)\n".utf8))
            throw ExitCode(2)
        }
    }

    /// The configuration with `--log-level` in `log.level`.
    func effective(_ configuration: BridgeConfiguration) throws -> BridgeConfiguration {
        guard let name = logLevel else { return configuration }
        guard Logger.Level(rawValue: name.lowercased()) != nil else { throw ValidationError("unknown log level '\(name)'") }
        var c = configuration
        c.log.level = name.lowercased()
        return c
    }

    /// The daemon's logging (Logging.swift): a logger per component at the levels of
    /// `configuration.log`, to stderr and, with `tail`, to the web page's log tail. Returns the
    /// `bridge` component's logger.
    func logger(for configuration: BridgeConfiguration, tail: LogTail? = nil) throws -> Logger {
        let control = LogControl.shared
        control.apply(LogLevels(try effective(configuration).log))
        LoggingSystem.bootstrap { label in ComponentLogHandler(label: label, control: control, tail: tail) }
        return Logger(label: LogLabel.root)
    }
}

extension Cast2MQTT {
    struct Run: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Run the bridge (the daemon).")

        @OptionGroup var options: CommonOptions

        func run() async throws {
            // First: a SIGTERM while the daemon is still starting is an orderly shutdown too.
            let signals = ShutdownSignals()
            var config = try options.effective(try options.load())
            let tail = LogTail()
            let logger = try options.logger(for: config, tail: config.web.enabled ? tail : nil)
            let environment = ProcessInfo.processInfo.environment
            if config.mqtt.url == Supervisor.brokerFromSupervisor, let token = Supervisor.token(environment) {
                do {
                    let broker = try await SupervisorClient.broker(environment: environment, token: token, logger: logger)
                    broker.apply(to: &config)
                    logger.info("MQTT broker from the Supervisor", metadata: ["mqtt.broker": "\(broker.url)",
                                                                             "mqtt.username": "\(broker.username ?? "(none)")"])
                } catch {
                    logger.critical("no MQTT broker: the Supervisor did not name one (is the MQTT service, e.g. the Mosquitto add-on, installed?)",
                                    metadata: ["error": "\(error)"])
                    throw ExitCode(1)
                }
            }
            let metrics = BridgeMetrics.bootstrap(version: config.version)
            raiseDescriptorLimit(logger: logger)
            logger.info("starting", metadata: ["version": "\(config.version)", "mqtt.broker": "\(config.mqtt.urls.joined(separator: ", "))",
                                               "mqtt.base_topic": "\(config.mqtt.baseTopic)"])
            let runtime = BridgeRuntime(configuration: config, logger: logger, metrics: metrics, logTail: tail)
            let daemon = try runtime.makeDaemon()
            // Web, MQTT, the consumer, discovery: started together, stopped in the reverse order
            // (Services.swift).
            // SIGTERM and SIGINT reach the group through `signals` (caught since the start).
            let group = ServiceGroup(configuration: ServiceGroupConfiguration(
                services: daemon.services,
                gracefulShutdownSignals: [],
                logger: logger))
            signals.attach(group)
            do {
                try await group.run()
            } catch {
                await daemon.closeLoops()
                signals.detach()
                throw error
            }
            await daemon.closeLoops()
            signals.detach()
        }
    }

    struct CheckConfig: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "check-config",
            abstract: "Validate the configuration and print the effective settings (secrets masked).")

        @OptionGroup var options: CommonOptions

        func run() async throws {
            let config = try options.load()
            print(ConfigurationLoader.printable(config))
        }
    }

    struct Devices: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Discover devices for a few seconds and print them as a table.")

        @OptionGroup var options: CommonOptions

        @Option(help: "How long to listen, in seconds.")
        var seconds: Double = 5

        func run() async throws {
            let config = try options.load()
            var logger = try options.logger(for: config)
            if options.logLevel == nil { logger.logLevel = .warning }
            let discovery = DeviceDiscovery(configuration: config.discovery, logger: logger)
            discovery.start()
            try await Task.sleep(for: .seconds(max(0.5, min(seconds, 600))))
            let records = discovery.devices.values.sorted { $0.friendlyName < $1.friendlyName }
            discovery.stop()
            print(DeviceTable.render(records))
        }
    }
}

enum DeviceTable {
    static func render(_ records: [CastDeviceRecord]) -> String {
        let header = ["NAME", "ID", "MODEL", "TYPE", "ADDRESS", "SOURCE"]
        let rows = records.map { r in
            [r.friendlyName, r.id, r.model ?? "-", r.castType.rawValue, "\(r.host):\(r.port)", r.source.rawValue]
        }
        guard !rows.isEmpty else { return "no devices found" }
        let widths = header.indices.map { i in ([header] + rows).map { $0[i].count }.max() ?? 0 }
        return ([header] + rows).map { row in
            row.enumerated().map { i, cell in cell.padding(toLength: widths[i], withPad: " ", startingAt: 0) }
                .joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        }.joined(separator: "\n")
    }
}

/// A thousand Cast connections need more descriptors than the usual soft limit of 1024.
func raiseDescriptorLimit(logger: Logger) {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
    let old = limit.rlim_cur
    limit.rlim_cur = limit.rlim_max
    if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 {
        logger.debug("raised the descriptor limit", metadata: ["from": "\(old)", "to": "\(limit.rlim_cur)"])
    }
}
