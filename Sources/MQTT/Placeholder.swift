// MQTT — placeholder until the module lands.
enum MQTTPlaceholder {}
