// Package dashboard serves the technician's read-only web page of a running
// agent: the rig's readings with their limits and margins in context, the
// safety inputs, a latched trip, the sessions with their progress and plots,
// and the latest audit records.
//
// # Concepts
//
// The daemon hands Serve a Source: Snapshot returns the state as a
// JSON-encodable value (the page renders it), Plot returns one plot artifact
// of a finished session. The server has these routes and no others:
//
//	GET /                      the page (embedded: static/index.html)
//	GET /static/{file}         its script and style sheet (embedded)
//	GET /api/state             one snapshot as JSON
//	GET /api/events            server-sent events: a snapshot every Opts.Every
//	GET /plots/{session}/{file} an SVG plot artifact of a finished session
//
// Every other method is refused (405) and every other path is 404: there is
// no control action of any kind — no reset, no arm, no approval, no e-stop.
// Those stay with the local CLI and the hardware button. Reading a plot of a
// T2 session is a data access, which the Source records in the audit log.
//
// # Live updates
//
// The page opens /api/events (EventSource, which reconnects by itself) and
// renders each snapshot; without it, it polls /api/state. Each stream is one
// handler goroutine of the HTTP server that sends a snapshot every Every and
// ends when the client goes, or when Shutdown closes the server's done
// channel; at most Opts.MaxStreams streams run at once (429 beyond).
//
// # Caveats
//
// The server listens on loopback unless Opts.AllowLAN; it has no
// authentication and no TLS: on a LAN it belongs behind the site's firewall,
// otherwise reach it through an SSH tunnel. The page needs no network
// resource beyond the agent: no CDN, no fonts; its Content-Security-Policy
// allows only its own origin and no inline script.
package dashboard
