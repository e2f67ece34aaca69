import CastProtocol
import Logging
import Testing

@testable import CastClient

/// A device's Cast traffic in the log: nothing secret, nothing at all unless asked.
@Suite struct TrafficLogTests {
    @Test func secretsAreMaskedAtAnyDepth() throws {
        let load = #"{"type":"LOAD","requestId":3,"credentials":"abc","credentialsType":"cloud","media":{"contentId":"http://x","customData":{"accessToken":"t0k","list":[{"Password":"p"}]}}}"#
        let text = TrafficLog.payload(CastMessage(sourceID: "sender-0", destinationID: "t1", namespace: CastNamespace.media,
                                                  payload: .string(load)))
        #expect(!text.contains("abc") && !text.contains("t0k") && !text.contains("\"p\""), "\(text)")
        #expect(text.contains("http://x"))
        let doc = try CastJSON.decode(JSONValue.self, from: text)
        #expect(doc["credentials"] == .string("***"))
        #expect(doc["media"]?["customData"]?["accessToken"] == .string("***"))
        #expect(doc["media"]?["customData"]?["list"]?.arrayValue?.first?["Password"] == .string("***"))
    }

    @Test func deviceAuthAndBinaryPayloadsAreNeverWritten() {
        let auth = CastMessage(sourceID: "receiver-0", destinationID: "sender-0", namespace: CastNamespace.deviceAuth,
                               payload: .binary([1, 2, 3]))
        #expect(TrafficLog.payload(auth) == "(device auth, not logged)")
        let binary = CastMessage(sourceID: "t1", destinationID: "sender-0", namespace: "urn:x-cast:x", payload: .binary([0, 255]))
        #expect(TrafficLog.payload(binary) == "(binary, 2 bytes)")
    }
}
