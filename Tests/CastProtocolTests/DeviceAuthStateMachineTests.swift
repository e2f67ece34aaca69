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

    @Test("the challenge goes out alone, first; the device is checked before CONNECT", arguments: [DeviceAuthMode.report, .require])
    func challengeFirst(mode: DeviceAuthMode) throws {
        var m = machine(mode)
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

    @Test("report: no answer, an AuthError, a wrong nonce are published and the device is used")
    func reportUsesDevice() throws {
        for (payload, failure) in [(nil, DeviceAuthFailure.noAnswer), (DeviceAuthMessages.errorPayload(code: 2), .authError)] {
            var m = machine(.report)
            _ = m.channelActive(now: at(0), auth: context)
            let actions = payload.map { m.messageReceived(answer($0), now: at(1)) } ?? m.timerFired(now: at(10))
            let outcome = try #require(emitted(actions))
            #expect(outcome.result.failure == failure && outcome.admitted)
            #expect(types(writes(actions)) == ["CONNECT", "PING", "GET_STATUS"])
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
        var n = machine(.report)
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
