//go:build !pprof

package agent

import "log/slog"

// startDebugPprof is a no-op in the release build: the profiling listener
// exists only in a binary built with -tags pprof (debugpprof.go).
func startDebugPprof(*slog.Logger) func() { return func() {} }
