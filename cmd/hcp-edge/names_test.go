package main

import (
	"hcp-edge/cmd/hcp-edge/internal/auditaccess"
	"hcp-edge/cmd/hcp-edge/internal/cli"
	"hcp-edge/cmd/hcp-edge/internal/configcheck"
	"hcp-edge/cmd/hcp-edge/internal/reply"
	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/cmd/hcp-edge/internal/safestate"
)

// The end-to-end tests of this package run the built binary and decode what
// it prints; these are their names for the shapes and constants the
// internal packages define.
type (
	sessionView       = reply.Session
	submitResult      = reply.Submit
	uplinkStatus      = reply.Uplink
	statusResult      = reply.Status
	accessView        = reply.Access
	ownershipView     = reply.Ownership
	toolView          = reply.Tool
	toolsResult       = reply.Tools
	safeReport        = safestate.Report
	auditVerifyResult = auditaccess.VerifyResult
	auditReplayResult = auditaccess.ReplayResult
	checkResult       = configcheck.Result
	dataAccess        = auditaccess.DataAccess
)

const (
	exitFailure   = cli.ExitFailure
	stateFile     = rigconfig.StateFile
	artifactsDir  = rigconfig.ArtifactsDir
	resultsDir    = rigconfig.ResultsDir
	toolStatsFile = reply.ToolStatsFile
	viaDaemon     = auditaccess.ViaDaemon
	viaStateFile  = auditaccess.ViaStateFile
)

var (
	mustEncode       = reply.Encode
	parseArtifactURI = reply.ParseArtifactURI
	checkConfig      = configcheck.Check
)
