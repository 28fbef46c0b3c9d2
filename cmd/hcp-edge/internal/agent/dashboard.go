package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"sync"
	"time"

	"hcp-edge/cmd/hcp-edge/internal/auditaccess"
	"hcp-edge/cmd/hcp-edge/internal/dashboard"
	"hcp-edge/cmd/hcp-edge/internal/reply"
	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/cmd/hcp-edge/internal/uplink"
	"hcp-edge/envelope"
	"hcp-edge/internal/diskspace"
	"hcp-edge/session/lifecycle"
	"hcp-edge/transport/wire"
)

// Dashboard sizes: the sessions and audit records a snapshot shows.
const (
	dashSessions = 12
	dashAudit    = 15
	dashDetail   = 300 // characters of an audit record's detail
)

// startDashboard serves the read-only dashboard on agent.dashboard_listen
// (internal/dashboard). nil, nil when it is not configured: then nothing is
// built and nothing runs. Start after the control socket; stop first.
func startDashboard(f rigconfig.File, h *handler, version string, log *slog.Logger) (*dashboard.Server, error) {
	if f.Agent.DashboardListen == "" {
		return nil, nil
	}
	log = log.With("component", "dashboard")
	src := &dashSource{version: version, layout: DashboardLayout(f), mon: h.mon, view: h.il.View(), up: h.up, disk: h.disk, sess: h.sess,
		plots: map[string]dashPlots{}}
	srv, err := dashboard.Serve(f.Agent.DashboardListen, src,
		dashboard.Opts{AllowLAN: f.Agent.DashboardAllowLAN, Logger: log})
	if err != nil {
		return nil, err
	}
	log.Info("dashboard serving (read-only)", "url", "http://"+srv.Addr().String()+"/")
	return srv, nil
}

// dashSource is the daemon's dashboard.Source: the monitor's status, the
// sessions, the audit log's tail, and the SVG plots of finished sessions.
// It only reads (a plot of a T2 session is a data access, recorded).
// It holds the interlock's read-only View, never the Interlock.
type dashSource struct {
	version string           // the daemon's, reported in the snapshot
	layout  dashboard.Layout // the rig's, from the configuration (dashlayout.go)
	mon     *envelope.Monitor
	view    *envelope.View
	up      *uplink.Uplink // nil without a broker
	disk    *diskspace.Watcher
	sess    *sessions
	mu      sync.Mutex
	plots   map[string]dashPlots // terminal session -> its plots (a final message never changes)
}

// dashPlots are a finished session's plots, or why there are none.
type dashPlots struct {
	list []dashPlot
	note string
}

// dashPlot is one plot the page shows.
type dashPlot struct {
	Name string `json:"name"`
	URL  string `json:"url"`
}

// dashSession is one session of the snapshot.
type dashSession struct {
	reply.Session
	Plots     []dashPlot `json:"plots,omitempty"`
	PlotsNote string     `json:"plots_note,omitempty"`
}

// dashAuditEntry is one audit record of the snapshot.
type dashAuditEntry struct {
	Seq       uint64    `json:"seq"`
	At        time.Time `json:"at"`
	Kind      string    `json:"kind"`
	SessionID string    `json:"session_id,omitempty"`
	Detail    string    `json:"detail"`
}

// dashSnapshot is what the page renders.
type dashSnapshot struct {
	At       time.Time        `json:"at"`
	Version  string           `json:"version"`
	Layout   dashboard.Layout `json:"layout"`
	Status   reply.Status     `json:"status"`
	Sessions []dashSession    `json:"sessions"`
	Audit    []dashAuditEntry `json:"audit"`
}

