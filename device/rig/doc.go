// Package rig is the rig as one typed model that every layer reads: its
// instruments, each with its kind, profile and bus or serial line; the
// outputs and inputs of its I/O modules, with their safe levels and roles;
// its gas lines, each with a typed hazard class (Hazard, one vocabulary
// for the layout, the envelope and the gate); its heated zones and gauge
// heads. It lives in device/, the bottom layer, so that drivers/ (which
// builds the drivers from it: drivers/rigbuild), envelope/ (which derives
// its RigSpec from it: envelope.SpecOf) and session/ read the one model,
// and cmd/ only loads it.
//
// # Concepts
//
// Config is the rig section as the configuration file writes it, in one of
// two shapes for each kind of instrument. The one-entry shape is one furnace
// controller (furnace:), one I/O module (dio:) and one gauge controller
// (gauge:); the list shape is any number of heated zones (zones:), I/O
// modules (modules:) and gauge controllers with their heads (gauges:).
// Both have one spectrometer (raman:) and a list of gas lines (mfcs:).
// Layout is the model: lists of Instrument, Zone, Head, Switch, Sense and
// Line, each of any length, which Config.Layout fills from either shape, so
// that every reader is written against lists.
//
// # The list shape
//
// Each list is of named entries that Layout appends to the same model:
//
//	zones:   [{name, controller: {bus, unit, profile, name}}]
//	modules: [{name, bus, unit, profile}]
//	outputs: {NAME: {module, channel, safe, role}}   inputs: {NAME: {module, channel, invert, role}}
//	gauges:  [{name, port, mode, timeout, profile, heads: [{name, channel, role}]}]
//
// A zone's controller is an instrument named controller.name (default: the
// zone's name); an output or input is on the module it names (default: the
// only module). A head's role is process (the pressure the interlocks read:
// exactly one head of the rig) or roughing. The one-entry shape is the
// one-entry case of the same model: a zone named furnace whose controller
// is named furnace, a module named dio, the gauge's one process head named
// as the gauge. ZoneEntries, ModuleEntries and GaugeEntries read either
// shape with the configuration key of each entry, for the readers that
// need the key (drivers/rigbuild). A kind is written in one shape or the
// other, never both.
//
// The model holds any number of zones, and drivers/rigbuild builds and
// verifies a controller per zone; the envelope judges every zone (its
// <zone>.* channels, limits and over_temperature trip: envelope.SpecOf),
// while the agent's wiring and the executor drive one zone today (issue
// 42): the agent's configuration refuses a layout of several when it loads.
//
// # Validation
//
// Parse and Load decode the rig section strictly, expand ${sim_dir} and
// the environment in paths (Expand) and check the structure (Validate): a
// kind written in both shapes, a layout without a zone (module, gauge),
// duplicate names (instruments, zones, heads), unknown roles, a role given
// twice, a second process head or none, a gauge controller without heads,
// an output or input on a module that does not exist (or naming none when
// there are several), one channel of a module or one serial port used
// twice, two instruments at one unit of one bus (the zones' controllers and
// the modules together, so several units on one RS-485 line each have
// their own), a line without a hazard class or a valve, a toxic line
// without an exhaust scrubber. Each problem is "rig.KEY: message"; config
// check places it at the key's FILE:LINE. What only the instrument profiles
// can decide (a channel the module's profile lacks, a head's gauge its
// controller's profile lacks, a profile of the wrong kind or family, a full
// scale the model is not made in) is checked where the profiles are read,
// in drivers/rigbuild.
//
// A gas line's hazard class is a Hazard: inert, toxic, flammable,
// oxidising or corrosive. The decoder keeps any string so that a wrong one
// is reported with every other problem of the file at once, at its key
// (rig.mfcs[i].hazard), rather than stopping the decode; Validate and the
// gate's configuration refuse a class outside the vocabulary.
//
// # Caveats
//
// Nothing reads a roughing head yet: the gauge controller's driver reads
// its process head (drivers/rigbuild). A head cannot lack a controller in
// the file (heads are written under their gauge controller), so that
// refusal is by construction.
package rig
