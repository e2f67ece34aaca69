import CastProtocol
import Foundation

/// The router's MQTT inputs: a message is classified by topic, parsed (CommandParser: every
/// input is hostile until parsed here) and routed — device commands to the command path, bridge
/// requests to BridgeRequests; a command for a device that has not been online yet while the
/// bridge starts is held (StartupHold). Each gets exactly one response.
extension BridgeCore {
    mutating func mqttMessage(topic: String, payload: [UInt8], responseTopic: String?, correlationData: [UInt8]?,
                              now: Date, _ out: inout BridgeOutput) {
        guard let parsed = topics.parse(topic) else {
            out.logs.append("ignoring a message on \(topic.prefix(200)): not a command topic")
            return
        }
        func context(_ name: String, default defaultTopic: String) -> CommandContext {
            Self.context(name, default: defaultTopic, responseTopic: responseTopic, correlationData: correlationData, now: now)
        }
        switch parsed {
        case .homeAssistantStatus:
            if String(decoding: payload.prefix(16), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) == "online" {
                republishDiscovery(now: now, &out)
            }
        case .bridgeRequest(let name):
            // In instance mode the primary answers the bridge requests.
            if let instances, !instances.primary { return }
            var ctx = context(name, default: topics.bridgeResponse(name))
            switch parser.parseBridgeRequest(name: name, payload: payload) {
            case .failure(let f):
                ctx.id = f.id
                respond(ctx, .failure(f.error), &out)
            case .success(let (request, id)):
                ctx.id = id
                bridgeRequest(request, ctx, now: now, &out)
            }
        case .deviceCommand(let dev, let name):
            if instances != nil, !instanceAdmits(dev, topic: topic, payload: payload, responseTopic: responseTopic,
                                                 correlationData: correlationData, now: now, &out) { return }
            let held = StartupHold.Held(device: dev, topic: topic, payload: payload, responseTopic: responseTopic,
                                        correlationData: correlationData)
            let everOnline = registry.device(topic: dev).flatMap { registry[$0]?.everOnline } ?? false
            let fits = (try? parser.checkPayloadSize(payload)) != nil
            // The window may have closed by now: what it held runs first, in arrival order.
            releaseHeld(device: nil, now: now, &out)
            let known = max(registry.count, publisher.published.devices.count)
            if fits, scheduler.holdAtStartup(held, everOnline: everOnline, devices: known, now: now) {
                out.logs.append("holding \(name) for \(dev) until it is online (the bridge is starting)")
                return
            }
            var ctx = context(name, default: topics.response(dev))
            switch parser.parse(name: name, payload: payload) {
            case .failure(let f):
                ctx.id = f.id
                respond(ctx, .failure(f.error), &out)
            case .success(let command):
                ctx.id = command.id
                ctx.expires = command.expires?.deadline(from: ctx.receivedAt)
                if case .keep(let keep) = command.command {
                    keepCommand(keep, deviceTopic: dev, ctx, now: now, &out)
                } else {
                    runCommand(command.command, deviceTopic: dev, ctx, now: now, &out)
                }
            }
        case .deviceSend(let dev, let namespace):
            if instances != nil, !instanceAdmits(dev, topic: topic, payload: payload, responseTopic: responseTopic,
                                                 correlationData: correlationData, now: now, &out) { return }
            let ctx = context("send", default: topics.response(dev))
            switch parser.parseSend(namespace: namespace, payload: payload) {
            case .failure(let f): respond(ctx, .failure(f.error), &out)
            case .success(let command): runCommand(command.command, deviceTopic: dev, ctx, now: now, &out)
            }
        }
    }

    /// Answers `busy` to a command or request that arrived while the bridge was overloaded.
    mutating func mqttOverloaded(topic: String, payload: [UInt8], responseTopic: String?, correlationData: [UInt8]?,
                                 now: Date, _ out: inout BridgeOutput) {
        let name: String
        let defaultTopic: String
        switch topics.parse(topic) {
        case .deviceCommand(let dev, let command)?: (name, defaultTopic) = (command, topics.response(dev))
        case .deviceSend(let dev, _)?: (name, defaultTopic) = ("send", topics.response(dev))
        case .bridgeRequest(let request)?: (name, defaultTopic) = (request, topics.bridgeResponse(request))
        case .homeAssistantStatus?, nil: return
        }
        var ctx = Self.context(name, default: defaultTopic, responseTopic: responseTopic, correlationData: correlationData, now: now)
        if case .success(let (_, envelope)) = parser.bodyAndEnvelope(payload) { ctx.id = envelope.id }
        health.mqttBusyRejections += 1
        respond(ctx, .failure(BridgeError(.busy, "the bridge is overloaded; the command was not run, try again")), &out)
    }

    /// Runs the held commands of `device` (it just came online), or all of them once the
    /// startup window has closed (`device` nil: on the tick and before each command, which also
    /// closes the window when it may).
    mutating func releaseHeld(device: String?, now: Date, _ out: inout BridgeOutput) {
        if device == nil { closeStartupHold(now: now, &out) }
        for held in scheduler.releaseHeld(device: device, now: now) {
            mqttMessage(topic: held.topic, payload: held.payload, responseTopic: held.responseTopic,
                        correlationData: held.correlationData, now: now, &out)
        }
    }

    /// Closes the startup window when it may (StartupHold: past its minimum once no device the
    /// bridge knows — and, in instance mode, owns — is still on its first connect; at its
    /// maximum in any case) and logs it once; `releaseHeld` then runs what it held.
    private mutating func closeStartupHold(now: Date, _ out: inout BridgeOutput) {
        guard !scheduler.startupHoldClosed else { return }
        let registry = self.registry
        let instances = self.instances
        func connecting(_ device: DeviceRecord) -> Bool {
            device.snapshot.link == .unknown && (instances?.ownership.owns(device.id) ?? true)
        }
        guard let closing = scheduler.closeStartupHold(now: now, connecting: { registry.records.values.contains(where: connecting) })
        else { return }
        let held = scheduler.heldCount
        switch closing {
        case .devicesSettled(let after):
            out.logs.append("the start-up hold ended after \(formatSeconds((after * 10).rounded() / 10)) s: every device's first connect has ended; "
                + "\(held) held commands run now")
        case .limitReached:
            let waiting = registry.records.values.reduce(0) { $0 + (connecting($1) ? 1 : 0) }
            out.logs.append("the start-up hold ended at its limit of \(formatSeconds(StartupHold.maximumSeconds)) s with "
                + "\(waiting) devices still on their first connect; \(held) held commands run now")
        }
    }

    /// Where a command's one response goes: the MQTT 5 Response Topic (with the Correlation Data)
    /// when it is valid, else `defaultTopic`. The echoed name is capped at 64 bytes.
    static func context(_ name: String, default defaultTopic: String, responseTopic: String?,
                        correlationData: [UInt8]?, now: Date) -> CommandContext {
        let valid = validResponseTopic(responseTopic)
        return CommandContext(name: String(name.prefix(64)), id: nil, responseTopic: valid ?? defaultTopic,
                              correlationData: valid == nil ? nil : correlationData, receivedAt: now)
    }

    /// An MQTT 5 Response Topic is used only when it is a valid topic name.
    static func validResponseTopic(_ t: String?) -> String? {
        guard let t, !t.isEmpty, t.utf8.count <= 1024, !t.contains("+"), !t.contains("#"), !t.contains("\u{0}") else { return nil }
        return t
    }
}
