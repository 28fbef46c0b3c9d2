package configcheck

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"hcp-edge/cmd/hcp-edge/internal/operators"
	"hcp-edge/cmd/hcp-edge/internal/recipes"
	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/configs"
	"hcp-edge/drivers/profile"
	"hcp-edge/envelope"
	"hcp-edge/internal/diskspace"
	"hcp-edge/session/atrest"
	"hcp-edge/session/capability"
)

// This file holds the rules a schema cannot say: references between
// sections, the envelope against the rig's device ranges, what is on disk.

// MaxSocketPath is the longest path a unix socket may have (sun_path is 108
// bytes with its terminating NUL on Linux).
const MaxSocketPath = 107

// checkEnvelope compiles the envelope against the rig's spec. An MFC whose
// full scale does not parse (already reported) stands in with an unbounded
// one, one whose profile is no alicat controller's with a shipped one, one
// whose valve is not an output of the layout is left out, so that
// everything else is still checked without a cascade of follow-on errors.
func (c *checker) checkEnvelope(f rigconfig.File) {
	rig := f.Rig
	rig.MFCs = nil
	ps, _ := rig.Profiles()
	for _, m := range f.Rig.MFCs {
		if _, err := rigconfig.ParseFlow(m.FullScale); err != nil {
			m.FullScale = "1e12 sccm"
		}
		if p := ps[m.Profile]; p == nil || p.Family != profile.Alicat || p.Kind != profile.FlowController {
			m.Profile = "hcp-sim-mfc" // reported; a stand-in keeps the gas's rules checked
		}
		if _, ok := f.Rig.Outputs[m.Valve]; !ok { // reported; a stand-in valve keeps the gas's rules checked
			m.Valve = standIn(&rig, m.Gas)
		}
		one := rig
		one.MFCs = []rigconfig.MFC{m}
		if _, err := rigconfig.Spec(one); err == nil {
			rig.MFCs = append(rig.MFCs, m)
		}
	}
	spec, err := rigconfig.Spec(rig)
	if err != nil {
		refused := rig.ProfileRefused(rig.Furnace.Profile) || rig.ProfileRefused(rig.DIO.Profile) || rig.ProfileRefused(rig.Gauge.Profile)
		if !refused && !c.reported("rig.") { // else a follow-on of a profile's or the layout's problem, already at its line
			c.at("rig", "%v", err)
		}
		return
	}
	cfg := f.Envelope
	cfg.Unrestricted = maps.Clone(cfg.Unrestricted)
	for _, sw := range spec.Switches { // a stand-in needs no rule of its own: its line's rules are checked
		if strings.HasPrefix(sw.Name, standInPrefix) {
			if cfg.Unrestricted == nil {
				cfg.Unrestricted = map[string]string{}
			}
			cfg.Unrestricted[envelope.SwitchChannel(sw.Name)] = "stand-in of a line valve already reported"
		}
	}
	_, err = envelope.Compile(cfg, spec)
	// The zones' problem (both shapes written, ...) is at its line: the
	// envelope's channels of zones the layout may have misread follow on.
	zonesReported := c.reported("rig.zones") || c.reported("rig.furnace")
	for _, e := range flatten(err) {
		var ce *envelope.ConfigError
		if !errors.As(e, &ce) {
			c.at("envelope", "%v", e)
			continue
		}
		if zonesReported && zoneProblem(spec, ce) {
			continue
		}
		key := "envelope." + ce.Path
		switch {
		case strings.HasPrefix(ce.Path, "channel "):
			key = "envelope.parameters." + strings.TrimPrefix(ce.Path, "channel ")
		case strings.HasPrefix(ce.Path, "rig"):
			key = "rig.mfcs"
		}
		if scrubber := spec.Roles.Scrubber; scrubber != "" && key == "envelope.parameters."+envelope.SwitchChannel(scrubber) && c.toxicInterlockReported() {
			continue // a follow-on: the toxic line's interlock, which would bound the scrubber, is reported
		}
		c.at(key, "%s", ce.Reason)
	}
}

const standInPrefix = "(line valve of "

