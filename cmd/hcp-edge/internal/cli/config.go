package cli

import (
	"bytes"
	"flag"
	"os"

	"hcp-edge/cmd/hcp-edge/internal/rigconfig"
	"hcp-edge/configs"
)

// loadConfig reads the configuration file, or the embedded configs/sim.yaml
// when path is empty.
func loadConfig(path string) (rigconfig.File, error) {
	if path == "" {
		return rigconfig.Parse(bytes.NewReader(configs.SimYAML))
	}
	return rigconfig.Load(path)
}

// configFlag adds --config to fs.
func configFlag(fs *flag.FlagSet) *string {
	return fs.String("config", "", "configuration file (default: the embedded configs/sim.yaml)")
}

// socketFlag adds --socket to fs.
func socketFlag(fs *flag.FlagSet) *string {
	return fs.String("socket", "", "control socket (default: $HCP_CONTROL_SOCKET, else agent.control_socket of the configuration)")
}

// socketPath resolves the control socket: the flag, else
// $HCP_CONTROL_SOCKET, else the configuration's (whose default derives from
// $HCP_STATE_DIR). A configuration that does not parse still yields the
// environment's or the default path, so that status works without one.
func socketPath(flagValue, cfgPath string) string {
	if flagValue != "" {
		return flagValue
	}
	if s := os.Getenv("HCP_CONTROL_SOCKET"); s != "" {
		return s
	}
	if f, err := loadConfig(cfgPath); err == nil {
		return f.Agent.ControlSocket
	}
	var f rigconfig.File
	f.Defaults()
	return f.Agent.ControlSocket
}

// operatorDefault is the login name, for commands where --operator is
// optional. SUDO_USER is not consulted: under sudo the kernel says root,
// and the daemon records root (with the kernel's login uid beside it);
// a name from the environment would only be a claim (docs/SAFETY.md).
func operatorDefault() string {
	for _, k := range []string{"USER", "LOGNAME"} {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	return "unknown"
}
