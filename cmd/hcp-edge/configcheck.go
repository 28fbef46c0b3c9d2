package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/hcp-edge/hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"github.com/hcp-edge/hcp-edge/configs"
	"github.com/hcp-edge/hcp-edge/drivers/dio"
	"github.com/hcp-edge/hcp-edge/envelope"
	"github.com/hcp-edge/hcp-edge/session/atrest"
	"github.com/hcp-edge/hcp-edge/session/capability"
)

// embeddedName names the embedded default configuration in reports.
const embeddedName = "configs/sim.yaml (embedded)"

// maxSocketPath is the longest path a unix socket may have (sun_path is 108
// bytes with its terminating NUL on Linux).
const maxSocketPath = 107

func configCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "check" {
		return groupUsage(args, "usage: hcp-edge config check [--json] [--capabilities DIR] [FILE]\n\nRun \"hcp-edge config check -h\" for the flags.\n", stdout, stderr)
	}
	return configCheckCmd(args[1:], stdout, stderr)
}

func configCheckCmd(args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("config check", flag.ContinueOnError)
	fset.SetOutput(stderr)
	fset.Usage = func() {
		fmt.Fprint(fset.Output(), `usage: hcp-edge config check [--json] [--capabilities DIR] [FILE]

Validates a configuration before the rig sees it, without touching hardware: the YAML schema
(unknown keys, types, durations), units, the rig section (buses, unit ids, full scales, valves),
the envelope compiled against the rig's device ranges, the agent and monitor sections, paths
(absolute; the control socket short enough for a unix socket), the permissions of key files
(0600 or stricter), the at-rest key (agent.at_rest_key_file: 64 hex digits) and the capability
declarations. Every problem is reported, each as FILE:LINE: KEY: MESSAGE. FILE defaults to the
embedded configs/sim.yaml.

environment: HCP_STATE_DIR, HCP_CONTROL_SOCKET and HCP_RIG_SIM_DIR apply as they do for run.

exit codes: 0 valid; 2 invalid (or unreadable, or usage).

examples:
  hcp-edge config check                          # the embedded configs/sim.yaml
  hcp-edge config check /etc/hcp-edge/hcp-edge.yaml
  hcp-edge config check --json configs/hcp-edge.example.yaml

flags:
`)
		fset.PrintDefaults()
	}
	asJSON := fset.Bool("json", false, "print the result as JSON")
	capDir := fset.String("capabilities", "", "capability declarations to check (default: <config dir>/capabilities, else configs/capabilities, if present)")
	pos, err := parseArgs(fset, args, stdout)
	if err != nil || len(pos) > 1 {
		if err == nil {
			fmt.Fprintln(stderr, "hcp-edge config check: give at most one FILE")
		}
		return usageExit(err)
	}
	file := ""
	if len(pos) == 1 {
		file = pos[0]
	}
	r := checkConfig(file, *capDir)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(r)
	} else {
		for _, p := range r.Problems {
			fmt.Fprintln(stdout, p)
		}
		for _, n := range r.Notes {
			fmt.Fprintln(stdout, "note: "+n)
		}
		if r.Valid {
			fmt.Fprintf(stdout, "%s: valid\n", r.File)
		} else {
			fmt.Fprintf(stdout, "%s: %d problem(s)\n", r.File, len(r.Problems))
		}
	}
	if !r.Valid {
		return exitUsage
	}
	return exitOK
}

// checkResult is what config check reports.
type checkResult struct {
	File         string    `json:"file"`
	Valid        bool      `json:"valid"`
	Problems     []problem `json:"problems"`
	Capabilities []string  `json:"capabilities,omitempty"` // name@version of each declaration checked
	Notes        []string  `json:"notes,omitempty"`
}

// checker accumulates the problems of one configuration.
type checker struct {
	file string
	root *yaml.Node // the document's content; nil if it did not parse
	res  checkResult
}

// at reports a problem at a key path of the configuration.
func (c *checker) at(key, format string, a ...any) {
	p := problem{File: c.file, Key: key, Message: fmt.Sprintf(format, a...)}
	if c.root != nil {
		p.Line, p.Column, _ = locate(c.root, key)
	}
	c.res.Problems = append(c.res.Problems, p)
}