// zoneProblem reports whether ce is about a heated zone's channel: one
// naming a zone the rig lacks, or a channel of one of its zones.
func zoneProblem(spec envelope.RigSpec, ce *envelope.ConfigError) bool {
	if errors.Is(ce, envelope.ErrUnknownZone) {
		return true
	}
	ch := strings.TrimPrefix(strings.TrimPrefix(ce.Path, "channel "), "parameters.")
	for _, z := range spec.ZoneNames() {
		if strings.HasPrefix(ch, z+".") {
			return true
		}
	}
	return false
}

// toxicInterlockReported reports whether a toxic line's interlock was found
// not to require the scrubber (rigconfig: toxicInterlockErrors).
func (c *checker) toxicInterlockReported() bool {
	for _, p := range c.res.Problems {
		if strings.HasPrefix(p.Key, "envelope.interlocks.gases.") && strings.HasSuffix(p.Key, ".require_switches_on") && strings.Contains(p.Message, "is toxic") {
			return true
		}
	}
	return false
}

// reported reports whether a problem with a key under prefix is already
// recorded.
func (c *checker) reported(prefix string) bool {
	for _, p := range c.res.Problems {
		if strings.HasPrefix(p.Key, prefix) {
			return true
		}
	}
	return false
}

// standIn adds to the layout of r an output that stands in for gas's line
// valve (on the channel of another output) and returns its name.
func standIn(r *rigconfig.Rig, gas string) string {
	outs := maps.Clone(r.Outputs)
	name := standInPrefix + gas + ")"
	for _, o := range r.Outputs {
		outs[name] = rigconfig.Output{Channel: o.Channel, Safe: "off"}
		break
	}
	r.Outputs = outs
	return name
}

// checkPaths: the daemon's paths must be absolute, and the control socket
// short enough to bind.
func (c *checker) checkPaths(f rigconfig.File) {
	abs := func(key, p string) {
		if p != "" && !filepath.IsAbs(p) {
			c.at(key, "%q is not an absolute path", p)
		}
	}
	abs("agent.state_dir", f.Agent.StateDir)
	if f.Agent.ControlSocket != filepath.Join(f.Agent.StateDir, "control.sock") || filepath.IsAbs(f.Agent.StateDir) {
		abs("agent.control_socket", f.Agent.ControlSocket) // else derived from state_dir, already reported
	}
	if n := len(f.Agent.ControlSocket); n > MaxSocketPath {
		c.at("agent.control_socket", "%q is %d bytes long; a unix socket path takes at most %d", f.Agent.ControlSocket, n, MaxSocketPath)
	}
	if st, err := os.Stat(f.Agent.StateDir); err == nil && !st.IsDir() {
		c.at("agent.state_dir", "%s exists and is not a directory", f.Agent.StateDir)
	}
	for name, b := range f.Rig.ModbusBuses {
		if b.Transport == "rtu" {
			abs("rig.modbus_buses."+name+".address", b.Address)
		}
	}
	for i, m := range f.Rig.MFCs {
		abs(fmt.Sprintf("rig.mfcs[%d].port", i), m.Port)
	}
	abs("rig.gauge.port", f.Rig.Gauge.Port)
	abs("rig.raman.port", f.Rig.Raman.Port)
	abs("rig.gpio.socket", f.Rig.GPIO.Socket)
}

// checkDisk: the free-space watermark must be below the size of the file
// system that holds the state directory (or, before it exists, its nearest
// existing parent).
func (c *checker) checkDisk(f rigconfig.File) {
	if f.Agent.Disk.WatermarkMiB == nil || *f.Agent.Disk.WatermarkMiB < 1 {
		return // reported by rigconfig
	}
	dir := f.Agent.StateDir
	for dir != "" && dir != "/" {
		if _, err := os.Stat(dir); err == nil {
			break
		}
		dir = filepath.Dir(dir)
	}
	_, total, err := diskspace.Statfs(dir)
	if err != nil {
		return
	}
	if err := diskspace.CheckWatermark(f.Agent.Disk.Watermark(), total); err != nil {
		c.at("agent.disk.watermark_mib", "%v (the file system of %s)", err, dir)
	}
}

