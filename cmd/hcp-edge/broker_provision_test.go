package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	amqp091 "github.com/rabbitmq/amqp091-go"

	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/configs"
	tamqp "hcp-edge/transport/amqp"
	"hcp-edge/transport/amqp/amqptest"
	"hcp-edge/transport/provision"
)

// TestSimConfigIsTheBench: the broker grants every broker test runs under
// (amqptest.BenchSpec) are those `broker provision` derives from the shipped
// configs/sim.yaml.
func TestSimConfigIsTheBench(t *testing.T) {
	f, err := rigconfig.Parse(bytes.NewReader(configs.SimYAML))
	if err != nil {
		t.Fatal(err)
	}
	spec, _, err := f.BrokerSpec("v", amqptest.EdgeUser)
	if err != nil {
		t.Fatal(err)
	}
	got, err := provision.Derive(spec)
	if err != nil {
		t.Fatal(err)
	}
	want, err := provision.Derive(amqptest.BenchSpec("v"))
	if err != nil {
		t.Fatal(err)
	}
	if gs, ws := provisionString(got), provisionString(want); gs != ws {
		t.Fatalf("sim.yaml derives\n%s\nthe bench provisions\n%s", gs, ws)
	}
}

func provisionString(g provision.Grants) string {
	var b strings.Builder
	for _, p := range g.Permissions {
		b.WriteString(p.User + " " + p.Configure + " " + p.Write + " " + p.Read + "\n")
	}
	for _, p := range g.TopicPermissions {
		b.WriteString(p.User + " " + p.Exchange + " " + p.Write + " " + p.Read + "\n")
	}
	return b.String()
}

// provisionCLI runs hcp-edge broker provision with the callee's URL on vhost.
func provisionCLI(t *testing.T, vhost, cfg string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"broker", "provision", "--config", cfg}, args...)...)
	u, _ := amqp091.ParseURI(amqptest.URL())
	u.Vhost = vhost
	cmd.Env = append(os.Environ(), "HCP_AMQP_URL="+u.String(), "HCP_CALLEE_ID="+amqptest.CalleeID)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// TestBrokerProvisionCLI: `hcp-edge broker provision` on a vhost of its own,
// from sim.yaml with harness-beta-002 allowed no capability: --dry-run
// changes nothing, the run makes and verifies every change, a second run
// finds nothing to change; beta may not publish to hcp.commands at all (the
// broker refuses the callee it may not use); a configuration whose callee
// user is also a caller is refused and changes nothing.
func TestBrokerProvisionCLI(t *testing.T) {
	amqptest.Dial(t, amqptest.URL()) // the broker and the bench (rabbitmqctl) or a loud skip
	vhost := "hcp-provision-" + uuid.NewString()[:8]
	r := provision.Rabbitmqctl{}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _ = r.Run(ctx, nil, "-q", "delete_vhost", vhost)
	})
	sim := string(configs.SimYAML)
	const betaACL = "    harness-beta-002:\n      capabilities: [rig-status]\n"
	if !strings.Contains(sim, betaACL) {
		t.Fatal("fixture: sim.yaml's ACL of harness-beta-002 changed")
	}
	cfg := filepath.Join(t.TempDir(), "agent.yaml")
	if err := os.WriteFile(cfg, []byte(strings.Replace(sim, betaACL, "    harness-beta-002:\n      capabilities: []\n", 1)), 0o600); err != nil {
		t.Fatal(err)
	}

	out, errs, code := provisionCLI(t, vhost, cfg, "--dry-run")
	t.Logf("dry run:\n%s%s", out, errs)
	if code != 0 || !strings.Contains(out, "would change: add vhost "+vhost) || !strings.Contains(out, "dry run:") {
		t.Fatalf("dry run: exit %d", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if st, err := provision.Read(ctx, r); err != nil || st.VHosts[vhost] {
		t.Fatalf("the dry run created the vhost (%v)", err)
	}

	out, errs, code = provisionCLI(t, vhost, cfg)
	t.Logf("provision:\n%s%s", out, errs)
	if code != 0 || !strings.Contains(out, "changes made and verified") ||
		!strings.Contains(out, "caller harness-beta-002 may use no capability") {
		t.Fatalf("provision: exit %d", code)
	}
	out, errs, code = provisionCLI(t, vhost, cfg)
	if code != 0 || !strings.Contains(out, "nothing to change") || strings.Contains(out, "change: ") {
		t.Fatalf("second run: exit %d\n%s%s", code, out, errs)
	}

	// The exchanges, as the callee declares them; then beta tries hcp.commands.
	eu, _ := amqp091.ParseURI(amqptest.URL())
	eu.Vhost = vhost
	edge := amqptest.Dial(t, eu.String())
	ch, err := edge.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := tamqp.DeclareTopology(ch, tamqp.TopologyOpts{CalleeID: amqptest.CalleeID}); err != nil {
		t.Fatal(err)
	}
	bu, _ := amqp091.ParseURI(amqptest.BetaURL())
	bu.Vhost = vhost
	beta := amqptest.Dial(t, bu.String())
	got := tryHostile(t, beta, hostileAttempt{name: "publish to hcp.commands for a callee it may not use",
		do: func(ch *amqp091.Channel) error {
			return publishWait(ch, "hcp.commands", amqptest.CalleeID, amqp091.Publishing{Body: []byte("{}"), UserId: amqptest.BetaUser})
		}})
	if got == nil || got.Code != amqp091.AccessRefused {
		t.Fatalf("HOSTILE publish to hcp.commands for a callee it may not use: %v", got)
	}
	t.Logf("HOSTILE %-95s refused: %d %s", "publish to hcp.commands for a callee it may not use (no capability)", got.Code, got.Reason)

	overlap := filepath.Join(t.TempDir(), "overlap.yaml")
	bad := strings.Replace(sim, "    harness-beta-002: harness-beta-002\n", "    harness-beta-002: harness-beta-002\n    hcp-edge: harness-gamma-003\n", 1)
	if err := os.WriteFile(overlap, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errs, code = provisionCLI(t, vhost+"-x", overlap)
	if code != exitUsage || !strings.Contains(errs, "overlapping users") || strings.Contains(out, "change") {
		t.Fatalf("overlapping users: exit %d\n%s%s", code, out, errs)
	}
	t.Logf("overlap refused: %s", strings.TrimSpace(errs))
}
