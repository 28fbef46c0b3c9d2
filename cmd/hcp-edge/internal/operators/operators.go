package operators

import (
	"errors"
	"fmt"
	"os/user"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Role is a right on the control socket.
type Role string

// The roles.
const (
	RoleEStop   Role = "estop"   // e-stop: anyone who reaches the socket; never checked
	RoleOperate Role = "operate" // arm, reset, submit, pause, resume, abort, takeover, handback
	RoleApprove Role = "approve" // approve and deny tasks that wait for a human approval
	RoleRelease Role = "release" // approve, deny and withdraw T4 access requests
	RoleAdmin   Role = "admin"   // broker provisioning, configuration reload
)

// Roles is every role, in the order the documentation lists them.
var Roles = []Role{RoleEStop, RoleOperate, RoleApprove, RoleRelease, RoleAdmin}

// Valid reports whether r is one of Roles.
func (r Role) Valid() bool { return slices.Contains(Roles, r) }

// Errors of the decision.
var (
	// ErrForbidden: the request's OS user may not use that display name,
	// or does not hold the role the operation needs.
	ErrForbidden = errors.New("forbidden")
	// ErrUnknownRole: a configured role name that is not one of Roles.
	ErrUnknownRole = errors.New("operators: unknown role")
	// ErrUnknownUser: a configured OS user that does not exist on this host.
	ErrUnknownUser = errors.New("operators: unknown OS user")
)

// Entry is one operator of the configuration (operators.NAME).
type Entry struct {
	// User is the OS user the display name belongs to: a user name or a
	// numeric uid.
	User string `yaml:"user" json:"user"`
	// Roles are the roles granted (Roles; estop need not be listed).
	Roles []Role `yaml:"roles" json:"roles"`
}

// CheckEntries reports every entry that names no user or a role that does
// not exist, keyed "operators.NAME.roles[i]" (sorted by name), without
// looking the users up.
func CheckEntries(entries map[string]Entry) []error {
	var errs []error
	for _, name := range sortedNames(entries) {
		e := entries[name]
		if strings.TrimSpace(name) == "" || strings.TrimSpace(name) != name {
			errs = append(errs, fmt.Errorf("operators.%s: %q: a display name, without surrounding spaces", name, name))
		}
		if strings.TrimSpace(e.User) == "" {
			errs = append(errs, fmt.Errorf("operators.%s.user: the OS user (a name or a uid) is required", name))
		}
		for i, r := range e.Roles {
			if !r.Valid() {
				errs = append(errs, fmt.Errorf("operators.%s.roles[%d]: %w %q (the roles: %s)", name, i, ErrUnknownRole, r, roleList(Roles)))
			}
		}
	}
	return errs
}

// Lookup resolves a configured OS user (a name or a numeric uid) to its
// uid and name.
type Lookup func(nameOrUID string) (uid uint32, name string, err error)

// OSLookup is Lookup against the host's user database (os/user).
func OSLookup(s string) (uint32, string, error) {
	var u *user.User
	var err error
	if _, nerr := strconv.ParseUint(s, 10, 32); nerr == nil {
		u, err = user.LookupId(s)
	} else {
		u, err = user.Lookup(s)
	}
	if err != nil {
		return 0, "", fmt.Errorf("%w %q: %w", ErrUnknownUser, s, err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return 0, "", fmt.Errorf("%w %q: uid %q", ErrUnknownUser, s, u.Uid)
	}
	return uint32(uid), u.Username, nil
}

// UserName is the OS user name of uid, or "uid N" when the host does not
// know it.
func UserName(uid uint32) string {
	if u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10)); err == nil {
		return u.Username
	}
	return "uid " + strconv.FormatUint(uint64(uid), 10)
}

type resolved struct {
	uid   uint32
	user  string
	roles []Role
}

// Table is the resolved operators section. The zero value, and New of an
// empty section, is the unconfigured table: root holds every role, nobody
// else any.
type Table struct {
	byName map[string]resolved
}

