import CastProtocol
import Testing
@testable import Bridge

@Suite struct OperationLabelTests {
    /// Each case's label is its name in snake case: checked against the case name Swift itself
    /// reports, so a new or renamed case with a stale label fails here.
    @Test(arguments: [
        CastOperationKind.getReceiverStatus, .getMediaStatus, .launch(appId: "CC1AD845"), .stopApp(sessionId: "s"),
        .setVolume(level: 0.4), .setMuted(true), .media(.play(mediaSessionId: 1)),
        .load(LoadRequest(media: MediaInformation(contentId: "http://x/a.mp3")), appId: "CC1AD845"),
        .queueLoad(QueueLoadRequest(items: []), appId: "CC1AD845"),
        .send(namespace: "urn:x-cast:x", payload: .string("{}"), appId: nil, awaitReply: false),
        .storeSession(mediaSessionId: 1), .resumeSession(sessionState: .null, appId: "CC1AD845"),
    ])
    func metricLabelIsTheCaseNameInSnakeCase(kind: CastOperationKind) {
        let name = Mirror(reflecting: kind).children.first?.label ?? "\(kind)"
        var snake = ""
        for c in name {
            if c.isUppercase { snake += "_" + c.lowercased() } else { snake.append(c) }
        }
        #expect(kind.metricLabel == snake)
    }
}
