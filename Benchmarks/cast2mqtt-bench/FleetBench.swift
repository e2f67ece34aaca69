import CastClient
import CastProtocol
import CastSimulator
import Foundation
import Logging
import NIOCore
import NIOPosix
import Synchronization

/// N simulated devices and N `CastDeviceClient`s in one process: connect time, memory, request
/// round trips and idle CPU with heartbeats running.
enum FleetBench {
    struct Options {
        var devices: Int
        var requests: Int
        var concurrency: Int
        var idleSeconds: Double
        var heartbeatSeconds: Int
        var connectTimeout: Double
        var sharedGroup: Bool
        var deviceAuth: DeviceAuthMode = .off
    }

    /// Connection bookkeeping shared by the per-client event readers.
    final class Tracker: Sendable {
        struct State {
            var connectedAt: [UInt64?]
            var connected = 0
            var disconnects = 0
        }
        let state: Mutex<State>
        init(count: Int) { state = Mutex(State(connectedAt: Array(repeating: nil, count: count))) }

        func connected(_ index: Int) {
            let now = Measure.nanos()
            state.withLock {
                if $0.connectedAt[index] == nil { $0.connectedAt[index] = now; $0.connected += 1 }
            }
        }
        func disconnected() { state.withLock { $0.disconnects += 1 } }
        var connectedCount: Int { state.withLock { $0.connected } }
        var disconnects: Int { state.withLock { $0.disconnects } }
        var times: [UInt64?] { state.withLock { $0.connectedAt } }
    }

    /// Per-thread CPU clocks of a group's event loop threads.
    static func loopClocks(_ group: MultiThreadedEventLoopGroup) async throws -> [clockid_t] {
        var clocks: [clockid_t] = []
        for loop in group.makeIterator() {
            clocks.append(try await loop.submit { Measure.currentThreadCPUClock() }.get())
        }
        return clocks
    }

    static func cpu(_ clocks: [clockid_t]) -> Double { clocks.reduce(0) { $0 + Measure.threadCPUSeconds($1) } }

    static func quietLogger(_ label: String) -> Logger {
        var logger = Logger(label: label)
        logger.logLevel = .error
        return logger
    }

