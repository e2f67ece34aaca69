import Testing
@testable import CastProtocol

/// The requests written without `JSONEncoder` give the bytes `JSONEncoder` gives.
@Suite struct RequestJSONTests {
    static let strings = ["", "CC1AD845", "a\"b\\c", "line\nfeed\t\u{1}", "http://x/y?z=1", "Grüße 🎵"]
    static let doubles: [Double] = [0, 1, -1, 0.5, 0.1, 1.0 / 3, 12.345678901234, 1e-7, 123_456_789.5, 1e16, -2.5e-300,
                                    Double.greatestFiniteMagnitude]
    static let ints = [0, 1, -1, 7, 1 << 40, 8_999_999_999_999_999, 9_000_000_000_000_000, Int.max, Int.min]

    func check(_ request: ReceiverRequest, requestId: Int, direct: Bool = true) {
        #expect(request.json(requestId: requestId) == request.wireJSON(requestId: requestId), "\(request)")
        if direct { #expect(request.directJSON(requestId: requestId) != nil, "\(request) took the JSONEncoder path") }
    }

    func check(_ request: MediaRequest, requestId: Int, direct: Bool = true) {
        #expect(request.json(requestId: requestId) == request.wireJSON(requestId: requestId), "\(request)")
        if direct { #expect(request.directJSON(requestId: requestId) != nil, "\(request) took the JSONEncoder path") }
    }

    @Test func receiverRequestsAreWrittenDirectlyAndAsJSONEncoderWritesThem() {
        for id in [0, 1, 42, 1_000_000] {
            check(.getStatus, requestId: id)
            for s in Self.strings {
                check(.launch(appId: s), requestId: id)
                check(.stop(sessionId: s), requestId: id)
            }
            check(.stop(sessionId: nil), requestId: id)
            for level in Self.doubles + [-3, 7, 0.4] { check(.setVolume(level: level), requestId: id) }
            check(.setMuted(true), requestId: id)
            check(.setMuted(false), requestId: id)
            check(.getAppAvailability(appIds: []), requestId: id)
            check(.getAppAvailability(appIds: Self.strings), requestId: id)
        }
        // A level that is not a number: the same answer as before (JSONEncoder refuses it).
        check(.setVolume(level: .nan), requestId: 3, direct: false)
    }

    @Test func mediaRequestsAreWrittenDirectlyAndAsJSONEncoderWritesThem() {
        for id in [1, 99] {
            for session in Self.ints {
                let direct = session.magnitude < 9_000_000_000_000_000
                for request: MediaRequest in [.getStatus(mediaSessionId: session), .play(mediaSessionId: session),
                                              .pause(mediaSessionId: session), .stop(mediaSessionId: session),
                                              .queueNext(mediaSessionId: session), .queuePrev(mediaSessionId: session),
                                              .skipAd(mediaSessionId: session), .queueGetItemIds(mediaSessionId: session),
                                              .storeSession(mediaSessionId: session),
                                              .queueRemove(mediaSessionId: session, itemIds: [1, 2, 3]),
                                              .queueGetItems(mediaSessionId: session, itemIds: []),
                                              .queueReorder(mediaSessionId: session, itemIds: [3, 1], insertBefore: nil),
                                              .queueReorder(mediaSessionId: session, itemIds: [3, 1], insertBefore: 2)] {
                    check(request, requestId: id, direct: direct)
                }
            }
            check(.getStatus(mediaSessionId: nil), requestId: id)
            check(.storeSession(mediaSessionId: nil), requestId: id)
            check(.queueRemove(mediaSessionId: 1, itemIds: [Int.max]), requestId: id, direct: false)
            for d in Self.doubles + [Double.infinity, -.nan] {
                let finite = d.isFinite
                check(.seek(mediaSessionId: 1, currentTime: d, relativeTime: nil, resumeState: nil), requestId: id, direct: finite)
                check(.seek(mediaSessionId: 1, currentTime: nil, relativeTime: d, resumeState: "PLAYBACK_PAUSE"), requestId: id,
                      direct: finite)
                check(.setPlaybackRate(mediaSessionId: 1, rate: d), requestId: id, direct: finite)
                check(.setStreamVolume(mediaSessionId: 1, level: d, muted: nil), requestId: id, direct: finite)
            }
            check(.seek(mediaSessionId: 1, currentTime: nil, relativeTime: nil, resumeState: nil), requestId: id)
            check(.setStreamVolume(mediaSessionId: 1, level: nil, muted: true), requestId: id)
            check(.setStreamVolume(mediaSessionId: 1, level: 0.25, muted: false), requestId: id)
            for s in Self.strings {
                check(.seek(mediaSessionId: 2, currentTime: 1, relativeTime: nil, resumeState: s), requestId: id)
            }
        }
    }

    @Test func randomRequestsAgree() {
        var rng = SystemRandomNumberGenerator()
        func double() -> Double {
            switch Int.random(in: 0..<4, using: &rng) {
            case 0: return Double(Int.random(in: -1000...1000, using: &rng))
            case 1: return Double.random(in: -1e6...1e6, using: &rng)
            case 2: return Double(bitPattern: UInt64.random(in: 0...UInt64.max, using: &rng))
            default: return Double.random(in: 0...1, using: &rng)
            }
        }
        for _ in 0..<3000 {
            let id = Int.random(in: 0...Int(Int32.max), using: &rng)
            let session = Int.random(in: 0...1 << 50, using: &rng)
            let requests: [MediaRequest] = [
                .seek(mediaSessionId: session, currentTime: double(), relativeTime: Bool.random() ? double() : nil,
                      resumeState: Bool.random() ? "PLAYBACK_START" : nil),
                .setPlaybackRate(mediaSessionId: session, rate: double()),
                .setStreamVolume(mediaSessionId: session, level: Bool.random() ? double() : nil, muted: Bool.random() ? true : nil),
                .queueReorder(mediaSessionId: session, itemIds: (0..<Int.random(in: 0...5)).map { _ in Int.random(in: -9...1 << 52) },
                              insertBefore: Bool.random() ? Int.random(in: 0...99) : nil),
            ]
            for request in requests {
                #expect(request.json(requestId: id) == request.wireJSON(requestId: id), "\(request)")
            }
            let receiver = ReceiverRequest.setVolume(level: double())
            #expect(receiver.json(requestId: id) == receiver.wireJSON(requestId: id), "\(receiver)")
        }
    }

    @Test func requestsWithMediaTakeTheEncoderPath() {
        let load = MediaRequest.load(LoadRequest(media: MediaInformation(contentId: "http://x/a.mp3", streamType: "BUFFERED",
                                                                         contentType: "audio/mpeg")))
        #expect(load.directJSON(requestId: 1) == nil)
        #expect(load.json(requestId: 1) == load.wireJSON(requestId: 1))
    }
}
