import CastProtocol
import Foundation
import NIOCore

/// Encode and decode throughput of typical Cast messages through `CastFraming` (what
/// `CastFrameEncoder` does) and `CastFrameDecoder`, plus the JSON parse of the payload that the
/// client does for every status message.
enum FramingBench {
    /// A MEDIA_STATUS broadcast as a Default Media Receiver sends it while playing music with a
    /// queue (~1.5 KB of JSON). Written for this benchmark.
    static let mediaStatusJSON: String = {
        let json = """
        {"type":"MEDIA_STATUS","requestId":0,"status":[{"mediaSessionId":7,"playbackRate":1,\
        "playerState":"PLAYING","currentTime":83.418,"supportedMediaCommands":274447,\
        "volume":{"level":1,"muted":false},"activeTrackIds":[],"currentItemId":3,"repeatMode":"REPEAT_OFF",\
        "media":{"contentId":"http://192.0.2.5/library/albums/the-quiet-hours/03-slow-light.mp3",\
        "streamType":"BUFFERED","contentType":"audio/mpeg","duration":245.812,\
        "metadata":{"metadataType":3,"title":"Slow Light","artist":"The Example Ensemble",\
        "albumName":"The Quiet Hours","albumArtist":"The Example Ensemble","composer":"A. Nonymous",\
        "trackNumber":3,"discNumber":1,"releaseDate":"2021-04-09",\
        "images":[{"url":"http://192.0.2.5/library/albums/the-quiet-hours/cover-600.jpg","width":600,"height":600},\
        {"url":"http://192.0.2.5/library/albums/the-quiet-hours/cover-300.jpg","width":300,"height":300}]},\
        "customData":{"source":"library","queueVersion":12}},\
        "items":[{"itemId":2,"autoplay":true,"startTime":0,"preloadTime":20,"orderId":1,\
        "media":{"contentId":"http://192.0.2.5/library/albums/the-quiet-hours/02-northern-window.mp3",\
        "streamType":"BUFFERED","contentType":"audio/mpeg","duration":198.04,\
        "metadata":{"metadataType":3,"title":"Northern Window","artist":"The Example Ensemble"}}},\
        {"itemId":3,"autoplay":true,"startTime":0,"preloadTime":20,"orderId":2},\
        {"itemId":4,"autoplay":true,"startTime":0,"preloadTime":20,"orderId":3}],\
        "queueData":{"id":"a6f1c0de-4b1e-4c52-9a57-2b9ad1f0c3e1","name":"The Quiet Hours","queueType":"ALBUM",\
        "repeatMode":"REPEAT_OFF","shuffle":false,"startIndex":0}}]}
        """
        return json
    }()

    /// A RECEIVER_STATUS with the Default Media Receiver running (~700 bytes).
    static let receiverStatusJSON = """
        {"type":"RECEIVER_STATUS","requestId":12,"status":{"applications":[{"appId":"CC1AD845",\
        "appType":"WEB","displayName":"Default Media Receiver","iconUrl":"","isIdleScreen":false,\
        "launchedFromCloud":false,"namespaces":[{"name":"urn:x-cast:com.google.cast.cac"},\
        {"name":"urn:x-cast:com.google.cast.debugoverlay"},{"name":"urn:x-cast:com.google.cast.broadcast"},\
        {"name":"urn:x-cast:com.google.cast.media"}],"sessionId":"5c0f0a3e-1d2b-4f7a-9d11-3f6c2b8e9a01",\
        "statusText":"Default Media Receiver","transportId":"5c0f0a3e-1d2b-4f7a-9d11-3f6c2b8e9a01",\
        "universalAppId":"CC1AD845"}],"isActiveInput":true,"isStandBy":false,\
        "userEq":{"high_shelf":{"frequency":4500,"gain_db":0,"quality":0.707},\
        "low_shelf":{"frequency":150,"gain_db":0,"quality":0.707},"max_peak_gain_db":0},\
        "volume":{"controlType":"attenuation","level":0.4,"muted":false,"stepInterval":0.05}}}
        """

    static var mediaStatus: CastMessage {
        CastMessage(source: "5c0f0a3e-1d2b-4f7a-9d11-3f6c2b8e9a01", destination: CastEndpoint.sender,
                    namespace: CastNamespace.media, json: mediaStatusJSON)
    }

