package provision

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	tamqp "hcp-edge/transport/amqp"
	"hcp-edge/transport/wire"
)

// Role is one broker user and the HCP id it acts as.
type Role struct {
	User string // the broker (SASL) login
	ID   string // callee_id or caller_id
}

// Caller is a caller role and whether the gate lets it use this callee.
type Caller struct {
	Role
	// MayCommand grants publishing to hcp.commands: the gate's ACL gives the
	// caller at least one capability of this callee.
	MayCommand bool
}

// Spec is what the agent's configuration says about the broker.
type Spec struct {
	VHost   string
	Callee  Role
	Callers []Caller
}

// Permission is one user's configure, write and read regular expressions on
// a vhost.
type Permission struct {
	User, VHost            string
	Configure, Write, Read string
}

// TopicPermission is one user's write and read regular expressions over
// routing keys on one topic exchange of a vhost.
type TopicPermission struct {
	User, VHost, Exchange string
	Write, Read           string
}

// Grants is the broker state a Spec asks for.
type Grants struct {
	VHost            string
	Users            []string // every user provisioned, sorted
	Permissions      []Permission
	TopicPermissions []TopicPermission
}

// nothing is a regular expression that matches no resource name and no
// routing key RabbitMQ accepts (names are never empty, and "^$" would match
// the empty routing key).
const nothing = `^\b$`

func anyOf(names ...string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = regexp.QuoteMeta(n)
	}
	if len(q) == 1 {
		return "^" + q[0] + "$"
	}
	return "^(" + strings.Join(q, "|") + ")$"
}

// Derive checks s and returns the narrowest grants for it (see the package
// documentation for what each role may do).
func Derive(s Spec) (Grants, error) {
	if s.VHost == "" {
		return Grants{}, fmt.Errorf("%w: no vhost", ErrInvalid)
	}
	if s.Callee.User == "" {
		return Grants{}, fmt.Errorf("%w: no callee broker user", ErrInvalid)
	}
	if err := wire.CheckID(s.Callee.ID); err != nil {
		return Grants{}, fmt.Errorf("%w: callee_id '%s': %v", ErrInvalid, s.Callee.ID, err)
	}
	byUser := map[string]string{s.Callee.User: "callee " + s.Callee.ID}
	byCaller := map[string]string{}
	for _, c := range s.Callers {
		if c.User == "" {
			return Grants{}, fmt.Errorf("%w: caller '%s' has no broker user", ErrInvalid, c.ID)
		}
		if err := wire.CheckID(c.ID); err != nil {
			return Grants{}, fmt.Errorf("%w: caller_id '%s': %v", ErrInvalid, c.ID, err)
		}
		if other, ok := byUser[c.User]; ok {
			return Grants{}, fmt.Errorf("%w: broker user '%s' would be both %s and caller %s", ErrOverlap, c.User, other, c.ID)
		}
		if other, ok := byCaller[c.ID]; ok {
			return Grants{}, fmt.Errorf("%w: broker users '%s' and '%s' would both be caller %s (and share hcp.evt.%s)", ErrOverlap, other, c.User, c.ID, c.ID)
		}
		byUser[c.User] = "caller " + c.ID
		byCaller[c.ID] = c.User
	}

	cmdQ, _ := wire.CommandQueue(s.Callee.ID)
	dlq, _ := tamqp.DeadLetterQueue(s.Callee.ID)
	g := Grants{VHost: s.VHost}
	g.Users = append(g.Users, s.Callee.User)
	// The dead-letter exchange and the callee's dead-letter queue are the
	// callee's alone: the command queue names hcp.dlx (declaring it needs
	// write there), and the callee binds hcp.dlq.{callee_id} to it.
	g.Permissions = append(g.Permissions, Permission{
		User: s.Callee.User, VHost: s.VHost,
		Configure: anyOf(wire.CommandsExchange, wire.EventsExchange, cmdQ, tamqp.DeadLetterExchange, dlq),
		Write:     anyOf(wire.EventsExchange, cmdQ, tamqp.DeadLetterExchange, dlq),
		Read:      anyOf(wire.CommandsExchange, cmdQ, tamqp.DeadLetterExchange, dlq),
	})
	// The callee answers any caller id (a task_rejected may go to a payload's
	// caller_id): a routing key it may not use would close its channel and
	// stall the outbox. It binds nothing to hcp.events.
	g.TopicPermissions = append(g.TopicPermissions, TopicPermission{
		User: s.Callee.User, VHost: s.VHost, Exchange: wire.EventsExchange, Write: ".*", Read: nothing,
	})
	for _, c := range s.Callers {
		evtQ, _ := wire.EventQueue(c.ID)
		write := anyOf(evtQ) // queue.bind needs write on the queue
		if c.MayCommand {
			write = anyOf(wire.CommandsExchange, evtQ)
		}
		g.Users = append(g.Users, c.User)
		g.Permissions = append(g.Permissions, Permission{
			User: c.User, VHost: s.VHost,
			Configure: anyOf(evtQ),
			Write:     write,
			Read:      anyOf(wire.EventsExchange, evtQ),
		})
		g.TopicPermissions = append(g.TopicPermissions, TopicPermission{
			User: c.User, VHost: s.VHost, Exchange: wire.EventsExchange,
			Write: nothing, Read: "^" + regexp.QuoteMeta(c.ID) + `\.`,
		})
	}
	sort.Strings(g.Users)
	sort.Slice(g.Permissions, func(i, j int) bool { return g.Permissions[i].User < g.Permissions[j].User })
	sort.Slice(g.TopicPermissions, func(i, j int) bool {
		a, b := g.TopicPermissions[i], g.TopicPermissions[j]
		return a.User < b.User || a.User == b.User && a.Exchange < b.Exchange
	})
	return g, nil
}