    static func run(_ o: Options) async throws -> [String: String] {
        var result: [String: String] = ["devices": "\(o.devices)"]
        let (before, after) = Measure.raiseFileLimit()
        print("fleet: \(o.devices) devices, device auth \(o.deviceAuth.rawValue), RLIMIT_NOFILE \(before) -> \(after), \(System.coreCount) event loop threads for clients, "
              + (o.sharedGroup ? "simulator on the same group" : "simulator on its own group of \(System.coreCount)"))
        if after < UInt64(o.devices * 2 + 64) {
            throw BenchError("RLIMIT_NOFILE \(after) is too low for \(o.devices) devices (2 sockets each in one process)")
        }
        let rssStart = Measure.rssMiB()

        let clientGroup = MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount)
        let simGroup = o.sharedGroup ? clientGroup : MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount)
        let simulator = CastSimulator(group: simGroup, logger: quietLogger("bench.sim"))
        var clients: [CastDeviceClient] = []
        var readers: [Task<Void, Never>] = []

        func teardown() async {
            await withTaskGroup(of: Void.self) { group in
                for client in clients { group.addTask { await client.shutdown() } }
            }
            for reader in readers { reader.cancel() }
            await simulator.shutdown()
            try? await clientGroup.shutdownGracefully()
            if !o.sharedGroup { try? await simGroup.shutdownGracefully() }
        }

        do {
            // 1. Simulated devices (each generates a P-256 identity and binds a listener).
            var t = Measure.nanos()
            let heartbeat = TimeAmount.seconds(Int64(o.heartbeatSeconds))
            var ports = [Int](repeating: 0, count: o.devices)
            try await withThrowingTaskGroup(of: (Int, Int).self) { group in
                var next = 0
                func add() {
                    let i = next
                    next += 1
                    group.addTask {
                        let device = try await simulator.addDevice(SimulatedDeviceConfiguration(
                            name: "Bench Device \(i)", launchLatency: .milliseconds(10), replyLatency: .zero,
                            heartbeatInterval: heartbeat, tickInterval: .seconds(1)))
                        return (i, device.port)
                    }
                }
                for _ in 0..<min(8, o.devices) { add() }
                while let (i, port) = try await group.next() {
                    ports[i] = port
                    if next < o.devices { add() }
                }
            }
            let simSeconds = Double(Measure.nanos() - t) / 1e9
            let rssSim = Measure.rssMiB()
            print("  simulator: \(o.devices) devices listening after \(Format.fixed(simSeconds, 2)) s; RSS \(Format.fixed(rssStart)) -> \(Format.fixed(rssSim)) MiB")

            // 2. Clients (one NIOSSLContext each, as CastDeviceClient.init makes it).
            t = Measure.nanos()
            let configuration = CastConnectionConfiguration(heartbeatInterval: .seconds(o.heartbeatSeconds), deviceAuth: o.deviceAuth)
            let logger = quietLogger("bench.client")
            // With device auth: the simulator's test authority is made here (RSA key generation),
            // outside the connect time, and trusted by the clients.
            let trust = o.deviceAuth == .off ? DeviceAuthTrustStore.castRoots
                : DeviceAuthTrustStore(anchors: DeviceAuthTrustStore.castRoots.anchors + [DeviceAuthority.shared.root])
            for port in ports {
                clients.append(try CastDeviceClient(address: CastDeviceAddress(host: "127.0.0.1", port: port),
                                                    configuration: configuration, eventLoop: clientGroup.next(), logger: logger,
                                                    deviceAuthTrust: trust))
            }
            let createSeconds = Double(Measure.nanos() - t) / 1e9
            let rssClients = Measure.rssMiB()
            print("  clients created in \(Format.fixed(createSeconds * 1000, 1)) ms; RSS \(Format.fixed(rssClients)) MiB "
                  + "(+\(Format.fixed((rssClients - rssSim) * 1024 / Double(o.devices), 1)) KiB per client before connecting)")

            // 3. Connect all.
            let tracker = Tracker(count: o.devices)
            for (i, client) in clients.enumerated() {
                let events = client.events
                readers.append(Task {
                    var online = false
                    for await case .snapshot(let snapshot) in events where snapshot.isOnline != online {
                        online = snapshot.isOnline
                        if online { tracker.connected(i) } else { tracker.disconnected() }
                    }
                })
            }
            let connectStart = Measure.nanos()
            for client in clients { client.start() }
            let connectDeadline = connectStart + UInt64(o.connectTimeout * 1e9)
            while tracker.connectedCount < o.devices, Measure.nanos() < connectDeadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            let connected = tracker.connectedCount
            let connectSeconds = Double(Measure.nanos() - connectStart) / 1e9
            guard connected == o.devices else {
                throw BenchError("only \(connected) of \(o.devices) devices connected within \(o.connectTimeout) s")
            }
            var perDevice = Samples(capacity: o.devices)
            for time in tracker.times { if let time { perDevice.add(time - connectStart) } }
            let rssConnected = Measure.rssMiB()
            print("  all \(o.devices) connected after \(Format.fixed(connectSeconds, 2)) s (each device: p50 \(Format.fixed(Double(perDevice.percentile(50)) / 1e6)) ms, "
                  + "p99 \(Format.fixed(Double(perDevice.percentile(99)) / 1e6)) ms since start); disconnects \(tracker.disconnects)")
            print("  RSS after connect: \(Format.fixed(rssConnected)) MiB (process total: simulator + clients + runtime); "
                  + "+\(Format.fixed((rssConnected - rssSim) * 1024 / Double(o.devices), 1)) KiB per device pair since the simulator was up")
            result["connect_s"] = Format.fixed(connectSeconds, 2)
            result["rss_mib"] = Format.fixed(rssConnected)
            result["rss_per_pair_kib"] = Format.fixed((rssConnected - rssSim) * 1024 / Double(o.devices), 1)
            result["sim_rss_mib"] = Format.fixed(rssSim - rssStart)

            // 4. Request round trips: getReceiverStatus, first one at a time, then `concurrency` in flight.
            let clientList = clients
            var sequential = Samples(capacity: o.requests)
            var failures = 0
            let rttDeadline = Measure.nanos() + 60_000_000_000
            for i in 0..<o.requests where Measure.nanos() < rttDeadline {
                let start = Measure.nanos()
                do {
                    _ = try await clientList[(i * 7919) % clientList.count].requests.getReceiverStatus().get()
                    sequential.add(Measure.nanos() - start)
                } catch { failures += 1 }
            }
            func line(_ label: String, _ s: inout Samples) -> String {
                "\(label): n=\(s.count) p50 \(Format.micros(s.percentile(50))) us, p90 \(Format.micros(s.percentile(90))) us, "
                    + "p99 \(Format.micros(s.percentile(99))) us, max \(Format.micros(s.percentile(100))) us"
            }
            print("  " + line("getReceiverStatus, 1 in flight", &sequential))
            result["rtt_p50_us"] = Format.micros(sequential.percentile(50))
            result["rtt_p99_us"] = Format.micros(sequential.percentile(99))
            result["rtt_max_us"] = Format.micros(sequential.percentile(100))

            let workers = max(1, min(o.concurrency, o.requests))
            let perWorker = o.requests / workers
            let concurrentStart = Measure.nanos()
            let outcome = await withTaskGroup(of: ([UInt64], Int).self) { group in
                for w in 0..<workers {
                    group.addTask {
                        var times: [UInt64] = []
                        var failed = 0
                        for j in 0..<perWorker where Measure.nanos() < rttDeadline + 30_000_000_000 {
                            let start = Measure.nanos()
                            do {
                                _ = try await clientList[(w + j * workers) % clientList.count].requests.getReceiverStatus().get()
                                times.append(Measure.nanos() - start)
                            } catch { failed += 1 }
                        }
                        return (times, failed)
                    }
                }
                var all = Samples(capacity: o.requests)
                var failed = 0
                for await (times, f) in group { for x in times { all.add(x) }; failed += f }
                return (all, failed)
            }
            var concurrent = outcome.0
            failures += outcome.1
            let concurrentSeconds = Double(Measure.nanos() - concurrentStart) / 1e9
            print("  " + line("getReceiverStatus, \(workers) in flight", &concurrent)
                  + ", \(Format.count(Double(concurrent.count) / concurrentSeconds)) requests/s")
            if failures > 0 { print("  request failures: \(failures)") }
            result["rtt_conc_p50_us"] = Format.micros(concurrent.percentile(50))
            result["rtt_conc_p99_us"] = Format.micros(concurrent.percentile(99))
            result["rps"] = Format.fixed(Double(concurrent.count) / concurrentSeconds, 0)
            result["failures"] = "\(failures)"

            // 5. Idle: everything connected, heartbeats running (both sides PING every interval).
            let clientClocks = try await loopClocks(clientGroup)
            let simClocks = o.sharedGroup ? [] : try await loopClocks(simGroup)
            try await Task.sleep(for: .seconds(1))
            let disconnectsBefore = tracker.disconnects
            let cpu0 = Measure.processCPUSeconds(), client0 = cpu(clientClocks), sim0 = cpu(simClocks)
            let wall0 = Measure.nanos()
            try await Task.sleep(for: .seconds(o.idleSeconds))
            let wall = Double(Measure.nanos() - wall0) / 1e9
            let total = (Measure.processCPUSeconds() - cpu0) / wall * 100
            let clientCPU = (cpu(clientClocks) - client0) / wall * 100
            let simCPU = (cpu(simClocks) - sim0) / wall * 100
            print("  idle \(Format.fixed(wall, 1)) s: process CPU \(Format.fixed(total, 2)) % of one core"
                  + (o.sharedGroup ? "" : " (client loops \(Format.fixed(clientCPU, 2)) %, simulator loops \(Format.fixed(simCPU, 2)) %)")
                  + "; disconnects during idle \(tracker.disconnects - disconnectsBefore); RSS \(Format.fixed(Measure.rssMiB())) MiB")
            result["idle_cpu_pct"] = Format.fixed(total, 2)
            result["idle_client_cpu_pct"] = o.sharedGroup ? "-" : Format.fixed(clientCPU, 2)
            result["disconnects"] = "\(tracker.disconnects)"
        } catch {
            await teardown()
            throw error
        }
        let shutdownStart = Measure.nanos()
        await teardown()
        print("  shutdown of \(o.devices) clients and devices: \(Format.fixed(Double(Measure.nanos() - shutdownStart) / 1e9, 2)) s")
        return result
    }
}
