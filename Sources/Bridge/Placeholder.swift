// Bridge — placeholder until the module lands.
enum BridgePlaceholder {}
