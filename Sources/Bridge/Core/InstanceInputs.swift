import CastProtocol
import Foundation

/// The router in instance mode (mqtt-api.md §10; Instances/): instance documents and claims go
/// to `Ownership`, whose answers are carried out here; commands are admitted by the ownership
/// decision; and every output passes `gate`, which lets through only what this instance may
/// publish — its own document and claims, the device topics and discovery configs of devices it
/// owns (confirmed), the plain bridge topics while it is the primary, and responses (a response
/// exists only for a command this instance took). None of this runs in single mode.
extension BridgeCore {
    /// A message on `bridge/instances/+`, `bridge/claims/+` or `<base>/+/response`; false for any other topic.
    mutating func instanceMessage(_ topic: String, _ payload: [UInt8], now: Date, _ out: inout BridgeOutput) -> Bool {
        // The prefixes and the name only, not a copy of the ownership: a copy alive while the
        // ownership changes below would make it copy its tables (every claim, every document)
        // on every message.
        guard let (instancesPrefix, claimsPrefix, me) = instances.map({
            ($0.ownership.instancesPrefix, $0.ownership.claimsPrefix, $0.ownership.me)
        }) else { return false }
        let fx: OwnershipEffects?
        var gone: String?
        if topic.hasPrefix(instancesPrefix) {
            let name = String(topic.dropFirst(instancesPrefix.count))
            if payload.isEmpty, instances?.ownership.documents[name] != nil { gone = name }
            fx = instances?.ownership.documentReceived(name, payload, now: now)
        } else if topic.hasPrefix(claimsPrefix) {
            fx = instances?.ownership.claimReceived(String(topic.dropFirst(claimsPrefix.count)), payload, now: now)
        } else if let dev = responseDevice(topic) {
            if let id = registry.device(topic: dev) { responseSeen(id, payload) }
            return true
        } else {
            return false
        }
        if let fx { applyOwnership(fx, now: now, &out) }
        if let gone, gone == me {
            // This instance's own will fired (it was frozen or cut off): the others answer what
            // it held while they saw it live.
            if let n = instances?.held.dropKeptByOthers(), n > 0 {
                out.logs.append("this instance's will fired: \(n) held commands are answered by the devices' next owners")
            }
        } else if let gone {
            answerUnanswered(of: gone, now: now, &out)
        }
        return true
    }

    /// After every broker (re)connect: every device held until its claim is read again.
    mutating func instanceConnected(now: Date, _ out: inout BridgeOutput) {
        instances?.primary = false
        // Responses may have been missed while away: what was remembered is no guide.
        instances?.unanswered.forgetAll()
        if let fx = instances?.ownership.connected(now: now) { applyOwnership(fx, now: now, &out) }
    }

    mutating func instanceResumed(gap: Double, now: Date, _ out: inout BridgeOutput) {
        instances?.unanswered.forgetAll()
        if let fx = instances?.ownership.resumed(now: now, gap: gap) { applyOwnership(fx, now: now, &out) }
    }

    mutating func instanceStop(now: Date, _ out: inout BridgeOutput) {
        if let fx = instances?.ownership.stop(now: now) { applyOwnership(fx, now: now, &out) }
    }

    mutating func instanceTick(now: Date, _ out: inout BridgeOutput) {
        if let fx = instances?.ownership.tick(now: now) { applyOwnership(fx, now: now, &out) }
        for held in instances?.held.expired(now: now) ?? [] { answerBusy(held, now: now, &out) }
        instances?.unanswered.expire(now: now)
        if let state = instances, state.unanswered.dropped > state.droppedLogged {
            out.logs.append("\(state.unanswered.dropped - state.droppedLogged) commands for devices of other instances were "
                + "forgotten to keep the bound (\(UnansweredCommands.perDevice) per device, \(UnansweredCommands.total) in all): "
                + "if their owner dies before answering them, they get no answer")
            instances?.droppedLogged = state.unanswered.dropped
        }
    }