// KeyFileField reports whether a configuration key holds the path of a
// secret: it ends in _key_file, _secret_file, _password_file, _token_file or
// _credentials_file (or is one of them).
func KeyFileField(name string) bool {
	for _, s := range []string{"key_file", "secret_file", "password_file", "token_file", "credentials_file"} {
		if name == s || strings.HasSuffix(name, "_"+s) {
			return true
		}
	}
	return false
}

// atRestKeyKey is the configuration key of the at-rest key file.
const atRestKeyKey = "agent.at_rest_key_file"

// checkKeyFiles checks every configured secret file (see KeyFileField) in
// the document's value v at key path key, its environment variables
// expanded as the daemon expands them: it must exist, be a regular file and
// be readable by its owner only (0600 or stricter).
func (c *checker) checkKeyFiles(v any, key string) {
	switch v := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			sub := join(key, k)
			if s, ok := v[k].(string); ok && KeyFileField(k) {
				if sub == atRestKeyKey {
					c.checkAtRestKey(sub, os.ExpandEnv(s))
				} else {
					c.checkKeyFile(sub, os.ExpandEnv(s))
				}
				continue
			}
			c.checkKeyFiles(v[k], sub)
		}
	case []any:
		for i, item := range v {
			c.checkKeyFiles(item, fmt.Sprintf("%s[%d]", key, i))
		}
	}
}

// checkKeyFile checks one secret file (see checkKeyFiles).
func (c *checker) checkKeyFile(key, path string) {
	if path == "" {
		return
	}
	st, err := os.Stat(path)
	switch {
	case err != nil:
		c.at(key, "%v", err)
	case !st.Mode().IsRegular():
		c.at(key, "%s is not a regular file", path)
	case st.Mode().Perm()&0o077 != 0:
		c.at(key, "%s has mode %#o: a key file must be readable by its owner only (chmod 600 %s)", path, st.Mode().Perm(), path)
	}
}

// checkAtRestKey checks the at-rest key file as the daemon will load it
// (atrest.LoadKey): an absolute path to a regular file, readable by its
// owner only, holding 64 hex digits.
func (c *checker) checkAtRestKey(key, path string) {
	if path == "" {
		return
	}
	if !filepath.IsAbs(path) {
		c.at(key, "%q is not an absolute path", path)
		return
	}
	_, err := atrest.LoadKey(path)
	var ke *atrest.KeyError
	switch {
	case err == nil:
	case !errors.As(err, &ke):
		c.at(key, "%v", err)
	case errors.Is(err, atrest.ErrKeyPermissions) && !ke.Mode.IsRegular():
		c.at(key, "%s is not a regular file", path)
	case errors.Is(err, atrest.ErrKeyPermissions):
		c.at(key, "%s has mode %#o: a key file must be readable by its owner only (chmod 600 %s)", path, ke.Mode.Perm(), path)
	case errors.Is(err, atrest.ErrKeyFormat):
		c.at(key, "%s: %s: an at-rest key is 64 hex digits, 32 random bytes (umask 077; openssl rand -hex 32 > %s)", path, ke.Reason, path)
	default:
		c.at(key, "%v", ke.Err)
	}
}

