package dashboard

// Layout is the rig as its configuration names it: the gas lines, the
// outputs, the inputs and (a rig of several) the heated zones. The page lists the rig's channels from it and
// labels the readings by it (a flow by its gas line, a switch by its
// output, an input by its role and its healthy level), so the dashboard
// knows no rig: the daemon builds the Layout from its configuration
// (rig.mfcs, rig.outputs, rig.inputs and the envelope's safety inputs) and
// hands it to the Source's snapshot.
type Layout struct {
	Gases   []GasLine `json:"gases"`
	Outputs []Output  `json:"outputs"`
	Inputs  []Input   `json:"inputs"`
	// Zones are the heated zones of a rig of several, in the
	// configuration's order; none on a rig of one (its zone is the
	// reading named furnace).
	Zones []Zone `json:"zones,omitempty"`
}

// Zone is one heated zone: its name and its temperature controller's. The
// page reads it from the status values {Name}.pv_c, {Name}.setpoint_c,
// {Name}.output_pct and {Name}.heater_enabled.
type Zone struct {
	Name       string `json:"name"`
	Controller string `json:"controller"`
}

// GasLine is one gas line: its gas, hazard class, mass-flow controller,
// full scale and the output that opens it. The page reads its flow from the
// status value flow.{Gas}.sccm and its valve from switch.{Valve}.
type GasLine struct {
	Gas        string `json:"gas"`
	Hazard     string `json:"hazard"`
	Controller string `json:"controller"`
	FullScale  string `json:"full_scale,omitempty"`
	Valve      string `json:"valve,omitempty"`
}

// Output is one on/off output: its channel, safe level, role (pump, gate,
// vent, exhaust_scrubber, or none) and the gas whose line it opens. The
// page reads it from the status value switch.{Name}.
type Output struct {
	Name    string `json:"name"`
	Channel string `json:"channel"`
	Safe    string `json:"safe"`
	Role    string `json:"role,omitempty"`
	Gas     string `json:"gas,omitempty"`
}

// Input is one binary input: its channel (or source), its role, and the
// level a healthy, armed rig reads (nil when no rule of the configuration
// asks for one). The page reads it from the status value input.{Name}.
type Input struct {
	Name    string `json:"name"`
	Channel string `json:"channel,omitempty"`
	Role    string `json:"role,omitempty"`
	Healthy *bool  `json:"healthy,omitempty"`
}
