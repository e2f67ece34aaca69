import Bridge
import NIOConcurrencyHelpers
import Testing

@testable import cast2mqtt

/// One turn of the consumer: it says `more` whenever something is left (inputs past its count or
/// its time, or a part of the core's background work), `idle` only when the queue is empty and
/// has marked it so; an owed part runs after the turn's inputs.
@Suite struct ConsumerTurnTests {
    static func queue(_ n: Int) -> InputQueue {
        let q = InputQueue()
        for _ in 0..<n { q.push(.bridge(.tick)) }
        for i in 0..<n { q.push(.bridge(.mqttMessage(topic: "t/\(i)", payload: [], responseTopic: nil, correlationData: nil))) }
        return q
    }

    @Test func aTurnThatEndsOnItsCountLeavesTheRestForTheNext() {
        let q = Self.queue(150)  // one tick (coalesced) and 150 messages
        var taken = 0
        let first = ConsumerTurn.run(inputs: q, limit: 100, budget: .seconds(60), partOwed: { false },
                                     take: { _ in taken += 1 }, part: {})
        #expect(first == .more, "inputs wait: the consumer must come back for them")
        #expect(taken == 100)
        let second = ConsumerTurn.run(inputs: q, limit: 100, budget: .seconds(60), partOwed: { false },
                                      take: { _ in taken += 1 }, part: {})
        #expect(second == .idle)
        #expect(taken == 151)
    }

    @Test func aTurnThatEndsOnItsTimeLeavesTheRestForTheNext() {
        let q = Self.queue(10)
        var taken = 0
        let end = ConsumerTurn.run(inputs: q, limit: 100, budget: .zero, partOwed: { false },
                                   take: { _ in taken += 1 }, part: {})
        #expect(end == .more)
        #expect(taken == 1)
    }

    @Test func anOwedPartRunsAfterTheInputsAndKeepsTheConsumerAwake() {
        let q = Self.queue(3)
        let schedules = NIOLockedValueBox(0)
        q.consume { schedules.withLockedValue { $0 += 1 } }
        #expect(schedules.withLockedValue { $0 } == 1)  // scheduled for what waits
        var order: [String] = []
        var owed = true
        let end = ConsumerTurn.run(inputs: q, limit: 100, budget: .seconds(60), partOwed: { owed },
                                   take: { _ in order.append("input") }, part: {
            owed = false
            order.append("part")
        })
        #expect(end == .more)
        #expect(order == ["input", "input", "input", "input", "part"])
        // The queue kept the consumer scheduled: a push does not schedule it a second time.
        q.push(.bridge(.tick))
        #expect(schedules.withLockedValue { $0 } == 1)
        // The next turn takes it; then, nothing owed and nothing left, the consumer is idle and
        // the next push schedules it again.
        #expect(ConsumerTurn.run(inputs: q, limit: 100, budget: .seconds(60), partOwed: { owed },
                                 take: { _ in order.append("input") }, part: {}) == .idle)
        q.push(.bridge(.tick))
        #expect(schedules.withLockedValue { $0 } == 2)
    }

    @Test func anEndedQueueEndsTheTurn() {
        let q = Self.queue(1)
        q.finish()
        var taken = 0
        let end = ConsumerTurn.run(inputs: q, limit: 100, budget: .seconds(60), partOwed: { true },
                                   take: { _ in taken += 1 }, part: { Issue.record("no part after the end") })
        #expect(end == .finished)
        #expect(taken == 2)
    }
}
