import Bridge
import CastProtocol
import Testing

@testable import cast2mqtt

/// The daemon's bounded input queue: order kept, statuses coalesced only under load, one tick,
/// commands past the bound answered busy (never dropped), app messages dropped past it.
@Suite struct InputQueueTests {
    func volume(_ level: Double) -> ReceiverStatus {
        ReceiverStatus(applications: [], volume: ReceiverVolume(controlType: "attenuation", level: level, muted: false, stepInterval: 0.05))
    }

    func drain(_ q: InputQueue) async -> [RuntimeInput] {
        var out: [RuntimeInput] = []
        while q.count > 0, let next = await q.next() { out.append(next) }
        return out
    }

    @Test func keepsOrderAndEveryStatusBelowTheSoftLimit() async {
        let q = InputQueue(softLimit: 100, hardLimit: 200)
        for i in 0..<10 { q.push(.bridge(.receiverStatus("a", volume(Double(i) / 10)))) }
        q.push(.bridge(.operationCompleted(OperationToken(1), .success(.done))))
        let got = await drain(q)
        #expect(got.count == 11)
        guard case .bridge(.receiverStatus(_, let first))? = got.first else { Issue.record("not a status"); return }
        #expect(first.volume?.level == 0)
        #expect(q.counters.coalescedStatuses == 0)
    }

    @Test func coalescesStatusesOfOneDeviceUnderLoad() async {
        let q = InputQueue(softLimit: 5, hardLimit: 1000)
        for i in 0..<5 { q.push(.bridge(.castConnected("filler-\(i)"))) }
        q.push(.bridge(.receiverStatus("a", volume(0.1))))
        q.push(.bridge(.mediaStatus("a", [])))
        q.push(.bridge(.receiverStatus("b", volume(0.5))))
        q.push(.bridge(.receiverStatus("a", volume(0.2))))
        q.push(.bridge(.receiverStatus("a", volume(0.3))))
        let got = await drain(q)
        #expect(got.count == 8)
        let levels = got.compactMap { input -> Double? in
            if case .bridge(.receiverStatus("a", let s)) = input { return s.volume?.level }
            return nil
        }
        #expect(levels == [0.3], "the newest status replaces the waiting one, in its place")
        #expect(q.counters.coalescedStatuses == 2)
    }

    @Test func oneTickAtATime() async {
        let q = InputQueue()
        q.push(.bridge(.castConnected("x")))
        q.push(.bridge(.tick))
        q.push(.bridge(.tick))
        q.push(.bridge(.tick))
        #expect(q.count == 2)
        #expect(q.counters.droppedTicks == 2)
        _ = await drain(q)
        q.push(.bridge(.castConnected("x")))
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

    @Test func aWaitingConsumerIsWokenAndFinishEnds() async {
        let q = InputQueue()
        async let first = q.next()
        try? await Task.sleep(for: .milliseconds(50))
        q.push(.bridge(.tick))
        if case .bridge(.tick)? = await first {} else { Issue.record("expected the tick") }
        async let end = q.next()
        try? await Task.sleep(for: .milliseconds(50))
        q.finish()
        #expect(await end == nil)
        q.push(.bridge(.tick))
        #expect(q.count == 0)
    }
}
