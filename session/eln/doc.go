// Package eln writes a session's record as an .eln archive, the ELN
// Consortium's exchange format that electronic lab notebooks (eLabFTW,
// Kadi4Mat, RSpace, Chemotion) import: a zip holding one root folder with
// the data files and, at its top, ro-crate-metadata.json, an RO-Crate 1.2
// (https://w3id.org/ro/crate/1.2; the ELN format asks for 1.1 or later)
// describing them in JSON-LD with schema.org terms. It is pure: no clock,
// no file system, the zip written to the io.Writer it is handed.
//
// # Concepts
//
// A Run is one session as the Process Run Crate profile of the Workflow
// Run RO-Crate family (https://w3id.org/ro/wfrun/process/0.5) describes a
// process run: a CreateAction (the session) whose instrument is the
// recipe that ran (a SoftwareApplication with its version and sha256),
// whose agent is the hcp-edge agent, whose participants are the operators
// who approved it (display name and OS user), with its start and end
// times, its status (CompletedActionStatus, or FailedActionStatus for a
// session that failed, was aborted or rejected; a running session is not
// exported),
// its inputs (object: a PropertyValue per input) and what it produced
// (result: every File). The rig and its instruments are
// IndividualProducts (model and serial number where known) the action
// lists as its instrument too. Every File carries contentSize,
// encodingFormat and sha256, so a reader checks each against the bytes.
//
// # Layout
//
//	{root}/ro-crate-metadata.json
//	{root}/{each File's Path}       e.g. artifacts/raman_spectrum.jdx,
//	                                recipe/<recipe file>.yaml,
//	                                audit/audit.jsonl, session.json
//
// # Caveats
//
// Write holds every file in memory (a session's record is a few hundred
// kilobytes); it refuses a path outside the root or named twice.
package eln
