package alert

import "errors"

// Errors of the package. A receiver's failure wraps one of them (or the
// I/O error) with the receiver's name.
var (
	// ErrBadURL: a receiver URL that does not parse, has an unknown scheme
	// or lacks a required part (host, from, to).
	ErrBadURL = errors.New("alert: bad receiver URL")
	// ErrCredentials: an SMTP password file that is missing, unreadable,
	// empty, or readable by its group or by others.
	ErrCredentials = errors.New("alert: bad credential file")
	// ErrNoSTARTTLS: an SMTP server that is not on the loopback interface
	// and does not offer STARTTLS (credentials and alerts never cross a
	// network in clear).
	ErrNoSTARTTLS = errors.New("alert: SMTP server does not offer STARTTLS")
	// ErrRejected: a receiver answered, but refused the alert (an HTTP
	// status outside 2xx, an SMTP error reply).
	ErrRejected = errors.New("alert: receiver rejected the alert")
	// ErrClosed: the Alerter is closed.
	ErrClosed = errors.New("alert: alerter closed")
)
