package provision

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"
)

// Rabbitmqctl runs RabbitMQ's rabbitmqctl.
type Rabbitmqctl struct {
	// Path is the executable; "" looks up rabbitmqctl in $PATH, then
	// /usr/sbin/rabbitmqctl.
	Path string
	// Node is passed as -n when set (another node, or a remote one that
	// shares this host's Erlang cookie).
	Node string
}

// Run runs rabbitmqctl with args and stdin (nil: none) and returns its
// standard output.
func (r Rabbitmqctl) Run(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error) {
	path := r.Path
	if path == "" {
		var err error
		if path, err = exec.LookPath("rabbitmqctl"); err != nil {
			path = "/usr/sbin/rabbitmqctl"
		}
	}
	if r.Node != "" {
		args = append([]string{"-n", r.Node}, args...)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("provision: rabbitmqctl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// Runner runs rabbitmqctl; Rabbitmqctl is the real one.
type Runner interface {
	Run(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error)
}

// readAttempts bounds how many times Read asks for the definitions when
// what comes back is not a JSON document.
const readAttempts = 3

// Read reads the broker's state (rabbitmqctl export_definitions). An export
// that is not a well-formed document is asked for again, up to readAttempts
// times in all: under make ci, with eight tests provisioning vhosts of their
// own at once, one export once came back malformed ("invalid character ':'
// looking for beginning of object key string") and the next test's read of
// the same broker was whole. Reading changes nothing, so asking again is
// safe; a command that fails is not retried.
func Read(ctx context.Context, r Runner) (State, error) {
	var perr error
	for range readAttempts {
		out, err := r.Run(ctx, nil, "-q", "export_definitions", "-")
		if err != nil {
			return State{}, err
		}
		st, err := ParseDefinitions(bytes.NewReader(out))
		if err == nil {
			return st, nil
		}
		perr = err
		if ctx.Err() != nil {
			break
		}
	}
	return State{}, fmt.Errorf("%w (%d exports)", perr, readAttempts)
}

// Options tunes Apply.
type Options struct {
	// Passwords gives a password to users that Apply creates (tests and the
	// development broker). A user created without one can log in only with
	// a client certificate (EXTERNAL). Existing users' passwords are never
	// changed.
	Passwords map[string]string
}

// HashPassword is RabbitMQ's rabbit_password_hashing_sha256 hash of
// password (a random 32-bit salt, then SHA-256 of salt and password,
// base64), as a definitions document carries it.
func HashPassword(password string) (string, error) {
	salt := make([]byte, 4)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("provision: salt: %w", err)
	}
	sum := sha256.Sum256(append(append([]byte{}, salt...), password...))
	return base64.StdEncoding.EncodeToString(append(salt, sum[:]...)), nil
}

// Apply makes changes on the broker: the vhost, new users, permissions and
// topic permissions in one import_definitions call, then tag fixes and
// topic-permission clears one call each. It reads the state back and
// returns ErrNotConverged when Diff still finds something to change.
func Apply(ctx context.Context, r Runner, g Grants, changes []Change, opts Options) error {
	type user struct {
		Name      string   `json:"name"`
		Hash      string   `json:"password_hash"`
		Algorithm string   `json:"hashing_algorithm"`
		Tags      []string `json:"tags"`
		Limits    struct{} `json:"limits"`
	}
	type vhost struct {
		Name string `json:"name"`
	}
	doc := struct {
		Users            []user              `json:"users"`
		VHosts           []vhost             `json:"vhosts"`
		Permissions      []map[string]string `json:"permissions"`
		TopicPermissions []map[string]string `json:"topic_permissions"`
	}{Users: []user{}, VHosts: []vhost{}, Permissions: []map[string]string{}, TopicPermissions: []map[string]string{}}
	var after [][]string
	for _, c := range changes {
		switch c.Kind {
		case AddVHost:
			doc.VHosts = append(doc.VHosts, vhost{c.VHost})
		case AddUser:
			u := user{Name: c.User, Algorithm: "rabbit_password_hashing_sha256", Tags: []string{}}
			if pw, ok := opts.Passwords[c.User]; ok && pw != "" {
				h, err := HashPassword(pw)
				if err != nil {
					return err
				}
				u.Hash = h
			}
			doc.Users = append(doc.Users, u)
		case SetPermissions:
			p := c.Permission
			doc.Permissions = append(doc.Permissions, map[string]string{"user": p.User, "vhost": p.VHost,
				"configure": p.Configure, "write": p.Write, "read": p.Read})
		case SetTopicPermissions:
			t := c.Topic
			doc.TopicPermissions = append(doc.TopicPermissions, map[string]string{"user": t.User, "vhost": t.VHost,
				"exchange": t.Exchange, "write": t.Write, "read": t.Read})
		case ClearTopic:
			after = append(after, []string{"-q", "clear_topic_permissions", "-p", c.VHost, c.User, c.Topic.Exchange})
		case DropImpersonator:
			after = append(after, append([]string{"-q", "set_user_tags", c.User}, c.Tags...))
		}
	}
	if len(doc.Users)+len(doc.VHosts)+len(doc.Permissions)+len(doc.TopicPermissions) > 0 {
		body, err := json.Marshal(doc)
		if err != nil {
			return fmt.Errorf("provision: %w", err)
		}
		// On standard input: the document may carry password hashes, and
		// Debian's rabbitmqctl runs as the rabbitmq user, who could not read a
		// private temporary file anyway.
		// No file argument: standard input (3.10's validation refuses "-").
		if _, err := r.Run(ctx, bytes.NewReader(body), "-q", "import_definitions"); err != nil {
			return err
		}
	}
	for _, args := range after {
		if _, err := r.Run(ctx, nil, args...); err != nil {
			return err
		}
	}
	// import_definitions may finish after the command returns: read back
	// a few times before calling it a failure.
	var left []Change
	for range 10 {
		st, err := Read(ctx, r)
		if err != nil {
			return err
		}
		if left, _ = Diff(st, g); len(left) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("provision: %w", ctx.Err())
		case <-time.After(300 * time.Millisecond):
		}
	}
	return fmt.Errorf("%w: still to change: %v", ErrNotConverged, left)
}