// checkConfig validates the configuration at path ("" = the embedded one)
// and the capability declarations in capDir (see configCheckCmd).
func checkConfig(path, capDir string) checkResult {
	c := &checker{file: path}
	var data []byte
	if path == "" {
		c.file, data = embeddedName, configs.SimYAML
	} else {
		var err error
		if data, err = os.ReadFile(path); err != nil {
			c.res.Problems = append(c.res.Problems, problem{File: path, Message: err.Error()})
			return c.finish()
		}
	}
	c.res.File = c.file

	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		p := problem{File: c.file, Message: strings.TrimPrefix(err.Error(), "yaml: ")}
		if m := syntaxLineRE.FindStringSubmatch(err.Error()); m != nil {
			p.Line, _ = strconv.Atoi(m[1])
			p.Message = m[2]
		}
		c.res.Problems = append(c.res.Problems, p)
		return c.finish()
	}
	if len(doc.Content) == 0 {
		c.res.Problems = append(c.res.Problems, problem{File: c.file, Message: "empty configuration"})
		return c.finish()
	}
	c.root = doc.Content[0]
	// The schema check prunes what it refuses from a second copy of the
	// tree; the rest is checked on what remains, and reported unless a
	// schema problem already names the same key.
	var pruned yaml.Node
	_ = yaml.Unmarshal(data, &pruned)
	schema := schemaCheck(c.file, pruned.Content[0], reflect.TypeFor[rigconfig.File]())
	c.res.Problems = append(c.res.Problems, schema...)
	if len(schema) > 0 {
		if data, err := yaml.Marshal(&pruned); err == nil {
			c.rest(data, path, capDir)
		}
		c.dropShadowed(schema)
		return c.finish()
	}
	c.rest(data, path, capDir)
	return c.finish()
}

// dropShadowed removes problems after the schema ones whose key is the key
// of a schema problem or below it: the pruned value caused them.
func (c *checker) dropShadowed(schema []problem) {
	n := len(schema)
	kept := c.res.Problems[:n]
	for _, p := range c.res.Problems[n:] {
		shadowed := false
		for _, s := range schema {
			if p.Key == s.Key || strings.HasPrefix(p.Key, s.Key+".") || strings.HasPrefix(p.Key, s.Key+"[") {
				shadowed = true
				break
			}
		}
		if !shadowed {
			kept = append(kept, p)
		}
	}
	c.res.Problems = kept
}

// rest checks the decoded configuration (data passed the schema check).
func (c *checker) rest(data []byte, path, capDir string) {
	for _, section := range []string{"rig", "envelope"} {
		if _, _, ok := locate(c.root, section); !ok {
			c.at(section, "missing section")
		}
	}

	f, err := rigconfig.Parse(bytes.NewReader(data))
	for _, e := range flatten(err) {
		key, msg := splitKey(e.Error())
		c.at(key, "%s", msg)
	}
	if err != nil && len(flatten(err)) == 0 {
		c.at("", "%v", err)
	}
	if f.Agent.StateDir == "" && err != nil {
		return // it did not decode (the schema check should have said why)
	}
	c.checkRig(f.Rig)
	c.checkEnvelope(f)
	c.checkPaths(f)
	c.checkKeyFiles(f)
	c.checkCapabilities(path, capDir)
}

var syntaxLineRE = regexp.MustCompile(`(?s)^yaml: line (\d+): (.*)$`)

// checkRig adds what rigconfig.Validate leaves to rigconfig.Spec: each gas
// line valve must be a coil of the digital I/O module.
func (c *checker) checkRig(r rigconfig.Rig) {
	coils := map[string]bool{}
	var names []string
	for _, co := range dio.DefaultOpts().Coils {
		coils[co.Name] = true
		names = append(names, co.Name)
	}
	for i, m := range r.MFCs {
		if m.Gas != "" && !coils[m.ValveName()] {
			key := fmt.Sprintf("rig.mfcs[%d].valve", i)
			if m.Valve == "" {
				key = fmt.Sprintf("rig.mfcs[%d].gas", i)
			}
			c.at(key, "line valve %q is not a coil of the digital I/O module (coils: %s)", m.ValveName(), strings.Join(names, ", "))
		}
	}
}