// checkCapabilities parses every declaration in the capability directory:
// capDir, else <config dir>/capabilities, else configs/capabilities (from
// the working directory), whichever exists first, and returns those that
// parse.
func (c *checker) checkCapabilities(cfgPath, capDir string) []*capability.Capability {
	explicit := capDir != ""
	if !explicit {
		var cands []string
		if cfgPath != "" {
			cands = append(cands, filepath.Join(filepath.Dir(cfgPath), "capabilities"))
		}
		cands = append(cands, filepath.Join("configs", "capabilities"))
		for _, d := range cands {
			if st, err := os.Stat(d); err == nil && st.IsDir() {
				capDir = d
				break
			}
		}
		if capDir == "" {
			c.res.Notes = append(c.res.Notes, "no capability declarations checked (none beside the configuration; name them with --capabilities DIR)")
			return nil
		}
	}
	paths, _ := filepath.Glob(filepath.Join(capDir, "*.json"))
	if len(paths) == 0 {
		msg := "no capability declarations (*.json)"
		if _, err := os.Stat(capDir); errors.Is(err, fs.ErrNotExist) {
			msg = "no such directory"
		}
		c.res.Problems = append(c.res.Problems, Problem{File: capDir, Message: msg})
		return nil
	}
	var caps []*capability.Capability
	for _, p := range paths {
		data, err := os.ReadFile(p)
		var cp *capability.Capability
		if err == nil {
			cp, err = capability.Parse(data)
		}
		if err != nil {
			for _, e := range flatten(err) {
				c.res.Problems = append(c.res.Problems, Problem{File: p, Message: e.Error()})
			}
			continue
		}
		caps = append(caps, cp)
		c.res.Capabilities = append(c.res.Capabilities, cp.Name+"@"+cp.SemVer.String())
	}
	if _, err := capability.NewRegistry(caps...); err != nil {
		c.res.Problems = append(c.res.Problems, Problem{File: capDir, Message: err.Error()})
	}
	return caps
}

// checkOperators looks up each operator's OS user on this host, as the
// daemon does at start (the role names are the schema's and rigconfig's).
func (c *checker) checkOperators(f rigconfig.File) {
	for _, name := range slices.Sorted(maps.Keys(f.Operators)) {
		u := f.Operators[name].User
		if strings.TrimSpace(u) == "" {
			continue
		}
		if _, _, err := operators.OSLookup(u); err != nil {
			c.at("operators."+name+".user", "%v (the daemon refuses to start)", err)
		}
	}
}

// checkRecipes loads agent.recipes_dir as the daemon does (beside the
// shipped recipes, each checked against the compiled envelope): the
// directory or a file writable by group or others, and every problem of a
// recipe the daemon would not offer, each at its file and line. It
// returns caps with the capabilities of the recipes it loaded.
func (c *checker) checkRecipes(f rigconfig.File, cfgPath string, caps []*capability.Capability) []*capability.Capability {
	if f.Agent.RecipesDir == "" {
		return caps
	}
	env, err := f.CompileEnvelope()
	if err != nil {
		return caps // checkEnvelope said why
	}
	set, err := recipes.Load(env, recipes.Dir(cfgPath, f.Agent.RecipesDir), nil)
	if err != nil {
		c.at("agent.recipes_dir", "%v", err)
		return caps
	}
	for _, e := range set.Refused {
		c.at("agent.recipes_dir", "%v", e)
	}
	for _, p := range set.Problems {
		c.res.Problems = append(c.res.Problems, Problem{File: p.File, Line: p.Line, Column: p.Column, Key: p.Key, Message: p.Message})
	}
	if all, err := set.Capabilities(caps); err == nil {
		return all
	}
	return caps
}

// checkRetention: no retention may be shorter than the longest
// max_duration of the capabilities the agent would offer (its data would
// be gone before such a session could end).
// Without declarations checked, those the daemon would then use: the
// copies embedded in the binary.
func (c *checker) checkRetention(f rigconfig.File, caps []*capability.Capability) {
	if len(caps) == 0 {
		caps = embeddedCapabilities()
	}
	longest, which := rigconfig.Longest(caps)
	if longest == 0 {
		return
	}
	for _, e := range f.Retention.CheckRetention(longest, which) {
		if !strings.Contains(e.Error(), "max_duration") {
			continue // the rest is rigconfig.Validate's, already reported
		}
		k, m, _ := strings.Cut(e.Error(), ": ")
		c.at(k, "%s", m)
	}
}

// embeddedCapabilities parses the declarations embedded in the binary
// (configs/capabilities), skipping any that do not parse (their own test
// holds them valid).
func embeddedCapabilities() []*capability.Capability {
	shipped := configs.Capabilities()
	var out []*capability.Capability
	for _, n := range shipped.Names() {
		if cp, err := capability.Parse(shipped[n]); err == nil {
			out = append(out, cp)
		}
	}
	return out
}
