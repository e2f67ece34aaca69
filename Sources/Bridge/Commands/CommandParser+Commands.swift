import CastProtocol
import Foundation

/// The value of each device command (short form or JSON form), range-checked.
extension CommandParser {
    func parseCommand(_ name: CommandName, body: Body) throws -> DeviceCommand {
        let f = Fields(body: body, command: name.rawValue)
        switch name {
        case .play: try f.noValue(); return .play
        case .pause: try f.noValue(); return .pause
        case .toggle: try f.noValue(); return .toggle
        case .stop: try f.noValue(); return .stop
        case .next: try f.noValue(); return .next
        case .previous: try f.noValue(); return .previous
        case .quit: try f.noValue(); return .quit
        case .refresh: try f.noValue(); return .refresh
        case .skipAd: try f.noValue(); return .skipAd
        case .keep: return .keep(try parseKeep(f.body))
        case .seek: return .seek(try parseSeek(f))
        case .rate: return .rate(try parseRate(f))
        case .volume: return .volume(try parseVolume(f))
        case .mute: return .mute(try parseMute(f))
        case .launch: return .launch(appId: try parseLaunch(f))
        case .load: return .load(try parseLoad(f))
        case .send: return .send(try parseSendJSON(f))
        case .transfer:
            switch f.body {
            case .short(let target):
                guard !target.isEmpty, target.utf8.count <= 256 else {
                    throw BridgeError.invalid("transfer needs the target device (topic name, friendly name or id)")
                }
                return .transfer(to: target, keepSource: false)
            case .json:
                try f.allow(["to", "keep_source"])
                guard let to = try f.string("to"), !to.isEmpty, to.utf8.count <= 256 else {
                    throw BridgeError.invalid("transfer needs \"to\": the target device (topic name, friendly name or id)")
                }
                return .transfer(to: to, keepSource: try f.bool("keep_source") ?? false)
            }
        case .announce: return .announce(try parseAnnounce(f))
        case .tracks: return .tracks(try parseTracks(f))
        case .queue: return .queue(try parseQueue(f))
        }
    }

    func parseSeek(_ f: Fields) throws -> SeekCommand {
        switch f.body {
        case .short(let text):
            guard let (sign, value) = Decimal.parse(text) else {
                throw BridgeError.invalid("seek takes seconds: 42 (absolute), +10 or -10 (relative)")
            }
            guard value <= 10_000_000 else { throw BridgeError.invalid("seek position is out of range") }
            if let sign { return SeekCommand(target: .relative(sign == "-" ? -value : value), resumeState: nil) }
            return SeekCommand(target: .absolute(value), resumeState: nil)
        case .json:
            try f.allow(["position", "relative", "resume"])
            let position = try f.number("position"), relative = try f.number("relative")
            var resume: String?
            switch try f.string("resume") {
            case nil: resume = nil
            case "play": resume = "PLAYBACK_START"
            case "pause": resume = "PLAYBACK_PAUSE"
            default: throw BridgeError.invalid("\"resume\" must be \"play\" or \"pause\"")
            }
            switch (position, relative) {
            case (let p?, nil):
                guard p >= 0, p <= 10_000_000 else { throw BridgeError.invalid("\"position\" must be 0 or more seconds") }
                return SeekCommand(target: .absolute(p), resumeState: resume)
            case (nil, let r?):
                guard abs(r) <= 10_000_000 else { throw BridgeError.invalid("\"relative\" is out of range") }
                return SeekCommand(target: .relative(r), resumeState: resume)
            default:
                throw BridgeError.invalid("seek needs exactly one of \"position\" (seconds) or \"relative\" (+/- seconds)")
            }
        }
    }

    func parseRate(_ f: Fields) throws -> Double {
        let rate: Double
        switch f.body {
        case .short(let text):
            guard let (sign, v) = Decimal.parse(text), sign != "-" else {
                throw BridgeError.invalid("rate takes a number from 0.5 to 2.0, e.g. 1.5")
            }
            rate = v
        case .json:
            try f.allow(["rate"])
            guard let v = try f.number("rate") else { throw BridgeError.invalid("rate needs {\"rate\": 1.5}") }
            rate = v
        }
        guard rate >= 0.5, rate <= 2.0 else { throw BridgeError.invalid("rate must be from 0.5 to 2.0, got \(rate)") }
        return rate
    }