// ChangeKind names what a Change does.
type ChangeKind string

// The kinds of change.
const (
	AddVHost            ChangeKind = "add vhost"
	AddUser             ChangeKind = "add user"
	SetPermissions      ChangeKind = "set permissions"
	SetTopicPermissions ChangeKind = "set topic permissions"
	ClearTopic          ChangeKind = "clear topic permissions"
	DropImpersonator    ChangeKind = "remove impersonator tag"
)

// Change is one step that brings the broker to the grants.
type Change struct {
	Kind  ChangeKind
	User  string
	VHost string
	// Permission is set for SetPermissions, Topic for SetTopicPermissions
	// and ClearTopic (the exchange), Tags for DropImpersonator (the tags kept).
	Permission Permission
	Topic      TopicPermission
	Tags       []string
	// Was describes the state replaced, for the report.
	Was string
}

// String is the line `broker provision` prints.
func (c Change) String() string {
	switch c.Kind {
	case AddVHost:
		return fmt.Sprintf("add vhost %s", c.VHost)
	case AddUser:
		return fmt.Sprintf("add user %s", c.User)
	case SetPermissions:
		p := c.Permission
		return fmt.Sprintf("set permissions %s on %s: configure '%s' write '%s' read '%s' (was %s)", p.User, p.VHost, p.Configure, p.Write, p.Read, c.Was)
	case SetTopicPermissions:
		t := c.Topic
		return fmt.Sprintf("set topic permissions %s on %s/%s: write '%s' read '%s' (was %s)", t.User, t.VHost, t.Exchange, t.Write, t.Read, c.Was)
	case ClearTopic:
		return fmt.Sprintf("clear topic permissions %s on %s/%s (was %s)", c.User, c.VHost, c.Topic.Exchange, c.Was)
	case DropImpersonator:
		return fmt.Sprintf("remove the impersonator tag of %s (tags now %v)", c.User, c.Tags)
	}
	return string(c.Kind)
}

// Diff lists the changes that bring st to g, and warnings about what it
// leaves alone (other users with permissions on the vhost).
func Diff(st State, g Grants) (changes []Change, warnings []string) {
	if !st.VHosts[g.VHost] {
		changes = append(changes, Change{Kind: AddVHost, VHost: g.VHost})
	}
	for _, u := range g.Users {
		info, ok := st.Users[u]
		if !ok {
			changes = append(changes, Change{Kind: AddUser, User: u})
			continue
		}
		if slices.Contains(info.Tags, "impersonator") {
			kept := slices.DeleteFunc(slices.Clone(info.Tags), func(t string) bool { return t == "impersonator" })
			changes = append(changes, Change{Kind: DropImpersonator, User: u, Tags: kept})
		}
	}
	for _, p := range g.Permissions {
		cur, ok := st.Permissions[userVHost{p.User, p.VHost}]
		if ok && cur == p {
			continue
		}
		was := "none"
		if ok {
			was = fmt.Sprintf("configure '%s' write '%s' read '%s'", cur.Configure, cur.Write, cur.Read)
		}
		changes = append(changes, Change{Kind: SetPermissions, User: p.User, VHost: p.VHost, Permission: p, Was: was})
	}
	want := map[topicKey]bool{}
	for _, t := range g.TopicPermissions {
		k := topicKey{t.User, t.VHost, t.Exchange}
		want[k] = true
		cur, ok := st.Topic[k]
		if ok && cur == t {
			continue
		}
		was := "none"
		if ok {
			was = fmt.Sprintf("write '%s' read '%s'", cur.Write, cur.Read)
		}
		changes = append(changes, Change{Kind: SetTopicPermissions, User: t.User, VHost: t.VHost, Topic: t, Was: was})
	}
	users := map[string]bool{}
	for _, u := range g.Users {
		users[u] = true
	}
	for _, k := range sortedTopicKeys(st.Topic) {
		if k.vhost == g.VHost && users[k.user] && !want[k] {
			cur := st.Topic[k]
			changes = append(changes, Change{Kind: ClearTopic, User: k.user, VHost: k.vhost, Topic: cur,
				Was: fmt.Sprintf("write '%s' read '%s'", cur.Write, cur.Read)})
		}
	}
	for _, k := range sortedPermKeys(st.Permissions) {
		if k.vhost == g.VHost && !users[k.user] {
			p := st.Permissions[k]
			warnings = append(warnings, fmt.Sprintf("user %s also has permissions on vhost %s (configure '%s' write '%s' read '%s'), not derived from this configuration: left alone",
				k.user, k.vhost, p.Configure, p.Write, p.Read))
		}
	}
	return changes, warnings
}
