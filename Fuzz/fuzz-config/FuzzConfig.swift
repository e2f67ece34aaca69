import Bridge
import Foundation
import FuzzSupport

/// Input: the YAML configuration file, then optionally a NUL byte and environment overrides, one
/// `NAME=value` a line (`CAST2MQTT_MQTT_PORT=1884`). The text goes through
/// `ConfigurationLoader.load(yaml:environment:)` (the file is read as UTF-8, so bytes that are not
/// UTF-8 are refused the way the daemon refuses them). A configuration that loads is printed
/// (`--print-config`) and used to start a `BridgeCore`, which builds every topic from it.
func fuzzConfig(_ input: UnsafeRawBufferPointer) {
    let (yamlBytes, environmentBytes) = splitAtFirstNUL(input)
    guard let yaml = String(validating: yamlBytes, as: UTF8.self) else { return }
    var environment: [String: String] = [:]
    for line in String(decoding: environmentBytes, as: UTF8.self).split(separator: "\n").prefix(64) {
        guard let eq = line.firstIndex(of: "=") else { continue }
        environment[String(line[..<eq])] = String(line[line.index(after: eq)...])
    }
    guard let configuration = try? ConfigurationLoader.load(yaml: yaml, environment: environment) else { return }
    _ = ConfigurationLoader.printable(configuration)
    var core = BridgeCore(configuration: configuration, startedAt: Date(timeIntervalSince1970: 1_800_000_000))
    _ = core.handle(.mqttConnected, now: Date(timeIntervalSince1970: 1_800_000_001))
}
