import Testing

@testable import CastProtocol

/// Numbers a device makes up must never trap: out-of-range, fractional and huge values are
/// treated as absent (issue: one message crashed the daemon through `Int(Double)`).
@Suite struct TotalDecodingTests {
    static let hugeNumbers = ["1e19", "-1e19", "1e308", "99999999999999999999", "18446744073709551615"]

    @Test(arguments: hugeNumbers)
    func requestIdOutOfRangeIsAbsent(_ number: String) {
        let header = CastPayloadHeader.parse(.string(#"{"type":"X","requestId":\#(number)}"#))
        #expect(header?.type == "X")
        #expect(header?.requestId == nil)
        #expect(HeartbeatMessage.parse(.string(#"{"type":"PING","requestId":\#(number)}"#)) == .ping)
    }

    @Test func fractionalRequestIdCompletesNothing() {
        #expect(CastPayloadHeader.parse(.string(#"{"type":"X","requestId":1.5}"#))?.requestId == nil)
        #expect(CastPayloadHeader.parse(.string(#"{"type":"X","requestId":3.0}"#))?.requestId == 3)
        #expect(CastPayloadHeader.parse(.string(#"{"type":"X","launchRequestId":7}"#))?.requestId == 7)
    }

    @Test(arguments: hugeNumbers)
    func mediaStatusNumbersOutOfRangeAreAbsent(_ number: String) throws {
        let text = """
        {"type":"MEDIA_STATUS","requestId":\(number),"status":[{"mediaSessionId":\(number),"playerState":"PLAYING",
        "supportedMediaCommands":\(number),"currentItemId":\(number),"loadingItemId":\(number),"preloadedItemId":\(number),
        "currentTime":\(number),"media":{"contentId":"x","metadata":{"metadataType":\(number),"title":"T",
        "season":\(number),"episode":\(number),"trackNumber":\(number),"discNumber":\(number)}}}]}
        """
        guard case .status(let id, let list) = try MediaResponse.parse(.string(text)), let status = list.first else {
            Issue.record("not a status")
            return
        }
        #expect(id == 0)
        #expect(status.mediaSessionId == nil)
        #expect(status.supportedMediaCommands == nil)
        #expect(status.currentItemId == nil && status.loadingItemId == nil && status.preloadedItemId == nil)
        #expect(status.playerState == "PLAYING")
        #expect(status.media?.metadata?.title == "T")
        #expect(status.media?.metadata?.metadataType == nil)
        #expect(status.media?.metadata?.season == nil)
        #expect(status.media?.metadata?.trackNumber == nil)
    }

    @Test(arguments: hugeNumbers)
    func receiverStatusWithHugeRequestIdStillDecodes(_ number: String) throws {
        let text = #"{"type":"RECEIVER_STATUS","requestId":\#(number),"status":{"volume":{"level":0.5,"muted":false}}}"#
        guard case .status(_, let status) = try ReceiverResponse.parse(.string(text)) else {
            Issue.record("not a status")
            return
        }
        #expect(status.volume?.level == 0.5)
    }

    @Test func unusableTransportIdIsAbsent() throws {
        for id in ["\"\"", "\"a\\u0000b\"", "\"*\"", "\"\(String(repeating: "x", count: 300))\""] {
            let text = """
            {"type":"RECEIVER_STATUS","requestId":0,"status":{"applications":[{"appId":"CC1AD845","sessionId":"s",
            "transportId":\(id),"namespaces":[{"name":"urn:x-cast:com.google.cast.media"}]}]}}
            """
            guard case .status(_, let status) = try ReceiverResponse.parse(.string(text)) else {
                Issue.record("not a status")
                continue
            }
            #expect(status.activeApp?.appId == "CC1AD845")
            #expect(status.activeApp?.transportId == nil, "\(id)")
        }
        #expect(CastEndpoint.validated("web-5") == "web-5")
    }

    @Test func conversionsNeverTrap() {
        #expect(Int(jsonNumber: 1e19) == nil)
        #expect(Int(jsonNumber: -1e308) == nil)
        #expect(Int(jsonNumber: .nan) == nil)
        #expect(Int(jsonNumber: .infinity) == nil)
        #expect(Int(jsonNumber: 42) == 42)
        #expect(Duration.seconds(clamping: 1e300) == Duration.maximumTimer)
        #expect(Duration.seconds(clamping: -5) == .zero)
        #expect(Duration.seconds(clamping: .nan) == .zero)
        #expect(Duration.seconds(clamping: 2.5) == .milliseconds(2500))
        #expect(Duration.maximumTimer.clampedNanoseconds == 1_000_000_000 * 1_000_000_000)
        #expect(Duration.seconds(Int64.max).clampedNanoseconds == Int64.max)
        #expect(Duration.seconds(-3).clampedNanoseconds == 0)
        let backoff = ReconnectBackoff(initial: .seconds(1e9), maximum: .seconds(1e9))
        #expect(backoff.delay(attempt: 1000, jitter: 1) <= Duration.maximumTimer)
    }
}
