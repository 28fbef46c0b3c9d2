package device

// Word reports whether s may stand as one word of a tool's or a channel's
// name: lower-case letters, digits and _, 1 to 64 characters. A heated
// zone's name (device/rig) must be one, since the catalog names the zone's
// tools with it and the envelope its channels; a tool's tags and the parts
// of its name are such words too (device/catalog).
func Word(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}
