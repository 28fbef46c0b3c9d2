// Package rigconfig reads the agent's YAML configuration: the rig section
// (the rig model, device/rig), and the agent's own sections (envelope,
// monitor, agent with its AMQP, disk and metrics settings, retention, gate,
// models, operators). It is glue for the rig: the layout's types, loader
// and structural checks are device/rig's, the profiles, the
// profile-dependent checks and the building of drivers drivers/rigbuild's.
//
// # Concepts
//
// Parse and Load decode strictly (an unknown key is an error), expand
// ${sim_dir} and environment variables in paths, fill defaults (Defaults:
// HCP_STATE_DIR and HCP_CONTROL_SOCKET override the file) and validate
// everything that can be checked without hardware: the rig's structure
// (rig.Config.Check), what its profiles decide (rigbuild.Check), and the
// agent's sections. The gate section is a gate.Config decoded over
// DefaultGate (the shipped policy plus the local operator, broker user and
// caller "local"). The envelope section is an envelope.Config; Spec derives
// the envelope.RigSpec it is compiled against from the rig section.
//
// Build and BuildPartial build the drivers (rigbuild); InterlockRig hands
// the writable rig to the interlock.
package rigconfig
