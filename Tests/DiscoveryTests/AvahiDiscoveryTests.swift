import Foundation
import Logging
import Synchronization
import Testing
import TestSupport
@testable import Discovery

/// Against the real avahi-daemon that scripts/test starts on `lo` (scripts/lib/avahi.sh). Each
/// test uses its own random ids, service names and host names, so the tests do not see each
/// other's devices in their assertions. Every wait is bounded.
@Suite(.serialized) struct AvahiDiscoveryTests {
    init() throws {
        try AvahiTestDaemon.requireRunning()
    }

    private func discovery(_ configuration: DiscoveryConfiguration = DiscoveryConfiguration(interfaces: ["lo"]))
        -> (DeviceDiscovery, EventRecorder, RecordingLogHandler.Store)
    {
        let (logger, logs) = RecordingLogHandler.logger()
        let discovery = DeviceDiscovery(configuration: configuration, logger: logger)
        let recorder = EventRecorder(discovery)
        discovery.start()
        return (discovery, recorder, logs)
    }

    private func castTXT(id: String, name: String, model: String = "Chromecast", ca: Int = 4101) -> [String] {
        ["id=\(id)", "cd=\(id.uppercased())", "rm=0123456789ABCDEF", "ve=05", "md=\(model)", "ic=/setup/icon.png",
         "fn=\(name)", "ca=\(ca)", "st=0", "bs=FA8FCA000000", "nf=1", "rs="]
    }

    @Test func publishedServiceIsDiscoveredWithItsFields() async throws {
        let id = randomID()
        let host = "c2m-\(id.prefix(8)).local"
        let address = try AvahiPublishedAddress(hostName: host, address: "127.0.0.2")
        defer { address.stop() }
        try await address.waitUntilEstablished()
        let service = try AvahiPublishedService(
            name: "Chromecast-\(id)", port: 8009, txt: castTXT(id: id, name: "Test Kitchen"), hostName: host)
        defer { service.stop() }
        try await service.waitUntilEstablished()

        let (discovery, recorder, logs) = discovery()
        defer { discovery.stop() }
        let event = await recorder.first { $0.deviceID == id }
        let record = try #require(event?.record, "service \(id) not discovered; events: \(recorder.events)")
        #expect(event?.isAdded == true)
        #expect(record.friendlyName == "Test Kitchen")
        #expect(record.model == "Chromecast")
        #expect(record.capabilities.rawValue == 4101)
        #expect(record.castType == .video)
        #expect(record.port == 8009)
        #expect(record.host == "127.0.0.2")
        #expect(record.protocolVersion == "05")
        #expect(record.iconPath == "/setup/icon.png")
        #expect(record.busy == false)
        #expect(record.serviceName == "Chromecast-\(id)")
        #expect(record.interface == "lo")
        #expect(record.source == .mdns)
        let found = logs.metadata(containing: "Cast device found")
        #expect(found.contains { $0[DiscoveryLogKey.device] == .string(id) })
    }

    @Test func addressChangeIsAnUpdateAndUnpublishIsARemoval() async throws {
        let id = randomID()
        let host = "c2m-\(id.prefix(8)).local"
        let first = try AvahiPublishedAddress(hostName: host, address: "127.0.0.2")
        defer { first.stop() }
        try await first.waitUntilEstablished()
        let service = try AvahiPublishedService(
            name: "Chromecast-\(id)", port: 8009, txt: castTXT(id: id, name: "Mover"), hostName: host)
        defer { service.stop() }
        try await service.waitUntilEstablished()

        let (discovery, recorder, _) = discovery()
        defer { discovery.stop() }
        let added = await recorder.first { $0.deviceID == id && $0.isAdded }
        #expect(added?.record?.host == "127.0.0.2", "events: \(recorder.events(for: id))")

        first.stop()
        let second = try AvahiPublishedAddress(hostName: host, address: "127.0.0.3")
        defer { second.stop() }
        try await second.waitUntilEstablished()
        let moved = await recorder.first(timeout: .seconds(15)) { $0.deviceID == id && $0.record?.host == "127.0.0.3" }
        #expect(moved?.isUpdated == true, "events: \(recorder.events(for: id))")
        #expect(!recorder.hasRemoval(of: id), "an address change is not a removal")

        service.stop()
        let removed = await recorder.first { $0 == .removed(id: id) }
        #expect(removed != nil, "events: \(recorder.events(for: id))")
        #expect(discovery.devices[id] == nil)
    }

