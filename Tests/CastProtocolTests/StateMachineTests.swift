import Testing

@testable import CastProtocol

/// A point on a manual timeline, for driving the state machine without sleeping.
struct ManualInstant: InstantProtocol, Hashable, Sendable {
    var offset: Duration
    func advanced(by duration: Duration) -> ManualInstant { ManualInstant(offset: offset + duration) }
    func duration(to other: ManualInstant) -> Duration { other.offset - offset }
    static func < (lhs: ManualInstant, rhs: ManualInstant) -> Bool { lhs.offset < rhs.offset }
}

typealias Machine = CastConnectionStateMachine<ManualInstant>

func at(_ seconds: Double) -> ManualInstant {
    ManualInstant(offset: .milliseconds(Int64((seconds * 1000).rounded())))
}

func writes(_ actions: [Machine.Action]) -> [CastMessage] {
    actions.flatMap { action -> [CastMessage] in
        if case .write(let messages) = action { return messages }
        return []
    }
}

func types(_ messages: [CastMessage]) -> [String] {
    messages.map { CastPayloadHeader.parse($0.payload)?.type ?? "?" }
}

func fromDevice(_ namespace: String, _ json: String, source: String = "receiver-0") -> CastMessage {
    CastMessage(sourceID: source, destinationID: "sender-0", namespace: namespace, payload: .string(json))
}

