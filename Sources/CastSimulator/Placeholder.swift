// CastSimulator — placeholder until the module lands.
enum CastSimulatorPlaceholder {}