    @Test func malformedTXTIsSkippedAndGoodServiceStillFound() async throws {
        let id = randomID()
        let bad = try AvahiPublishedService(
            name: "Broken-\(id)", port: 8009, txt: ["fn=No Id", "md=Chromecast", "ca=4101"])
        defer { bad.stop() }
        let worse = try AvahiPublishedService(
            name: "Worse-\(id)", port: 8009, txt: ["id=not-a-uuid", "fn=Bad Id"])
        defer { worse.stop() }
        let good = try AvahiPublishedService(name: "Good-\(id)", port: 8009, txt: castTXT(id: id, name: "Good one"))
        defer { good.stop() }
        try await bad.waitUntilEstablished()
        try await worse.waitUntilEstablished()
        try await good.waitUntilEstablished()

        let (discovery, recorder, logs) = discovery()
        defer { discovery.stop() }
        let found = await recorder.first { $0.deviceID == id }
        #expect(found?.record?.friendlyName == "Good one")
        #expect(found?.record?.host == "127.0.0.1")
        let skipped = await waitUntil { logs.count(containing: "Broken-\(id)") >= 1 && logs.count(containing: "Worse-\(id)") >= 1 }
        #expect(skipped, "log: \(logs.messages)")
        #expect(!recorder.events.contains { $0.record?.friendlyName == "No Id" || $0.record?.friendlyName == "Bad Id" })
    }

    @Test func staticDeviceAndMDNSMergeIntoOneDevice() async throws {
        let id = randomID()
        let service = try AvahiPublishedService(
            name: "Chromecast-\(id)", port: 8009, txt: castTXT(id: id, name: "mDNS name", model: "Chromecast Ultra"))
        defer { service.stop() }
        try await service.waitUntilEstablished()

        let dashed = [id.prefix(8), id.dropFirst(8).prefix(4), id.dropFirst(12).prefix(4), id.dropFirst(16).prefix(4),
                      id.dropFirst(20)].map(String.init).joined(separator: "-").uppercased()
        let configuration = DiscoveryConfiguration(
            interfaces: ["lo"],
            devices: [StaticDevice(host: "127.0.0.9", port: 8009, name: "Static name", id: dashed, topic: "den_tv")])
        let (discovery, recorder, _) = discovery(configuration)
        defer { discovery.stop() }

        let merged = await recorder.first { $0.deviceID == id && $0.record?.model == "Chromecast Ultra" }
        let record = try #require(merged?.record, "events: \(recorder.events(for: id))")
        #expect(record.host == "127.0.0.9")
        #expect(record.friendlyName == "Static name")
        #expect(record.topicOverride == "den_tv")
        #expect(record.source == .static)
        #expect(record.capabilities.rawValue == 4101)
        let events = recorder.events(for: id)
        #expect(events.first?.isAdded == true)
        #expect(events.filter(\.isAdded).count == 1, "one device, announced once: \(events)")
        #expect(events.first?.record?.source == .static)

        // mDNS goes away: the static device stays.
        service.stop()
        let fellBack = await recorder.first { $0.deviceID == id && $0.isUpdated && $0.record?.model == nil }
        #expect(fellBack != nil, "events: \(recorder.events(for: id))")
        #expect(!recorder.hasRemoval(of: id))
        #expect(discovery.devices[id]?.host == "127.0.0.9")
    }

    @Test func withoutAvahiLogsOnceKeepsStaticDevicesAndRecovers() async throws {
        let id = randomID()
        let service = try AvahiPublishedService(name: "Chromecast-\(id)", port: 8009, txt: castTXT(id: id, name: "Late"))
        defer { service.stop() }
        try await service.waitUntilEstablished()

        // The first four client creations "fail" as if avahi-daemon were not running.
        let attempts = Mutex(0)
        let (logger, logs) = RecordingLogHandler.logger()
        let staticDevice = StaticDevice(host: "127.0.0.8", name: "Always there")
        let discovery = DeviceDiscovery(
            configuration: DiscoveryConfiguration(interfaces: ["lo"], devices: [staticDevice]),
            logger: logger,
            connectHook: { attempts.withLock { $0 += 1; return $0 > 4 } },
            retryInitial: .milliseconds(50), retryMax: .milliseconds(200))
        let recorder = EventRecorder(discovery)
        discovery.start()
        defer { discovery.stop() }

        let staticAdded = await recorder.first { $0 == .added(staticDevice.record) }
        #expect(staticAdded != nil, "events: \(recorder.events)")
        let late = await recorder.first { $0.deviceID == id }
        #expect(late?.isAdded == true, "mDNS discovery recovers; events: \(recorder.events)")
        #expect(attempts.withLock { $0 } >= 5)
        #expect(logs.count(containing: "avahi-daemon is not reachable") == 1, "log: \(logs.messages)")
        #expect(logs.count(containing: "reachable again") == 1, "log: \(logs.messages)")
    }

