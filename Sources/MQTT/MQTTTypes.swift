/// Quality of service of an MQTT publication or subscription.
public enum MQTTQoS: Int, Sendable, CaseIterable {
    case atMostOnce = 0
    case atLeastOnce = 1
    case exactlyOnce = 2
}

/// The MQTT protocol version spoken to the broker.
public enum MQTTProtocolVersion: String, Sendable, CaseIterable {
    case v311 = "3.1.1"
    case v5 = "5"
}

/// One MQTT publication, outgoing or incoming.
///
/// `responseTopic` and `correlationData` are MQTT 5 properties; with MQTT 3.1.1 they are not sent
/// and are always nil on incoming messages.
public struct MQTTMessage: Sendable, Equatable {
    public var topic: String
    public var payload: [UInt8]
    public var qos: MQTTQoS
    public var retain: Bool
    public var responseTopic: String?
    public var correlationData: [UInt8]?

    public init(
        topic: String,
        payload: [UInt8] = [],
        qos: MQTTQoS = .atLeastOnce,
        retain: Bool = false,
        responseTopic: String? = nil,
        correlationData: [UInt8]? = nil
    ) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
        self.responseTopic = responseTopic
        self.correlationData = correlationData
    }

    /// A message whose payload is the UTF-8 encoding of `string`.
    public init(
        topic: String,
        string: String,
        qos: MQTTQoS = .atLeastOnce,
        retain: Bool = false,
        responseTopic: String? = nil,
        correlationData: [UInt8]? = nil
    ) {
        self.init(
            topic: topic, payload: Array(string.utf8), qos: qos, retain: retain,
            responseTopic: responseTopic, correlationData: correlationData)
    }

    /// The payload decoded as UTF-8, nil when it is not valid UTF-8.
    public var string: String? {
        String(validating: payload, as: UTF8.self)
    }
}

/// What the client reports on its event stream.
public enum MQTTEvent: Sendable, Equatable {
    /// The broker accepted our CONNECT. `sessionPresent` is true when it still had our session
    /// (subscriptions and queued QoS 1/2 messages) from an earlier connection.
    case connected(sessionPresent: Bool)
    /// An established connection was lost, or the broker refused a connection attempt (the reason
    /// then says why, e.g. "not authorised"). The client keeps retrying with backoff until shut down.
    case disconnected(reason: String)
    /// A message arrived on one of our subscriptions.
    case message(MQTTMessage)
}

/// What the bridge needs from an MQTT client. `MosquittoClient` implements it; tests can fake it.
public protocol MQTTClientProtocol: AnyObject, Sendable {
    /// Connection events and incoming messages. Single consumer.
    var events: AsyncStream<MQTTEvent> { get }
    /// Publishes a message. Callable from any thread or task.
    ///
    /// While disconnected, QoS 1 and 2 messages are queued by the library and sent after the next
    /// connect; QoS 0 messages are refused with `MQTTError.Code.noConnection`.
    func publish(_ message: MQTTMessage) throws
    /// Subscribes to a topic filter. The subscription is remembered and restored after every
    /// reconnect; subscribing while disconnected is not an error.
    func subscribe(_ filter: String, qos: MQTTQoS) throws
    /// Removes a subscription (also from the set restored on reconnect).
    func unsubscribe(_ filter: String) throws
}