    func parseVolume(_ f: Fields) throws -> VolumeChange {
        switch f.body {
        case .short(let text):
            guard let (sign, v) = Decimal.parse(text) else {
                throw BridgeError.invalid("volume takes a percentage: 40, or +5 / -5 to change it")
            }
            guard v <= 100 else { throw BridgeError.invalid("volume percent must be 0-100, got \(text)") }
            if let sign { return .relativePercent(sign == "-" ? -v : v) }
            return .level(v / 100)
        case .json:
            try f.allow(["level", "percent"])
            switch (try f.number("level"), try f.number("percent")) {
            case (let l?, nil):
                guard l >= 0, l <= 1 else { throw BridgeError.invalid("\"level\" must be 0.0-1.0, got \(l); use \"percent\" for 0-100") }
                return .level(l)
            case (nil, let p?):
                guard p >= 0, p <= 100 else { throw BridgeError.invalid("\"percent\" must be 0-100, got \(p)") }
                return .level(p / 100)
            default:
                throw BridgeError.invalid("volume needs exactly one of {\"level\": 0.4} or {\"percent\": 40}")
            }
        }
    }

    func parseMute(_ f: Fields) throws -> MuteChange {
        switch f.body {
        case .short(let text):
            switch text.lowercased() {
            case "true", "on", "1": return .set(true)
            case "false", "off", "0": return .set(false)
            case "toggle": return .toggle
            default: throw BridgeError.invalid("mute takes true/false, on/off, 1/0 or toggle")
            }
        case .json:
            try f.allow(["muted"])
            guard let m = try f.bool("muted") else { throw BridgeError.invalid("mute needs {\"muted\": true} or {\"muted\": false}") }
            return .set(m)
        }
    }

    func parseLaunch(_ f: Fields) throws -> String {
        let appId: String
        switch f.body {
        case .short(let text): appId = text
        case .json:
            try f.allow(["app_id"])
            appId = try f.string("app_id") ?? ""
        }
        try Self.checkAppId(appId)
        return appId
    }

    static func checkAppId(_ appId: String) throws {
        let ok = !appId.isEmpty && appId.utf8.count <= 64 && appId.unicodeScalars.allSatisfy {
            ($0 >= "A" && $0 <= "Z") || ($0 >= "a" && $0 <= "z") || ($0 >= "0" && $0 <= "9") || $0 == "_" || $0 == "-" || $0 == "."
        }
        if !ok { throw BridgeError.invalid("an app id is 1-64 letters, digits, '_', '-' or '.', e.g. CC1AD845") }
    }

    func parseAnnounce(_ f: Fields) throws -> AnnounceCommand {
        switch f.body {
        case .short(let text):
            try MediaBuilder.checkURL(text, key: "announce")
            return AnnounceCommand(url: text, volume: nil, contentType: nil, title: nil, wait: false)
        case .json:
            try f.allow(["url", "volume", "content_type", "title", "wait"])
            guard let url = try f.string("url") else { throw BridgeError.invalid("announce needs \"url\"") }
            try MediaBuilder.checkURL(url, key: "url")
            let volume = try f.number("volume")
            if let volume, !(0...1).contains(volume) { throw BridgeError.invalid("\"volume\" must be 0.0-1.0") }
            return AnnounceCommand(url: url, volume: volume, contentType: try f.string("content_type"), title: try f.string("title"),
                                   wait: try f.bool("wait") ?? false)
        }
    }

    func parseSendJSON(_ f: Fields) throws -> SendCommand {
        guard case .json(let dict) = f.body else {
            throw BridgeError.invalid("publish the message to command/send/<namespace>, or send {\"namespace\", \"data\"} here")
        }
        try f.allow(["namespace", "data", "app_id", "reply", "timeout"])
        guard let namespace = try f.string("namespace") else { throw BridgeError.invalid("send needs \"namespace\"") }
        try checkNamespace(namespace)
        guard let data = dict["data"] else { throw BridgeError.invalid("send needs \"data\" (a JSON value or a string)") }
        let text = data.stringValue ?? JSONOutput.text(data)
        let appId = try f.string("app_id")
        if let appId { try Self.checkAppId(appId) }
        let timeout = try f.number("timeout")
        if let timeout, !(timeout > 0 && timeout <= 300) { throw BridgeError.invalid("\"timeout\" must be 0-300 seconds") }
        try checkCastSize(.string(text), namespace: namespace)
        return SendCommand(namespace: namespace, payload: .string(text), appId: appId,
                           awaitReply: try f.bool("reply") ?? false, timeout: timeout)
    }

    func parseLoad(_ f: Fields) throws -> LoadCommand {
        let command: LoadCommand
        switch f.body {
        case .short(let url):
            try MediaBuilder.checkURL(url, key: "load")
            let media = MediaInformation(contentId: url, streamType: "BUFFERED", contentType: MediaBuilder.guessContentType(url))
            command = LoadCommand(appId: CastAppID.defaultMediaReceiver, load: LoadRequest(media: media), queue: nil)
        case .json:
            command = try MediaBuilder.load(f)
        }
        if let load = command.load {
            try checkCastSize(.string(MediaRequest.load(load).json(requestId: 1)), namespace: CastNamespace.media)
        }
        if let queue = command.queue {
            try checkCastSize(.string(MediaRequest.queueLoad(queue).json(requestId: 1)), namespace: CastNamespace.media)
        }
        return command
    }
}