    @Test func mdnsOffGivesOnlyStaticDevices() async throws {
        let (logger, logs) = RecordingLogHandler.logger()
        let device = StaticDevice(host: "127.0.0.7", port: 32000, name: "Group")
        let discovery = DeviceDiscovery(
            configuration: DiscoveryConfiguration(mdns: false, devices: [device]), logger: logger)
        let recorder = EventRecorder(discovery)
        discovery.start()
        let added = await recorder.first { _ in true }
        #expect(added == .added(device.record))
        discovery.stop()
        #expect(logs.count(containing: "avahi") == 0)
    }

    @Test func servicePublisherIsDiscoveredAndWithdrawn() async throws {
        let id = randomID()
        let publisher = try ServicePublisher()
        defer { publisher.stop() }
        try publisher.publish(
            name: "Sim-\(id)", port: 18009,
            txt: ServicePublisher.castTXT(id: id, name: "Simulated", model: "Google Home",
                                          capabilities: [.audioOut, .masterVolume], status: 1, statusText: "Spotify"),
            interface: "lo")
        let established = await waitUntil { publisher.isEstablished }
        #expect(established)
        #expect(publisher.publishedName == "Sim-\(id)")

        let (discovery, recorder, _) = discovery()
        defer { discovery.stop() }
        let found = await recorder.first { $0.deviceID == id }
        let record = try #require(found?.record, "events: \(recorder.events)")
        #expect(record.port == 18009)
        #expect(record.castType == .audio)  // what `ca` says, not the port
        #expect(record.busy == true)
        #expect(record.statusText == "Spotify")
        #expect(record.friendlyName == "Simulated")

        publisher.withdraw()
        let removed = await recorder.first { $0 == .removed(id: id) }
        #expect(removed != nil, "events: \(recorder.events(for: id))")
    }

    @Test func txtChangeIsAnUpdateAndRescanKeepsDevices() async throws {
        let id = randomID()
        let publisher = try ServicePublisher()
        defer { publisher.stop() }
        try publisher.publish(name: "Status-\(id)", port: 8009,
                              txt: ServicePublisher.castTXT(id: id, name: "Status TV"), interface: "lo")
        let (discovery, recorder, _) = discovery()
        defer { discovery.stop() }
        let added = await recorder.first { $0.deviceID == id }
        #expect(added?.record?.busy == false)

        try publisher.publish(name: "Status-\(id)", port: 8009,
                              txt: ServicePublisher.castTXT(id: id, name: "Status TV", status: 1, statusText: "YouTube"),
                              interface: "lo")
        let updated = await recorder.first { $0.deviceID == id && $0.record?.statusText == "YouTube" }
        #expect(updated?.isUpdated == true, "events: \(recorder.events(for: id))")
        #expect(updated?.record?.busy == true)

        // The rescan marks every known instance stale; the new sweep sees ours again (or, were
        // it gone, removes it) before none awaits it.
        discovery.rescan()
        #expect(await waitUntil { !discovery.awaitingSweep }, "the rescan's sweep did not end")
        #expect(!recorder.hasRemoval(of: id), "events: \(recorder.events(for: id))")
        #expect(discovery.devices[id] != nil)
    }

    @Test func stopIsIdempotentFinishesTheStreamAndDroppingWithoutStopIsSafe() async throws {
        let (logger, _) = RecordingLogHandler.logger()
        let discovery = DeviceDiscovery(
            configuration: DiscoveryConfiguration(interfaces: ["lo"], devices: [StaticDevice(host: "127.0.0.6")]),
            logger: logger)
        discovery.start()
        discovery.start()
        let finished = Task {
            var count = 0
            for await _ in discovery.events { count += 1 }
            return count
        }
        #expect(await waitUntil { discovery.devices.count == 1 }, "the static device was not announced")
        discovery.stop()
        discovery.stop()
        #expect(await finished.value >= 1)

        // Dropped while browsing, without stop(): avahi is stopped off the poll thread, no hang,
        // and nothing (a callback's retained reference, the poll thread) keeps it alive.
        let (droppedLogger, droppedLog) = RecordingLogHandler.logger()
        var dropped: DeviceDiscovery? = DeviceDiscovery(configuration: DiscoveryConfiguration(interfaces: ["lo"]), logger: droppedLogger)
        dropped?.start()
        #expect(await waitUntil { droppedLog.count(containing: "browsing _googlecast._tcp") == 1 }, "\(droppedLog.messages)")
        weak let released = dropped
        dropped = nil
        #expect(await waitUntil { released == nil }, "the dropped discovery was not released")
    }
}
