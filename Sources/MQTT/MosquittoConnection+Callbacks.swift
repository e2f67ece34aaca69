import CMosquitto
import Logging
import StageTrace

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// What libmosquitto calls back with, on the network thread (inside its read/write/misc calls,
// under `io`): the library's log, the CONNACK, the disconnect, a message, a publication's
// completion.
extension MosquittoConnection {
    func libraryLog(level: Int32, _ text: String) {
        logger.trace("libmosquitto: \(text)")
        // Error lines carry details (e.g. OpenSSL's "certificate verify failed") that the return
        // codes lack; keep the last one to complete the next error message.
        if level == MOSQ_LOG_ERR { shared.withLock { $0.lastLibraryError = text } }
    }

    /// `error` with the last error line libmosquitto logged, if any, appended (and then forgotten).
    func withLibraryDetail(_ error: MQTTError) -> MQTTError {
        guard let detail = shared.withLock({ s -> String? in
            defer { s.lastLibraryError = nil }
            return s.lastLibraryError
        }) else { return error }
        var error = error
        error.message += " (\(detail))"
        return error
    }

    func didConnect(rc: Int32, flags: Int32) {
        guard rc == 0 else {
            let v5 = speaksV5.load(ordering: .relaxed)
            refusal = MQTTError(connackCode: rc, protocolVersion: v5 ? .v5 : .v311)
            refusedProtocol = v5 && rc == unsupportedProtocolVersion
            return
        }
        established = true
        if logger.logLevel > .trace { libraryLogging(false) }
        let sessionPresent = flags & 1 != 0
        let (reconnect, subscriptions) = shared.withLock { s in
            let reconnect = s.everConnected
            if reconnect { s.reconnectCount += 1 }
            s.everConnected = true
            s.connected = true
            s.lastError = nil
            return (reconnect, s.subscriptions.sorted { $0.key < $1.key })
        }
        logger.info(
            reconnect ? "reconnected to MQTT broker" : "connected to MQTT broker",
            metadata: ["mqtt.session_present": "\(sessionPresent)", "mqtt.broker": "\(address)"])
        // Restore every subscription: the broker may have lost our session (restart without
        // persistence, expiry), and re-subscribing an existing subscription is harmless.
        for (filter, qos) in subscriptions {
            let rc = mosquitto_subscribe_v5(handle, nil, filter, Int32(qos.rawValue), 0, nil)
            if rc != MOSQ_ERR_SUCCESS.rawValue {
                let error = MQTTError(returnCode: rc, operation: "restore subscription \(filter)")
                logger.warning("\(error.message)")
            }
        }
        bulk.connected()
        pumpBulk()
        yield(.connected(sessionPresent: sessionPresent))
    }

    func didDisconnect(rc: Int32) {
        disconnectCode = rc
        changeShared { $0.connected = false }
    }

    func didReceive(_ message: mosquitto_message, properties: OpaquePointer?) {
        StageTrace.mark(.mqttDelivered)
        let topic = message.topic.map { String(cString: $0) } ?? ""
        var payload: [UInt8] = []
        if let bytes = message.payload, message.payloadlen > 0 {
            payload = Array(UnsafeRawBufferPointer(start: bytes, count: Int(message.payloadlen)))
        }
        var responseTopic: String?
        var correlationData: [UInt8]?
        if let properties {
            var text: UnsafeMutablePointer<CChar>?
            if mosquitto_property_read_string(properties, MQTTPropertyID.responseTopic, &text, false) != nil,
                let text
            {
                responseTopic = String(cString: text)
                free(text)
            }
            var data: UnsafeMutableRawPointer?
            var length: UInt16 = 0
            if mosquitto_property_read_binary(
                properties, MQTTPropertyID.correlationData, &data, &length, false) != nil
            {
                correlationData = data.map { Array(UnsafeRawBufferPointer(start: $0, count: Int(length))) } ?? []
                free(data)
            }
        }
        yield(
            .message(
                MQTTMessage(
                    topic: topic, payload: payload, qos: MQTTQoS(rawValue: Int(message.qos)) ?? .atMostOnce,
                    retain: message.retain, responseTopic: responseTopic, correlationData: correlationData)))
        StageTrace.mark(.mqttQueued)
    }

    func didPublish(mid: Int32, reasonCode: Int32) {
        if reasonCode >= 0x80 {
            let text = mosquitto_reason_string(reasonCode).map { String(cString: $0) } ?? "\(reasonCode)"
            logger.warning("broker rejected a publication: \(text)")
        }
        changeShared { s in
            if s.trackCompletions { s.completedMids.insert(mid) }
        }
        if bulk.completed(mid) { pumpBulk() }
    }
}