// New checks entries and resolves each OS user with lookup (OSLookup when
// nil). Every problem is reported at once; the table is nil on error.
func New(entries map[string]Entry, lookup Lookup) (*Table, error) {
	if lookup == nil {
		lookup = OSLookup
	}
	errs := CheckEntries(entries)
	t := &Table{byName: make(map[string]resolved, len(entries))}
	for _, name := range sortedNames(entries) {
		e := entries[name]
		if strings.TrimSpace(e.User) == "" {
			continue
		}
		uid, uname, err := lookup(e.User)
		if err != nil {
			errs = append(errs, fmt.Errorf("operators.%s.user: %w", name, err))
			continue
		}
		t.byName[name] = resolved{uid: uid, user: uname, roles: slices.Clone(e.Roles)}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return t, nil
}

// Configured reports whether the configuration has an operators section
// (with at least one entry).
func (t *Table) Configured() bool { return t != nil && len(t.byName) > 0 }

// Identity is who a request comes from: the OS user the kernel reported,
// the display name it used, and the roles it holds.
type Identity struct {
	UID     uint32 `json:"uid"`
	GID     uint32 `json:"gid"`
	User    string `json:"user"`    // the OS user name
	Display string `json:"display"` // the display name (--operator), or the OS user name
	Roles   []Role `json:"roles"`   // held (estop always; every role for root)
	// Unconfigured is true when no operators section exists (only root
	// holds roles).
	Unconfigured bool `json:"unconfigured,omitempty"`
}

// Has reports whether the identity holds role r (estop: always).
func (id Identity) Has(r Role) bool { return r == RoleEStop || slices.Contains(id.Roles, r) }

// String is "DISPLAY (uid N USER)", what refusals and logs print.
func (id Identity) String() string {
	return fmt.Sprintf("%s (uid %d %s)", id.Display, id.UID, id.User)
}

// Identify is the identity of a request from uid/gid using display name
// display ("" = the OS user's own). Root may use any display name. For
// anyone else a display name configured for another OS user is refused
// (ErrForbidden), and so is one not configured at all when the table is
// configured. Without a configured table the display name is taken as
// given and holds no role (only root does).
func (t *Table) Identify(uid, gid uint32, display string) (Identity, error) {
	id := Identity{UID: uid, GID: gid, User: UserName(uid), Display: display, Unconfigured: !t.Configured()}
	if uid == 0 {
		id.Roles = slices.Clone(Roles)
		if id.Display == "" {
			id.Display = id.User
		}
		return id, nil
	}
	id.Roles = []Role{RoleEStop}
	if !t.Configured() {
		if id.Display == "" {
			id.Display = id.User
		}
		return id, nil
	}
	if _, ok := t.byName[display]; display == "" || (!ok && display == id.User) {
		// The OS user's own name, or its own entry when it has exactly
		// one.
		var mine []string
		for name, r := range t.byName {
			if r.uid == uid {
				mine = append(mine, name)
			}
		}
		if len(mine) != 1 {
			id.Display = id.User
			return id, nil
		}
		if display == "" {
			id.Display = mine[0]
		}
		display = mine[0]
	}
	r, ok := t.byName[display]
	switch {
	case !ok:
		return id, fmt.Errorf("%w: %q is not an operator in the configuration (operators:); OS user %s (uid %d) may use: %s",
			ErrForbidden, display, id.User, uid, t.namesOf(uid))
	case r.uid != uid:
		return id, fmt.Errorf("%w: the display name %q belongs to OS user %s (uid %d), not to %s (uid %d)",
			ErrForbidden, display, r.user, r.uid, id.User, uid)
	}
	for _, role := range r.roles {
		if !slices.Contains(id.Roles, role) {
			id.Roles = append(id.Roles, role)
		}
	}
	return id, nil
}

// Authorize is Identify, then a check that the identity holds need: a
// refusal wraps ErrForbidden and names the role. The identity is returned
// either way (for the audit of the refusal).
func (t *Table) Authorize(uid, gid uint32, display string, need Role) (Identity, error) {
	id, err := t.Identify(uid, gid, display)
	if err != nil {
		return id, err
	}
	if !id.Has(need) {
		why := "the operators section grants it"
		if id.Unconfigured {
			why = "there is no operators section in the configuration, so only root holds roles"
		}
		return id, fmt.Errorf("%w: %s does not hold the role %q (%s)", ErrForbidden, id, need, why)
	}
	return id, nil
}

// namesOf lists the display names configured for uid.
func (t *Table) namesOf(uid uint32) string {
	var out []string
	for name, r := range t.byName {
		if r.uid == uid {
			out = append(out, name)
		}
	}
	if len(out) == 0 {
		return "none"
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

func sortedNames(m map[string]Entry) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func roleList(rs []Role) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = string(r)
	}
	return strings.Join(s, ", ")
}