    /// After every input: this instance's reach of the device it concerned, the commands held for
    /// a device that just came online under this instance, and the gate.
    mutating func instanceAfter(_ input: BridgeInput, now: Date, _ out: inout BridgeOutput) {
        switch input {
        case .deviceDiscovered(let d), .deviceUpdated(let d): updateReach(d.id, now: now, &out)
        case .deviceRemoved(let id): updateReach(id, now: now, &out)
        case .device(let id, _):
            updateReach(id, now: now, &out)
            if registry[id]?.online == true, instances?.ownership.owns(id) == true { replayHeld(id, now: now, &out) }
        default: break
        }
        gate(&out)
    }

    /// Quality (docs/scaling.md): 1 while this instance's Cast connection to the device answers,
    /// 0.5 while discovery (mDNS or the static list) reports it, 0 when it is gone.
    private mutating func updateReach(_ id: DeviceID, now: Date, _ out: inout BridgeOutput) {
        guard let state = instances else { return }
        let quality: Double
        var prefer: [String] = []
        if let device = registry[id] {
            quality = device.online ? 1 : 0.5
            if !state.prefer.isEmpty {
                let name = device.descriptor.friendlyName.lowercased()
                prefer = state.prefer[id] ?? state.prefer[device.topic]
                    ?? state.prefer.first { $0.key.lowercased() == name }?.value ?? []
            }
        } else {
            quality = groups.isDynamic(id) ? 0.5 : 0
        }
        if let fx = instances?.ownership.reach(id, quality: quality, prefer: prefer, now: now) { applyOwnership(fx, now: now, &out) }
    }

    /// Carries out what `Ownership` answered.
    mutating func applyOwnership(_ fx: OwnershipEffects, now: Date, _ out: inout BridgeOutput) {
        for p in fx.publications { out.publish(p) }
        out.logs += fx.logs
        for id in fx.connect {
            out.connect.append(id)
            instances?.gainedAt[id] = now
            // Published fresh from here on: what this instance published when it last owned the
            // device is no guide to what is retained now.
            forgetPublished(id)
            publishInfo(id, &out)
            publishDiscovery(id, &out)
            if registry[id]?.online == true { publishDevice(id, now: now, &out) }
        }
        for id in fx.release {
            out.release.append(id)
            instances?.gainedAt.removeValue(forKey: id)
            let moving = BridgeError(.busy, "\(registry.topicName(id)) is moving to another bridge instance; try again",
                                     retryAfter: HeldCommands.retryAfter)
            failAllWork(id, moving, now: now, &out)
            for held in instances?.held.take(id) ?? [] { answerBusy(held, now: now, &out) }
        }
        for id in fx.refresh {
            forgetPublished(id)
            publishDevice(id, now: now, &out)
            publishDiscovery(id, &out)
        }
        if let primary = fx.primary, primary != instances?.primary {
            instances?.primary = primary
            if primary {
                out.logs.append("this instance is the primary: it publishes \(topics.bridgeState) and answers the bridge requests")
                out.publish(Publication(topic: topics.bridgeState, text: "online", retain: true))
                publisher.record(topics.bridgeState, text: "online")
                publisher.unrecord([topics.bridgeInfo, topics.bridgeDevices])
                bridgeTopicsChanged(now: now, force: true, &out)
                publishBridgeDiscovery(force: true, &out)
            }
        }
        if fx.ownersChanged, instances?.primary == true { bridgeTopicsChanged(now: now, &out) }
        if let ownership = instances?.ownership, ownership.stopping { out.handedOver = ownership.handedOver }
    }

    /// Forgets what was published for a device's retained topics, so that all of them go out again.
    private mutating func forgetPublished(_ id: DeviceID) {
        guard let device = registry[id] else { return }
        let leaves = PublishedSnapshot.retainedDeviceLeaves + PublishedSnapshot.retainedGroupLeaves
        publisher.unrecord(leaves.map { topics.device(device.topic, $0) } + homeAssistant.configTopics(device))
    }

    // MARK: - Commands

