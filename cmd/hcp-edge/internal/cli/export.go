package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"hcp-edge/cmd/hcp-edge/internal/auditaccess"
	"hcp-edge/cmd/hcp-edge/internal/control"
	"hcp-edge/cmd/hcp-edge/internal/export"
	"hcp-edge/cmd/hcp-edge/internal/reply"
	"hcp-edge/session/atrest"
	"hcp-edge/session/engine"
	"hcp-edge/session/store"
)

// Export is `hcp-edge export SESSION [--out FILE]`: the session's .eln
// archive, from the daemon, or from the state file when it is down.
func Export(ctx context.Context, version string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	af := auditFlags{sessionFlags: addSessionFlags(fs),
		stateDir: fs.String("state-dir", "", "read DIR/state.db directly (default: ask the daemon; when it is down, the configuration's state directory)")}
	out := fs.String("out", "", "write the archive to `FILE` (default ./hcp-edge-session-ID.eln); an existing file is refused")
	operator := fs.String("operator", operatorDefault(), "who exports (recorded for T2+ sessions)")
	keyFile := fs.String("key", "", "the at-rest key `FILE` for a T3 session's sealed files when the daemon is down (default: agent.at_rest_key_file)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageText("export"))
		fs.PrintDefaults()
	}
	pos, err := parseArgs(fs, args, stdout)
	if err != nil {
		return usageExit(err)
	}
	if len(pos) != 1 || pos[0] == "" || len(pos[0]) > store.MaxIDLen {
		fmt.Fprintln(stderr, "hcp-edge export: give exactly one SESSION_ID")
		return ExitUsage
	}
	sid := pos[0]
	dst := *out
	if dst == "" {
		dst = export.FileName(sid)
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "hcp-edge export: %v\n", err)
		return ExitFailure
	}
	if err := export.CheckOut(dst); err != nil {
		return fail(err)
	}
	t, err := af.reach(ctx, control.Request{Op: control.OpExport, ID: sid, Operator: *operator})
	if err != nil {
		return fail(err)
	}
	var r reply.Export
	via := "the running daemon"
	if t.rep != nil {
		if !t.rep.OK {
			return fail(fmt.Errorf("the daemon refused: %s", t.rep.Error))
		}
		if err := json.Unmarshal(t.rep.Result, &r); err != nil {
			return fail(fmt.Errorf("bad reply: %w", err))
		}
	} else {
		via = "the state file (" + t.note + ")"
		if r, err = exportOffline(ctx, t.dir, sid, *operator, *keyFile, *af.cfgPath, version); err != nil {
			return fail(err)
		}
	}
	if err := export.WriteFile(dst, r.Data); err != nil {
		return fail(err)
	}
	if *af.asJSON {
		printJSON(stdout, map[string]any{"session_id": sid, "path": dst, "size_bytes": len(r.Data), "via": via})
		return ExitOK
	}
	fmt.Fprintf(stdout, "session %s exported to %s (%d bytes, from %s)\n", sid, dst, len(r.Data), via)
	return ExitOK
}

// exportOffline builds the archive from the state file, the daemon being
// down. A T4 session's export needs the daemon (its release is checked
// there); a T2+ session's export is recorded, which needs the file
// writable.
func exportOffline(ctx context.Context, dir, sid, operator, keyFile, cfgPath, version string) (reply.Export, error) {
	st, path, err := auditaccess.OpenOffline(dir, false)
	if err != nil {
		return reply.Export{}, err
	}
	sess, err := st.Session(ctx, sid)
	_ = st.Close()
	if err != nil {
		return reply.Export{}, fmt.Errorf("session %s: %w", sid, err)
	}
	if engine.NeedsAccessApproval(sess.DataClass) {
		return reply.Export{}, fmt.Errorf("session %s is %s: its export needs an open release, which the daemon checks (start it, then hcp-edge access approve)", sid, sess.DataClass)
	}
	if st, _, err = auditaccess.OpenOffline(dir, true); err != nil {
		return reply.Export{}, fmt.Errorf("exporting session %s is recorded in the audit log, and %s cannot be opened to record it: %w", sid, path, err)
	}
	defer st.Close()
	cfg, _ := loadConfig(cfgPath)
	src := export.Source{Store: st, StateDir: dir, Version: version, Instruments: export.InstrumentsOf(cfg.Rig)}
	if engine.Sealed(sess.DataClass) {
		kf := keyFile
		if kf == "" {
			kf = cfg.Agent.AtRestKeyFile
		}
		if kf == "" {
			return reply.Export{}, fmt.Errorf("session %s is %s and its files are sealed at rest: give the key with --key FILE: %w", sid, sess.DataClass, atrest.ErrNoKey)
		}
		if src.Key, err = atrest.LoadKey(kf); err != nil {
			return reply.Export{}, fmt.Errorf("session %s is %s: the at-rest key %s: %w", sid, sess.DataClass, kf, err)
		}
	}
	data, err := export.Build(ctx, src, sid)
	if err != nil {
		return reply.Export{}, err
	}
	if err := auditaccess.Record(ctx, st, sid, "export", export.URI(sid), auditaccess.Accessor{Operator: operator, Via: "state file"}); err != nil {
		return reply.Export{}, errors.Join(errors.New("the access could not be recorded in the audit log, so it is refused"), err)
	}
	return reply.Export{SessionID: sid, Name: export.FileName(sid), Data: data}, nil
}
