package provision_test

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"hcp-edge/transport/provision"
)

func spec() provision.Spec {
	return provision.Spec{VHost: "hcp", Callee: provision.Role{User: "edge", ID: "lab-cvd"},
		Callers: []provision.Caller{
			{Role: provision.Role{User: "alpha", ID: "alpha"}, MayCommand: true},
			{Role: provision.Role{User: "alpha-x", ID: "alpha-x"}},
		}}
}

func TestDeriveRefuses(t *testing.T) {
	tests := []struct {
		name string
		edit func(*provision.Spec)
		want error
	}{
		{"callee user is a caller", func(s *provision.Spec) { s.Callers[0].User = "edge" }, provision.ErrOverlap},
		{"two users, one caller id", func(s *provision.Spec) { s.Callers[1].ID = "alpha" }, provision.ErrOverlap},
		{"one user, two callers", func(s *provision.Spec) { s.Callers[1].User = "alpha" }, provision.ErrOverlap},
		{"no vhost", func(s *provision.Spec) { s.VHost = "" }, provision.ErrInvalid},
		{"callee id with a dot", func(s *provision.Spec) { s.Callee.ID = "lab.cvd" }, provision.ErrInvalid},
		{"caller id with a wildcard", func(s *provision.Spec) { s.Callers[0].ID = "alpha#" }, provision.ErrInvalid},
		{"caller without a user", func(s *provision.Spec) { s.Callers[0].User = "" }, provision.ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := spec()
			tc.edit(&s)
			if _, err := provision.Derive(s); !errors.Is(err, tc.want) {
				t.Fatalf("Derive: %v, want %v", err, tc.want)
			}
		})
	}
}

// TestDeriveNarrow checks the regular expressions against the names each
// role must and must not reach, as RabbitMQ matches them (unanchored search).
func TestDeriveNarrow(t *testing.T) {
	g, err := provision.Derive(spec())
	if err != nil {
		t.Fatal(err)
	}
	perm := map[string]provision.Permission{}
	for _, p := range g.Permissions {
		perm[p.User] = p
	}
	topic := map[string]provision.TopicPermission{}
	for _, p := range g.TopicPermissions {
		topic[p.User+" "+p.Exchange] = p
	}
	match := func(re, s string) bool { return regexp.MustCompile(re).MatchString(s) }
	tests := []struct {
		name, re, resource string
		want               bool
	}{
		{"callee consumes its queue", perm["edge"].Read, "hcp.cmd.lab-cvd", true},
		{"callee reads no caller queue", perm["edge"].Read, "hcp.evt.alpha", false},
		{"callee publishes events", perm["edge"].Write, "hcp.events", true},
		{"callee publishes no commands", perm["edge"].Write, "hcp.commands", false},
		{"callee declares no other command queue", perm["edge"].Configure, "hcp.cmd.lab-cvd2", false},
		{"alpha declares its queue", perm["alpha"].Configure, "hcp.evt.alpha", true},
		{"alpha declares not alpha-x's", perm["alpha"].Configure, "hcp.evt.alpha-x", false},
		{"alpha declares no exchange", perm["alpha"].Configure, "hcp.events", false},
		{"alpha reads its queue", perm["alpha"].Read, "hcp.evt.alpha", true},
		{"alpha reads not alpha-x's", perm["alpha"].Read, "hcp.evt.alpha-x", false},
		{"alpha reads not the command queue", perm["alpha"].Read, "hcp.cmd.lab-cvd", false},
		{"alpha binds not to hcp.commands", perm["alpha"].Read, "hcp.commands", false},
		{"alpha commands", perm["alpha"].Write, "hcp.commands", true},
		{"alpha publishes no events", perm["alpha"].Write, "hcp.events", false},
		{"alpha publishes not through the default exchange", perm["alpha"].Write, "amq.default", false},
		{"alpha-x may use no capability: no commands", perm["alpha-x"].Write, "hcp.commands", false},
		{"alpha binds its keys", topic["alpha hcp.events"].Read, "alpha.#", true},
		{"alpha binds not alpha-x's keys", topic["alpha hcp.events"].Read, "alpha-x.#", false},
		{"alpha binds not #", topic["alpha hcp.events"].Read, "#", false},
		{"alpha binds not *.#", topic["alpha hcp.events"].Read, "*.#", false},
		{"alpha publishes no event key", topic["alpha hcp.events"].Write, "alpha.s.task_completed", false},
		{"alpha publishes not the empty key", topic["alpha hcp.events"].Write, "", false},
		{"callee binds nothing to hcp.events", topic["edge hcp.events"].Read, "#", false},
	}
	for _, tc := range tests {
		if got := match(tc.re, tc.resource); got != tc.want {
			t.Errorf("%s: %q matches %q = %v", tc.name, tc.re, tc.resource, got)
		}
	}
}

func TestDiffIdempotent(t *testing.T) {
	g, err := provision.Derive(spec())
	if err != nil {
		t.Fatal(err)
	}
	empty, err := provision.ParseDefinitions(strings.NewReader(`{"users":[{"name":"alpha","tags":["impersonator"]},{"name":"stranger","tags":[]}],
		"vhosts":[],"permissions":[{"user":"stranger","vhost":"hcp","configure":".*","write":".*","read":".*"}],
		"topic_permissions":[{"user":"alpha","vhost":"hcp","exchange":"hcp.commands","write":".*","read":".*"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	changes, warnings := provision.Diff(empty, g)
	kinds := map[provision.ChangeKind]int{}
	for _, c := range changes {
		kinds[c.Kind]++
	}
	want := map[provision.ChangeKind]int{provision.AddVHost: 1, provision.AddUser: 2, provision.DropImpersonator: 1,
		provision.SetPermissions: 3, provision.SetTopicPermissions: 3, provision.ClearTopic: 1}
	for k, n := range want {
		if kinds[k] != n {
			t.Errorf("%s: %d changes, want %d (%v)", k, kinds[k], n, changes)
		}
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "stranger") {
		t.Errorf("warnings %q", warnings)
	}
	// The broker after the changes: nothing left.
	var b strings.Builder
	b.WriteString(`{"vhosts":[{"name":"hcp"}],"users":[{"name":"edge","tags":[]},{"name":"alpha","tags":[]},{"name":"alpha-x","tags":[]}],"permissions":[`)
	for i, p := range g.Permissions {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"user":"` + p.User + `","vhost":"hcp","configure":` + q(p.Configure) + `,"write":` + q(p.Write) + `,"read":` + q(p.Read) + `}`)
	}
	b.WriteString(`],"topic_permissions":[`)
	for i, p := range g.TopicPermissions {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"user":"` + p.User + `","vhost":"hcp","exchange":"hcp.events","write":` + q(p.Write) + `,"read":` + q(p.Read) + `}`)
	}
	b.WriteString(`]}`)
	done, err := provision.ParseDefinitions(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if left, _ := provision.Diff(done, g); len(left) != 0 {
		t.Fatalf("left %v", left)
	}
}

func q(s string) string { return `"` + strings.ReplaceAll(s, `\`, `\\`) + `"` }

func FuzzParseDefinitions(f *testing.F) {
	f.Add(`{"users":[{"name":"a","tags":"administrator,impersonator"}]}`)
	f.Add(`{"vhosts":[{"name":"hcp"}],"permissions":[{"user":"a","vhost":"hcp"}]}`)
	f.Fuzz(func(t *testing.T, s string) {
		st, err := provision.ParseDefinitions(strings.NewReader(s))
		if err == nil {
			_, _ = provision.Diff(st, provision.Grants{VHost: "hcp"})
		}
	})
}