    /// Whether this instance takes a device command now (mqtt-api.md §10: every instance receives
    /// every command and decides by the broker's order). Held or ignored commands return false.
    mutating func instanceAdmits(_ deviceTopic: String, topic: String, payload: [UInt8], responseTopic: String?,
                                 correlationData: [UInt8]?, now: Date, _ out: inout BridgeOutput) -> Bool {
        // Read through `instances` rather than a copy of it: a copy alive while the commands
        // remembered or held change would make them copy their tables on every command.
        guard instances != nil else { return true }
        // A topic this instance does not know names a device of another segment: its owner answers.
        guard let id = registry.device(topic: deviceTopic), let decision = instances?.ownership.decide(id) else { return false }
        switch decision {
        case .ignore:
            rememberUnanswered(id, topic: topic, payload: payload, responseTopic: responseTopic, now: now)
            return false
        case .run:
            // Just taken over and not connected yet: wait for it (never device_offline for a
            // device that only changes hands).
            guard registry[id]?.online != true, let gained = instances?.gainedAt[id], now.timeIntervalSince(gained) < HeldCommands.bound else {
                return true
            }
        case .hold:
            break
        }
        let kept = instances.map { state in
            let me = state.ownership.me
            return state.ownership.owner(id) == me && state.ownership.documents[me]?.state == .online
        } == true && Self.validResponseTopic(responseTopic) == nil
        let held = HeldCommands.Held(topic: topic, payload: payload, responseTopic: responseTopic, correlationData: correlationData,
                                     until: now.addingTimeInterval(HeldCommands.bound), keptByOthers: kept)
        if instances?.held.hold(id, held) != true { answerBusy(held, now: now, &out) }
        return false
    }

    /// Runs the commands held for a device this instance now owns and has online.
    private mutating func replayHeld(_ id: DeviceID, now: Date, _ out: inout BridgeOutput) {
        instances?.gainedAt.removeValue(forKey: id)
        guard let list = instances?.held.take(id), !list.isEmpty else { return }
        out.logs.append("\(registry.topicName(id)): running \(list.count) commands held while it changed hands")
        for held in list {
            mqttMessage(topic: held.topic, payload: held.payload, responseTopic: held.responseTopic,
                        correlationData: held.correlationData, now: now, &out)
        }
    }

    // MARK: - Commands a killed owner never answered

    /// A command another live instance owns the device of: remembered until its response is seen
    /// (UnansweredCommands). One with a valid MQTT 5 Response Topic is not: its answer goes where
    /// this instance does not listen.
    private mutating func rememberUnanswered(_ id: DeviceID, topic: String, payload: [UInt8], responseTopic: String?, now: Date) {
        guard let ownership = instances?.ownership, let owner = ownership.owner(id), owner != ownership.me,
              ownership.documents[owner]?.state == .online, Self.validResponseTopic(responseTopic) == nil else { return }
        switch topics.parse(topic) {
        case .deviceCommand(_, let command)?:
            // The id the owner's response carries (CommandParser: the envelope's, also on failure).
            let commandID: JSONValue?
            switch parser.bodyAndEnvelope(payload) {
            case .success(let (_, envelope)): commandID = envelope.id
            case .failure(let f): commandID = f.id
            }
            instances?.unanswered.remember(id, owner: owner, name: String(command.prefix(64)), id: commandID, now: now)
        case .deviceSend?:
            instances?.unanswered.remember(id, owner: owner, name: "send", id: nil, now: now)
        default:
            return
        }
    }

    /// `<base>/<dev>/response`: the device's topic name.
    private func responseDevice(_ topic: String) -> String? {
        let base = topics.base + "/", leaf = "/response"
        guard topic.hasPrefix(base), topic.hasSuffix(leaf), topic.utf8.count > base.utf8.count + leaf.utf8.count else { return nil }
        let dev = String(topic.dropFirst(base.count).dropLast(leaf.count))
        guard !dev.contains("/"), dev != "bridge" else { return nil }
        return dev
    }

    /// The owner's response to a command: that command is answered.
    private mutating func responseSeen(_ id: DeviceID, _ payload: [UInt8]) {
        guard instances?.unanswered.count ?? 0 > 0, case .success(.json(let response)) = parser.body(payload),
              case .string(let name)? = response["command"] else { return }
        instances?.unanswered.answered(id, name: name, id: response["id"])
    }

