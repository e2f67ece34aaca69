// A minimal MQTT client process for tests that need our client in another process (the last-will
// test kills it with SIGKILL). Usage:
//   mqtt-test-client <url> <client-id> <will-topic> <will-payload> [<will-delay-seconds>]
// Prints "connected" once the broker accepted the connection, then idles (at most 120 s in all).
import Logging
import MQTT

#if canImport(Glibc)
import Glibc
#endif

let arguments = CommandLine.arguments
guard arguments.count == 5 || (arguments.count == 6 && UInt32(arguments[5]) != nil) else {
    print("usage: mqtt-test-client <url> <client-id> <will-topic> <will-payload> [<will-delay-seconds>]")
    exit(2)
}
let configuration = MQTTConfiguration(
    url: arguments[1], clientID: arguments[2],
    will: MQTTMessage(topic: arguments[3], string: arguments[4], qos: .atLeastOnce, retain: true),
    willDelay: arguments.count == 6 ? UInt32(arguments[5]) : nil)
let client = try MosquittoClient(configuration: configuration, logger: Logger(label: "mqtt-test-client"))
try client.start()
let clock = ContinuousClock()
let deadline = clock.now.advanced(by: .seconds(120))
for await event in client.events {
    if case .connected = event {
        // Unbuffered, so the test sees it at once.
        _ = "connected\n".withCString { write(1, $0, strlen($0)) }
        break
    }
    if clock.now > deadline { break }
}
// Idle until the test kills it (SIGKILL: the broker then sends the will). Bounded: SIGALRM,
// whose default action ends the process, comes after what is left of the 120 s.
let left = deadline - clock.now
alarm(UInt32(max(1, left.components.seconds)))
while true { pause() }
