import Bridge
import CastClient
import CastProtocol
import Discovery
import KnownDevices
import Logging
import NIOConcurrencyHelpers
import NIOPosix
import Testing

@testable import cast2mqtt

/// The daemon's bounded input queue: order kept, statuses coalesced only under load, one tick,
/// commands past the bound answered busy (never dropped), app messages dropped past it.
@Suite struct InputQueueTests {
    /// A snapshot of an online device with a volume level (what its client would hand over).
    func snapshot(_ level: Double, generation: Int = 1, online: Bool = true) -> DeviceSnapshot {
        DeviceSnapshot(generation: generation, link: online ? .online : .offline(reason: .heartbeatTimeout, silentSince: nil),
                       receiver: ReceiverStatus(applications: [], volume: ReceiverVolume(controlType: "attenuation", level: level,
                                                                                         muted: false, stepInterval: 0.05)))
    }

    func drain(_ q: InputQueue) async -> [RuntimeInput] {
        var out: [RuntimeInput] = []
        while case .input(let next) = q.next() { out.append(next) }
        return out
    }

    /// Each device's inputs in the order they came out: `L<level>`, `off`, `done`, `msg`.
    func trace(_ inputs: [RuntimeInput], of id: DeviceID) -> [String] {
        inputs.compactMap { input in
            switch input {
            case .bridge(.device(id, let s)):
                return s.isOnline ? "L\(s.receiver?.volume?.level ?? -1)" : "off"
            case .bridge(.operationCompleted(id, _, _)): return "done"
            case .bridge(.appMessage(id, _, _)): return "msg"
            default: return nil
            }
        }
    }

    func fill(_ q: InputQueue, _ n: Int) {
        for i in 0..<n { q.push(.bridge(.device("filler-\(i)", snapshot(0)))) }
    }

    @Test func keepsOrderAndEverySnapshotBelowTheSoftLimit() async {
        let q = InputQueue(softLimit: 100, hardLimit: 200)
        for i in 0..<10 { q.push(.bridge(.device("a", snapshot(Double(i) / 10)))) }
        q.push(.bridge(.operationCompleted("a", OperationToken(1), .success(.done))))
        let got = await drain(q)
        #expect(got.count == 11)
        #expect(trace(got, of: "a") == (0..<10).map { "L\(Double($0) / 10)" } + ["done"])
        #expect(q.counters.coalescedStatuses == 0)
    }

    @Test func coalescesSnapshotsOfOneDeviceUnderLoad() async {
        let q = InputQueue(softLimit: 5, hardLimit: 1000)
        fill(q, 5)
        q.push(.bridge(.device("a", snapshot(0.1))))
        q.push(.bridge(.device("b", snapshot(0.5))))
        q.push(.bridge(.device("a", snapshot(0.2))))
        q.push(.bridge(.device("a", snapshot(0.3))))
        let got = await drain(q)
        #expect(got.count == 7)
        #expect(trace(got, of: "a") == ["L0.3"], "the newest snapshot replaces the waiting one, in its place")
        #expect(trace(got, of: "b") == ["L0.5"])
        #expect(q.counters.coalescedStatuses == 2)
    }

    /// The stuck-offline bug: under load, the first status of a new connection must not move in
    /// front of the disconnect (or anything else of its device) queued before it.
    @Test func aSnapshotNeverOvertakesItsDevice() async {
        let q = InputQueue(softLimit: 5, hardLimit: 1000)
        fill(q, 5)
        q.push(.bridge(.device("a", snapshot(0.1, generation: 1))))
        q.push(.bridge(.device("a", snapshot(0.1, generation: 1, online: false))))
        q.push(.bridge(.device("a", snapshot(0.2, generation: 2))))
        q.push(.bridge(.device("a", snapshot(0.3, generation: 2))))
        q.push(.bridge(.operationCompleted("a", OperationToken(7), .success(.done))))
        q.push(.bridge(.device("a", snapshot(0.4, generation: 2))))
        q.push(.bridge(.appMessage("a", namespace: "urn:x-cast:x", payload: .string("{}"))))
        q.push(.bridge(.device("a", snapshot(0.5, generation: 2))))
        let got = await drain(q)
        // gen 1 online, gen 1 offline (not replaced: its generation), gen 2 replaced once by the
        // next gen 2 (nothing between), then the completion and the app message keep the rest apart.
        #expect(trace(got, of: "a") == ["L0.1", "off", "L0.3", "done", "L0.4", "msg", "L0.5"])
        #expect(q.counters.coalescedStatuses == 1)
    }

    @Test func oneTickAtATime() async {
        let q = InputQueue()
        q.push(.bridge(.device("x", snapshot(0))))
        q.push(.bridge(.tick))
        q.push(.bridge(.tick))
        q.push(.bridge(.tick))
        #expect(q.count == 2)
        #expect(q.counters.droppedTicks == 2)
        _ = await drain(q)
        q.push(.bridge(.device("x", snapshot(0))))
        q.push(.bridge(.tick))
        #expect(q.count == 2, "a tick may wait again once the last one was taken")
    }