private func openMachine(_ configuration: CastConnectionConfiguration = .init()) -> Machine {
    var machine = Machine(configuration: configuration)
    _ = machine.start()
    _ = machine.channelActive(now: at(0))
    _ = machine.messageReceived(
        fromDevice(CastNamespace.receiver, #"{"type":"RECEIVER_STATUS","requestId":1,"status":{}}"#), now: at(0.01))
    return machine
}

@Suite struct StateMachineTests {
    @Test func handshakeConnectsPlatformThenAsksStatus() {
        var machine = Machine(configuration: .init())
        #expect(machine.start() == [.connect])
        let actions = machine.channelActive(now: at(0))
        let sent = writes(actions)
        #expect(types(sent) == ["CONNECT", "PING", "GET_STATUS"])
        #expect(sent.allSatisfy { $0.destinationID == "receiver-0" && $0.sourceID == "sender-0" })
        #expect(actions.contains(.scheduleTimer(at(5))))
        #expect(!machine.isConnected)
        #expect(machine.stateName == "open")
    }

    @Test func connectedOnlyAfterDeviceAnswers() {
        var machine = Machine(configuration: .init())
        _ = machine.start()
        _ = machine.channelActive(now: at(0))
        let status = fromDevice(CastNamespace.receiver, #"{"type":"RECEIVER_STATUS","requestId":1,"status":{}}"#)
        let actions = machine.messageReceived(status, now: at(0.2))
        #expect(actions.first == .emit(.connected))
        // The initial GET_STATUS is internal: no completeRequest, but the status is delivered.
        #expect(actions.contains(.emit(.message(status))))
        #expect(!actions.contains { if case .completeRequest = $0 { return true } else { return false } })
        #expect(machine.isConnected)
        #expect(machine.pendingRequestIDs.isEmpty)
    }

    @Test func answersDevicePingWithPong() {
        var machine = openMachine()
        let actions = machine.messageReceived(fromDevice(CastNamespace.heartbeat, #"{"type":"PING"}"#), now: at(1))
        let sent = writes(actions)
        #expect(types(sent) == ["PONG"])
        #expect(sent.first?.namespace == CastNamespace.heartbeat)
    }

    @Test func pingsEveryIntervalAndDiesAfterSilence() {
        var machine = openMachine()
        // At 5 s: PING, next timer at 10 s.
        var actions = machine.timerFired(now: at(5))
        #expect(types(writes(actions)) == ["PING"])
        #expect(actions.contains(.scheduleTimer(at(10))))
        // Any traffic keeps it alive.
        _ = machine.messageReceived(fromDevice(CastNamespace.heartbeat, #"{"type":"PONG"}"#), now: at(5.1))
        actions = machine.timerFired(now: at(10))
        #expect(types(writes(actions)) == ["PING"])
        _ = machine.timerFired(now: at(15))
        // 15 s after the last message (5.1) it is dead: reported at once, while the channel closes.
        actions = machine.timerFired(now: at(20.1))
        #expect(actions == [.close(.heartbeatTimeout), .emit(.disconnected(.heartbeatTimeout))])
        #expect(machine.stateName == "closing")
        #expect(machine.lastHeard == at(5.1), "the silence started with the last message")
        #expect(machine.timerFired(now: at(22)).isEmpty, "nothing more while it closes")
        // A TLS close can take seconds (NIOSSL waits for the peer's close_notify): the disconnect
        // is not reported twice when it is done.
        actions = machine.channelClosed(.heartbeatTimeout, now: at(25.1), jitter: 0.5)
        #expect(actions == [.scheduleReconnect(at: at(25.6), delay: .milliseconds(500))])
    }

    @Test func sleepsWhileTheDevicePingsAndPingsItOnceItGoesQuiet() {
        var machine = openMachine()
        // The device PINGs at 3 s: the timer at 5 s sends nothing and sleeps until the device
        // has been quiet for 12.5 s (timeout 15 - interval 5 / 2).
        _ = machine.messageReceived(fromDevice(CastNamespace.heartbeat, #"{"type":"PING"}"#), now: at(3))
        var actions = machine.timerFired(now: at(5))
        #expect(writes(actions).isEmpty)
        #expect(actions.contains(.scheduleTimer(at(15.5))))
        // It PINGs again at 8 and 13 s: at 15.5 s nothing is due, next look at 25.5 s (half an
        // interval away from its PINGs at 23 and 28 s).
        _ = machine.messageReceived(fromDevice(CastNamespace.heartbeat, #"{"type":"PING"}"#), now: at(8))
        _ = machine.messageReceived(fromDevice(CastNamespace.heartbeat, #"{"type":"PING"}"#), now: at(13))
        actions = machine.timerFired(now: at(15.5))
        #expect(writes(actions).isEmpty)
        #expect(actions.contains(.scheduleTimer(at(25.5))))
        // Quiet since 13 s: at 25.5 s we PING; it has until 28 s (15 s after 13 s) to answer.
        actions = machine.timerFired(now: at(25.5))
        #expect(types(writes(actions)) == ["PING"])
        #expect(actions.contains(.scheduleTimer(at(28))))
        // It answers but no longer PINGs on its own: from now on we PING every interval.
        _ = machine.messageReceived(fromDevice(CastNamespace.heartbeat, #"{"type":"PONG"}"#), now: at(25.6))
        actions = machine.timerFired(now: at(30.5))
        #expect(types(writes(actions)) == ["PING"])
        #expect(actions.contains(.scheduleTimer(at(35.5))))
        // Other traffic keeps it alive but does not make it a pinging device again.
        _ = machine.messageReceived(
            fromDevice(CastNamespace.receiver, #"{"type":"RECEIVER_STATUS","requestId":0,"status":{}}"#), now: at(31))
        #expect(types(writes(machine.timerFired(now: at(35.5)))) == ["PING"])
        // Liveness is unchanged: 15 s after the last message (31 s) it is dead.
        #expect(machine.timerFired(now: at(46)) == [.close(.heartbeatTimeout), .emit(.disconnected(.heartbeatTimeout))])
    }

    @Test func aPingingDeviceThatFallsSilentIsDroppedOnTime() {
        var machine = openMachine()
        _ = machine.messageReceived(fromDevice(CastNamespace.heartbeat, #"{"type":"PING"}"#), now: at(4))
        // Quiet from 4 s: PING at 16.5 s, no answer, dropped at 19 s.
        #expect(writes(machine.timerFired(now: at(5))).isEmpty)
        #expect(types(writes(machine.timerFired(now: at(16.5)))) == ["PING"])
        #expect(machine.timerFired(now: at(19)) == [.close(.heartbeatTimeout), .emit(.disconnected(.heartbeatTimeout))])
    }

    @Test func configurableHeartbeat() {
        var machine = openMachine(.init(heartbeatInterval: .seconds(1), heartbeatTimeout: .seconds(3)))
        #expect(types(writes(machine.timerFired(now: at(1)))) == ["PING"])
        #expect(machine.timerFired(now: at(3.02)) == [.close(.heartbeatTimeout), .emit(.disconnected(.heartbeatTimeout))])
    }

    @Test func requestIdsAreUniqueAndComplete() throws {
        var machine = openMachine()
        let a = try machine.sendRequest(namespace: CastNamespace.receiver, destination: "receiver-0", now: at(1)) {
            .string(ReceiverRequest.getStatus.json(requestId: $0))
        }
        let b = try machine.sendRequest(namespace: CastNamespace.receiver, destination: "receiver-0", now: at(1)) {
            .string(ReceiverRequest.launch(appId: "CC1AD845").json(requestId: $0))
        }
        #expect(a.id != b.id)
        #expect(machine.pendingRequestIDs == [a.id, b.id].sorted())
        let reply = fromDevice(CastNamespace.receiver, #"{"type":"RECEIVER_STATUS","requestId":\#(b.id),"status":{}}"#)
        let actions = machine.messageReceived(reply, now: at(1.5))
        #expect(actions.contains(.completeRequest(id: b.id, message: reply)))
        // A broadcast (requestId 0) completes nothing.
        let broadcast = fromDevice(CastNamespace.receiver, #"{"type":"RECEIVER_STATUS","requestId":0,"status":{}}"#)
        #expect(machine.messageReceived(broadcast, now: at(1.6)) == [.emit(.message(broadcast))])
        #expect(machine.pendingRequestIDs == [a.id])
    }

    @Test func replyMustComeFromTheRequestsEndpointAndNamespace() throws {
        var machine = openMachine()
        let r = try machine.sendRequest(namespace: CastNamespace.media, destination: "app-1", now: at(1)) {
            .string(MediaRequest.getStatus(mediaSessionId: nil).json(requestId: $0))
        }
        // Same requestId, but the app's own namespace: not the answer.
        let appOwn = fromDevice("urn:x-cast:com.example", #"{"type":"X","requestId":\#(r.id)}"#, source: "app-1")
        #expect(!machine.messageReceived(appOwn, now: at(1.1)).contains { if case .completeRequest = $0 { true } else { false } })
        // Same id and namespace from another endpoint: not the answer either.
        let other = fromDevice(CastNamespace.media, #"{"type":"MEDIA_STATUS","requestId":\#(r.id),"status":[]}"#, source: "app-2")
        #expect(!machine.messageReceived(other, now: at(1.2)).contains { if case .completeRequest = $0 { true } else { false } })
        #expect(machine.pendingRequestIDs == [r.id])
        let reply = fromDevice(CastNamespace.media, #"{"type":"MEDIA_STATUS","requestId":\#(r.id),"status":[]}"#, source: "app-1")
        #expect(machine.messageReceived(reply, now: at(1.3)).contains(.completeRequest(id: r.id, message: reply)))
    }

    @Test func launchStatusDoesNotCompleteLaunch() throws {
        var machine = openMachine()
        let r = try machine.sendRequest(namespace: CastNamespace.receiver, destination: "receiver-0", now: at(1)) {
            .string(ReceiverRequest.launch(appId: "X").json(requestId: $0))
        }
        let interim = fromDevice(CastNamespace.receiver, #"{"type":"LAUNCH_STATUS","requestId":\#(r.id),"status":"USER_PENDING_AUTHORIZATION"}"#)
        _ = machine.messageReceived(interim, now: at(1.1))
        #expect(machine.pendingRequestIDs == [r.id])
    }

    @Test func requestTimesOut() throws {
        var machine = openMachine(.init(requestTimeout: .seconds(2)))
        let r = try machine.sendRequest(namespace: CastNamespace.receiver, destination: "receiver-0", now: at(1)) {
            .string(ReceiverRequest.getStatus.json(requestId: $0))
        }
        #expect(r.actions.contains(.scheduleTimer(at(3))))
        _ = machine.messageReceived(fromDevice(CastNamespace.heartbeat, #"{"type":"PONG"}"#), now: at(2.5))
        let actions = machine.timerFired(now: at(3))
        #expect(actions.contains(.failRequests(ids: [r.id], failure: .timeout)))
        #expect(machine.pendingRequestIDs.isEmpty)
    }

    @Test func appEndpointGetsConnectFirstOnce() throws {
        var machine = openMachine()
        let first = try machine.sendRequest(namespace: CastNamespace.media, destination: "app-1", now: at(1)) {
            .string(MediaRequest.getStatus(mediaSessionId: nil).json(requestId: $0))
        }
        #expect(types(writes(first.actions)) == ["CONNECT", "GET_STATUS"])
        let second = try machine.sendRequest(namespace: CastNamespace.media, destination: "app-1", now: at(1)) {
            .string(MediaRequest.play(mediaSessionId: 1).json(requestId: $0))
        }
        #expect(types(writes(second.actions)) == ["PLAY"])
        #expect(machine.connectedEndpoints == ["receiver-0", "app-1"])
    }

    @Test func closeFromAppEndsOnlyThatSession() throws {
        var machine = openMachine()
        _ = machine.connectEndpoint("app-1")
        let actions = machine.messageReceived(fromDevice(CastNamespace.connection, #"{"type":"CLOSE"}"#, source: "app-1"), now: at(2))
        #expect(actions == [.emit(.virtualConnectionClosed(endpoint: "app-1"))])
        #expect(machine.isConnected)
        #expect(machine.connectedEndpoints == ["receiver-0"])
    }

    /// A request to an app that then CLOSEs our connection fails at once (not at its deadline);
    /// requests elsewhere wait on.
    @Test func closeFromAppFailsWhatWaitsForItAtOnce() throws {
        var machine = openMachine()
        let toApp = try machine.sendRequest(namespace: CastNamespace.media, destination: "app-1", now: at(1)) {
            .string(MediaRequest.getStatus(mediaSessionId: nil).json(requestId: $0))
        }
        let toReceiver = try machine.sendRequest(namespace: CastNamespace.receiver, destination: "receiver-0", now: at(1)) {
            .string(ReceiverRequest.getStatus.json(requestId: $0))
        }
        let actions = machine.messageReceived(fromDevice(CastNamespace.connection, #"{"type":"CLOSE"}"#, source: "app-1"), now: at(2))
        #expect(actions == [.failRequests(ids: [toApp.id], failure: .endpointClosed), .emit(.virtualConnectionClosed(endpoint: "app-1"))])
        #expect(machine.pendingRequestIDs == [toReceiver.id])
    }

    @Test func closeFromPlatformDropsConnection() {
        var machine = openMachine()
        let actions = machine.messageReceived(fromDevice(CastNamespace.connection, #"{"type":"CLOSE"}"#), now: at(2))
        #expect(actions == [.close(.closedByDevice), .emit(.disconnected(.closedByDevice))])
    }

    @Test func notConnectedRequestsThrow() {
        var machine = Machine(configuration: .init())
        #expect(throws: CastRequestFailure.notConnected) {
            _ = try machine.sendRequest(namespace: CastNamespace.receiver, destination: "receiver-0", now: at(0)) { _ in .string("{}") }
        }
        _ = machine.start()
        _ = machine.channelActive(now: at(0))
        // Open but not answered yet: still not connected.
        #expect(throws: CastRequestFailure.notConnected) {
            _ = try machine.sendRequest(namespace: CastNamespace.receiver, destination: "receiver-0", now: at(0)) { _ in .string("{}") }
        }
    }

    @Test func dropFailsPendingAndBacksOffWithJitter() throws {
        var machine = openMachine(.init(backoff: ReconnectBackoff(initial: .milliseconds(500), maximum: .seconds(60))))
        let r = try machine.sendRequest(namespace: CastNamespace.receiver, destination: "receiver-0", now: at(1)) {
            .string(ReceiverRequest.getStatus.json(requestId: $0))
        }
        var actions = machine.channelClosed(.closedByPeer, now: at(2), jitter: 1.0)
        #expect(actions.contains(.failRequests(ids: [r.id], failure: .connectionLost)))
        #expect(actions.contains(.emit(.disconnected(.closedByPeer))))
        #expect(actions.contains(.scheduleReconnect(at: at(2.6), delay: .milliseconds(600))))
        #expect(machine.timerFired(now: at(2.5)).isEmpty)
        #expect(machine.timerFired(now: at(2.6)) == [.connect])
        // Failed connects double the delay: 1 s, 2 s, 4 s ... (jitter 0.5 = nominal).
        var delays: [Duration] = []
        var now = 3.0
        for _ in 0..<9 {
            actions = machine.connectFailed(.connectFailed("refused"), now: at(now), jitter: 0.5)
            guard case .scheduleReconnect(let when, let delay)? = actions.first else {
                Issue.record("no reconnect scheduled")
                return
            }
            delays.append(delay)
            now = when.offset.seconds
            _ = machine.timerFired(now: when)
        }
        #expect(delays.map(\.seconds) == [1, 2, 4, 8, 16, 32, 60, 60, 60])
    }

    @Test func backoffResetsAfterAnsweredConnection() {
        var machine = openMachine()
        _ = machine.channelClosed(.closedByPeer, now: at(1), jitter: 0.5)
        _ = machine.timerFired(now: at(1.5))
        _ = machine.connectFailed(.connectFailed("x"), now: at(1.6), jitter: 0.5)  // attempt 2: 1 s
        _ = machine.timerFired(now: at(2.6))
        _ = machine.channelActive(now: at(2.7))
        _ = machine.messageReceived(
            fromDevice(CastNamespace.receiver, #"{"type":"RECEIVER_STATUS","requestId":3,"status":{}}"#), now: at(2.8))
        let actions = machine.channelClosed(.closedByPeer, now: at(3), jitter: 0.5)
        #expect(actions.contains(.scheduleReconnect(at: at(3.5), delay: .milliseconds(500))))
    }

    @Test func jitterStaysWithinSpreadAndCap() {
        let backoff = ReconnectBackoff(initial: .seconds(1), maximum: .seconds(10), jitterSpread: 0.2)
        #expect(backoff.delay(attempt: 1, jitter: 0) == .milliseconds(800))
        #expect(backoff.delay(attempt: 1, jitter: 1) == .milliseconds(1200))
        #expect(backoff.delay(attempt: 10, jitter: 1) == .seconds(10))
    }

    @Test func reconnectNowSkipsTheWait() {
        var machine = openMachine()
        _ = machine.channelClosed(.closedByPeer, now: at(1), jitter: 0.5)
        #expect(machine.reconnectNow() == [.connect])
        #expect(machine.stateName == "connecting")
    }

    @Test func shutdownClosesAppsThenPlatform() throws {
        var machine = openMachine()
        _ = machine.connectEndpoint("app-1")
        let r = try machine.sendRequest(namespace: CastNamespace.receiver, destination: "receiver-0", now: at(1)) {
            .string(ReceiverRequest.getStatus.json(requestId: $0))
        }
        let actions = machine.shutdown()
        let sent = writes(actions)
        #expect(types(sent) == ["CLOSE", "CLOSE"])
        #expect(sent.map(\.destinationID) == ["app-1", "receiver-0"])
        #expect(actions.contains(.failRequests(ids: [r.id], failure: .shuttingDown)))
        #expect(actions.contains(.close(.shutdown)))
        #expect(machine.isShutDown)
        // Nothing restarts after shutdown.
        #expect(machine.channelClosed(.shutdown, now: at(2), jitter: 0.5).isEmpty)
        #expect(machine.start().isEmpty)
    }

    @Test func shutdownMidConnect() {
        var machine = Machine(configuration: .init())
        _ = machine.start()
        #expect(machine.shutdown() == [.close(.shutdown)])
        #expect(machine.channelActive(now: at(0)).isEmpty)
    }
}
