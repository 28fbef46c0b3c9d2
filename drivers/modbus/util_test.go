package modbus_test

import "fmt"

func fmtAny(v any) string { return fmt.Sprint(v) }

func devicetestMissingPty(t interface {
	Helper()
	Skipf(string, ...any)
}, err error) {
	t.Helper()
	t.Skipf("no pty available: %v", err)
}

// limitedBuffer keeps the first 64 KiB written to it; safe for one writer
// goroutine at a time per exec (os/exec serialises Stdout == Stderr).
type limitedBuffer struct{ b []byte }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := 64<<10 - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(len(p), room)]...)
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string { return string(l.b) }
