package outbox

//go:generate go tool msgp -file record.go -o record_gen.go

// Class says how the outbox treats a message under pressure.
type Class uint8

// The message classes.
const (
	// Protocol messages (task_accepted, task_rejected, state changes,
	// checkpoints, task_completed, task_failed, session_closed, …) are never
	// dropped.
	Protocol Class = 1
	// Telemetry messages (high-rate progress, readings) are bounded: past
	// Opts.TelemetryBound the oldest telemetry message is dropped and counted.
	Telemetry Class = 2
)

// Message is one outbound AMQP publishing as the outbox stores it: where it
// goes, the properties the publisher needs, and the body. It is encoded with
// msgp (record_gen.go).
type Message struct {
	Class         Class  `msg:"c"`
	Exchange      string `msg:"x"`
	RoutingKey    string `msg:"k"`
	MessageID     string `msg:"id"`
	Type          string `msg:"t"`
	CorrelationID string `msg:"cid"`
	// InReplyTo is the message_id of the command this message answers, if any.
	InReplyTo string `msg:"irt"`
	// CreatedUnixNano is set by Append from Opts.Now when zero.
	CreatedUnixNano int64  `msg:"at"`
	Body            []byte `msg:"b"`
	// Sealed: Body is stored sealed at rest (Opts.Sealer, seal.go); the
	// other fields stay in the clear. Absent from the records of messages
	// stored as they are, which keep their encoding. Peek returns the body
	// opened and Sealed false.
	Sealed bool `msg:"s,omitempty"`
	// Clear is the appender's word that the message holds no data sealed
	// at rest, so it is not given to Opts.Sealer (see Sealer). It is never
	// stored.
	Clear bool `msg:"-"`
}
