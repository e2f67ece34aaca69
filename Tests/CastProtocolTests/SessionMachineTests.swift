import Foundation
import Testing

@testable import CastProtocol

/// The session machine as a value: scripted statuses with a manual clock, no sockets.
@Suite struct SessionMachineTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    func at(_ seconds: Double) -> Date { t0.addingTimeInterval(seconds) }

    let dmr = ReceiverApplication(appId: CastAppID.defaultMediaReceiver, displayName: "Default Media Receiver",
                                  namespaces: [CastNamespace.media], sessionId: "s1", transportId: "t1")

    func receiver(_ app: ReceiverApplication? = nil, level: Double = 0.5) -> ReceiverStatus {
        ReceiverStatus(applications: app.map { [$0] } ?? [], volume: ReceiverVolume(controlType: "attenuation", level: level, muted: false))
    }

    func playing(_ time: Double, state: String = "PLAYING", session: Int = 1) -> MediaStatus {
        MediaStatus(mediaSessionId: session, media: MediaInformation(contentId: "http://x/a.mp3", duration: 300),
                    playerState: state, currentTime: time, playbackRate: 1, supportedMediaCommands: 15)
    }

    func published(_ actions: [CastSessionMachine.Action]) -> [DeviceSnapshot] {
        actions.compactMap { if case .publish(let s) = $0 { return s } else { return nil } }
    }

    /// Online with the Default Media Receiver joined and playing from 10 s at t0.
    func joinedAndPlaying() -> CastSessionMachine {
        var m = CastSessionMachine()
        _ = m.connectionAnswered()
        _ = m.receiverStatus(receiver(dmr), now: t0)
        _ = m.mediaStatus(playing(10), now: t0)
        return m
    }

    @Test func onlineWithTheFirstStatusOfAnAnsweredConnection() {
        var m = CastSessionMachine()
        #expect(m.receiverStatus(receiver(), now: t0).isEmpty, "nothing before the connection answered")
        #expect(m.connectionAnswered().isEmpty)
        let first = published(m.receiverStatus(receiver(), now: t0))
        #expect(first.count == 1)
        #expect(first.first?.link == .online)
        #expect(first.first?.generation == 1)
        #expect(m.receiverStatus(receiver(), now: at(1)).isEmpty, "the same status again is no change")
        #expect(published(m.receiverStatus(receiver(level: 0.7), now: at(2))).first?.receiver?.volume?.level == 0.7)
    }

    @Test func joinsTheRunningAppOnceAndAsksItsMedia() {
        var m = CastSessionMachine()
        _ = m.connectionAnswered()
        let actions = m.receiverStatus(receiver(dmr), now: t0)
        #expect(actions.first == .join(transport: "t1", askMedia: true))
        #expect(m.joinedApp?.sessionId == "s1")
        #expect(!m.receiverStatus(receiver(dmr, level: 0.2), now: at(1)).contains(.join(transport: "t1", askMedia: true)))
        // An app that does not speak media is joined without a media request.
        let other = ReceiverApplication(appId: "E7C0A1B0", namespaces: ["urn:x-cast:x"], sessionId: "s2", transportId: "t2")
        let switched = m.receiverStatus(receiver(other), now: at(2))
        #expect(switched.prefix(2) == [.leave(transport: "t1"), .join(transport: "t2", askMedia: false)])
    }

    @Test func mediaIsMergedAndADuplicateIsNoChange() throws {
        var m = joinedAndPlaying()
        #expect(m.media?.currentTime == 10)
        // A reply and its broadcast, a few milliseconds apart, say the same.
        #expect(m.mediaStatus(playing(10.005), now: at(0.005)).isEmpty)
        #expect(m.mediaStatus(playing(12.1), now: at(2)).isEmpty, "a position that follows from the last one")
        #expect(m.current.positionAt == t0, "the kept position and its time still say where it is")
        // A jump is a change, with the time it became true.
        let seeked = try #require(published(m.mediaStatus(playing(100), now: at(3))).first)
        #expect(seeked.media?.currentTime == 100)
        #expect(seeked.positionAt == at(3))
        // A partial status merges over the last one.
        let paused = try #require(published(m.mediaStatus(MediaStatus(mediaSessionId: 1, playerState: "PAUSED", currentTime: 101), now: at(4))).first)
        #expect(paused.media?.playerState == "PAUSED")
        #expect(paused.media?.media?.contentId == "http://x/a.mp3")
        // Paused, the position is content like any other.
        #expect(published(m.mediaStatus(MediaStatus(mediaSessionId: 1, currentTime: 101.2), now: at(5))).count == 1)
    }

    @Test func anotherSessionEndsTheMedia() throws {
        var m = joinedAndPlaying()
        let next = ReceiverApplication(appId: CastAppID.defaultMediaReceiver, namespaces: [CastNamespace.media], sessionId: "s9",
                                       transportId: "t9")
        let actions = m.receiverStatus(receiver(next), now: at(1))
        #expect(actions.first == .leave(transport: "t1"))
        let snapshot = try #require(published(actions).first)
        #expect(snapshot.media == nil)
        #expect(snapshot.activeApp?.sessionId == "s9")
        #expect(published(m.receiverStatus(receiver(), now: at(2))).first?.activeApp == nil)
    }

    @Test func aClosedTransportIsJoinedAgainWhileTheReceiverStillListsItsSession() throws {
        var m = joinedAndPlaying()
        let actions = m.transportClosed("t1")
        #expect(actions.first == .forget(transport: "t1"))
        #expect(actions.last == .askReceiverStatus)
        #expect(try #require(published(actions).first).media?.playerState == "PLAYING", "the last known media stays meanwhile")
        #expect(m.joinedApp == nil)
        #expect(m.transportClosed("t-other").isEmpty, "only the joined transport matters")
        #expect(m.mediaStatus(playing(11), now: at(1)).isEmpty, "no media from a transport that is not joined")
        // The device still lists the same session: only our virtual connection ended; joined again.
        #expect(m.receiverStatus(receiver(dmr, level: 0.3), now: at(1)).contains(.join(transport: "t1", askMedia: true)))
        #expect(m.joinedApp?.transportId == "t1")
        // Its media answers: followed again (the same media session: no new one), and the count
        // of closes starts over.
        _ = m.mediaStatus(playing(12, state: "PAUSED"), now: at(2))
        #expect(m.current.media?.playerState == "PAUSED" && m.current.media?.mediaSessionId == 1)
        for round in 1...5 {
            _ = m.transportClosed("t1")
            #expect(m.receiverStatus(receiver(dmr, level: 0.3), now: at(2)).contains(.join(transport: "t1", askMedia: true)),
                    "round \(round)")
            _ = m.mediaStatus(playing(1), now: at(2))
        }
    }

    @Test func aTransportThatKeepsClosingIsGivenUpAfterTheBoundUntilARefreshOrAnotherSession() throws {
        var m = joinedAndPlaying()
        var joins = 0
        var failures: [String] = []
        for _ in 0...(CastSessionMachine.maximumRejoins + 2) {
            _ = m.transportClosed("t1")
            let actions = m.receiverStatus(receiver(dmr, level: 0.3), now: at(1))
            joins += actions.filter { $0 == .join(transport: "t1", askMedia: true) }.count
            failures += published(actions).compactMap(\.joinFailure)
        }
        #expect(joins == CastSessionMachine.maximumRejoins)
        #expect(m.joinedApp == nil)
        #expect(failures.count == 1, "the reason is published once")
        #expect(failures.first?.contains("closed the bridge's connection to it 4 times") == true)
        #expect(m.current.activeApp?.sessionId == "s1", "the app is still shown, without media")
        #expect(m.current.media == nil, "given up: the media is gone")
        // A refresh tries again.
        m.retryClosedTransports()
        #expect(m.receiverStatus(receiver(dmr, level: 0.3), now: at(2)).contains(.join(transport: "t1", askMedia: true)))
        #expect(m.current.joinFailure == nil)
        // Another session is joined at once.
        for _ in 0...CastSessionMachine.maximumRejoins {
            _ = m.transportClosed("t1")
            _ = m.receiverStatus(receiver(dmr, level: 0.3), now: at(3))
        }
        #expect(m.joinedApp == nil)
        let next = ReceiverApplication(appId: CastAppID.defaultMediaReceiver, namespaces: [CastNamespace.media], sessionId: "s2",
                                       transportId: "t2")
        #expect(m.receiverStatus(receiver(next), now: at(4)).first == .join(transport: "t2", askMedia: true))
        #expect(m.current.joinFailure == nil)
    }

    @Test func offlineKeepsTheLastStateAndANewConnectionIsANewGeneration() throws {
        var m = joinedAndPlaying()
        let down = try #require(published(m.disconnected(.heartbeatTimeout, silentSince: at(4))).first)
        #expect(down.link == .offline(reason: .heartbeatTimeout, silentSince: at(4)))
        #expect(down.generation == 1)
        #expect(down.media?.currentTime == 10, "the last known state stays")
        #expect(m.joinedApp == nil)
        _ = m.connectionAnswered()
        #expect(m.multizone(.deviceRemoved(deviceId: "x")).isEmpty, "nothing between the answer and the first status")
        // The same session: joined again, its media kept until its new status arrives.
        let back = m.receiverStatus(receiver(dmr), now: at(20))
        #expect(back.first == .join(transport: "t1", askMedia: true))
        let snapshot = try #require(published(back).first)
        #expect(snapshot.link == .online)
        #expect(snapshot.generation == 2)
        #expect(snapshot.media?.currentTime == 10)
        #expect(published(m.mediaStatus(playing(30), now: at(21))).first?.media?.currentTime == 30)
        // Another session after the next reconnect: the old media is gone.
        _ = m.disconnected(.closedByPeer, silentSince: nil)
        _ = m.connectionAnswered()
        let restarted = try #require(published(m.receiverStatus(receiver(), now: at(40))).first)
        #expect(restarted.media == nil)
        #expect(restarted.generation == 3)
    }

    @Test func multizoneMembersFollowEveryMessage() throws {
        var m = CastSessionMachine(isGroup: true)
        #expect(m.connectionAnswered() == [.askMultizoneStatus])
        _ = m.receiverStatus(receiver(), now: t0)
        let a = MultizoneDevice(deviceId: "a", name: "Kitchen", volume: StreamVolume(level: 0.3, muted: false))
        let b = MultizoneDevice(deviceId: "b", name: "Hall")
        let status = try #require(published(m.multizone(.status(requestId: 1, devices: [a, b], isMultichannel: true,
                                                                playbackSession: nil))).first)
        #expect(status.multizone == MultizoneState(members: [a, b], isMultichannel: true))
        var louder = a
        louder.volume = StreamVolume(level: 0.8, muted: false)
        #expect(published(m.multizone(.deviceUpdated(louder))).first?.multizone?.members == [louder, b])
        let c = MultizoneDevice(deviceId: "c", name: "Office")
        #expect(published(m.multizone(.deviceAdded(c))).first?.multizone?.members.map(\.deviceId) == ["a", "b", "c"])
        #expect(published(m.multizone(.deviceRemoved(deviceId: "b"))).first?.multizone?.members.map(\.deviceId) == ["a", "c"])
        #expect(m.multizone(.deviceRemoved(deviceId: "b")).isEmpty, "removing a member twice is no change")
        #expect(m.multizone(.playbackSessionUpdated).isEmpty)
        // Members come only from what the group says its members are: a DEVICE_UPDATED for a
        // device it does not list (a real group sends them for itself and for other groups'
        // members) updates nothing.
        let stranger = MultizoneDevice(deviceId: "z", name: "Living Room Home", volume: StreamVolume(level: 0.72, muted: false))
        #expect(m.multizone(.deviceUpdated(stranger)).isEmpty)
        #expect(m.current.multizone?.members.map(\.deviceId) == ["a", "c"])
    }

    @Test func positionIsExtrapolatedWhilePlaying() {
        let m = joinedAndPlaying()
        #expect(m.current.position(at: at(5)) == 15)
        #expect(m.current.position(at: at(1000)) == 300, "never past the duration")
        var paused = m
        _ = paused.mediaStatus(MediaStatus(mediaSessionId: 1, playerState: "PAUSED", currentTime: 12), now: at(2))
        #expect(paused.current.position(at: at(50)) == 12)
    }
}
