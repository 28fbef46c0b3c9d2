package alert

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"
)

// Class is what an alert is about; receivers are routed by it.
type Class string

// The classes the agent raises.
const (
	ClassTrip              Class = "trip"               // an emergency procedure ran (not a leak)
	ClassLeak              Class = "leak"               // gas_leak_detected tripped
	ClassEStop             Class = "estop"              // an e-stop (safe state) ran
	ClassSessionFailed     Class = "session_failed"     // a session ended failed
	ClassSessionHeld       Class = "session_held"       // a session held after a restart
	ClassApprovalPending   Class = "approval_pending"   // an R3/R4 task waits for a human
	ClassQuestionPending   Class = "question_pending"   // a recipe waits for an answer
	ClassDiskAlarm         Class = "disk_alarm"         // the state directory is short of space
	ClassBrokerUnreachable Class = "broker_unreachable" // the broker unreachable past a limit
	// ClassTest is `hcp-edge alert test`'s alert: every receiver gets it.
	ClassTest Class = "test"
	// ClassOverflow reports alerts lost because the Alerter's intake was
	// full: every receiver gets it, whatever its classes.
	ClassOverflow Class = "alert_overflow"
)

// Classes lists the classes a receiver may be routed by, in a stable order.
func Classes() []Class {
	return []Class{ClassTrip, ClassLeak, ClassEStop, ClassSessionFailed, ClassSessionHeld, ClassApprovalPending,
		ClassQuestionPending, ClassDiskAlarm, ClassBrokerUnreachable}
}

// Severity orders alerts: a receiver takes those at or above its minimum.
type Severity string

// Severities, lowest first.
const (
	SeverityInfo     Severity = "info"
	SeverityWarning  Severity = "warning"
	SeverityCritical Severity = "critical"
)

// rank is the order of s (0: unknown).
func (s Severity) rank() int {
	switch s {
	case SeverityInfo:
		return 1
	case SeverityWarning:
		return 2
	case SeverityCritical:
		return 3
	}
	return 0
}

// Alert is one notification to people. The agent maps its events to
// alerts; this package knows nothing of the rig or the sessions.
type Alert struct {
	// ID identifies the alert for de-duplication: Notify ignores an ID it
	// has stored before, and receivers get it (the webhook's id field and
	// Idempotency-Key header, the mail's Message-ID). Empty: Notify makes
	// one up.
	ID       string   `json:"id"`
	Class    Class    `json:"class"`
	Severity Severity `json:"severity"`
	// Key is what, within its class, the alert is about (a channel, a
	// session id): alerts of one class, key and severity are grouped.
	Key    string            `json:"key,omitempty"`
	Title  string            `json:"title"`
	Text   string            `json:"text,omitempty"`
	At     time.Time         `json:"at"`
	Fields map[string]string `json:"fields,omitempty"`
	// Count is how many occurrences the alert stands for (grouping: the
	// first occurrence goes out alone, those within the group window
	// after it as one alert with their count); Notify sets it.
	Count int `json:"count"`
	// Last is the time of the latest occurrence counted (At is the first).
	Last time.Time `json:"last"`
}

// groupKey is the key alerts are grouped by: class, key and severity (an
// alarm and the info that it cleared are not one group).
func (a Alert) groupKey() string {
	return string(a.Class) + "\x00" + a.Key + "\x00" + string(a.Severity)
}

// newID is a random alert id.
func newID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// subject is the alert's one-line summary (a mail's Subject).
func (a Alert) subject() string {
	s := fmt.Sprintf("[hcp-edge %s] %s: %s", a.Severity, a.Class, a.Title)
	if a.Count > 1 {
		s += fmt.Sprintf(" (%d times)", a.Count)
	}
	return s
}
