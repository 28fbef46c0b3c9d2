package catalog

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
)

// semver is a parsed MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD] version.
type semver struct {
	major, minor, patch uint64
	pre                 string
}

// parseSemver accepts semantic versions 2.0.0 without a leading "v".
func parseSemver(s string) (semver, error) {
	var v semver
	if s == "" {
		return v, fmt.Errorf("empty version")
	}
	core := s
	if i := strings.IndexByte(core, '+'); i >= 0 {
		if !validIdents(core[i+1:]) {
			return v, fmt.Errorf("%q: bad build metadata", s)
		}
		core = core[:i]
	}
	if i := strings.IndexByte(core, '-'); i >= 0 {
		v.pre = core[i+1:]
		if !validIdents(v.pre) {
			return v, fmt.Errorf("%q: bad pre-release", s)
		}
		core = core[:i]
	}
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return v, fmt.Errorf("%q: want MAJOR.MINOR.PATCH", s)
	}
	nums := [3]*uint64{&v.major, &v.minor, &v.patch}
	for i, p := range parts {
		if p == "" || (len(p) > 1 && p[0] == '0') {
			return v, fmt.Errorf("%q: bad number %q", s, p)
		}
		n, err := strconv.ParseUint(p, 10, 64)
		if err != nil {
			return v, fmt.Errorf("%q: bad number %q", s, p)
		}
		*nums[i] = n
	}
	return v, nil
}

func validIdents(s string) bool {
	if s == "" {
		return false
	}
	for _, id := range strings.Split(s, ".") {
		if id == "" {
			return false
		}
		for _, c := range id {
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-') {
				return false
			}
		}
	}
	return true
}

// compareSemver orders versions by precedence; pre-releases sort before their
// release and among themselves lexically (enough for ordering a catalog).
func compareSemver(a, b semver) int {
	if c := cmp.Compare(a.major, b.major); c != 0 {
		return c
	}
	if c := cmp.Compare(a.minor, b.minor); c != 0 {
		return c
	}
	if c := cmp.Compare(a.patch, b.patch); c != 0 {
		return c
	}
	switch {
	case a.pre == b.pre:
		return 0
	case a.pre == "":
		return 1
	case b.pre == "":
		return -1
	}
	return cmp.Compare(a.pre, b.pre)
}
