import Foundation
import Testing

@testable import CastProtocol

/// The auth step of the connection state machine, driven with Open Screen's test receiver
/// answer (DeviceAuthVectors) and a manual clock.
@Suite struct DeviceAuthStateMachineTests {
    let vector: DeviceAuthVectorTests.ReceiverVector
    let context: DeviceAuthContext

    init() throws {
        vector = try DeviceAuthVectorTests.ReceiverVector()
        context = DeviceAuthContext(nonce: vector.nonce, tlsCertificateDER: vector.tls,
                                    validationTime: AuthVectors.date(2019, 12, 17, hour: 12), trust: vector.trust)
    }

    func machine(_ mode: DeviceAuthMode) -> Machine {
        var machine = Machine(configuration: .init(deviceAuth: mode))
        _ = machine.start()
        return machine
    }

    func answer(_ payload: [UInt8]) -> CastMessage {
        CastMessage(sourceID: "receiver-0", destinationID: "sender-0", namespace: CastNamespace.deviceAuth,
                    payload: .binary(payload))
    }

    func emitted(_ actions: [Machine.Action]) -> (result: DeviceAuthResult, admitted: Bool)? {
        for case .emit(.authentication(let result, let admitted)) in actions { return (result, admitted) }
        return nil
    }

    @Test("require: the challenge goes out alone, first; the device is checked before CONNECT")
    func challengeFirst() throws {
        var m = machine(.require)
        let actions = m.channelActive(now: at(0), auth: context)
        let sent = writes(actions)
        #expect(sent.count == 1)
        #expect(sent.first?.namespace == CastNamespace.deviceAuth && sent.first?.destinationID == "receiver-0")
        #expect(DeviceAuthMessages.challengeNonce(sent.first?.payload.bytes ?? []) == vector.nonce)
        #expect(actions.contains(.scheduleTimer(at(10))))
        #expect(m.stateName == "authenticating" && m.isAuthenticating && !m.isConnected)
        // Anything else before the answer is not acted on.
        #expect(m.messageReceived(fromDevice(CastNamespace.receiver, #"{"type":"RECEIVER_STATUS","requestId":1,"status":{}}"#),
                                  now: at(0.1)).isEmpty)
        let after = m.messageReceived(answer(vector.reply), now: at(0.2))
        let outcome = try #require(emitted(after))
        #expect(outcome.result.isAuthenticated && outcome.admitted)
        #expect(outcome.result.certificate?.commonName == "Device")
        #expect(types(writes(after)) == ["CONNECT", "PING", "GET_STATUS"])
        #expect(m.stateName == "open")
    }

    @Test("require: no answer within the request timeout refuses the device and backs off")
    func requireNoAnswer() throws {
        var m = machine(.require)
        _ = m.channelActive(now: at(0), auth: context)
        // The timer fires early (a shared timer): nothing yet but the same deadline again.
        #expect(m.timerFired(now: at(3)) == [.scheduleTimer(at(10))])
        let actions = m.timerFired(now: at(10))
        let outcome = try #require(emitted(actions))
        #expect(outcome.result == .failed(.noAnswer) && !outcome.admitted)
        #expect(actions.contains(.close(.unauthenticated(.noAnswer))))
        #expect(writes(actions).isEmpty)
        #expect(m.isClosing && !m.isConnected)
        // No `disconnected`: the device never was connected.
        #expect(!actions.contains(.emit(.disconnected(.unauthenticated(.noAnswer)))))
        let closed = m.channelClosed(.closedByPeer, now: at(10.1), jitter: 0.5)
        guard case .scheduleReconnect(_, let first)? = closed.first else {
            Issue.record("no reconnect: \(closed)")
            return
        }
        // The next attempt fails the same way: the delay grows (the existing backoff).
        _ = m.timerFired(now: at(10.1).advanced(by: first))
        _ = m.channelActive(now: at(20), auth: context)
        _ = m.timerFired(now: at(30))
        guard case .scheduleReconnect(_, let second)? = m.channelClosed(.closedByPeer, now: at(30), jitter: 0.5).first else {
            Issue.record("no second reconnect")
            return
        }
        #expect(second > first)
    }

    @Test("report: the challenge goes out with CONNECT; the device is online before the answer, which comes beside")
    func reportCostsNothing() throws {
        var m = machine(.report)
        let actions = m.channelActive(now: at(0), auth: context)
        let sent = writes(actions)
        #expect(sent.first?.namespace == CastNamespace.deviceAuth)
        #expect(DeviceAuthMessages.challengeNonce(sent.first?.payload.bytes ?? []) == vector.nonce)
        #expect(types(Array(sent.dropFirst())) == ["CONNECT", "PING", "GET_STATUS"], "one write: nothing waits for the answer")
        #expect(emitted(actions) == nil)
        #expect(m.stateName == "open" && !m.isAuthenticating)
        // The platform answers first: connected, with the check still under way.
        let status = m.messageReceived(fromDevice(CastNamespace.receiver, #"{"type":"RECEIVER_STATUS","requestId":1,"status":{}}"#),
                                       now: at(0.1))
        #expect(status.contains(.emit(.connected)))
        #expect(emitted(status) == nil)
        // Then the answer: the result, nothing else.
        let after = m.messageReceived(answer(vector.reply), now: at(0.2))
        let outcome = try #require(emitted(after))
        #expect(outcome.result.isAuthenticated && outcome.admitted)
        #expect(writes(after).isEmpty && !after.contains { if case .close = $0 { true } else { false } })
        // A second answer means nothing.
        #expect(emitted(m.messageReceived(answer(vector.reply), now: at(0.3))) == nil)
        #expect(m.isConnected)
    }

    @Test("report: no answer, an AuthError, a wrong nonce are published and the device is used")
    func reportUsesDevice() throws {
        for (payload, failure) in [(nil, DeviceAuthFailure.noAnswer), (DeviceAuthMessages.errorPayload(code: 2), .authError)] {
            var m = machine(.report)
            let opened = m.channelActive(now: at(0), auth: context)
            #expect(types(Array(writes(opened).dropFirst())) == ["CONNECT", "PING", "GET_STATUS"])
            #expect(opened.contains(.scheduleTimer(at(5))), "the first deadline is the heartbeat's, not the check's")
            _ = m.messageReceived(fromDevice(CastNamespace.receiver, #"{"type":"RECEIVER_STATUS","requestId":1,"status":{}}"#),
                                  now: at(0.5))
            // The device keeps talking (the check's deadline is not the connection's).
            _ = m.messageReceived(fromDevice(CastNamespace.heartbeat, #"{"type":"PONG"}"#), now: at(9))
            let actions = payload.map { m.messageReceived(answer($0), now: at(1)) } ?? m.timerFired(now: at(10))
            let outcome = try #require(emitted(actions))
            #expect(outcome.result.failure == failure && outcome.admitted)
            #expect(!actions.contains { if case .close = $0 { true } else { false } })
            #expect(m.isConnected)
        }
        var m = machine(.report)
        var other = context
        other.nonce[0] ^= 1
        _ = m.channelActive(now: at(0), auth: other)
        let outcome = try #require(emitted(m.messageReceived(answer(vector.reply), now: at(1))))
        #expect(outcome.result.failure == .nonceMismatch && outcome.admitted)
    }

    @Test("require: a wrong answer refuses; no TLS certificate refuses at once")
    func requireRefuses() throws {
        var m = machine(.require)
        var other = context
        other.nonce[3] ^= 1
        _ = m.channelActive(now: at(0), auth: other)
        let actions = m.messageReceived(answer(vector.reply), now: at(1))
        #expect(emitted(actions)?.result.failure == .nonceMismatch)
        #expect(actions.contains(.close(.unauthenticated(.nonceMismatch))))

        var bare = machine(.require)
        let none = bare.channelActive(now: at(0), auth: nil)
        #expect(emitted(none)?.result == .failed(.tlsCertificate))
        #expect(none.contains(.close(.unauthenticated(.tlsCertificate))))
        #expect(writes(none).isEmpty)
    }

    @Test("shutdown and a move while authenticating close the channel")
    func shutdownAndMove() {
        var m = machine(.require)
        _ = m.channelActive(now: at(0), auth: context)
        #expect(m.dropConnection(.networkError("moved")) == [.close(.networkError("moved"))])
        var n = machine(.require)
        _ = n.channelActive(now: at(0), auth: context)
        #expect(n.shutdown() == [.close(.shutdown)])
        #expect(n.isShutDown)
    }

    @Test("off: no challenge, the handshake as before")
    func off() {
        var m = machine(.off)
        #expect(types(writes(m.channelActive(now: at(0), auth: context))) == ["CONNECT", "PING", "GET_STATUS"])
    }
}
