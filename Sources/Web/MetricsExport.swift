import Foundation

/// `/metrics` and `/healthz`.
extension BridgeMetrics {
    /// Loop turns older than this make `/healthz` fail: the consumer takes at least the one-second
    /// tick, so five seconds without a turn means it is stuck (the systemd watchdog's condition).
    public static let stuckAfter: Duration = .seconds(5)

    public struct Health: Sendable, Equatable {
        public var healthy: Bool
        public var mqttConnected: Bool
        /// Seconds since the consumer last took an input; nil before the first.
        public var loopAge: Double?
    }

    public func health(now: ContinuousClock.Instant = .now) -> Health {
        let l = liveness.withLock { $0 }
        let age = l.lastTurn.map { now - $0 }
        let turning = age.map { $0 < Self.stuckAfter } ?? false
        return Health(healthy: l.mqttConnected && turning, mqttConnected: l.mqttConnected,
                      loopAge: age.map { Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18 })
    }

    /// The Prometheus text exposition, with `# HELP` for every metric of docs/metrics.md.
    public func exposition() -> [UInt8] {
        sampleProcess()
        let text = registry.emitToBuffer()
        var out: [UInt8] = []
        out.reserveCapacity(text.count + 4096)
        var lineStart = 0
        for i in text.indices where text[i] == UInt8(ascii: "\n") {
            let line = text[lineStart...i]
            if line.starts(with: Array("# TYPE ".utf8)) {
                let name = String(decoding: line.dropFirst(7).prefix { $0 != UInt8(ascii: " ") }, as: UTF8.self)
                if let help = Self.help[name] { out.append(contentsOf: "# HELP \(name) \(help)\n".utf8) }
            }
            out.append(contentsOf: line)
            lineStart = i + 1
        }
        return out
    }

    /// RSS, descriptors and CPU time from /proc (at each scrape; nothing runs in between).
    func sampleProcess() {
        let page = Double(sysconf(Int32(_SC_PAGESIZE)))
        if let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) {
            let fields = statm.split(separator: " ")
            if fields.count > 1, let pages = Double(fields[1]) { processRSS.record(pages * page) }
        }
        if let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") {
            processFDs.record(entries.count)
        }
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 { processMaxFDs.record(Double(limit.rlim_cur)) }
        var usage = rusage()
        if getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage) == 0 {
            let seconds = Double(usage.ru_utime.tv_sec) + Double(usage.ru_stime.tv_sec)
                + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
            let delta = labeled.withLock { l -> Double in
                let d = seconds - l.cpuSeconds
                l.cpuSeconds = max(l.cpuSeconds, seconds)
                return d
            }
            if delta > 0 { processCPU.increment(by: delta) }
        }
    }

    /// `# HELP` text per metric (docs/metrics.md has the same list with the labels).
    static let help: [String: String] = [
        "cast2mqtt_info": "The bridge's version (label version); always 1.",
        "cast2mqtt_devices": "Devices the bridge knows.",
        "cast2mqtt_devices_online": "Devices whose Cast connection is up and answering.",
        "cast2mqtt_commands_waiting": "Commands and bridge steps waiting behind a device's running operation.",
        "cast2mqtt_operations_in_flight": "Cast operations handed to devices and not yet completed.",
        "cast2mqtt_commands_total": "Commands and bridge requests answered, by command and result code.",
        "cast2mqtt_command_duration_seconds": "From a command's arrival to its response, by command and result code.",
        "cast2mqtt_cast_request_duration_seconds": "From handing an operation to a device to its completion, by operation and result.",
        "cast2mqtt_cast_connects_total": "Device connections that came up (kind connected: first time; reconnected).",
        "cast2mqtt_cast_disconnects_total": "Device connections lost, by reason.",
        "cast2mqtt_cast_messages_total": "Cast messages received from and sent to devices.",
        "cast2mqtt_cast_bytes_total": "Cast message payload bytes received from and sent to devices.",
        "cast2mqtt_input_queue_depth": "Inputs waiting for the bridge's loop.",
        "cast2mqtt_input_overload_total": "Inputs the overloaded queue coalesced, answered busy or dropped, by kind.",
        "cast2mqtt_mqtt_connected": "1 while the broker connection is up.",
        "cast2mqtt_mqtt_reconnects_total": "Broker connections after the first.",
        "cast2mqtt_mqtt_messages_total": "MQTT messages received and published.",
        "cast2mqtt_mqtt_bytes_total": "MQTT payload bytes received and published.",
        "cast2mqtt_web_clients": "Web pages connected over the WebSocket.",
        "cast2mqtt_web_login_failures_total": "Failed web logins (wrong token).",
        "process_resident_memory_bytes": "Resident memory of the daemon.",
        "process_open_fds": "Open file descriptors of the daemon.",
        "process_max_fds": "The daemon's descriptor limit.",
        "process_cpu_seconds_total": "CPU time (user and system) the daemon used.",
        "process_start_time_seconds": "When the daemon started, Unix time.",
    ]
}