    static var ping: CastMessage {
        CastMessage(source: CastEndpoint.sender, destination: CastEndpoint.receiver,
                    namespace: CastNamespace.heartbeat, json: #"{"type":"PING"}"#)
    }

    struct Result {
        var name: String
        /// Name in the RESULT line (nil: detail only).
        var key: String? {
            switch name {
            case "media-status encode": return "media_status_encode"
            case "media-status decode": return "media_status_decode"
            case "ping encode+decode": return "ping_encode_decode"
            case "media-status JSON parse": return "media_status_json"
            case "receiver-status JSON parse": return "receiver_status_json"
            default: return nil
            }
        }
        var messages: Int
        var nanos: UInt64
        var perMessage: Double { Double(nanos) / Double(max(messages, 1)) }
        var perSecond: Double { Double(messages) / (Double(nanos) / 1e9) }
    }

    /// Runs `body` in batches until `seconds` passed or `maxMessages` ran; `body(n)` does n messages.
    static func timed(_ name: String, seconds: Double, maxMessages: Int, _ body: (Int) throws -> Int) rethrows -> Result {
        _ = try body(min(1000, maxMessages))  // warm-up
        let batch = 1000
        var done = 0
        var checksum = 0
        let start = Measure.nanos()
        let limit = start + UInt64(seconds * 1e9)
        while done < maxMessages, Measure.nanos() < limit {
            checksum &+= try body(batch)
            done += batch
        }
        let elapsed = Measure.nanos() - start
        blackHole(checksum)
        return Result(name: name, messages: done, nanos: elapsed)
    }

    static func run(seconds: Double, maxMessages: Int) throws -> [Result] {
        var results: [Result] = []
        for (label, message) in [("media-status", mediaStatus), ("ping", ping)] {
            let frame = try CastFraming.frame(message)
            print("\(label): frame \(frame.count) bytes (payload \(message.payload.bytes.count) bytes)")
            var out = ByteBufferAllocator().buffer(capacity: 4096)

            results.append(try timed("\(label) encode", seconds: seconds, maxMessages: maxMessages) { n in
                var bytes = 0
                for _ in 0..<n {
                    out.clear()
                    try CastFraming.write(message, into: &out)
                    bytes &+= out.readableBytes
                }
                return bytes
            })

            var frames = ByteBufferAllocator().buffer(capacity: frame.count)
            frames.writeBytes(frame)
            let frameBuffer = frames
            results.append(try timed("\(label) decode", seconds: seconds, maxMessages: maxMessages) { n in
                var decoder = CastFrameDecoder()
                var total = 0
                for _ in 0..<n {
                    var input = frameBuffer
                    guard let decoded = try decoder.decode(buffer: &input) else { throw BenchError("frame did not decode") }
                    total &+= decoded.namespace.utf8.count
                }
                return total
            })

            results.append(try timed("\(label) encode+decode", seconds: seconds, maxMessages: maxMessages) { n in
                var decoder = CastFrameDecoder()
                var total = 0
                for _ in 0..<n {
                    out.clear()
                    try CastFraming.write(message, into: &out)
                    guard let decoded = try decoder.decode(buffer: &out) else { throw BenchError("frame did not decode") }
                    total &+= decoded.sourceID.utf8.count
                }
                return total
            })
        }

        // What CastClient does next with a status message: parse its JSON into the typed model.
        let payload = mediaStatus.payload
        guard case .status(_, let statuses) = try MediaResponse.parse(payload), statuses.count == 1 else {
            throw BenchError("the benchmark MEDIA_STATUS did not parse into one status")
        }
        results.append(try timed("media-status JSON parse", seconds: seconds, maxMessages: maxMessages / 10) { n in
            var total = 0
            for _ in 0..<n {
                if case .status(_, let s) = try MediaResponse.parse(payload) { total &+= s.count }
            }
            return total
        })
        // The same status without its two app-defined fields (customData, queueData: JSONValue).
        var plain = mediaStatusJSON
        for field in [#","customData":{"source":"library","queueVersion":12}"#,
                      #","queueData":{"id":"a6f1c0de-4b1e-4c52-9a57-2b9ad1f0c3e1","name":"The Quiet Hours","queueType":"ALBUM","repeatMode":"REPEAT_OFF","shuffle":false,"startIndex":0}"#] {
            guard plain.contains(field) else { throw BenchError("benchmark JSON changed: \(field) not found") }
            plain = plain.replacingOccurrences(of: field, with: "")
        }
        let plainPayload = CastPayload.string(plain)
        results.append(try timed("  same, no JSONValue fields", seconds: seconds, maxMessages: maxMessages / 10) { n in
            var total = 0
            for _ in 0..<n {
                if case .status(_, let s) = try MediaResponse.parse(plainPayload) { total &+= s.count }
            }
            return total
        })
        let receiverPayload = CastPayload.string(receiverStatusJSON)
        guard case .status = try ReceiverResponse.parse(receiverPayload) else {
            throw BenchError("the benchmark RECEIVER_STATUS did not parse")
        }
        results.append(try timed("receiver-status JSON parse", seconds: seconds, maxMessages: maxMessages / 10) { n in
            var total = 0
            for _ in 0..<n {
                if case .status(_, let s) = try ReceiverResponse.parse(receiverPayload) { total &+= s.applications.count }
            }
            return total
        })
        let noEq = receiverStatusJSON.replacingOccurrences(
            of: #""userEq":{"high_shelf":{"frequency":4500,"gain_db":0,"quality":0.707},"low_shelf":{"frequency":150,"gain_db":0,"quality":0.707},"max_peak_gain_db":0},"#,
            with: "")
        guard noEq != receiverStatusJSON else { throw BenchError("benchmark JSON changed: userEq not found") }
        let noEqPayload = CastPayload.string(noEq)
        results.append(try timed("  same, no userEq", seconds: seconds, maxMessages: maxMessages / 10) { n in
            var total = 0
            for _ in 0..<n {
                if case .status(_, let s) = try ReceiverResponse.parse(noEqPayload) { total &+= s.applications.count }
            }
            return total
        })
        // Baseline: Foundation's untyped parser on the same MEDIA_STATUS bytes.
        let mediaData = Data(mediaStatusJSON.utf8)
        results.append(try timed("  baseline JSONSerialization", seconds: seconds, maxMessages: maxMessages / 10) { n in
            var total = 0
            for _ in 0..<n {
                if let object = try JSONSerialization.jsonObject(with: mediaData) as? [String: Any] { total &+= object.count }
            }
            return total
        })
        let pingPayload = ping.payload
        results.append(timed("ping header parse", seconds: seconds, maxMessages: maxMessages) { n in
            var total = 0
            for _ in 0..<n where HeartbeatMessage.parse(pingPayload) != nil { total &+= 1 }
            return total
        })
        return results
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
