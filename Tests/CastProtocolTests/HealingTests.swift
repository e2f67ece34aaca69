import Testing

@testable import CastProtocol

private typealias HealMachine = CastConnectionStateMachine<ManualInstant>

private func t(_ seconds: Double) -> ManualInstant { at(seconds) }
private func sent(_ actions: [HealMachine.Action]) -> [String] { types(writes(actions)) }
private func device(_ namespace: String, _ json: String) -> CastMessage { fromDevice(namespace, json) }

/// A connection on which the receiver platform does not answer heals itself: heartbeats alone
/// do not make a device connected; an unanswered status is repaired once, then the connection is
/// dropped and retried with backoff (issue: "stuck offline" with PONGs flowing).
@Suite struct HealingTests {
    let pong = device(CastNamespace.heartbeat, #"{"type":"PONG"}"#)

    @Test func heartbeatsAloneDoNotConnect() {
        var machine = HealMachine(configuration: .init())
        _ = machine.start()
        _ = machine.channelActive(now: t(0))
        let actions = machine.messageReceived(pong, now: t(0.1))
        #expect(!actions.contains(.emit(.connected)))
        #expect(!machine.isConnected)
        let ping = machine.messageReceived(device(CastNamespace.heartbeat, #"{"type":"PING"}"#), now: t(0.2))
        #expect(sent(ping) == ["PONG"])
        #expect(!machine.isConnected)
        #expect(throws: CastRequestFailure.notConnected) {
            try machine.sendRequest(namespace: CastNamespace.receiver, destination: "receiver-0", now: t(0.3)) { _ in .string("{}") }
        }
    }

    @Test func unansweredStatusIsRepairedThenConnects() {
        var machine = HealMachine(configuration: .init(requestTimeout: .seconds(2)))
        _ = machine.start()
        _ = machine.channelActive(now: t(0))
        _ = machine.messageReceived(pong, now: t(1))
        let repair = machine.timerFired(now: t(2))
        #expect(sent(repair) == ["CONNECT", "GET_STATUS"])
        #expect(machine.stateName == "open")
        let status = device(CastNamespace.receiver, #"{"type":"RECEIVER_STATUS","requestId":2,"status":{}}"#)
        let answered = machine.messageReceived(status, now: t(2.5))
        #expect(answered.first == .emit(.connected))
        #expect(machine.isConnected)
    }

    @Test func statusBroadcastAlsoProvesThePlatform() {
        var machine = HealMachine(configuration: .init())
        _ = machine.start()
        _ = machine.channelActive(now: t(0))
        let broadcast = device(CastNamespace.receiver, #"{"type":"RECEIVER_STATUS","requestId":0,"status":{}}"#)
        #expect(machine.messageReceived(broadcast, now: t(0.5)).first == .emit(.connected))
    }

    @Test func stillUnansweredAfterRepairDropsAndBacksOff() {
        var machine = HealMachine(configuration: .init(requestTimeout: .seconds(2)))
        _ = machine.start()
        _ = machine.channelActive(now: t(0))
        _ = machine.messageReceived(pong, now: t(1.5))
        #expect(sent(machine.timerFired(now: t(2))) == ["CONNECT", "GET_STATUS"])
        _ = machine.messageReceived(pong, now: t(3.5))
        let drop = machine.timerFired(now: t(4))
        #expect(drop.contains(.close(.unresponsive)))
        let closed = machine.channelClosed(.unresponsive, now: t(4.1), jitter: 0.5)
        // Never connected, so no disconnected event; the retry backs off like a failed connect.
        #expect(!closed.contains { if case .emit = $0 { return true } else { return false } })
        #expect(closed.contains(.scheduleReconnect(at: t(4.6), delay: .milliseconds(500))))
        #expect(machine.stateName == "waiting")
        // The next attempt backs off further while the device keeps not answering.
        #expect(machine.timerFired(now: t(4.6)) == [.connect])
        _ = machine.channelActive(now: t(4.7))
        _ = machine.timerFired(now: t(6.7))
        _ = machine.timerFired(now: t(8.7))
        let again = machine.channelClosed(.unresponsive, now: t(8.8), jitter: 0.5)
        #expect(again.contains(.scheduleReconnect(at: t(9.8), delay: .seconds(1))))
    }
}
