package uplink

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hcp-edge/cmd/hcp-edge/internal/preview"
	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/configs"
	"hcp-edge/session/capability"
	"hcp-edge/session/executor"
	tamqp "hcp-edge/transport/amqp"
	"hcp-edge/transport/wire"
)

// TestPreviewRequestChecks: a preview_request is checked before anything
// runs — bad inputs refused invalid_input naming the field, a capability
// the caller may not use not_found — and while a preview runs, another
// request is refused unavailable, while a republished copy of the running
// one is acknowledged without an answer (its answer is on the way).
func TestPreviewRequestChecks(t *testing.T) {
	f, err := rigconfig.Parse(bytes.NewReader(configs.SimYAML))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := capability.LoadDir(filepath.Join("..", "..", "..", "..", "configs", "capabilities"))
	if err != nil {
		t.Fatal(err)
	}
	env, err := f.CompileEnvelope()
	if err != nil {
		t.Fatal(err)
	}
	u := &Uplink{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	u.ext = &extensions{calleeID: "hcp-edge", acl: f.Gate, reg: reg, env: env, config: f, previews: newPreviews(), log: u.log,
		executor: func(name string) (executor.Executor, bool) {
			x, _, err := preview.Builtin(reg, name)
			return x, err == nil
		}}
	defer u.ext.previews.close()
	request := func(caller, capab, inputs string) tamqp.Command {
		e, err := wire.NewEnvelope(nil, &wire.PreviewRequest{Capability: capab, Inputs: json.RawMessage(inputs)}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return tamqp.Command{Envelope: e, UserID: caller, MappedCallerID: caller}
	}
	answer := func(cmd tamqp.Command) *wire.RequestRefused {
		t.Helper()
		out, err := u.previewRequest(context.Background(), cmd)
		if err != nil {
			t.Fatal(err)
		}
		if !out.Unrecorded {
			t.Fatal("a preview's answer is recorded in the de-duplication window")
		}
		if len(out.Replies) == 0 {
			return nil
		}
		r, err := out.Replies[0].Envelope.RequestRefused()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	const seed = `{"target_material":"MoS2","substrate":"SiO2/Si","temperature_range":{"min":700,"max":750,"unit":"celsius"}}`

	running := request("harness-alpha-001", "cvd-material-synthesis", seed)
	u.ext.previews.busy <- struct{}{} // a preview runs
	u.ext.previews.active = running.Envelope.MessageID.String()

	for _, tc := range []struct {
		name string
		cmd  tamqp.Command
		code string // "": acknowledged without an answer
		want string
	}{
		{"republished running request", running, "", ""},
		{"another while one runs", request("harness-alpha-001", "leak-check", `{}`), wire.ReasonUnavailable, "one runs at a time"},
		{"schema", request("harness-alpha-001", "cvd-material-synthesis", `{"target_material":"MoS2","substrate":"SiO2/Si","temperature_range":{"min":2000,"max":2100}}`),
			wire.ReasonInvalidInput, "/temperature_range/max"},
		{"plan", request("harness-alpha-001", "cvd-material-synthesis", `{"target_material":"WS2","substrate":"SiO2/Si"}`), wire.ReasonInvalidInput, "target_material"},
		{"not the caller's", request("harness-beta-002", "cvd-material-synthesis", seed), wire.ReasonNotFound, "may use no capability"},
		{"no such caller", request("stranger", "rig-status", `{}`), wire.ReasonForbidden, "no permissions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := answer(tc.cmd)
			switch {
			case tc.code == "" && r != nil:
				t.Fatalf("answered %+v", r)
			case tc.code != "" && (r == nil || r.ReasonCode != tc.code || !strings.Contains(r.ReasonMessage, tc.want)):
				t.Fatalf("answer %+v, want %s naming %q", r, tc.code, tc.want)
			case r != nil && r.RequestType != wire.TypePreviewRequest:
				t.Fatalf("request_type %s", r.RequestType)
			}
		})
	}
	<-u.ext.previews.busy
}
