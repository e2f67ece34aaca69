import CastProtocol
import Foundation
import Testing
@testable import Bridge

/// Join or launch is decided once, by the planner, against what the device's snapshot carries
/// (`DeviceSnapshot.joinedApp`): the operation says whether its app is launched first
/// (`launchFirst`), and the I/O side does what it says.
@Suite struct JoinOrLaunchTests {
    func only(_ out: BridgeOutput) -> CastOperation? {
        #expect(out.operations.count == 1)
        return out.operations.first
    }

    @Test func aJoinedAppIsUsedAsItIsAnyOtherIsLaunchedFirst() {
        var h = Harness()
        h.online()
        #expect(h.core.registry[tvID]?.snapshot.joinedApp?.appId == CastAppID.defaultMediaReceiver)
        // The Default Media Receiver runs and is joined: the load goes to it, nothing is launched.
        let load = only(h.publishSettled("cast2mqtt/living_room_tv/command/load", "http://192.0.2.5/a.mp3"))
        #expect(load?.launchFirst == nil)
        // A message for another app: that app is launched first.
        let send = only(h.publishSettled("cast2mqtt/living_room_tv/command/send",
                                         #"{"namespace": "urn:x-cast:com.other", "data": {"a": 1}, "app_id": "ABCD1234"}"#))
        #expect(send?.launchFirst == "ABCD1234")
        // A load into another app than the joined one launches it first.
        let other = only(h.publishSettled("cast2mqtt/living_room_tv/command/load",
                                          #"{"url": "http://192.0.2.5/a.mp3", "app_id": "ABCD1234"}"#))
        #expect(other?.launchFirst == "ABCD1234")
    }

    @Test func anAppThatRunsButRefusedToBeJoinedIsLaunched() {
        var h = Harness()
        h.online()
        // The device CLOSEd our connection to the app's transport: it runs, it is not joined.
        _ = h.feed(CastEvent.appSessionEnded(tvID, transportId: "transport-1"))
        #expect(h.core.registry[tvID]?.snapshot.joinedApp == nil)
        #expect(h.core.registry[tvID]?.activeApp?.appId == CastAppID.defaultMediaReceiver)
        let load = h.publishSettled("cast2mqtt/living_room_tv/command/load", "http://192.0.2.5/a.mp3").operations
            .first { if case .load = $0.kind { return true } else { return false } }
        #expect(load?.launchFirst == CastAppID.defaultMediaReceiver)
    }

    @Test func withNoAppJoinedTheMediaStatusIsNotAskedAndRefreshIsAnswered() throws {
        var h = Harness()
        h.online()
        // The app runs and speaks media, but its transport keeps closing our connection to it:
        // after the bounded rejoins it is not joined (one `error` event says so).
        var events: [String] = []
        for _ in 0...CastSessionMachine.maximumRejoins {
            _ = h.feed(CastEvent.appSessionEnded(tvID, transportId: "transport-1"))
            events += h.feed(CastEvent.receiverStatus(tvID, receiver())).events("cast2mqtt/living_room_tv/event")
        }
        #expect(h.core.registry[tvID]?.snapshot.joinedApp == nil)
        #expect(events == ["error"])
        let first = try #require(only(h.publish("cast2mqtt/living_room_tv/command/refresh", "")))
        #expect(first.kind == .getReceiverStatus)
        // The media step has nothing to ask: decided by the planner, completed at once.
        let out = h.complete(first, .receiverStatus(receiver()))
        #expect(out.operations.isEmpty)
        #expect(out.json("cast2mqtt/living_room_tv/response")?["status"]?.stringValue == "ok")
    }

    @Test func withAnAppJoinedRefreshAsksItsMediaStatus() throws {
        var h = Harness()
        h.online()
        let first = try #require(only(h.publish("cast2mqtt/living_room_tv/command/refresh", "")))
        let out = h.complete(first, .receiverStatus(receiver()))
        let media = try #require(only(out))
        #expect(media.kind == .getMediaStatus)
        #expect(media.launchFirst == nil)
    }
}
