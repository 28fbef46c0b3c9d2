package token

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"hcp-edge/cmd/hiltest/simrig"
	"hcp-edge/device"
	"hcp-edge/device/catalog"
	"hcp-edge/envelope"
	"hcp-edge/internal/wallclock"
)

var t0 = time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)

func testEnvelope(t testing.TB, edit func(*envelope.Config)) *envelope.Envelope {
	t.Helper()
	f, err := os.Open("../../envelope/testdata/envelope.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := envelope.LoadYAML(f)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(&cfg)
	}
	env, err := envelope.Compile(cfg, simrig.Spec())
	if err != nil {
		t.Fatal(err)
	}
	return env
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.now = t }

func newKey(t testing.TB) ed25519.PrivateKey {
	t.Helper()
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func newAuthority(t testing.TB, key ed25519.PrivateKey, clk *clock) *Authority {
	t.Helper()
	a, err := New(key, Opts{Clock: wallclock.NewFrom(clk.Now)})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func baseClaims(digest string, perms ...catalog.Permission) Claims {
	return Claims{SessionID: "s-1", CallerID: "harness-alpha-001", Capability: "cvd-material-synthesis",
		CapabilityVersion: "1.0.0", RiskLevel: "R3", DataClassification: "T2", EnvelopeDigest: digest,
		Permissions: perms}
}

func TestKeyFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "keys", "session.key")
	k1, err := LoadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("created with mode %v", fi.Mode().Perm())
	}
	k2, err := LoadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if !k1.Equal(k2) {
		t.Fatal("second start generated another key")
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, "keys", ".session-key-*"))
	if len(leftovers) != 0 {
		t.Fatalf("temporary files left: %v", leftovers)
	}

	tests := []struct {
		name  string
		setup func(t *testing.T, p string)
		want  []string
	}{
		{"group readable", func(t *testing.T, p string) {
			copyKey(t, path, p)
			os.Chmod(p, 0o640)
		}, []string{"mode 0640", "chmod 600 "}},
		{"world readable", func(t *testing.T, p string) {
			copyKey(t, path, p)
			os.Chmod(p, 0o644)
		}, []string{"mode 0644", "chmod 600 "}},
		{"not PEM", func(t *testing.T, p string) {
			os.WriteFile(p, []byte("hello"), 0o600)
		}, []string{"no PKCS#8 PEM block"}},
		{"directory", func(t *testing.T, p string) { os.Mkdir(p, 0o700) }, []string{"not a regular file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "k.pem")
			tt.setup(t, p)
			_, err := LoadOrCreateKey(p)
			if !errors.Is(err, ErrKeyFile) {
				t.Fatalf("err = %v, want ErrKeyFile", err)
			}
			for _, w := range append(tt.want, p) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	if _, err := LoadKey(filepath.Join(dir, "absent")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("LoadKey(absent) = %v", err)
	}
}

func copyKey(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestConcurrentCreateAgrees(t *testing.T) {
	path := filepath.Join(t.TempDir(), "session.key")
	keys := make([]ed25519.PrivateKey, 8)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, err := LoadOrCreateKey(path)
			if err != nil {
				t.Error(err)
			}
			keys[i] = k
		}()
	}
	wg.Wait()
	for _, k := range keys[1:] {
		if !k.Equal(keys[0]) {
			t.Fatal("concurrent starts generated different keys")
		}
	}
}

func TestIssue(t *testing.T) {
	clk := &clock{now: t0.Add(300 * time.Millisecond)}
	a := newAuthority(t, newKey(t), clk)
	tok, c, err := a.Issue(baseClaims("sha256:x", catalog.PermissionRead), 4*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if c.ExpiresAt.Sub(c.IssuedAt.Time) != 4*time.Hour || !c.IssuedAt.Equal(t0) || c.Subject != "s-1" || c.ID == "" {
		t.Fatalf("registered claims %+v", c.RegisteredClaims)
	}
	got, err := a.Verify(tok)
	if err != nil {
		t.Fatal(err)
	}
	if got.RiskLevel != "R3" || got.DataClassification != "T2" || got.CapabilityVersion != "1.0.0" ||
		got.CallerID != "harness-alpha-001" || !got.Has(catalog.PermissionRead) || got.Has(catalog.PermissionGas) {
		t.Fatalf("verified claims %+v", got)
	}
	bad := []struct {
		name string
		edit func(*Claims)
		ttl  time.Duration
	}{
		{"zero ttl", func(*Claims) {}, 0},
		{"negative ttl", func(*Claims) {}, -time.Second},
		{"no session", func(c *Claims) { c.SessionID = "" }, time.Hour},
		{"risk R6", func(c *Claims) { c.RiskLevel = "R6" }, time.Hour},
		{"class T5", func(c *Claims) { c.DataClassification = "T5" }, time.Hour},
		{"no digest", func(c *Claims) { c.EnvelopeDigest = "" }, time.Hour},
		{"unknown permission", func(c *Claims) { c.Permissions = []catalog.Permission{"rig.everything"} }, time.Hour},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			c := baseClaims("sha256:x")
			tt.edit(&c)
			if _, _, err := a.Issue(c, tt.ttl); err == nil {
				t.Fatal("issued")
			}
		})
	}
}