    @Test func commandsPastTheBoundAreMarkedNotDropped() async {
        let q = InputQueue(softLimit: 2, hardLimit: 4)
        for i in 0..<10 {
            q.push(.bridge(.mqttMessage(topic: "cast2mqtt/tv/command/volume", payload: Array("\(i)".utf8),
                                        responseTopic: nil, correlationData: nil)))
            q.push(.bridge(.appMessage("tv", namespace: "urn:x-cast:x", payload: .string("{}"))))
        }
        let got = await drain(q)
        var normal = 0, overloaded = 0, appMessages = 0
        for input in got {
            switch input {
            case .bridge(.mqttMessage): normal += 1
            case .bridge(.mqttOverloaded): overloaded += 1
            case .bridge(.appMessage): appMessages += 1
            default: break
            }
        }
        #expect(normal + overloaded == 10, "every command is delivered, run or to be answered busy")
        #expect(overloaded > 0)
        #expect(appMessages < 10)
        #expect(q.counters.overloadedCommands == overloaded)
        #expect(q.counters.droppedAppMessages == 10 - appMessages)
    }

    /// The limits grow with the fleet: a snapshot per device of a large fleet waiting at once (a
    /// start, a broker reconnect) is normal operation, not an overload.
    @Test func theLimitsGrowWithTheFleet() async {
        let q = InputQueue(softLimit: 100, hardLimit: 400)
        q.accommodate(devices: 20)
        #expect(q.softLimit == 100 && q.hardLimit == 400, "never below the limits it was made with")
        let devices = 500
        q.accommodate(devices: devices)
        #expect(q.softLimit == devices * InputQueue.softPerDevice)
        #expect(q.hardLimit == devices * InputQueue.hardPerDevice)
        q.accommodate(devices: 10)
        #expect(q.softLimit == 1000, "they only grow")
        // Two snapshots of every device waiting: every one kept, no burst, no command answered busy.
        let bursts = NIOLockedValueBox(0)
        let sized = InputQueue(softLimit: 100, hardLimit: 400, onBurst: { _ in bursts.withLockedValue { $0 += 1 } })
        sized.accommodate(devices: devices)
        for round in 0..<2 {
            for i in 0..<devices { sized.push(.bridge(.device("d\(i)", snapshot(Double(round) / 10)))) }
        }
        sized.push(.bridge(.mqttMessage(topic: "cast2mqtt/tv/command/volume", payload: Array("20".utf8),
                                        responseTopic: nil, correlationData: nil)))
        let got = await drain(sized)
        #expect(got.count == 2 * devices + 1)
        #expect(sized.counters == InputQueue.Counters())
        #expect(bursts.withLockedValue { $0 } == 0)
        if case .bridge(.mqttMessage)? = got.last {} else { Issue.record("the command is run, not answered busy") }
    }

    /// The daemon's fleet sizes the queue as it starts each device's client.
    @Test func theFleetSizesTheQueueAsDevicesArrive() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let q = InputQueue(softLimit: 2, hardLimit: 4)
        var fleet = try Fleet(group: group, coreLoop: group.next(), cast: CastConnectionConfiguration(),
                              logger: Logger(label: "test"), inputs: q)
        var devices = DeviceFacts<CastDeviceClient>(statics: [], filter: DeviceFilter(include: [], exclude: []))
        // TEST-NET-1: nothing answers; the clients are closed before they matter.
        let ids = (1...3).map { String(format: "%032x", $0) }
        for id in ids {
            _ = fleet.apply(.added(CastDeviceRecord(id: id, friendlyName: "TV \(id.suffix(1))", host: "192.0.2.9")), to: &devices)
        }
        #expect(q.softLimit == 3 * InputQueue.softPerDevice)
        #expect(q.hardLimit == 3 * InputQueue.hardPerDevice)
        for id in ids { try await Fleet.drop(id, from: &devices)?.get() }
        try await group.shutdownGracefully()
    }

    /// Sizing from other threads while inputs are pushed (the fleet starts clients on any loop).
    @Test func accommodateIsSafeFromManyThreads() async {
        let q = InputQueue(softLimit: 10, hardLimit: 40)
        await withTaskGroup(of: Void.self) { group in
            for t in 0..<8 {
                group.addTask {
                    for i in 0..<200 {
                        q.accommodate(devices: t * 200 + i)
                        q.push(.bridge(.device("t\(t)-\(i)", snapshot(0))))
                    }
                }
            }
        }
        #expect(q.softLimit == 1599 * InputQueue.softPerDevice)
        #expect(q.hardLimit == 1599 * InputQueue.hardPerDevice)
        #expect(await drain(q).count == 1600)
    }

    /// The consumer is scheduled once when an input finds it idle, not once per input; after it
    /// has taken everything it is idle again; `finish` wakes it for the end.
    @Test func theConsumerIsScheduledWhenAnInputFindsItIdle() async {
        let q = InputQueue()
        let wakes = NIOLockedValueBox(0)
        q.push(.bridge(.tick))
        q.consume { wakes.withLockedValue { $0 += 1 } }
        #expect(wakes.withLockedValue { $0 } == 1, "what waited before it was set up schedules it")
        q.push(.bridge(.device("a", snapshot(0.1))))
        q.push(.bridge(.device("b", snapshot(0.2))))
        #expect(wakes.withLockedValue { $0 } == 1, "scheduled already: no second wake")
        #expect(await drain(q).count == 3)
        guard case .idle = q.next() else { Issue.record("expected idle"); return }
        q.push(.bridge(.device("a", snapshot(0.3))))
        #expect(wakes.withLockedValue { $0 } == 2, "idle again: the next input wakes it")
        _ = await drain(q)
        q.finish()
        #expect(wakes.withLockedValue { $0 } == 3, "finish wakes it for the end")
        guard case .finished = q.next() else { Issue.record("expected the end"); return }
        q.push(.bridge(.tick))
        #expect(q.count == 0, "nothing is taken after the end")
    }
}
