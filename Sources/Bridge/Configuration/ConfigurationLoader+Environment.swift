import Foundation

/// `CAST2MQTT_<SECTION>_<KEY>` environment variables over the file's values.
extension ConfigurationLoader {
    static func applyEnvironment(_ env: [String: String], to config: inout BridgeConfiguration) throws {
        for key in keys {
            guard let raw = env[key.envName] else { continue }
            let text = raw.trimmingCharacters(in: .whitespaces)
            func fail(_ expected: String) -> ConfigurationError {
                ConfigurationError(path: key.path, message: "\(key.envName)=\(key.secret ? "***" : raw): expected \(expected)")
            }
            let value: Value
            switch key.kind {
            case .string, .protocolVersion: value = .string(raw)
            case .word: value = .string(text)
            case .optionalString: value = (text.isEmpty || text == "null") ? .null : .string(raw)
            case .int:
                guard let v = Int(text) else { throw fail("an integer") }
                value = .int(v)
            case .double:
                guard let v = Double(text), v.isFinite else { throw fail("a number") }
                value = .double(v)
            case .bool:
                switch text.lowercased() {
                case "true", "1", "yes", "on": value = .bool(true)
                case "false", "0", "no", "off": value = .bool(false)
                default: throw fail("true or false")
                }
            case .urls:
                // One URL, or several separated by commas (a URL has none).
                let urls = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                value = urls.count == 1 ? .string(urls[0]) : .list(urls)
            case .list:
                value = .list(text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty })
            case .map:
                // name=value pairs separated by commas: CAST2MQTT_LOG_LEVELS=cast=debug,mqtt=info
                var map: [String: String] = [:]
                for pair in text.split(separator: ",") {
                    let parts = pair.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                    guard parts.count == 2, !parts[0].isEmpty else { throw fail("name=value pairs separated by commas") }
                    map[parts[0]] = parts[1]
                }
                value = .map(map)
            }
            key.set(&config, value)
        }
    }
}
