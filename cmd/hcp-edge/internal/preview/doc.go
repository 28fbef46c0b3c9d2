// Package preview runs a recipe on a simulated rig, in process and in
// virtual time, and predicts what a real run would do: the duration of each
// step and phase, the gas used on each line, the heater's energy, the
// smallest margin to each limit of the envelope and when it occurs, every
// action the interlock would refuse, every trip, and the product (the layers
// grown). It is `hcp-edge recipe simulate` and the answer to a
// preview_request (docs/PROTOCOL-NOTES.md).
//
// # Design
//
// The recipe is planned by its executor.Executor and run by
// executor.Execute, as the session engine runs it, against an executor.Rig
// built the way the daemon builds its own: the real envelope.Interlock (the
// agent's compiled envelope) behind the real envelope.Invoker with the
// built-in tool catalog. Only the instruments differ: they implement the
// device contracts directly on firmware-sim's plant (instruments.go), which
// is never started. Every heated zone of the layout is simulated: on a
// plant of several zones (the two-zone rig's) each is a controller of its
// own over the plant's zone at its controller's unit (zonesim.go, zones.go),
// with its own thermal model, and the prediction has each zone's course
// (Prediction.Zones). The virtual Clock steps the plant (Plant.Step) as a
// Sleep advances process time, one Chunk at a time, kicking the furnace's
// comms watchdog (a one-zone rig's: the 3200s have none) and observing the rig after each chunk as the trip monitor
// would: trip rules (a trip runs its procedure through the interlock),
// margins, gas and heater usage (session/budget's Tracker). There is no
// goroutine and no timer: a two-hour recipe takes about a second.
//
// # Caveats
//
// A preview never touches hardware: it builds no driver and opens nothing
// the configuration names (ports, buses, sockets, GPIO lines); it takes only
// the instruments' names and ranges from it. It holds no rig lock and needs
// no daemon. Its Authorizer grants every action of its own token: what it
// predicts is the envelope's verdict, not a caller's permissions.
//
// The prediction is the simulator's physics, not the rig's: it is as good as
// firmware-sim's model (its accuracy against rig-sim is measured in
// docs/RECIPES.md, "Preview"). The trip rules are evaluated once per Chunk
// (1 s of process time), not at the monitor's 10–20 Hz.
package preview
