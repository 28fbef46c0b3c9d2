package device

import "context"

type urgentKey struct{}

// WithUrgent marks ctx as carrying a write toward the safe state that must not
// wait behind routine traffic: the interlock's halts (a trip's procedure, the
// e-stop) run with it. A driver whose instruments share a line or a
// connection with others (a Modbus bus, a serial line) serves an urgent
// exchange that is waiting before every routine one that is waiting, whatever
// their order of arrival; an exchange already on the line is let finish
// (drivers/lane). It grants nothing:
// what may be written is the interlock's decision, as before.
func WithUrgent(ctx context.Context) context.Context {
	return context.WithValue(ctx, urgentKey{}, true)
}

// Urgent reports whether ctx was marked by WithUrgent.
func Urgent(ctx context.Context) bool {
	u, _ := ctx.Value(urgentKey{}).(bool)
	return u
}