    /// `gone`'s document was cleared (its will fired, or its clean stop ended): every command it
    /// never answered is answered `busy` once, by the rule's next owner of the device (all
    /// instances compute the same); the others forget theirs.
    private mutating func answerUnanswered(of gone: String, now: Date, _ out: inout BridgeOutput) {
        guard let lists = instances?.unanswered.ownerGone(gone), let ownership = instances?.ownership else { return }
        for (id, commands) in lists {
            let next = ownership.ruleOwner(id)
            guard next == ownership.me || (next == nil && ownership.owner(id) == ownership.me) else { continue }
            let dev = registry.topicName(id)
            out.logs.append("\(dev): answering busy \(commands.count == 1 ? "the command" : "\(commands.count) commands") "
                + "that instance \(gone) never answered before it stopped")
            for command in commands {
                var ctx = Self.context(command.name, default: topics.response(dev), responseTopic: nil, correlationData: nil, now: now)
                ctx.id = command.id
                respond(ctx, .failure(BridgeError(.busy, "the bridge instance that owned \(dev) (\(gone)) stopped before answering; "
                                                  + "the command may or may not have run; try again", retryAfter: HeldCommands.retryAfter)),
                        &out)
            }
        }
    }

    /// `busy` with `retry_after` for a held command (its one answer).
    private mutating func answerBusy(_ held: HeldCommands.Held, now: Date, _ out: inout BridgeOutput) {
        let name: String
        let defaultTopic: String
        switch topics.parse(held.topic) {
        case .deviceCommand(let dev, let command)?: (name, defaultTopic) = (command, topics.response(dev))
        case .deviceSend(let dev, _)?: (name, defaultTopic) = ("send", topics.response(dev))
        default: return
        }
        var ctx = Self.context(name, default: defaultTopic, responseTopic: held.responseTopic, correlationData: held.correlationData,
                               now: now)
        if case .success(let (_, envelope)) = parser.bodyAndEnvelope(held.payload) { ctx.id = envelope.id }
        respond(ctx, .failure(BridgeError(.busy, "the device is changing hands between bridge instances; try again",
                                          retryAfter: HeldCommands.retryAfter)), &out)
    }

    // MARK: - The gate

    /// Drops what this instance may not publish (see the type's comment).
    mutating func gate(_ out: inout BridgeOutput) {
        guard let state = instances, !out.publications.isEmpty else { return }
        let base = topics.base + "/"
        let prefix = configuration.homeassistant.discoveryPrefix + "/"
        let bridgeNode = homeAssistant.bridgeNode
        out.publications = out.publications.filter { p in
            let topic = p.topic
            if topic.hasPrefix(base) {
                let rest = topic.utf8.dropFirst(base.utf8.count)
                let slash = rest.firstIndex(of: UInt8(ascii: "/")) ?? rest.endIndex
                let device = String(decoding: rest[..<slash], as: UTF8.self)
                let leaf = String(decoding: rest[slash...].dropFirst(), as: UTF8.self)
                if device == "bridge" {
                    return leaf.hasPrefix("instances/") || leaf.hasPrefix("claims/") || state.primary
                }
                if leaf == "response" { return true }
                return registry.device(topic: device).map(state.ownership.owns) ?? false
            }
            if topic.hasPrefix(prefix) {
                guard let node = topic.split(separator: "/").first(where: { $0.hasPrefix("cast2mqtt_") }) else { return true }
                if node == bridgeNode { return true }
                return state.ownership.owns(String(node.dropFirst("cast2mqtt_".count)))
            }
            return true
        }
    }

    // MARK: - Documents

    /// `bridge/devices` in instance mode: every device this instance knows and every device
    /// claimed by any instance, each with its `owner`; `online` only for the devices it owns
    /// (another instance's view of them is not this one's).
    func instanceDevicesDocument(_ doc: JSONValue) -> JSONValue {
        guard let ownership = instances?.ownership, case .array(let list) = doc else { return doc }
        let owners = ownership.owners
        var seen = Set<String>()
        var out: [JSONValue] = list.map { entry in
            guard case .object(var o) = entry, let id = o["id"]?.stringValue else { return entry }
            seen.insert(id)
            if let owner = owners[id] { o["owner"] = .string(owner) }
            if !ownership.owns(id) { o.removeValue(forKey: "online") }
            return .object(o)
        }
        for id in owners.keys.sorted() where !seen.contains(id) {
            out.append(.object(["id": .string(id), "owner": .string(owners[id] ?? "")]))
        }
        return .array(out)
    }
}
