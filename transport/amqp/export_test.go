package amqp

// The queue arguments, for the external tests that prove a queue's type.
var (
	CommandQueueArgs = commandQueueArgs
	DeadLetterArgs   = deadLetterArgs
)
