// Package discovery computes what a harness may use on this agent: Offers
// lists, for a caller's entry in the gate's access control list, every
// capability declaration it may run, with its JSON Schemas and the safety
// envelope a session of it runs under (wire.CapabilitiesResponse). The
// daemon answers capabilities_request over the broker with it; the CLI's
// capabilities verb prints the same answer locally.
//
// # Caveats
//
// A caller with no ACL entry gets ErrNoACL rather than an empty offer; the
// daemon answers it with a refusal.
package discovery
