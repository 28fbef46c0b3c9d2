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
// Config is the rig section as the configuration file writes it today:
// one furnace controller (furnace:), one I/O module (dio:), one gauge
// controller (gauge:), one spectrometer (raman:) and a list of gas lines
// (mfcs:). Layout is the model: lists of Instrument, Zone, Head, Switch,
// Sense and Line, each of any length. Config.Layout maps today's shape onto
// it (one zone named furnace, one process head, one module named dio), so
// that every reader is written against lists already.
//
// Parse and Load decode the rig section strictly, expand ${sim_dir} and
// the environment in paths (Expand) and check the structure (Validate):
// duplicate names, unknown roles, a role given twice, one channel or one
// serial port used twice, two instruments at one unit of one bus, a line
// without a hazard class or a valve, a toxic line without an exhaust
// scrubber. Each problem is "rig.KEY: message"; config check places it at
// the key's FILE:LINE. What only the instrument profiles can decide (a
// channel the module's profile lacks, a profile of the wrong kind or
// family, a full scale the model is not made in) is checked where the
// profiles are read, in drivers/rigbuild.
//
// A gas line's hazard class is a Hazard: inert, toxic, flammable,
// oxidising or corrosive. The decoder keeps any string so that a wrong one
// is reported with every other problem of the file at once, at its key
// (rig.mfcs[i].hazard), rather than stopping the decode; Validate and the
// gate's configuration refuse a class outside the vocabulary.
//
// # The list shape to come
//
// The model already holds any number of zones, heads, modules and lines;
// the file does not yet say so. The list shape (issue 42, item 2) adds
// keys beside today's, each a list of named entries that Layout appends to
// the same model: zones: [{name: growth, controller: {bus, unit, profile}}],
// gauges: [{name, port, profile, heads: [{name, channel, role}]}],
// modules: [{name, bus, unit, profile}] with each output and input naming
// its module, and mfcs: as today. Today's furnace:, dio: and gauge: stay
// accepted as the one-entry case (a zone named furnace, a module named dio,
// one process head), so the shipped configurations (configs/*.yaml) load
// unchanged. Validate then also refuses two zones of one name, a head
// without a controller, and two units at one address of one RTU line.
package rig
