// Package control is the simulator's control panel: the HTTP-over-unix-socket
// API of configs/rig-protocols.md (status, write log, faults, precursor,
// virtual GPIO) over a plant.Plant, and a small Client for it. The status
// carries the sample's growth: material, layers per material, precursor.
//
// # API
//
//	GET    /status                     Status: every state variable and the write log
//	GET    /writes?since=N             {"writes": [...]} with seq > N
//	GET    /faults                     {"faults": [...]}
//	POST   /faults/{name}              optional body {"target": "..."}; → {"faults": [...]}
//	DELETE /faults/{name}              optional body or ?target=; /faults/all clears all
//	GET    /precursor                  {"precursor": "MoO3", "material": "MoS2"}
//	PUT    /precursor                  body {"precursor": "WO3"}; → {"precursor", "material"}
//	GET    /gpio/{pin}                 {"pin": "estop", "level": true}
//	PUT    /gpio/{pin}                 body {"level": true}; relay, heartbeat (inputs → 409)
//	GET    /gpio/{pin}/edge?level=L&timeout_ms=T
//	                                   long poll → {"pin", "level", "changed"}
//
// Errors are {"error": "..."} with 400 (bad request, target or precursor), 404 (unknown
// fault or pin) or 409 (driving an input).
//
// # Caveats
//
// The socket is created with mode 0660; anyone in its group controls the
// simulated rig. Long polls are capped at 60 s.
package control