// checkEnvelope compiles the envelope against the rig's spec. An MFC whose
// full scale does not parse (already reported) stands in with an unbounded
// one, one whose valve is not a coil with its gas's default valve (or is
// left out if that is no coil either), so that everything
// else is still checked without a cascade of follow-on errors.
func (c *checker) checkEnvelope(f rigconfig.File) {
	rig := f.Rig
	rig.MFCs = nil
	for _, m := range f.Rig.MFCs {
		if _, err := rigconfig.ParseFlow(m.FullScale); err != nil {
			m.FullScale = "1e12 sccm"
		}
		one := f.Rig
		one.MFCs = []rigconfig.MFC{m}
		if _, err := rigconfig.Spec(one); err != nil && m.Valve != "" {
			m.Valve = "" // try the gas's default valve
			one.MFCs = []rigconfig.MFC{m}
		}
		if _, err := rigconfig.Spec(one); err == nil {
			rig.MFCs = append(rig.MFCs, m)
		}
	}
	spec, err := rigconfig.Spec(rig)
	if err != nil {
		c.at("rig", "%v", err)
		return
	}
	_, err = envelope.Compile(f.Envelope, spec)
	for _, e := range flatten(err) {
		var ce *envelope.ConfigError
		if !errors.As(e, &ce) {
			c.at("envelope", "%v", e)
			continue
		}
		key := "envelope." + ce.Path
		switch {
		case strings.HasPrefix(ce.Path, "channel "):
			key = "envelope.parameters." + strings.TrimPrefix(ce.Path, "channel ")
		case strings.HasPrefix(ce.Path, "rig"):
			key = "rig.mfcs"
		}
		c.at(key, "%s", ce.Reason)
	}
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
	if n := len(f.Agent.ControlSocket); n > maxSocketPath {
		c.at("agent.control_socket", "%q is %d bytes long; a unix socket path takes at most %d", f.Agent.ControlSocket, n, maxSocketPath)
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

// keyFileField reports whether a string field holds the path of a secret:
// its yaml key ends in _key_file, _secret_file, _password_file or
// _token_file or _credentials_file (or is one of them).
func keyFileField(name string) bool {
	for _, s := range []string{"key_file", "secret_file", "password_file", "token_file", "credentials_file"} {
		if name == s || strings.HasSuffix(name, "_"+s) {
			return true
		}
	}
	return false
}

// checkKeyFiles checks every configured secret file (see keyFileField): it
// must exist, be a regular file and be readable by its owner only (0600 or
// stricter).
func (c *checker) checkKeyFiles(f rigconfig.File) {
	var walk func(v reflect.Value, path string)
	walk = func(v reflect.Value, path string) {
		switch v.Kind() {
		case reflect.Pointer:
			if !v.IsNil() {
				walk(v.Elem(), path)
			}
		case reflect.Struct:
			for _, fl := range yamlFields(v.Type()) {
				fv := v.FieldByIndex(fl.index)
				key := join(path, fl.name)
				if fv.Kind() == reflect.String && keyFileField(fl.name) {
					if key == atRestKeyKey {
						c.checkAtRestKey(key, fv.String())
					} else {
						c.checkKeyFile(key, fv.String())
					}
					continue
				}
				walk(fv, key)
			}
		case reflect.Slice:
			for i := 0; i < v.Len(); i++ {
				walk(v.Index(i), fmt.Sprintf("%s[%d]", path, i))
			}
		case reflect.Map:
			for _, k := range v.MapKeys() {
				if k.Kind() == reflect.String {
					walk(v.MapIndex(k), join(path, k.String()))
				}
			}
		}
	}
	walk(reflect.ValueOf(f), "")
}

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

// atRestKeyKey is the configuration key of the at-rest key file.
const atRestKeyKey = "agent.at_rest_key_file"

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
// the working directory), whichever exists first.
func (c *checker) checkCapabilities(cfgPath, capDir string) {
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
			return
		}
	}
	paths, _ := filepath.Glob(filepath.Join(capDir, "*.json"))
	if len(paths) == 0 {
		msg := "no capability declarations (*.json)"
		if _, err := os.Stat(capDir); errors.Is(err, fs.ErrNotExist) {
			msg = "no such directory"
		}
		c.res.Problems = append(c.res.Problems, problem{File: capDir, Message: msg})
		return
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
				c.res.Problems = append(c.res.Problems, problem{File: p, Message: e.Error()})
			}
			continue
		}
		caps = append(caps, cp)
		c.res.Capabilities = append(c.res.Capabilities, cp.Name+"@"+cp.SemVer.String())
	}
	if _, err := capability.NewRegistry(caps...); err != nil {
		c.res.Problems = append(c.res.Problems, problem{File: capDir, Message: err.Error()})
	}
}

// finish sorts the problems and sets Valid.
func (c *checker) finish() checkResult {
	if c.res.File == "" {
		c.res.File = c.file
	}
	slices.SortStableFunc(c.res.Problems, func(a, b problem) int {
		if a.File != b.File {
			return strings.Compare(a.File, b.File)
		}
		return a.Line - b.Line
	})
	c.res.Problems = slices.CompactFunc(c.res.Problems, func(a, b problem) bool { return a == b })
	if c.res.Problems == nil {
		c.res.Problems = []problem{}
	}
	c.res.Valid = len(c.res.Problems) == 0
	return c.res
}

// flatten unwraps joined errors into their leaves.
func flatten(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

// splitKey splits "rig.mfcs[2].full_scale: reason" into the key path and the
// reason; a message without a key path prefix keeps its whole text.
func splitKey(msg string) (key, reason string) {
	k, r, ok := strings.Cut(msg, ": ")
	if !ok || strings.ContainsAny(k, " \t\n") {
		return "", msg
	}
	section, _, _ := strings.Cut(k, ".")
	switch section {
	case "rig", "envelope", "monitor", "agent", "gate":
		return k, r
	}
	return "", msg
}