// sign builds a token by hand with any method and key.
func sign(t *testing.T, m jwt.SigningMethod, key any, claims jwt.Claims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(m, claims).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// tamper rewrites the payload of a signed token, keeping the signature.
func tamper(t *testing.T, tok string, edit func(map[string]any)) string {
	t.Helper()
	parts := strings.Split(tok, ".")
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	raw, _ = json.Marshal(m)
	parts[1] = base64.RawURLEncoding.EncodeToString(raw)
	return strings.Join(parts, ".")
}

func TestVerify(t *testing.T) {
	key := newKey(t)
	clk := &clock{now: t0}
	a := newAuthority(t, key, clk)
	good, c, err := a.Issue(baseClaims("sha256:x", catalog.PermissionOperate), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other, err := New(newKey(t), Opts{Clock: wallclock.NewFrom(clk.Now)})
	if err != nil {
		t.Fatal(err)
	}
	foreign, _, _ := other.Issue(baseClaims("sha256:x", catalog.PermissionOperate), time.Hour)
	wrongIss, _ := New(key, Opts{Issuer: "someone-else", Clock: wallclock.NewFrom(clk.Now)})
	badIss, _, _ := wrongIss.Issue(baseClaims("sha256:x"), time.Hour)
	wrongAud, _ := New(key, Opts{Audience: "elsewhere", Clock: wallclock.NewFrom(clk.Now)})
	badAud, _, _ := wrongAud.Issue(baseClaims("sha256:x"), time.Hour)
	noExp := *c
	noExp.ExpiresAt = nil

	tests := []struct {
		name string
		tok  string
		at   time.Time
		want error // nil: accepted
	}{
		{"valid", good, t0, nil},
		{"valid at the end of its life", good, t0.Add(time.Hour), nil},
		{"within leeway after exp", good, t0.Add(time.Hour + 4*time.Second), nil},
		{"expired", good, t0.Add(time.Hour + 6*time.Second), ErrExpired},
		{"long expired", good, t0.Add(48 * time.Hour), ErrExpired},
		{"not yet valid", good, t0.Add(-time.Minute), ErrExpired},
		{"wrong key", foreign, t0, ErrSignature},
		{"alg none", sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, c), t0, ErrSignature},
		{"HS256 keyed with the public key", sign(t, jwt.SigningMethodHS256, []byte(key.Public().(ed25519.PublicKey)), c), t0, ErrSignature},
		{"HS256 keyed with the private key", sign(t, jwt.SigningMethodHS256, []byte(key), c), t0, ErrSignature},
		{"tampered risk level", tamper(t, good, func(m map[string]any) { m["risk_level"] = "R5" }), t0, ErrSignature},
		{"tampered permissions", tamper(t, good, func(m map[string]any) { m["permissions"] = []string{"rig.gas"} }), t0, ErrSignature},
		{"tampered exp", tamper(t, good, func(m map[string]any) { m["exp"] = t0.Add(1000 * time.Hour).Unix() }), t0, ErrSignature},
		{"header alg swapped", swapAlg(t, good), t0, ErrSignature},
		{"wrong issuer", badIss, t0, ErrInvalid},
		{"wrong audience", badAud, t0, ErrInvalid},
		{"no exp", sign(t, jwt.SigningMethodEdDSA, key, &noExp), t0, ErrInvalid},
		{"garbage", "not.a.token", t0, ErrInvalid},
		{"empty", "", t0, ErrInvalid},
		{"huge", strings.Repeat("a", MaxTokenBytes+1), t0, ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk.Set(tt.at)
			got, err := a.Verify(tt.tok)
			if tt.want == nil {
				if err != nil || got.SessionID != "s-1" {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, tt.want) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func swapAlg(t *testing.T, tok string) string {
	parts := strings.Split(tok, ".")
	parts[0] = base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	return strings.Join(parts, ".")
}

func TestAuthorize(t *testing.T) {
	env := testEnvelope(t, nil)
	otherEnv := testEnvelope(t, func(c *envelope.Config) { c.MaxReadingAge = envelope.Duration(7 * time.Second) })
	clk := &clock{now: t0}
	a := newAuthority(t, newKey(t), clk)
	rev := NewRevocations(wallclock.NewFrom(clk.Now))
	z, err := NewAuthorizer(a, env, rev)
	if err != nil {
		t.Fatal(err)
	}
	otherDigest, _ := EnvelopeDigest(otherEnv)
	again, _ := EnvelopeDigest(testEnvelope(t, nil))
	if otherDigest == z.Digest() || again != z.Digest() || !strings.HasPrefix(again, "sha256:") {
		t.Fatalf("digests: running %s, same config %s, other %s", z.Digest(), again, otherDigest)
	}

	issue := func(sid, digest string, ttl time.Duration, perms ...catalog.Permission) string {
		c := baseClaims(digest, perms...)
		c.SessionID = sid
		tok, _, err := a.Issue(c, ttl)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	operate := issue("s-op", z.Digest(), time.Hour, catalog.PermissionRead, catalog.PermissionOperate)
	full := issue("s-full", z.Digest(), time.Hour, catalog.PermissionRead, catalog.PermissionMeasure, catalog.PermissionOperate, catalog.PermissionGas)
	wrongDigest := issue("s-wd", otherDigest, time.Hour, catalog.PermissionOperate)
	revoked := issue("s-rev", z.Digest(), time.Hour, catalog.PermissionOperate)
	short := issue("s-short", z.Digest(), time.Minute, catalog.PermissionOperate)
	rev.Revoke("s-rev", t0.Add(time.Hour))

	setpoint := envelope.SetpointAction(device.Celsius(700))
	tests := []struct {
		name   string
		tok    string
		action envelope.Action
		at     time.Time
		want   error
	}{
		{"setpoint with operate", operate, setpoint, t0, nil},
		{"ramp with operate", operate, envelope.RampRateAction(device.KelvinPerMinute(10)), t0, nil},
		{"heater with operate", operate, envelope.HeaterAction(true), t0, nil},
		{"pump with operate", operate, envelope.SwitchAction("pump", true), t0, nil},
		{"vent valve with operate", operate, envelope.SwitchAction("vent_valve", true), t0, nil},
		{"flow needs gas", operate, envelope.FlowAction("H2S", device.SCCM(5)), t0, ErrScope},
		{"argon flow needs gas", operate, envelope.FlowAction("Ar", device.SCCM(50)), t0, ErrScope},
		{"H2S valve needs gas", operate, envelope.SwitchAction("h2s_valve", true), t0, ErrScope},
		{"acquire needs measure", operate, envelope.AcquireAction(time.Second), t0, ErrScope},
		{"flow with gas", full, envelope.FlowAction("H2S", device.SCCM(5)), t0, nil},
		{"H2S valve with gas", full, envelope.SwitchAction("h2s_valve", true), t0, nil},
		{"acquire with measure", full, envelope.AcquireAction(time.Second), t0, nil},
		{"wrong envelope digest", wrongDigest, setpoint, t0, ErrDigest},
		{"revoked session", revoked, setpoint, t0, ErrRevoked},
		{"expired", short, setpoint, t0.Add(2 * time.Minute), ErrExpired},
		{"no token", "", setpoint, t0, ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk.Set(tt.at)
			g, err := z.Authorize(context.Background(), tt.tok, tt.action)
			if tt.want == nil {
				if err != nil || g.SessionID == "" {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, tt.want) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
	clk.Set(t0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := z.Authorize(ctx, full, setpoint); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: %v", err)
	}
}

func TestAuthorizeTool(t *testing.T) {
	env := testEnvelope(t, nil)
	clk := &clock{now: t0}
	a := newAuthority(t, newKey(t), clk)
	rev := NewRevocations(wallclock.NewFrom(clk.Now))
	z, err := NewAuthorizer(a, env, rev)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := catalog.Builtin(simrig.Spec().Lines())
	if err != nil {
		t.Fatal(err)
	}
	c := baseClaims(z.Digest(), catalog.PermissionRead, catalog.PermissionOperate)
	tok, _, err := a.Issue(c, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, tool := range reg.List() {
		t.Run(tool.Name, func(t *testing.T) {
			g, err := z.AuthorizeTool(context.Background(), tok, tool)
			switch tool.Safety.Permission {
			case catalog.PermissionRead, catalog.PermissionOperate:
				n++
				if err != nil || g.SessionID != "s-1" || len(g.Permissions) != 2 {
					t.Fatalf("refused %s: %v (%+v)", tool.Safety.Permission, err, g)
				}
			default:
				if !errors.Is(err, ErrScope) {
					t.Fatalf("%s granted: %v", tool.Safety.Permission, err)
				}
			}
		})
	}
	if n == 0 {
		t.Fatal("no tool was granted")
	}
	rev.Revoke("s-1", time.Time{})
	if _, err := z.AuthorizeTool(context.Background(), tok, reg.List()[0]); !errors.Is(err, ErrRevoked) {
		t.Fatalf("revoked: %v", err)
	}
}

func TestRevocationsPrune(t *testing.T) {
	clk := &clock{now: t0}
	r := NewRevocations(wallclock.NewFrom(clk.Now))
	r.Revoke("a", t0.Add(time.Minute))
	r.Revoke("b", time.Time{})
	r.Revoke("a", t0.Add(30*time.Second)) // an earlier exp does not shorten it
	clk.Set(t0.Add(90 * time.Second))
	if !r.Revoked("a") || !r.Revoked("b") {
		t.Fatal("lost a revocation before its token could have expired")
	}
	clk.Set(t0.Add(time.Hour))
	r.Revoke("c", t0.Add(2*time.Hour))
	if r.Revoked("a") || !r.Revoked("b") || !r.Revoked("c") || r.Len() != 2 {
		t.Fatalf("after prune: a=%v b=%v c=%v len=%d", r.Revoked("a"), r.Revoked("b"), r.Revoked("c"), r.Len())
	}
}

func BenchmarkAuthorize(b *testing.B) {
	env := testEnvelope(b, nil)
	a, _ := New(newKey(b), Opts{})
	z, _ := NewAuthorizer(a, env, NewRevocations(nil))
	tok, _, _ := a.Issue(baseClaims(z.Digest(), catalog.PermissionOperate), time.Hour)
	act := envelope.SetpointAction(device.Celsius(700))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := z.Authorize(ctx, tok, act); err != nil {
			b.Fatal(err)
		}
	}
}