// Snapshot reads the status, the newest sessions and the audit log's tail.
func (d *dashSource) Snapshot(ctx context.Context) (any, error) {
	st := statusOf(d.mon.Status(), d.view.Envelope())
	st.Uplink = d.up.Status()
	st.Disk = diskStatus(d.disk)
	snap := dashSnapshot{At: time.Now().UTC(), Version: d.version, Layout: d.layout, Status: st, Sessions: []dashSession{}, Audit: []dashAuditEntry{}}
	all, err := d.sess.list(ctx, true)
	if err != nil {
		return nil, fmt.Errorf("sessions: %w", err)
	}
	if len(all) > dashSessions {
		all = all[len(all)-dashSessions:]
	}
	slices.Reverse(all) // newest first
	for _, s := range all {
		ds := dashSession{Session: s}
		if lifecycle.State(s.State).Terminal() {
			p := d.plotsOf(s.ID)
			ds.Plots, ds.PlotsNote = p.list, p.note
		}
		snap.Sessions = append(snap.Sessions, ds)
	}
	tail, err := d.sess.st.Audit().Tail(ctx, dashAudit)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	for _, e := range tail {
		det := e.Detail
		if r := []rune(det); len(r) > dashDetail {
			det = string(r[:dashDetail]) + "…"
		}
		snap.Audit = append(snap.Audit, dashAuditEntry{Seq: e.Seq, At: e.At, Kind: string(e.Kind), SessionID: e.SessionID, Detail: det})
	}
	return snap, nil
}

// plotsOf lists the SVG artifacts of a finished session from its final
// message, once (cached: a final message never changes).
func (d *dashSource) plotsOf(sid string) dashPlots {
	d.mu.Lock()
	p, ok := d.plots[sid]
	d.mu.Unlock()
	if ok {
		return p
	}
	p = d.readPlots(sid)
	d.mu.Lock()
	if len(d.plots) > 4*dashSessions { // only the sessions on screen matter
		clear(d.plots)
	}
	d.plots[sid] = p
	d.mu.Unlock()
	return p
}

func (d *dashSource) readPlots(sid string) dashPlots {
	fin, err := d.sess.hub.Final(sid)
	if err != nil {
		return dashPlots{note: "no recorded result"}
	}
	var arts []wire.Artifact
	switch fin.Type {
	case wire.TypeTaskCompleted:
		if tc, err := fin.TaskCompleted(); err == nil {
			arts = tc.Artifacts
		}
	case wire.TypeTaskFailed:
		if tf, err := fin.TaskFailed(); err == nil {
			arts = tf.Artifacts
		}
	}
	var out dashPlots
	for _, a := range arts {
		if a.Type != svgMIME {
			continue
		}
		_, name, err := reply.ParseArtifactURI(a.URI)
		if err != nil {
			continue
		}
		out.list = append(out.list, dashPlot{Name: name, URL: "/plots/" + url.PathEscape(sid) + "/" + url.PathEscape(name)})
	}
	if len(out.list) > 0 {
		v := reply.Artifact{SessionID: sid}
		if err := d.sess.sealing(&v); err == nil && v.Sealed {
			return dashPlots{note: fmt.Sprintf("%d plot(s) sealed at rest (%s): fetch with hcp-edge artifact get", len(out.list), v.DataClass)}
		}
	}
	return out
}

// svgMIME is the type of the plot artifacts.
const svgMIME = "image/svg+xml"

// Plot reads a finished session's SVG artifact, checks it against the
// size and sha256 its final message recorded, and records the access of a
// T2 session in the audit log (refused when that fails).
func (d *dashSource) Plot(ctx context.Context, sid, file, viewer string) ([]byte, error) {
	uri := "hcp://" + sid + "/artifacts/" + file
	a, err := d.sess.artifact(uri)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", dashboard.ErrNoPlot, err)
	}
	if a.Type != svgMIME || a.Sealed {
		return nil, fmt.Errorf("%w: %s is not a plot the dashboard shows (type %q, sealed %v)", dashboard.ErrNoPlot, uri, a.Type, a.Sealed)
	}
	b, err := os.ReadFile(a.Path)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(b)
	if int64(len(b)) != a.SizeBytes || "sha256:"+hex.EncodeToString(sum[:]) != a.Checksum {
		return nil, errors.New(a.Path + " does not match the checksum its session recorded")
	}
	if err := auditaccess.Record(ctx, d.sess.st, sid, "dashboard_plot", uri, auditaccess.Accessor{Operator: "dashboard viewer", Via: viewer}); err != nil {
		return nil, fmt.Errorf("the access could not be recorded in the audit log, so it is refused: %w", err)
	}
	return b, nil
}
