package operators

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func fakeLookup(s string) (uint32, string, error) {
	switch s {
	case "olga", "1001":
		return 1001, "olga", nil
	case "rene":
		return 1002, "rene", nil
	}
	return 0, "", fmt.Errorf("%w %q", ErrUnknownUser, s)
}

func TestNewRefusesBadEntries(t *testing.T) {
	_, err := New(map[string]Entry{
		"olga":  {User: "olga", Roles: []Role{"operate", "approval"}},
		"ghost": {User: "nobody-here", Roles: []Role{"approve"}},
		"empty": {Roles: []Role{"approve"}},
	}, fakeLookup)
	for _, want := range []string{`operators.olga.roles[1]: operators: unknown role "approval"`, `operators.ghost.user: operators: unknown OS user "nobody-here"`, "operators.empty.user: the OS user"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want %q in %v", want, err)
		}
	}
}

func TestAuthorize(t *testing.T) {
	tab, err := New(map[string]Entry{
		"Olga K": {User: "1001", Roles: []Role{RoleOperate, RoleApprove}},
		"rene":   {User: "rene", Roles: []Role{RoleRelease}},
	}, fakeLookup)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		tab     *Table
		uid     uint32
		display string
		need    Role
		wantErr string
		wantDsp string
	}{
		{"own name, held role", tab, 1001, "Olga K", RoleApprove, "", "Olga K"},
		{"own entry by default", tab, 1001, "", RoleOperate, "", "Olga K"},
		{"role not held", tab, 1002, "rene", RoleApprove, `does not hold the role "approve"`, "rene"},
		{"another user's name", tab, 1002, "Olga K", RoleEStop, `belongs to OS user olga (uid 1001)`, "Olga K"},
		{"unconfigured name", tab, 1002, "mallory", RoleEStop, "is not an operator", "mallory"},
		{"estop needs nothing", tab, 4242, "", RoleEStop, "", ""},
		{"root any name", tab, 0, "Olga K", RoleAdmin, "", "Olga K"},
		{"no section: root", nil, 0, "olga", RoleApprove, "", "olga"},
		{"no section: others hold no role", nil, 1001, "olga", RoleOperate, "only root holds roles", "olga"},
		{"no section: estop", nil, 1001, "olga", RoleEStop, "", "olga"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := tc.tab.Authorize(tc.uid, 100, tc.display, tc.need)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantErr != "" && (!errors.Is(err, ErrForbidden) || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("want ErrForbidden with %q, got %v", tc.wantErr, err)
			}
			if tc.wantDsp != "" && id.Display != tc.wantDsp {
				t.Errorf("display %q, want %q", id.Display, tc.wantDsp)
			}
			if id.UID != tc.uid {
				t.Errorf("uid %d", id.UID)
			}
		})
	}
}
