// Package alert tells people: it delivers the agent's alerts (a trip, an
// e-stop, a session held, an approval waiting, a full disk...) to the
// receivers the configuration names, durably, without ever making the
// caller wait.
//
// It sits in transport/ because it speaks outward, and so knows nothing of
// the rig or the sessions: the agent (cmd/hcp-edge) maps its events to
// plain Alert values (id, class, severity, key, title, text, time, fields)
// and audits each Delivery through Opts.OnDelivery.
//
// # Receivers
//
// Each receiver is a URL, in the spirit of containrrr/shoutrrr's scheme
// (docs/ALERTS.md says why that library itself is not linked):
//
//   - smtp://USER@HOST:PORT/?from=ADDR&to=ADDR[,ADDR]&password_file=PATH
//     sends a plain-text mail with net/smtp. STARTTLS is required unless
//     HOST is the loopback interface; the password (AUTH PLAIN) is read
//     from PATH at each send, and PATH must exist and not be readable by
//     its group or others. No password in the URL.
//   - http(s)://... POSTs the alert as one JSON object (Body), its id in
//     the body and in the Idempotency-Key header; user:password in the URL
//     is sent as basic authentication.
//
// Each receiver takes the classes it lists (all when none) at or above its
// min_severity; test and alert_overflow alerts go to every receiver.
//
// # Durability
//
// Notify sends the alert on a bounded channel and returns: no I/O, no lock
// held by anything slow, so the interlock, the monitor and the e-stop can
// call it. The Alerter's writer goroutine stores what arrives in bbolt (the
// agent's state file, bucket "alerts"), one transaction a batch, before any
// receiver sees it; one goroutine per receiver then delivers, oldest
// first, retrying a failure after retry_min doubled per attempt up to
// retry_max, until the receiver took it or give_up_after has passed (given
// up, reported as such). A delivery is removed from disk only once the
// receiver took it: after a crash, a restart or an outage it is sent
// again, so delivery is at least once, and receivers de-duplicate by id.
// Notify ignores an id it has stored in the last 7 days.
//
// # Grouping and rate limits
//
// Of the alerts of one class, key (a channel, a session) and severity,
// the first goes out at once; those in the group_window after it become
// one alert, sent at the window's end with their count (Alert.Count) and
// the time of the last (Alert.Last); then the next window. A flapping input thus sends at
// most one alert a window, whatever its rate. max_per_hour bounds what
// one receiver is sent: past it alerts wait, they are not dropped.
//
// # Caveats
//
// When the intake channel is full (Opts.Intake alerts not yet stored: the
// disk stalled) Notify drops the alert and counts it; the count goes out
// as one alert_overflow alert with the next batch. An alert handed over
// but not yet stored when the process is killed is lost: the caller's own
// audit entry, written before, is the record. Retries have no jitter; one
// slow receiver does not delay the others (a goroutine each), but within
// a receiver alerts go out one at a time.
package alert
